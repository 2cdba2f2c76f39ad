-- Term statistics for BM25 (the lexical half of search, 180_search.sql),
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
-- then folds the group's pending changes into vera.term_stats unless another
-- transaction is folding that group (a transaction-scoped advisory lock,
-- tried, never waited for). Writers therefore never update a counter another
-- writer could hold, and readers add the pending changes to the folded
-- counts: the statistics a search reads are exactly those of the rows its
-- snapshot sees.
set role vera_owner;

-- Internal: appends the net change of some documents entering (+1) or
-- leaving (-1) the counted corpus, then (fold) folds the groups' changes.
create or replace function vera.count_terms(kind vera.item_kind, group_ids text[], tsvs tsvector[], signs integer[],
                                            fold boolean default true)
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    touched text;
begin
    insert into vera.term_stat_changes (group_id, kind, term, documents, tokens)
    select d.group_id, count_terms.kind, t.term, sum(d.sign), sum(d.sign * t.tokens)
      from unnest(group_ids, tsvs, signs) as d(group_id, tsv, sign)
     cross join lateral (
           select u.lexeme as term, cardinality(u.positions)::bigint as tokens from unnest(d.tsv) u
           union all
           -- the corpus row: one document of this length (distinct words, see vera.bm25_score)
           select '', length(d.tsv)::bigint) t
     where d.sign <> 0
     group by d.group_id, t.term
    having sum(d.sign) <> 0 or sum(d.sign * t.tokens) <> 0
     order by d.group_id, t.term;
    for touched in select distinct g from unnest(group_ids) g where fold loop
        perform vera.fold_term_changes(touched, count_terms.kind);
    end loop;
end
$$;
comment on function vera.count_terms(vera.item_kind, text[], tsvector[], integer[], boolean) is
    'Internal: records documents entering (+1) or leaving (-1) a group''s BM25 statistics';

-- Internal: folds a group's pending changes into term_stats, unless another
-- transaction is doing so (then its changes wait for the next write).
-- Terms no document holds any more are dropped; the corpus row stays.
create or replace function vera.fold_term_changes(target_group text, target_kind vera.item_kind)
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    emptied text[];
begin
    -- key space 2 (publishing's history buckets use 1); one folder per group and kind
    if not pg_try_advisory_xact_lock(2, hashtext(target_group || '/' || target_kind::text)) then
        return;
    end if;
    with moved as (
        delete from vera.term_stat_changes c
         where c.group_id = target_group and c.kind = target_kind
        returning c.term, c.documents, c.tokens
    ), net as (
        select m.term, sum(m.documents) as documents, sum(m.tokens) as tokens
          from moved m group by m.term order by m.term
    ), folded as (
        insert into vera.term_stats as s (group_id, kind, term, documents, tokens)
        select target_group, target_kind, net.term, net.documents, net.tokens from net
        on conflict (group_id, kind, term) do update
           set documents = s.documents + excluded.documents, tokens = s.tokens + excluded.tokens
        returning s.term, s.documents
    )
    select array_agg(f.term) into emptied from folded f where f.documents = 0 and f.term <> '';
    if emptied is not null then
        delete from vera.term_stats s
         where s.group_id = target_group and s.kind = target_kind and s.term = any (emptied) and s.documents = 0;
    end if;
end
$$;
comment on function vera.fold_term_changes(text, vera.item_kind) is
    'Internal: folds a group''s pending BM25 statistic changes (skipped while another transaction folds it)';

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

-- Triggers. Inserts and deletes are counted once per statement (a batch of
-- 10,000 claims appends one change per distinct term) and fold; updates row
-- by row, and only the rare ones that move a row in or out of the corpus or
-- change its text reach the function (the WHEN clauses). A row trigger only
-- appends: folding once per row would cost a retraction of many facts
-- dearly, and the group's next insert or delete folds them anyway.
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
                                   case when vera.fact_counted(new.lifecycle) then 1 else 0 end], false);
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
                                   case when vera.passage_counted(new.lifecycle) then 1 else 0 end], false)
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
    perform vera.count_terms('passage', array_agg(c.group_id), array_agg(c.tsv), array_agg(sign), false)
       from vera.chunks c
      where c.group_id = episode.group_id and c.episode_id = episode.episode_id
        and vera.passage_counted(c.lifecycle)
     having count(*) > 0;
    return case when tg_op = 'DELETE' then old else null end;
end
$$;
comment on function vera.count_episode_terms() is
    'Internal: trigger moving an episode''s passages out of (or into) the BM25 statistics';

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
-- ('') with its documents and tokens. Folded counts plus pending changes.
-- Runs as its caller: the search stages owned by vera_searcher, which read
-- past RLS and pass the caller's readable groups only.
create or replace function vera.term_statistics(groups text[], target_kind vera.item_kind, terms text[])
returns table (term text, documents bigint, tokens bigint)
language sql stable
set search_path = vera, pg_temp
as $$
    select t.term, coalesce(sum(x.documents), 0)::bigint, coalesce(sum(x.tokens), 0)::bigint
      from (select distinct q.term from unnest(terms || ''::text) q(term)) t
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

reset role;
