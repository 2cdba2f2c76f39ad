-- The read path: vera.search, one call. Stage 1 finds candidates with a
-- lexical half (GIN full text) and a vector half (HNSW, cosine) and fuses
-- their ranks (RRF); stage 2 blends seven signals into the score. Snapshot
-- search (200_snapshots.sql) reuses stage 2 as it is.
set role vera_owner;

-- pgvector defines its settings (hnsw.*) when its library loads; load it now
-- so that the SET clauses below are checked as those settings rather than as
-- unknown placeholders, which only a superuser may set.
do $load$ begin perform '[1]'::public.vector; end $load$;

-- Internal: the lexical list of one kind (facts or passages): the n
-- visible documents of the groups with the best BM25 scores for the query
-- terms (vera.bm25_document_score with the weights of vera.bm25_weights: the
-- terms that occur in this kind, rarest here first, with their postings
-- here and their IDFs), ordered as stage 1 orders equal scores.
--
-- Candidate generation follows MaxScore (Turtle and Flood 1995): terms are
-- taken rarest first, a round's worth of postings at a time (at least one
-- term, then more while their postings sum to at most the budget of this
-- kind, vera.lexical_budget), and the documents holding any term taken so
-- far are scored on every query term. A document holding none of them
-- holds only the terms left, so it scores at most the sum of their
-- largest contributions (each IDF times the tf part at the most times one
-- document holds the term, which the statistics bound; at most k1 + 1);
-- once the n-th score found beats that bound, no other document can enter
-- the list and the frequent terms' postings are never read.
-- Generating terms: the rarest query term and every term held by at most a
-- tenth of the documents searched or by few (at most the budget). A term
-- held by more (IDF below ln 10, under a quarter of a rare word's weight)
-- still counts in every score, but a document holding only such words does
-- not become a candidate: otherwise a query with "the" and a few rare words
-- would rank most of a large corpus whenever the rare words match fewer
-- than n documents.
--
-- Passages (b = 0.75) get the exact top n of the documents holding a
-- generating term. Facts (b = 0) get it up to a bound on the rows read: a
-- round reads at most the budget of documents (at least n). Without length
-- normalisation a fact's score depends only on which query terms it holds
-- and how often (almost always once), so the thousands of facts holding one
-- frequent term tie, and an exact list reads them all to sort them by the
-- order key (the rarest term of "in on" in a 100,000-fact tenant holds
-- 14,000 facts: each row is a heap page, and the lexical half took 600 ms
-- and more, docs/benchmarks.md). A round of one term t holding more than
-- the budget therefore reads, the first in the table's order (the
-- full-text index's bitmap; as the HNSW half, among equal distances, takes
-- the index's order), at most the budget of
--   1. the documents holding t and a later (more frequent) query term,
--      which outscore those holding t alone once (IDFs are positive), then,
--   2. only while a document holding t alone once could still enter the
--      list (fewer than n found, or the n-th score at most t's IDF), the
--      documents holding t and no other query term.
-- What this gives up, only when a round of facts is cut at the budget:
-- among equal scores the table's order, not the order key, decides which
-- documents enter; a fact past the budget holding t twice (or holding t
-- and a later term, when step 1 is cut) may be missed, and the list's
-- scores may then fall below the exact list's. Every score in the list is
-- its document's exact BM25 score, in stage 1's order; the same data in
-- the same table gives the same list; a query none of whose rounds is cut
-- (every generating term held by at most the budget) gets the exact list.
--
-- Owned by vera_searcher, like vera.search_candidates, which passes the
-- caller's readable groups only.
create or replace function vera.lexical_candidates(
    target_kind vera.item_kind, groups text[], ranked_terms text[], ranked_postings bigint[],
    ranked_idfs double precision[], ranked_most_held bigint[], average_length double precision,
    reference timestamptz, personal_group text, caller uuid, n integer, group_order text[])
returns table (group_id text, item_id uuid, score double precision, order_key bytea)
language plpgsql stable
set search_path = vera, public, pg_temp
-- No plan_cache_mode here (unlike vera.search_candidates): costed without its words, the facts'
-- round of a small group read the group's rows through the valid_from index and filtered them
-- (8,818 rows for a round of 250 in test_fact_rounds_read_at_most_the_budget); PL/pgSQL's default
-- keeps the plan made for the words until a generic one is as cheap.
as $$
declare
    k1 constant double precision := (select p.k1 from vera.bm25_parameters(target_kind) p);
    b constant double precision := (select p.b from vera.bm25_parameters(target_kind) p);
    -- no length normalisation: a round of facts reads at most the budget (see above)
    bounded_rounds constant boolean := b = 0;
    -- postings read per round, beyond the first term's; where bounded, documents read per round
    budget constant bigint := vera.lexical_budget(target_kind);
    taken integer := 0;
    generating integer;
    earlier integer;
    round_postings bigint;
    -- this step's terms (a document holds one of them, and one of and_terms when set), its
    -- tsquery, the documents it leaves out (scored in another step), its row limit
    matching_terms text[];
    and_terms text[];
    matching tsquery;
    excluded tsquery;
    row_limit bigint;
    -- a bounded round's second step (the documents holding its term alone) is still to come
    alone_pending boolean := false;
    round_groups text[];
    round_ids uuid[];
    round_scores double precision[];
    round_keys bytea[];
    bound double precision;
    found_groups text[];
    found_ids uuid[];
    found_scores double precision[];
    found_keys bytea[];
    -- the parts of the facts' full-text index (vera.group_lexemes) a round has read, and its rows
    parts constant text[] := vera.lexeme_parts();
    -- the most parts a statement reads by their own keys (GIN merges that many lists per word)
    parts_by_key constant integer := 4;
    parts_read integer;
    parts_step integer;
    rows_read bigint;
    part_rows bigint;
    statement text;
begin
    if coalesce(cardinality(ranked_terms), 0) = 0 then
        return;
    end if;
    -- passages (facts: static SQL below): $4 the documents to read, $11 those to leave out, each
    -- scored on every query term, the n best kept; planned for each round's terms
    statement := $q$
            select array_agg(h.group_id), array_agg(h.item_id), array_agg(h.score), array_agg(h.order_key)
              from (select c.group_id, c.chunk_id as item_id, sc.score,
                           vera.passage_order_key(s.name, e.external_id, e.version, c.ordinal) as order_key
                      from vera.chunks c
                      join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
                      join vera.sources s on s.group_id = e.group_id and s.source_id = e.source_id
                     cross join lateral vera.bm25_document_score('passage', c.tsv, $1, $2, $3) sc
                     where c.tsv @@ $4 and c.group_id = any ($5) and not coalesce(c.tsv @@ $11, false)
                       and (c.lifecycle = 'published' or (c.lifecycle = 'proposal' and c.proposed_by = $10))
                       and e.status <> 'retracted' and e.observed_at <= $6
                       and not exists (select from vera.episodes newer
                                        where newer.group_id = e.group_id and newer.source_id = e.source_id
                                          and newer.external_id = e.external_id and newer.version > e.version
                                          and newer.observed_at <= $6 and newer.status <> 'retracted')
                     order by 3 desc, 4, array_position($9, c.group_id), 2
                     limit $8) h$q$;

    -- the terms that may generate candidates, rarest first: the rarest
    -- always, then each one held by at most a tenth of the documents
    -- searched (IDF >= ln 10) or cheap to read (at most a budget of postings)
    select greatest(1, coalesce(min(t.position) - 1, cardinality(ranked_terms)))::integer into generating
      from unnest(ranked_idfs, ranked_postings) with ordinality as t(idf, postings, position)
     where t.idf < ln(10) and t.postings > budget;
    loop
        if alone_pending then
            -- a bounded round's step 2: its term alone, neither an earlier nor a later term
            alone_pending := false;
            matching_terms := ranked_terms[taken:taken];
            and_terms := null;
            excluded := vera.any_of(ranked_terms[1:earlier] || ranked_terms[taken + 1:]);
            row_limit := greatest(budget, n);
        else
            -- this round's terms: the rarest not taken yet, a budget's worth of postings
            earlier := taken;
            round_postings := 0;
            while taken < generating
                  and (round_postings = 0 or round_postings + ranked_postings[taken + 1] <= budget) loop
                taken := taken + 1;
                round_postings := round_postings + ranked_postings[taken];
            end loop;
            -- the documents holding one of them and none of the earlier rounds' (scored then)
            matching_terms := ranked_terms[earlier + 1:taken];
            and_terms := null;
            excluded := vera.any_of(ranked_terms[1:earlier]);
            row_limit := null;
            if bounded_rounds and round_postings > budget then
                -- one frequent term (rounds of several hold at most the budget): step 1, with a later term;
                -- never fewer rows than the list holds
                row_limit := greatest(budget, n);
                if taken < cardinality(ranked_terms) then
                    and_terms := ranked_terms[taken + 1:];
                    alone_pending := true;
                elsif coalesce(cardinality(found_scores), 0) = n and found_scores[n] > ranked_idfs[taken] then
                    -- no later term: this round is step 2 alone, and no document holding the term once
                    -- can enter the list
                    exit;
                end if;
            end if;
        end if;
        -- The facts' full-text index holds two posting lists per group and word: all its facts, and
        -- those of each of 16 parts of the group's facts (vera.group_lexemes). A round that reads
        -- every match reads the first. A round cut at row_limit reads part by part, in
        -- vera.lexeme_parts' order: first as many parts as should hold its rows, then, if too few of
        -- those matched (facts not visible, or a later term less common than its share says), as
        -- many more as the parts read yielded rows per part. So a word held by 17,000 facts costs
        -- the bitmap of ~1,100 of them, not the decoding and sorting of all 17,000
        -- (docs/benchmarks.md). A statement over m parts makes GIN merge m posting lists per word,
        -- so one that would read more than parts_by_key of them reads the keys without a part
        -- instead (the word's whole list, as without parts), leaving out the parts already read.
        -- Passages: one statement, every match.
        parts_read := 0;
        rows_read := 0;
        loop
            if row_limit is null or target_kind = 'passage' then
                parts_step := cardinality(parts);
            elsif parts_read = 0 then
                -- the term's postings spread evenly over the parts and, in step 1, the share of them
                -- that hold a later term too: at least that of the most frequent later term, whose
                -- exp(-idf) is its share of the documents, (df + 0.5) / (N + 1); half again for the
                -- facts not visible at the reference instant
                parts_step := least(cardinality(parts),
                                    ceil(1.5 * row_limit * cardinality(parts)
                                         / greatest(round_postings * case when and_terms is null then 1
                                                                        else exp(-ranked_idfs[cardinality(ranked_idfs)])
                                                                   end, 1))::integer);
            else
                parts_step := least(cardinality(parts) - parts_read,
                                    ceil(1.5 * (row_limit - rows_read) * parts_read
                                         / greatest(rows_read, 1))::integer);
            end if;
            if parts_step > parts_by_key then
                parts_step := cardinality(parts) - parts_read;
            end if;
            if target_kind = 'fact' then
                matching := vera.group_lexeme_query(
                    groups, matching_terms, and_terms,
                    case when parts_step <= parts_by_key then parts[parts_read + 1:parts_read + parts_step] end);
                -- Static, so that its plan is cached for the session: planning it anew each round
                -- cost as much as reading the rows (4 ms a statement at 1,000,000 facts, the
                -- functions it inlines). The rows are read in a
                -- materialized CTE, which the planner plans for all its rows: the full-text index's
                -- bitmap, in the table's order. A limit on the scan itself would make it walk the
                -- group's rows through a b-tree, expecting to meet matches soon, which for a term
                -- held by one fact in 50 reads 50 rows per match (and another subset); the limit
                -- still stops the scan, as a CTE runs only as far as its reader asks.
                with holding as materialized (
                    select f.group_id, f.fact_id, f.tsv, f.fact_text, f.predicate, f.object_value, f.valid_from
                      from vera.facts f
                     where vera.group_lexemes(f.group_id, f.fact_id, f.tsv) @@ matching
                       -- the parts read already (none but in a cut round's last statement)
                       and right(f.fact_id::text, 1) <> all (parts[1:parts_read])
                       -- the groups again (matching names them), as a filter: an index on group_id
                       -- would add the group's every row to the bitmap (100,000 in a large tenant)
                       and array_position(groups, f.group_id) is not null
                       and not coalesce(f.tsv @@ excluded, false)
                       and vera.fact_visible(f.lifecycle, f.group_id, f.retired_at, f.valid_from, f.valid_to,
                                             reference, personal_group)),
                cut as (select * from holding limit row_limit - rows_read)
                select array_agg(h.group_id), array_agg(h.item_id), array_agg(h.score), array_agg(h.order_key),
                       (select count(*) from cut)
                  into round_groups, round_ids, round_scores, round_keys, part_rows
                  from (select f.group_id, f.fact_id as item_id, s.score,
                               vera.fact_order_key(f.fact_text, f.predicate, f.object_value, f.valid_from)
                                   as order_key
                          from cut f
                         cross join lateral vera.bm25_document_score('fact', f.tsv, ranked_terms, ranked_idfs,
                                                                     average_length) s
                         order by 3 desc, 4, array_position(group_order, f.group_id), 2
                         limit n) h;
                rows_read := rows_read + part_rows;
            else
                if and_terms is null then
                    matching := vera.any_of(matching_terms);
                else
                    matching := vera.any_of(matching_terms) && vera.any_of(and_terms);
                end if;
                execute statement
                   into round_groups, round_ids, round_scores, round_keys
                  using ranked_terms, ranked_idfs, average_length, matching, groups, reference, personal_group,
                        n, group_order, caller, excluded, row_limit;
            end if;
            parts_read := parts_read + parts_step;
            select array_agg(m.g), array_agg(m.i), array_agg(m.s), array_agg(m.k)
              into found_groups, found_ids, found_scores, found_keys
              from (select * from (select * from unnest(found_groups, found_ids, found_scores, found_keys)
                                   union all
                                   select * from unnest(round_groups, round_ids, round_scores, round_keys)) b(g, i, s, k)
                     order by b.s desc, b.k, array_position(group_order, b.g), b.i
                     limit n) m;
            exit when parts_read = cardinality(parts) or rows_read >= row_limit;
        end loop;
        -- step 2 only while a document holding the term alone once (its IDF) could enter the list
        if alone_pending and coalesce(cardinality(found_scores), 0) = n and found_scores[n] > ranked_idfs[taken] then
            alone_pending := false;
        end if;
        continue when alone_pending;
        exit when taken = generating;
        -- The most a document holding only the terms not taken can score: each term's IDF times its
        -- tf part, (k1 + 1) tf / (tf + k1 (1 - b + b |d| / avgdl)), at the most times a document holds
        -- the term (ranked_most_held, exact statistics) and the shortest length (|d| -> 0). Nearly
        -- every fact holds each of its words once, where this is the IDF itself, not (k1 + 1) times
        -- it: the rounds stop as soon as the list's last score beats the terms left.
        select sum(u.idf * (k1 + 1) * u.most_held / (u.most_held + k1 * (1 - b))) into bound
          from unnest(ranked_idfs[taken + 1:], ranked_most_held[taken + 1:]) u(idf, most_held);
        exit when coalesce(cardinality(found_scores), 0) = n and found_scores[n] > bound;
    end loop;

    return query select * from unnest(found_groups, found_ids, found_scores, found_keys);
end
$$;
comment on function vera.lexical_candidates(vera.item_kind, text[], text[], bigint[], double precision[], bigint[],
                                            double precision, timestamptz, text, uuid, integer, text[]) is
    'Internal: the BM25 top n of one kind, generated rarest terms first (MaxScore); facts'' rounds read at most vera.lexical_budget rows (250); reads past RLS';
alter function vera.lexical_candidates(vera.item_kind, text[], text[], bigint[], double precision[], bigint[],
                                      double precision, timestamptz, text, uuid, integer, text[])
    owner to vera_searcher;

-- Internal: stage 1 over the live tables. Returns each candidate with its
-- rank in the lexical and in the vector list (null when absent from one).
--
-- It belongs to vera_searcher, which bypasses row-level security, and makes
-- the group check RLS would make (the caller's readable groups) itself: the
-- full-text @@ operator and pgvector's distance operators are not leakproof,
-- so under RLS the planner may not use the GIN index for @@ at all, and
-- would check every matching row against the policy before the index's own
-- quals. vera.search then reads the candidates' details under RLS again.
-- For the same reason it applies the contamination guard to passages
-- itself: a proposed passage answers only its proposer.
--
-- HNSW returns the nearest rows first and filters afterwards: with a tenant
-- filter a scan of one index shared by all tenants runs dry before n rows
-- pass, and pgvector's iterative scan, which keeps going, costs 5-15 ms
-- (docs/benchmarks.md). So each group is searched on its own: through its
-- own HNSW index when it is large, exactly when it is small; the iterative
-- scan (relaxed order, re-sorted here) only covers the rows that the
-- valid-time filter drops.
--
-- Where scores tie at the cut of a list, the order keys decide which
-- candidates make it (kind, then vera.fact_order_key or
-- vera.passage_order_key, then the group's kind and name), so the same data
-- gives the same candidates in any database. (A group searched through its
-- HNSW index returns its n nearest rows in the index's order: of two rows at
-- exactly the same distance, the index picks; searched exactly, the key does.)
create or replace function vera.search_candidates(
    lexical_groups text[], terms text[],
    vector_groups text[], query_embedding public.vector,
    reference timestamptz, personal_group text, n integer, ef_search integer)
returns table (kind vera.item_kind, group_id text, item_id uuid, lexical_rank integer, vector_rank integer)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
set hnsw.iterative_scan = relaxed_order
set hnsw.ef_search = 40
-- Its static statements (the statistics' lookup, the vector statement's text) have plans that do
-- not depend on their values, but PL/pgSQL's default kept re-planning them for each call's values:
-- 1.1 ms of planning a search at 1,000,000 facts (pg_stat_statements, track_planning). The vector
-- statement itself is dynamic and planned for its group each call (0.4 ms).
set plan_cache_mode = force_generic_plan
as $$
declare
    readable constant text[] := vera.readable_groups();
    caller constant uuid := vera.current_principal();
    -- a passage answers at the reference instant when its episode is the
    -- latest version of its record observed by then and was not taken back,
    -- and it is published (or proposed by the caller: the contamination guard)
    passage_visible constant text := $p$
        (c.lifecycle = 'published' or (c.lifecycle = 'proposal' and c.proposed_by = $6))
        and e.status <> 'retracted' and e.observed_at <= $3
        and not exists (select from vera.episodes newer
                         where newer.group_id = e.group_id and newer.source_id = e.source_id
                           and newer.external_id = e.external_id and newer.version > e.version
                           and newer.observed_at <= $3 and newer.status <> 'retracted')$p$;
    fact_visible constant text := $f$
        vera.fact_visible(f.lifecycle, f.group_id, f.retired_at, f.valid_from, f.valid_to, $3, $4)$f$;
    fact_key constant text := 'vera.fact_order_key(f.fact_text, f.predicate, f.object_value, f.valid_from)';
    passage_key constant text := 'vera.passage_order_key(s.name, e.external_id, e.version, c.ordinal)';
    -- the searched groups in order of their kind and name ($7)
    group_order text[];
    lexical_kinds vera.item_kind[];
    lexical_ids uuid[];
    lexical_owners text[];
    lexical_scores float8[];
    lexical_keys bytea[];
    stat_kinds vera.item_kind[];
    stat_terms text[];
    stat_documents bigint[];
    stat_tokens bigint[];
    target_kind vera.item_kind;
    weights record;
    vector_kinds vera.item_kind[];
    vector_ids uuid[];
    vector_owners text[];
    vector_distances float8[];
    per_group text;
    dim integer := public.vector_dims(query_embedding);
begin
    lexical_groups := array(select g from unnest(lexical_groups) g where g = any (readable));
    vector_groups := array(select g from unnest(vector_groups) g where g = any (readable));
    group_order := array(select g.group_id from vera.groups g
                          where g.group_id = any (lexical_groups || vector_groups)
                          order by vera.group_order_key(g.kind, g.name), g.group_id);
    perform set_config('hnsw.ef_search', greatest(ef_search, 1)::text, true);

    if cardinality(terms) > 0 and cardinality(lexical_groups) > 0 then
        -- the statistics of both kinds, then each kind's exact top n; the
        -- lexical list is the n best of both by score (one IDF for both)
        select array_agg(k.kind), array_agg(st.term), array_agg(st.documents), array_agg(st.tokens)
          into stat_kinds, stat_terms, stat_documents, stat_tokens
          from unnest('{fact,passage}'::vera.item_kind[]) k(kind)
         cross join lateral vera.term_statistics(lexical_groups, k.kind, terms) st;
        lexical_kinds := '{}';
        lexical_ids := '{}';
        lexical_owners := '{}';
        lexical_scores := '{}';
        lexical_keys := '{}';
        foreach target_kind in array '{fact,passage}'::vera.item_kind[] loop
            select array_agg(w.term order by w.postings, w.term) as terms,
                   array_agg(w.postings order by w.postings, w.term) as postings,
                   array_agg(w.idf order by w.postings, w.term) as idfs,
                   array_agg(w.most_held order by w.postings, w.term) as most_held,
                   min(w.average_length) as average_length
              into weights
              from vera.bm25_weights(stat_kinds, stat_terms, stat_documents, stat_tokens) w
             where w.kind = target_kind;
            select lexical_kinds || coalesce(array_agg(target_kind), '{}'),
                   lexical_ids || coalesce(array_agg(l.item_id), '{}'),
                   lexical_owners || coalesce(array_agg(l.group_id), '{}'),
                   lexical_scores || coalesce(array_agg(l.score), '{}'),
                   lexical_keys || coalesce(array_agg(l.order_key), '{}')
              into lexical_kinds, lexical_ids, lexical_owners, lexical_scores, lexical_keys
              from vera.lexical_candidates(target_kind, lexical_groups, weights.terms, weights.postings,
                                           weights.idfs, weights.most_held, weights.average_length, reference,
                                           personal_group, caller, n, group_order) l;
        end loop;
    end if;

    if query_embedding is not null and cardinality(vector_groups) > 0 then
        -- One nearest-neighbour query per group and table, all in one
        -- statement. A group with an HNSW index of its own (a large one, see
        -- vera.missing_vector_indexes) is searched through it: the group
        -- filter is the index's predicate, so the scan returns the group's
        -- neighbours and nothing is filtered away but the few rows outside
        -- valid time (the iterative scan covers those). A small group is
        -- searched exactly: "+ 0" keeps the shared HNSW index out (its
        -- nearest rows would mostly belong to other tenants), the primary
        -- key finds the group's rows and they are sorted by distance, then
        -- by order key. A table in which the group holds no document that
        -- the statistics count gets no query (their counted documents, see
        -- 165_term_stats.sql, include every fact and passage that can
        -- answer at any instant): planning and running the passages' join
        -- for a group of facts alone cost more than its HNSW scan (at
        -- 100,000 facts 1.5 ms of planning and 5 ms of execution against
        -- 0.6 and 1.7 without it).
        select string_agg(parts.query, ' union all ')
          into per_group
          from unnest(vector_groups) g
         cross join lateral (
               select format($q$
                   (select 'fact'::vera.item_kind as kind, f.group_id, f.fact_id as item_id,
                           f.embedding::public.vector(%1$s) operator(public.<=>) $1 as distance,
                           %5$s as order_key
                      from vera.facts f
                     where f.group_id = %2$L and public.vector_dims(f.embedding) = %1$s and %3$s
                     order by (f.embedding::public.vector(%1$s) operator(public.<=>) $1) %4$s limit $5)$q$,
                   dim, g, fact_visible,
                   case when vera.group_vector_index_ready('facts', g, dim) then '' else '+ 0, 5' end,
                   fact_key) as query
                where exists (select from vera.term_statistics(array[g], 'fact', '{}') st where st.documents > 0)
               union all
               select format($q$
                   (select 'passage'::vera.item_kind as kind, c.group_id, c.chunk_id as item_id,
                           c.embedding::public.vector(%1$s) operator(public.<=>) $1 as distance, %5$s as order_key
                      from vera.chunks c
                      join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
                      join vera.sources s on s.group_id = e.group_id and s.source_id = e.source_id
                     where c.group_id = %2$L and public.vector_dims(c.embedding) = %1$s and %3$s
                     order by (c.embedding::public.vector(%1$s) operator(public.<=>) $1) %4$s limit $5)$q$,
                   dim, g, passage_visible,
                   case when vera.group_vector_index_ready('chunks', g, dim) then '' else '+ 0, 5' end,
                   passage_key)
                where exists (select from vera.term_statistics(array[g], 'passage', '{}') st where st.documents > 0)) parts;
    end if;
    if per_group is not null then
        execute format($q$
            select array_agg(h.kind), array_agg(h.item_id), array_agg(h.group_id), array_agg(h.distance)
              from (select * from (%s) every_group
                     -- the iterative scan returns rows in relaxed order: sort them exactly
                     order by distance, kind, order_key, array_position($7, group_id), item_id
                     limit $5) h$q$, per_group)
          into vector_kinds, vector_ids, vector_owners, vector_distances
          using query_embedding, vector_groups, reference, personal_group, n, caller, group_order;
    end if;

    -- Ranks from 1; equal scores share a rank (1, 1, 3): two facts that match
    -- the same words equally are equally relevant, and the blend's other
    -- signals (authority, verification, ...) decide between them, then the
    -- order of equal scores (vera.blend).
    return query
        with lexical_list as (
            select u.kind, u.group_id, u.item_id, (rank() over (order by u.score desc))::integer as position
              from unnest(lexical_kinds, lexical_owners, lexical_ids, lexical_scores, lexical_keys)
                   as u(kind, group_id, item_id, score, order_key)
             order by u.score desc, u.kind, u.order_key, array_position(group_order, u.group_id), u.item_id
             limit n),
        vector_list as (
            select u.kind, u.group_id, u.item_id, (rank() over (order by u.distance))::integer as position
              from unnest(vector_kinds, vector_owners, vector_ids, vector_distances) as u(kind, group_id, item_id, distance))
        select coalesce(l.kind, v.kind), coalesce(l.group_id, v.group_id), coalesce(l.item_id, v.item_id),
               l.position, v.position
          from lexical_list l
          full join vector_list v on v.kind = l.kind and v.item_id = l.item_id;
end
$$;
comment on function vera.search_candidates(text[], text[], text[], public.vector, timestamptz, text, integer, integer) is
    'Internal: stage 1, lexical and vector candidates with their ranks (reads past RLS, checks the groups itself)';
alter function vera.search_candidates(text[], text[], text[], public.vector, timestamptz, text, integer, integer)
    owner to vera_searcher;

-- Internal: stage 2, the blend. Relevance is the fused stage-1 score
-- min-max normalised over the batch (1 when the batch has one score); the
-- other five signals come from each item (a fact's recency counts from the
-- later of its valid_from and its last confirmation, as of the reference);
-- weights per group (key "*" for all).
--
-- Equal scores are ordered by what the data decides, the same in any
-- database: the fused score; the better of the item's two stage-1 ranks
-- (an item first in one half before one third in both); its other rank (an
-- item in both halves before one in a single half); facts before passages;
-- the item's order key (a fact's text, predicate, object and valid_from; a
-- passage's source name, record, version and ordinal; then the group's kind
-- and name). Only copies identical in all of these (the same text stated
-- twice in one group) fall to their group and item ids.
create or replace function vera.blend(items vera.search_item[], weights_by_group jsonb,
                                      reference timestamptz, k integer, during tstzrange)
returns table (
    rank integer, kind vera.item_kind, item_id uuid, group_id text, text text,
    subject text, predicate text, object text, score real,
    relevance real, authority real, verification real, recency real, feedback real, confidence real,
    period real, citation jsonb)
language sql stable
set search_path = vera, pg_temp
as $$
    with batch as (
        select i.*, min(i.fused) over () as lowest, max(i.fused) over () as highest,
               coalesce(weights_by_group -> i.group_id, weights_by_group -> '*') as weights
          from unnest(items) i
    ), signals as (
        select b.*,
               (case when b.highest > b.lowest then (b.fused - b.lowest) / (b.highest - b.lowest) else 1 end)::real
                   as relevance_signal,
               vera.verification_signal(b.verification) as verification_score,
               vera.recency_signal(
                   case when b.confirmed_at is null then b.valid_from
                        else greatest(b.valid_from, least(b.confirmed_at, reference)) end,
                   b.valid_to, reference, (b.weights ->> 'half_life')::interval) as recency_signal,
               vera.feedback_signal(b.up_votes, b.down_votes) as feedback_score,
               vera.period_signal(b.time_scope, during) as period_signal,
               -- least and greatest skip nulls: an item in one half has no other rank
               least(b.lexical_rank, b.vector_rank) as better_rank,
               case when b.lexical_rank is not null and b.vector_rank is not null
                    then greatest(b.lexical_rank, b.vector_rank) end as other_rank
          from batch b
    ), scored as (
        select s.*,
               (s.relevance_signal * (s.weights ->> 'relevance')::float8
                + s.authority * (s.weights ->> 'authority')::float8
                + s.verification_score * (s.weights ->> 'verification')::float8
                + s.recency_signal * (s.weights ->> 'recency')::float8
                + s.feedback_score * (s.weights ->> 'feedback')::float8
                + s.confidence * (s.weights ->> 'confidence')::float8
                + coalesce(s.period_signal * (s.weights ->> 'period')::float8, 0))
               -- a search that asks about no period leaves the period signal out: the other six
               -- share its weight in proportion, so their scores are what they were before it
               / case when s.period_signal is null
                      then greatest(1 - coalesce((s.weights ->> 'period')::float8, 0), 1e-9) else 1 end
               as blended
          from signals s
    ), totals as (
        -- a score below real's range is 0 (only tiny weights times tiny signals get there)
        select s.*, (case when s.blended < 1e-37 then 0 else s.blended end)::real as total from scored s
    )
    select (row_number() over (order by s.total desc, s.fused desc, s.better_rank nulls last,
                                        s.other_rank nulls last, s.kind, s.order_key, s.group_id,
                                        s.item_id))::integer,
           s.kind, s.item_id, s.group_id, s.text, s.subject, s.predicate, s.object, s.total,
           s.relevance_signal, s.authority, s.verification_score, s.recency_signal, s.feedback_score, s.confidence,
           s.period_signal, s.citation
      from totals s
     order by 1
     limit k
$$;
comment on function vera.blend(vera.search_item[], jsonb, timestamptz, integer, tstzrange) is
    'Internal: stage 2, the seven-signal blend over a batch of candidates, equal scores in a documented order';

-- Internal: when the next version of a record was observed (null while this
-- one is the latest): the end of its passages' validity.
create or replace function vera.next_version_observed(group_id text, source_id uuid, external_id text, version integer)
returns timestamptz
language sql stable
set search_path = vera, pg_temp
as $$
    select min(newer.observed_at) from vera.episodes newer
     where newer.group_id = next_version_observed.group_id and newer.source_id = next_version_observed.source_id
       and newer.external_id = next_version_observed.external_id and newer.version > next_version_observed.version
       and newer.status <> 'retracted'
$$;
comment on function vera.next_version_observed(text, uuid, text, integer) is
    'Internal: when the next (not retracted) version of a record was observed';

-- Internal: what the blend reads of each live stage-1 candidate (grading,
-- validity, last confirmation, votes, its ranks and order key, its time: a
-- fact's validity, a passage's stated scope). Text and
-- citation are left out: only the k hits that survive the blend need them
-- (vera.hit_details). Runs under RLS.
create or replace function vera.candidate_signals(
    kinds vera.item_kind[], ids uuid[], owners text[], fused double precision[],
    lexical_ranks integer[], vector_ranks integer[])
returns setof vera.search_item
language sql stable
set search_path = vera, pg_temp
as $$
    with candidate as (
        select * from unnest(kinds, ids, owners, fused, lexical_ranks, vector_ranks)
                      as u(kind, item_id, group_id, fused, lexical_rank, vector_rank)
    ), votes as (
        select fb.item_kind, fb.item_id, count(*) filter (where fb.vote > 0)::integer as up_votes,
               count(*) filter (where fb.vote < 0)::integer as down_votes
          from vera.feedback fb
          join candidate c on fb.group_id = c.group_id and fb.item_kind = c.kind and fb.item_id = c.item_id
         group by 1, 2
    )
    select row('fact'::vera.item_kind, f.fact_id, f.group_id, c.fused, null, null, null, null, f.authority,
               f.verification, f.confidence, f.valid_from, f.valid_to, coalesce(v.up_votes, 0),
               coalesce(v.down_votes, 0), null, stated.observed_at, c.lexical_rank, c.vector_rank,
               vera.fact_order_key(f.fact_text, f.predicate, f.object_value, f.valid_from)
               || vera.group_order_key(g.kind, g.name),
               tstzmultirange(tstzrange(f.valid_from, f.valid_to)))::vera.search_item
      from candidate c
      join vera.facts f on f.group_id = c.group_id and f.fact_id = c.item_id
      join vera.groups g on g.group_id = f.group_id
      left join vera.episodes stated on stated.group_id = f.group_id and stated.episode_id = f.episode_id
      left join votes v on v.item_kind = 'fact' and v.item_id = f.fact_id
     where c.kind = 'fact'
    union all
    select row('passage'::vera.item_kind, ch.chunk_id, ch.group_id, c.fused, null, null, null, null,
               vera.tier_authority(src.trust_tier), ch.verification, 1.0, ep.observed_at, next_version.observed_at,
               coalesce(v.up_votes, 0), coalesce(v.down_votes, 0), null, null, c.lexical_rank, c.vector_rank,
               vera.passage_order_key(src.name, ep.external_id, ep.version, ch.ordinal)
               || vera.group_order_key(g.kind, g.name), ch.time_scope)::vera.search_item
      from candidate c
      join vera.chunks ch on ch.group_id = c.group_id and ch.chunk_id = c.item_id
      join vera.episodes ep on ep.group_id = ch.group_id and ep.episode_id = ch.episode_id
      join vera.sources src on src.group_id = ep.group_id and src.source_id = ep.source_id
      join vera.groups g on g.group_id = ch.group_id
      left join votes v on v.item_kind = 'passage' and v.item_id = ch.chunk_id
      left join lateral vera.next_version_observed(ep.group_id, ep.source_id, ep.external_id, ep.version)
           next_version(observed_at) on true
     where c.kind = 'passage'
$$;
comment on function vera.candidate_signals(vera.item_kind[], uuid[], text[], double precision[], integer[],
                                           integer[]) is
    'Internal: blend inputs (grading, validity, votes, ranks, order key) of live candidates';

-- Internal: what a hit shows: its text, the triple of a fact (names of
-- subject and object), and its citation (source, episode, chunk or
-- evidence span, validity, tier, verification, recorded time). A proposal's
-- provenance lives in origin, since its own row sits in a u: scope. Runs
-- under RLS.
create or replace function vera.hit_details(kinds vera.item_kind[], ids uuid[], owners text[])
returns table (kind vera.item_kind, item_id uuid, text text, subject text, predicate text, object text,
               citation jsonb)
language sql stable
set search_path = vera, pg_temp
as $$
    with hit as (
        select * from unnest(kinds, ids, owners) as u(kind, item_id, group_id)
    ), fact as (
        select f.*, coalesce(f.origin ->> 'group_id', f.group_id) as provenance_group,
               coalesce(f.source_id, (f.origin ->> 'source_id')::uuid) as provenance_source,
               coalesce(f.episode_id, (f.origin ->> 'episode_id')::uuid) as provenance_episode,
               coalesce(f.chunk_id, (f.origin ->> 'chunk_id')::uuid) as provenance_chunk
          from hit h
          join vera.facts f on f.group_id = h.group_id and f.fact_id = h.item_id
         where h.kind = 'fact'
    )
    select 'fact'::vera.item_kind, f.fact_id, f.fact_text, subj.canonical_name, f.predicate,
           coalesce(obj.canonical_name, f.object_value),
           jsonb_build_object(
               'group_id', f.group_id,
               'source', case when src.source_id is not null then jsonb_build_object(
                   'source_id', src.source_id, 'name', src.name, 'kind', src.kind, 'uri', src.uri) end,
               'episode', case when ep.episode_id is not null then jsonb_build_object(
                   'episode_id', ep.episode_id, 'external_id', ep.external_id, 'version', ep.version,
                   'title', ep.title, 'uri', ep.uri) end,
               'chunk', case when ch.chunk_id is not null then jsonb_build_object(
                   'chunk_id', ch.chunk_id, 'ordinal', ch.ordinal, 'heading', ch.heading) end,
               'evidence', case when f.evidence_start is not null or f.evidence_end is not null then
                   jsonb_build_object('start', f.evidence_start, 'end', f.evidence_end,
                                      'text', substr(ch.text, f.evidence_start + 1,
                                                     f.evidence_end - f.evidence_start)) end,
               'valid_from', f.valid_from, 'valid_to', f.valid_to, 'tier', f.tier,
               'verification', f.verification, 'lifecycle', f.lifecycle, 'recorded_at', f.recorded_at,
               'proposed_for', f.proposed_for)
      from fact f
      join vera.entities subj on subj.group_id = f.group_id and subj.entity_id = f.subject_entity_id
      left join vera.entities obj on obj.group_id = f.group_id and obj.entity_id = f.object_entity_id
      left join vera.sources src on src.group_id = f.provenance_group and src.source_id = f.provenance_source
      left join vera.episodes ep on ep.group_id = f.provenance_group and ep.episode_id = f.provenance_episode
      left join vera.chunks ch on ch.group_id = f.provenance_group and ch.chunk_id = f.provenance_chunk
    union all
    select 'passage'::vera.item_kind, ch.chunk_id, ch.text, null, null, null,
           jsonb_build_object(
               'group_id', ch.group_id,
               'source', jsonb_build_object('source_id', src.source_id, 'name', src.name, 'kind', src.kind,
                                            'uri', src.uri),
               'episode', jsonb_build_object('episode_id', ep.episode_id, 'external_id', ep.external_id,
                                             'version', ep.version, 'title', ep.title, 'uri', ep.uri),
               'chunk', jsonb_build_object('chunk_id', ch.chunk_id, 'ordinal', ch.ordinal, 'heading', ch.heading),
               'evidence', case when ch.char_start is not null then
                   jsonb_build_object('start', ch.char_start, 'end', ch.char_end) end,
               'valid_from', ep.observed_at,
               'valid_to', vera.next_version_observed(ep.group_id, ep.source_id, ep.external_id, ep.version),
               'tier', src.trust_tier, 'verification', ch.verification, 'lifecycle', ch.lifecycle,
               'recorded_at', ch.created_at,
               'proposed_for', case when ch.lifecycle = 'proposal' then ch.group_id end)
      from hit h
      join vera.chunks ch on ch.group_id = h.group_id and ch.chunk_id = h.item_id
      join vera.episodes ep on ep.group_id = ch.group_id and ep.episode_id = ch.episode_id
      join vera.sources src on src.group_id = ep.group_id and src.source_id = ep.source_id
     where h.kind = 'passage'
$$;
comment on function vera.hit_details(vera.item_kind[], uuid[], text[]) is
    'Internal: text, triple and citation of hits';

-- Contract: hybrid search over the caller's readable groups (or the subset
-- named in groups), one call. Stage 1: the lexical half (the query's words,
-- ranked by BM25, vera.lexical_candidates) and the vector half (the query embedding
-- against the groups pinned to its dimension and, when given, model) each
-- return their top `candidates` (default 4 * k, at least 40) facts and passages valid at
-- as_of (default now); reciprocal rank fusion adds lexical_weight / (k_rrf +
-- rank) and vector_weight / (k_rrf + rank), ranks from 1. Stage 2 blends
-- seven signals with each group's active weights (or the weights given);
-- the seventh, period, compares each item's time (a fact's validity, a
-- passage's stated scope) with `during`, the period the query asks about,
-- and counts only when during is given (docs/time.md).
-- Returns at most k hits, best first; an empty result when nothing matches,
-- including a query of only punctuation (with a NOTICE when as_of lies
-- before everything the groups hold). Errors: 22023 (bad
-- arguments, an empty during), 42501 (a group the caller cannot read), VE001 (an embedding no
-- searched group is pinned to), VA005 (not authenticated).
create or replace function vera.search(
    query text default null,
    query_embedding public.vector default null,
    k integer default 10,
    as_of timestamptz default null,
    groups text[] default null,
    weights jsonb default null,
    k_rrf integer default 1,
    candidates integer default null,
    embedding_model text default null,
    lexical_weight double precision default 1,
    vector_weight double precision default 1,
    ef_search integer default null,
    during tstzrange default null)
returns table (
    rank integer, kind vera.item_kind, item_id uuid, group_id text, text text,
    subject text, predicate text, object text, score real,
    relevance real, authority real, verification real, recency real, feedback real, confidence real,
    period real, citation jsonb)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
    reference constant timestamptz := coalesce(as_of, now());
    terms text[];
    targets text[];
    vector_targets text[];
    n integer;
    weight_map jsonb;
    stage_one record;
    items vera.search_item[];
begin
    targets := vera.search_targets(groups);
    n := vera.check_search_arguments(query, query_embedding, k, as_of, k_rrf, candidates,
                                     lexical_weight, vector_weight, ef_search);
    if isempty(during) then
        raise exception 'during must be a period that holds an instant (it is empty)' using errcode = '22023';
    end if;
    terms := vera.query_terms(query);
    vector_targets := vera.vector_targets(targets, query_embedding, embedding_model);
    if weights is not null then
        weight_map := jsonb_build_object('*', vera.checked_weights(weights));
    end if;
    if cardinality(terms) = 0 and cardinality(vector_targets) = 0 then
        return;
    end if;

    select array_agg(c.kind) as kinds, array_agg(c.item_id) as ids, array_agg(c.group_id) as owners,
           array_agg(coalesce(lexical_weight / (k_rrf + c.lexical_rank)::float8, 0)
                     + coalesce(vector_weight / (k_rrf + c.vector_rank)::float8, 0)) as fused,
           array_agg(c.lexical_rank) as lexical_ranks, array_agg(c.vector_rank) as vector_ranks
      into stage_one
      from vera.search_candidates(targets, terms, vector_targets, query_embedding, reference,
                                  (select p.personal_group_id from vera.principals p where p.principal_id = caller),
                                  n, coalesce(ef_search, least(greatest(100, n), 1000))) c;
    if stage_one.kinds is null then
        perform vera.notice_as_of_before_knowledge(targets, as_of);
        return;
    end if;
    items := array(select i from vera.candidate_signals(stage_one.kinds, stage_one.ids, stage_one.owners,
                                                         stage_one.fused, stage_one.lexical_ranks,
                                                         stage_one.vector_ranks) i);
    if weight_map is null then
        select jsonb_object_agg(g, vera.active_weights(g)) into weight_map
          from (select distinct i.group_id as g from unnest(items) i) owners;
    end if;
    -- the blend ranks every candidate; only the k hits get their text and citation
    return query
        with ranked as (select * from vera.blend(items, weight_map, reference, k, during)),
             details as (select * from vera.hit_details((select array_agg(r.kind) from ranked r),
                                                        (select array_agg(r.item_id) from ranked r),
                                                        (select array_agg(r.group_id) from ranked r)))
        select r.rank, r.kind, r.item_id, r.group_id, d.text, d.subject, d.predicate, d.object, r.score,
               r.relevance, r.authority, r.verification, r.recency, r.feedback, r.confidence, r.period,
               d.citation
          from ranked r
          join details d on d.kind = r.kind and d.item_id = r.item_id
         order by r.rank;
end
$$;
comment on function vera.search(text, public.vector, integer, timestamptz, text[], jsonb, integer, integer, text,
                                 double precision, double precision, integer, tstzrange) is
    'Hybrid search (lexical + vector, RRF, seven-signal blend) over the caller''s readable groups, as of an instant';

-- Internal: when a search found nothing and its as_of lies before the first
-- thing VERA recorded in the searched groups, say so (a NOTICE, 01000): an
-- as_of asks what VERA knew then, not what the text speaks of (`during`).
create or replace function vera.notice_as_of_before_knowledge(targets text[], as_of timestamptz)
returns void
language plpgsql stable
set search_path = vera, pg_temp
as $$
declare
    first_episode timestamptz;
    groups_created timestamptz;
begin
    if as_of is null then
        return;
    end if;
    -- passages answer from their episode's observed_at, which a source may date back (to 1900)
    select min(e.observed_at) into first_episode from vera.episodes e where e.group_id = any (targets);
    if first_episode <= as_of then
        return;
    end if;
    -- a fact is recorded at its transaction's time, never before its group existed: an as_of
    -- before every searched group's creation precedes every fact without reading one (reading
    -- the earliest took 175-250 ms in a group of 100,000 facts); between a group's creation and
    -- its first fact the facts are looked at, the first one recorded by then ending the look
    select min(g.created_at) into groups_created from vera.groups g where g.group_id = any (targets);
    if as_of >= groups_created
       and exists (select from vera.facts f where f.group_id = any (targets) and f.recorded_at <= as_of) then
        return;
    end if;
    -- nothing known at all is an empty memory, not an early as_of
    if first_episode is null and not exists (select from vera.facts f where f.group_id = any (targets)) then
        return;
    end if;
    raise notice 'as_of % is before anything VERA knew in the searched groups: as_of is knowledge time; to ask about a period, pass during',
        as_of;
end
$$;
comment on function vera.notice_as_of_before_knowledge(text[], timestamptz) is
    'Internal: a NOTICE when an empty search''s as_of precedes everything recorded in its groups';

-- Internal: the groups a search covers: all the caller reads, or the ones
-- named, each of which it must be able to read (42501).
create or replace function vera.search_targets(groups text[])
returns text[]
language plpgsql stable
set search_path = vera, pg_temp
as $$
declare
    readable constant text[] := vera.readable_groups();
    unreadable text;
begin
    if groups is null then
        return readable;
    end if;
    if cardinality(groups) = 0 then
        raise exception 'groups must name at least one group (or be null for every readable group)'
            using errcode = '22023';
    end if;
    select g into unreadable from unnest(groups) g where g is null or not g = any (readable) limit 1;
    if found then
        raise exception 'permission denied: cannot read group %', coalesce(vera.shown(unreadable), '(null)') using errcode = '42501';
    end if;
    return array(select distinct g from unnest(groups) g);
end
$$;
comment on function vera.search_targets(text[]) is 'Internal: the groups a search covers (42501 for unreadable ones)';

-- Internal: refuses bad search arguments with 22023; returns the number of
-- candidates each half retrieves: as given, else 4 * k but at least 40.
-- Relevance is min-max normalised over the candidates, so a pool that grew
-- with k gave the same hit another score at k = 2 than at k = 5; with the
-- floor every k up to 10 (the default) searches the same pool, and a hit's
-- score is its own whatever k is asked. (A caller that passes `candidates`
-- gets scores independent of k for every k.)
create or replace function vera.check_search_arguments(
    query text, query_embedding public.vector, k integer, as_of timestamptz, k_rrf integer, candidates integer,
    lexical_weight double precision, vector_weight double precision, ef_search integer)
returns integer
language plpgsql immutable
set search_path = vera, public, pg_temp
as $$
begin
    if coalesce(btrim(query), '') = '' and query_embedding is null then
        raise exception 'search needs a query text or a query embedding' using errcode = '22023';
    end if;
    if public.vector_norm(query_embedding) = 0 then
        raise exception 'an all-zero query embedding has no direction (cosine distance is undefined)'
            using errcode = '22023';
    end if;
    if char_length(query) > 8192 then
        raise exception 'query is % characters; at most 8192', char_length(query) using errcode = '22001';
    end if;
    if k is null or k < 1 or k > 1000 then
        raise exception 'k must be between 1 and 1000, got %', coalesce(k::text, 'null') using errcode = '22023';
    end if;
    if as_of is not null and not isfinite(as_of) then
        raise exception 'as_of must be a finite timestamp, got %', as_of using errcode = '22023';
    end if;
    if k_rrf is null or k_rrf < 0 or k_rrf > 10000 then
        raise exception 'k_rrf must be between 0 and 10000, got %', coalesce(k_rrf::text, 'null') using errcode = '22023';
    end if;
    if candidates is not null and (candidates < 1 or candidates > 10000) then
        raise exception 'candidates must be between 1 and 10000, got %', candidates using errcode = '22023';
    end if;
    -- "between" also refuses NaN, which PostgreSQL sorts above every number; a positive weight below
    -- 0.000001 would underflow float8 in the fusion (5e-324 / 2)
    if not coalesce((lexical_weight = 0 or lexical_weight between 0.000001 and 1000000)
                    and (vector_weight = 0 or vector_weight between 0.000001 and 1000000), false)
       or lexical_weight + vector_weight = 0 then
        raise exception 'lexical_weight and vector_weight must each be 0 or from 0.000001 to 1000000, and not both 0'
            using errcode = '22023';
    end if;
    if ef_search is not null and (ef_search < 1 or ef_search > 1000) then
        raise exception 'ef_search must be between 1 and 1000, got %', ef_search using errcode = '22023';
    end if;
    return coalesce(candidates, greatest(4 * k, 40));
end
$$;
comment on function vera.check_search_arguments(text, public.vector, integer, timestamptz, integer, integer,
                                                 double precision, double precision, integer) is
    'Internal: checks search arguments (22023, 22001); returns the candidates per half';

-- Internal: the searched groups whose pinned embedding matches the query
-- embedding (dimension, and model when named). None when no embedding is
-- given or no searched group holds vectors; VE001 when some do, but none
-- in this dimension and model.
create or replace function vera.vector_targets(targets text[], query_embedding public.vector, embedding_model text)
returns text[]
language plpgsql stable
set search_path = vera, public, pg_temp
-- as vera.search_candidates: a plan that does not depend on the values, re-planned each call otherwise
set plan_cache_mode = force_generic_plan
as $$
declare
    dim constant integer := public.vector_dims(query_embedding);
    matching text[];
    pins text;
begin
    if query_embedding is null then
        return '{}';
    end if;
    select array_agg(g.group_id) filter (where g.embedding_dim = dim
                                           and (vector_targets.embedding_model is null
                                                or g.embedding_model = vector_targets.embedding_model)),
           string_agg(distinct format('%s (%s dimensions)', g.embedding_model, g.embedding_dim), ', ')
      into matching, pins
      from vera.groups g
     where g.group_id = any (targets) and g.embedding_dim is not null;
    if pins is not null and matching is null then
        raise exception 'query embedding is % (% dimensions), but the groups searched are pinned to %',
            coalesce(vera.shown(vector_targets.embedding_model), 'of no named model'), dim, pins using errcode = 'VE001';
    end if;
    return coalesce(matching, '{}');
end
$$;
comment on function vera.vector_targets(text[], public.vector, text) is
    'Internal: searched groups pinned to the query embedding''s dimension (and model); VE001 when none is';

reset role;
