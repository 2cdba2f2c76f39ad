-- Term statistics for BM25 (the lexical half of search, 177_lexical_candidates.sql),
-- kept exact under every write by triggers on the tables themselves, so no
-- write path (publish, supersession, review, retraction, erasure, the
-- worker, a bulk load) can forget them.
--
-- What counts as a document of a group: a fact whose lifecycle lets search
-- return it at some instant (published, superseded, proposal), and a
-- passage that is published or proposed and whose episode is not retracted.
-- Validity in time does not matter: the statistics describe the corpus a
-- search may draw from now, also for a search as of an earlier instant.
--
-- How: each statement appends its net change per (group, kind, term) to
-- vera.term_stat_changes (one row per term it touched, not per document),
-- and at commit a deferred trigger applies the transaction's changes to
-- vera.term_stats in one statement, sorted by group, kind and term. Every
-- transaction thus takes the rows of common terms ("the") in one order and
-- only for the last moment before its commit: concurrent writers of a group
-- wait at most for each other's commit, never deadlock over these rows, and
-- a long transaction holds none of them while it works. A search reads
-- term_stats plus its own transaction's pending changes: exactly the rows
-- its snapshot sees.
set role vera_owner;

-- Internal: appends the net change of some documents entering (+1) or
-- leaving (-1) the counted corpus, to be applied when the transaction commits.
create or replace function vera.count_terms(kind vera.item_kind, group_ids text[], tsvs tsvector[], signs integer[])
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    insert into vera.term_stat_changes (group_id, kind, term, documents, tokens)
    select d.group_id, count_terms.kind, t.term, sum(d.sign), sum(d.sign * t.tokens)
      from unnest(group_ids, tsvs, signs) as d(group_id, tsv, sign)
     cross join lateral (
           select u.lexeme as term, cardinality(u.positions)::bigint as tokens from unnest(d.tsv) u
           union all
           -- the corpus row: one document of this length (distinct words, see vera.bm25_score;
           -- Vietnamese word pairs, weight C, count in no length)
           select '', (length(d.tsv) - length(ts_filter(d.tsv, '{c}')))::bigint) t
     where d.sign <> 0
     group by d.group_id, t.term
    having sum(d.sign) <> 0 or sum(d.sign * t.tokens) <> 0;
    if found then
        insert into vera.term_stat_transactions default values on conflict do nothing;
    end if;
end
$$;
comment on function vera.count_terms(vera.item_kind, text[], tsvector[], integer[]) is
    'Internal: records documents entering (+1) or leaving (-1) a group''s BM25 statistics, applied at commit';
-- the statistics' triggers, which run as vera_searcher, call it
grant execute on function vera.count_terms(vera.item_kind, text[], tsvector[], integer[]) to vera_searcher;

-- Internal: the deferred trigger that applies a transaction's changes at
-- its commit, sorted; terms no document holds any more are dropped (the
-- corpus row stays).
create or replace function vera.apply_term_changes()
returns trigger
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    emptied record;
begin
    with moved as (
        delete from vera.term_stat_changes c
         where c.transaction = pg_current_xact_id()
        returning c.group_id, c.kind, c.term, c.documents, c.tokens
    ), net as (
        select m.group_id, m.kind, m.term, sum(m.documents) as documents, sum(m.tokens) as tokens
          from moved m group by m.group_id, m.kind, m.term
        having sum(m.documents) <> 0 or sum(m.tokens) <> 0
         order by m.group_id, m.kind, m.term
    ), applied as (
        insert into vera.term_stats as s (group_id, kind, term, documents, tokens)
        select net.group_id, net.kind, net.term, net.documents, net.tokens from net
        on conflict (group_id, kind, term) do update
           set documents = s.documents + excluded.documents, tokens = s.tokens + excluded.tokens
        returning s.group_id, s.kind, s.term, s.documents
    )
    select array_agg(a.group_id) as groups, array_agg(a.kind) as kinds, array_agg(a.term) as terms into emptied
      from applied a where a.documents = 0 and a.term <> '';
    if emptied.terms is not null then
        delete from vera.term_stats s
         using unnest(emptied.groups, emptied.kinds, emptied.terms) e(group_id, kind, term)
         where s.group_id = e.group_id and s.kind = e.kind and s.term = e.term and s.documents = 0;
    end if;
    delete from vera.term_stat_transactions t where t.transaction = pg_current_xact_id();
    return null;
end
$$;
comment on function vera.apply_term_changes() is
    'Internal: deferred trigger applying a transaction''s BM25 statistic changes at its commit';

-- (a constraint trigger cannot be replaced in place)
drop trigger if exists term_stat_transactions_apply on vera.term_stat_transactions;
create constraint trigger term_stat_transactions_apply after insert on vera.term_stat_transactions
    deferrable initially deferred for each row execute function vera.apply_term_changes();

-- Internal: whether a fact of this lifecycle is a document of the statistics.
create or replace function vera.fact_counted(lifecycle vera.fact_lifecycle)
returns boolean
language sql immutable parallel safe
as $$ select lifecycle in ('published', 'superseded', 'proposal') $$;
comment on function vera.fact_counted(vera.fact_lifecycle) is
    'Internal: whether a fact of this lifecycle counts in the BM25 statistics';

-- Internal: whether a passage of this lifecycle counts (its episode not retracted).
create or replace function vera.passage_counted(lifecycle vera.fact_lifecycle)
returns boolean
language sql immutable parallel safe
as $$ select lifecycle in ('published', 'proposal') $$;
comment on function vera.passage_counted(vera.fact_lifecycle) is
    'Internal: whether a passage of this lifecycle counts in the BM25 statistics (with its episode not retracted)';
-- the statistics' triggers, which run as vera_searcher, call it
grant execute on function vera.passage_counted(vera.fact_lifecycle) to vera_searcher;

-- Triggers. Inserts and deletes are counted once per statement (a batch of
-- 10,000 claims appends one change per distinct term); updates row by row,
-- and only the rare ones that move a row in or out of the corpus or change
-- its text reach the function (the WHEN clauses).
create or replace function vera.count_fact_terms()
returns trigger
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    if tg_op = 'INSERT' then
        perform vera.count_terms('fact', array_agg(n.group_id), array_agg(n.tsv), array_agg(1))
           from new_rows n where vera.fact_counted(n.lifecycle) having count(*) > 0;
        return null;
    elsif tg_op = 'DELETE' then
        perform vera.count_terms('fact', array_agg(o.group_id), array_agg(o.tsv), array_agg(-1))
           from old_rows o where vera.fact_counted(o.lifecycle) having count(*) > 0;
        return null;
    end if;
    perform vera.count_terms('fact', array[old.group_id, new.group_id], array[old.tsv, new.tsv],
                             array[case when vera.fact_counted(old.lifecycle) then -1 else 0 end,
                                   case when vera.fact_counted(new.lifecycle) then 1 else 0 end]);
    return null;
end
$$;
comment on function vera.count_fact_terms() is 'Internal: trigger keeping the facts'' BM25 statistics';

create or replace function vera.count_passage_terms()
returns trigger
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    -- a chunk's episode that is gone was erased, and erasure retracts it first
    -- (vera.count_episode_terms took its passages out then)
    if tg_op = 'INSERT' then
        perform vera.count_terms('passage', array_agg(n.group_id), array_agg(n.tsv), array_agg(1))
           from new_rows n
           join vera.episodes e on e.group_id = n.group_id and e.episode_id = n.episode_id
          where vera.passage_counted(n.lifecycle) and e.status <> 'retracted' having count(*) > 0;
        return null;
    elsif tg_op = 'DELETE' then
        perform vera.count_terms('passage', array_agg(o.group_id), array_agg(o.tsv), array_agg(-1))
           from old_rows o
           join vera.episodes e on e.group_id = o.group_id and e.episode_id = o.episode_id
          where vera.passage_counted(o.lifecycle) and e.status <> 'retracted' having count(*) > 0;
        return null;
    end if;
    perform vera.count_terms('passage', array[old.group_id, new.group_id], array[old.tsv, new.tsv],
                             array[case when vera.passage_counted(old.lifecycle) then -1 else 0 end,
                                   case when vera.passage_counted(new.lifecycle) then 1 else 0 end])
      from vera.episodes e
     where e.group_id = new.group_id and e.episode_id = new.episode_id and e.status <> 'retracted';
    return null;
end
$$;
comment on function vera.count_passage_terms() is 'Internal: trigger keeping the passages'' BM25 statistics';

-- An episode retracted (or restored) takes its passages out of (or back
-- into) the statistics; one deleted while not retracted takes them out
-- before the cascade deletes them (BEFORE: they are still there to count).
create or replace function vera.count_episode_terms()
returns trigger
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    sign integer;
    episode vera.episodes;
begin
    if tg_op = 'DELETE' then
        sign := -1;
        episode := old;
    else
        sign := case when new.status = 'retracted' then -1 else 1 end;
        episode := new;
    end if;
    perform vera.count_terms('passage', array_agg(c.group_id), array_agg(c.tsv), array_agg(sign))
       from vera.chunks c
      where c.group_id = episode.group_id and c.episode_id = episode.episode_id
        and vera.passage_counted(c.lifecycle)
     having count(*) > 0;
    return case when tg_op = 'DELETE' then old else null end;
end
$$;
comment on function vera.count_episode_terms() is
    'Internal: trigger moving an episode''s passages out of (or into) the BM25 statistics';

-- The passage triggers read episodes and chunks, which row-level security
-- (forced on vera_owner too) hides from a statement with no caller who may
-- read them: a bulk load, an operator's fix, a superuser's delete would go
-- uncounted. They belong to vera_searcher, which reads past RLS, and only
-- read; the counting is vera.count_terms's, as vera_owner.
alter function vera.count_passage_terms() owner to vera_searcher;
alter function vera.count_episode_terms() owner to vera_searcher;

create or replace trigger facts_count_inserted after insert on vera.facts
    referencing new table as new_rows for each statement execute function vera.count_fact_terms();
create or replace trigger facts_count_deleted after delete on vera.facts
    referencing old table as old_rows for each statement execute function vera.count_fact_terms();
create or replace trigger facts_count_changed after update of lifecycle, fact_text on vera.facts
    for each row
    when (vera.fact_counted(old.lifecycle) is distinct from vera.fact_counted(new.lifecycle)
          or old.tsv is distinct from new.tsv)
    execute function vera.count_fact_terms();

create or replace trigger chunks_count_inserted after insert on vera.chunks
    referencing new table as new_rows for each statement execute function vera.count_passage_terms();
create or replace trigger chunks_count_deleted after delete on vera.chunks
    referencing old table as old_rows for each statement execute function vera.count_passage_terms();
create or replace trigger chunks_count_changed after update of lifecycle, text, heading on vera.chunks
    for each row
    when (vera.passage_counted(old.lifecycle) is distinct from vera.passage_counted(new.lifecycle)
          or old.tsv is distinct from new.tsv)
    execute function vera.count_passage_terms();

create or replace trigger episodes_count_retracted after update of status on vera.episodes
    for each row
    when ((old.status = 'retracted') is distinct from (new.status = 'retracted'))
    execute function vera.count_episode_terms();
create or replace trigger episodes_count_deleted before delete on vera.episodes
    for each row
    when (old.status <> 'retracted')
    execute function vera.count_episode_terms();

-- Internal: the statistics of some groups for some terms: each term's
-- document frequency and occurrences summed over the groups, and the corpus
-- ('') with its documents and tokens: the committed counts, plus the
-- changes of the caller's own transaction (no other transaction's are
-- visible: each deletes its own when it commits).
-- Runs as its caller: the search stages owned by vera_searcher, which read
-- past RLS and pass the caller's readable groups only. No SET clause, every
-- name qualified: the planner then inlines it into the caller's query (a
-- SQL function with a SET clause is called through the function manager
-- and planned on each call: ~1 ms a search at 100,000 facts, ten times the
-- inlined lookup on a loaded machine).
create or replace function vera.term_statistics(groups text[], target_kind vera.item_kind, terms text[])
returns table (term text, documents bigint, tokens bigint)
language sql stable
as $$
    select t.term, coalesce(sum(x.documents), 0)::bigint, coalesce(sum(x.tokens), 0)::bigint
      from (select distinct q.term from pg_catalog.unnest(pg_catalog.array_append(terms, ''::text)) q(term)) t
      left join lateral (
          select s.documents, s.tokens from vera.term_stats s
           where s.group_id = any (groups) and s.kind = target_kind and s.term = t.term
          union all
          select c.documents, c.tokens from vera.term_stat_changes c
           where c.group_id = any (groups) and c.kind = target_kind and c.term = t.term) x on true
     group by t.term
$$;
comment on function vera.term_statistics(text[], vera.item_kind, text[]) is
    'Internal: BM25 statistics of some terms over some groups (term '''' is the corpus)';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.term_statistics(text[], vera.item_kind, text[]) to vera_searcher;

reset role;
