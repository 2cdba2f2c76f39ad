-- Stage 1 of search over the live tables: the lexical half
-- (vera.lexical_candidates, 177_lexical_candidates.sql) and the vector half
-- (HNSW, cosine, one statement per group) each give their list, with ranks
-- for the fusion (RRF) in vera.search (180_search.sql).
set role vera_owner;

-- pgvector defines its settings (hnsw.*) when its library loads; load it now
-- so that the SET clauses below are checked as those settings rather than as
-- unknown placeholders, which only a superuser may set.
do $load$ begin perform '[1]'::public.vector; end $load$;

-- Internal: stage 1 over the live tables. Returns each candidate with its
-- rank in the lexical and in the vector list (null when absent from one),
-- and its own two measures, whichever list it came from: its lexical match
-- (its BM25 score over the query's IDF mass, vera.lexical_match; null when
-- no word was searched) and its cosine similarity to the query embedding
-- (null without one, or for an item without a vector of its group's pin).
-- The confidence of a hit (171_match_confidence.sql) is read from these, so
-- they depend on the item and the groups' statistics alone, never on which
-- other items made the lists.
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
returns table (kind vera.item_kind, group_id text, item_id uuid, lexical_rank integer, vector_rank integer,
               lexical_match double precision, similarity double precision)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
set hnsw.iterative_scan = relaxed_order
set hnsw.ef_search = 40
-- and every planner enable_* flag on (250_pinned_settings.sql)
-- Its static statements (the statistics' lookup, the vector statement's text) have plans that do
-- not depend on their values, but PL/pgSQL's default kept re-planning them for each call's values:
-- 1.1 ms of planning a search at 1,000,000 facts (pg_stat_statements, track_planning). The vector
-- statement itself is dynamic and planned for its group each call (0.4 ms).
set plan_cache_mode = force_generic_plan
as $$
declare
    readable constant text[] := vera.readable_groups();
    caller constant uuid := vera.current_principal();
    -- a passage answers at the reference instant when it is published (or
    -- proposed by the caller: the contamination guard) and current: its
    -- episode is the latest version of its record observed by then and was
    -- not taken back (the static statement below says it again, for the
    -- passages a scan returns raw)
    passage_published constant text := $p$
        (c.lifecycle = 'published' or (c.lifecycle = 'proposal' and c.proposed_by = $6))$p$;
    episode_current constant text := $p$
        e.status <> 'retracted' and e.observed_at <= $3
        and not exists (select from vera.episodes newer
                         where newer.group_id = e.group_id and newer.source_id = e.source_id
                           and newer.external_id = e.external_id and newer.version > e.version
                           and newer.observed_at <= $3 and newer.status <> 'retracted')$p$;
    fact_visible constant text := $f$
        vera.fact_visible(f.lifecycle, f.group_id, f.retired_at, f.valid_from, f.valid_to, $3, $4)$f$;
    fact_key constant text := 'vera.fact_order_key(f.fact_text, f.predicate, f.object_value, f.valid_from)';
    -- the searched groups in order of their kind and name
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
    -- per kind: the terms, their IDFs and the average length that BM25 scores facts and passages with
    fact_terms text[];
    fact_idfs double precision[];
    fact_length double precision;
    passage_terms text[];
    passage_idfs double precision[];
    passage_length double precision;
    idf_mass double precision;
    vector_kinds vera.item_kind[];
    vector_ids uuid[];
    vector_owners text[];
    vector_distances float8[];
    -- the vector statement's text, and each large group's passage scan (to run again when short)
    per_group text;
    scans text[];
    scanned_groups text[];
    scan_limit integer;
    short_groups text[];
    fewest_kept bigint;
    found_kinds vera.item_kind[];
    found_groups text[];
    found_ids uuid[];
    found_distances float8[];
    found_keys bytea[];
    found_episodes uuid[];
    found_ordinals integer[];
    found_positions bigint[];
    -- the vector statements' rows: a fact or a small group's passage, complete (position null), or
    -- a large group's passage with its episode, not yet checked for being current
    raw_kinds vera.item_kind[] := '{}';
    raw_groups text[] := '{}';
    raw_ids uuid[] := '{}';
    raw_distances float8[] := '{}';
    raw_keys bytea[] := '{}';
    raw_episodes uuid[] := '{}';
    raw_ordinals integer[] := '{}';
    raw_positions bigint[] := '{}';
    dim integer := public.vector_dims(query_embedding);
begin
    lexical_groups := array(select g from unnest(lexical_groups) g where g = any (readable));
    vector_groups := array(select g from unnest(vector_groups) g where g = any (readable));
    group_order := array(select g.group_id from vera.groups g
                          where g.group_id = any (lexical_groups || vector_groups)
                          order by vera.group_order_key(g.kind, g.name), g.group_id);
    perform set_config('hnsw.ef_search', greatest(ef_search, 1)::text, true);

    if cardinality(terms) > 0 and cardinality(lexical_groups) > 0 then
        -- the statistics of both kinds, then each kind's top n (exact unless
        -- a round of a frequent word is cut, 177_lexical_candidates.sql); the
        -- lexical list is the n best of both by score (one IDF for both)
        select array_agg(k.kind), array_agg(st.term), array_agg(st.documents), array_agg(st.tokens)
          into stat_kinds, stat_terms, stat_documents, stat_tokens
          from unnest('{fact,passage}'::vera.item_kind[]) k(kind)
         cross join lateral vera.term_statistics(lexical_groups, k.kind, terms) st;
        idf_mass := vera.query_idf_mass(terms, stat_terms, stat_documents);
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
            if target_kind = 'fact' then
                fact_terms := weights.terms;
                fact_idfs := weights.idfs;
                fact_length := weights.average_length;
            else
                passage_terms := weights.terms;
                passage_idfs := weights.idfs;
                passage_length := weights.average_length;
            end if;
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
        -- searched exactly: its facts sorted by distance, then by order key
        -- ("+ 0" keeps any index out of the sort); its passages as the
        -- comment below says. A table in which the group holds no document that
        -- the statistics count gets no query (their counted documents, see
        -- 165_term_stats.sql, include every fact and passage that can
        -- answer at any instant): planning and running the passages' join
        -- for a group of facts alone cost more than its HNSW scan (at
        -- 100,000 facts 1.5 ms of planning and 5 ms of execution against
        -- 0.6 and 1.7 without it).
        --
        -- A large group's passages come back raw: the scan's first rows that
        -- are published, in its order (position), with their episode, not yet
        -- checked for being current. The static statement below keeps the
        -- first n of them that are. This statement is planned for every
        -- search, and joining the episodes, sources and newer versions here
        -- tripled its planning (0.21 -> 0.81 ms at 100,000 passages); the
        -- static one is planned once a session. A scan's order does not depend
        -- on its limit, so when fewer than n were current (older versions of
        -- an edited record lie near the current one), scanning again with a
        -- larger limit gives the same first n as one scan filtered by the
        -- joins would.
        select array_agg(parts.group_id) filter (where parts.raw),
               array_agg(parts.query) filter (where parts.raw),
               string_agg(parts.query, ' union all ')
          into scanned_groups, scans, per_group
          from unnest(vector_groups) g
         cross join lateral (
               select g as group_id, 'fact'::vera.item_kind as kind, false as raw, format($q$
                   (select 'fact'::vera.item_kind as kind, f.group_id, f.fact_id as item_id,
                           f.embedding::public.vector(%1$s) operator(public.<=>) $1 as distance,
                           %5$s as order_key, null::uuid as episode_id, null::integer as ordinal,
                           null::bigint as position
                      from vera.facts f
                     where f.group_id = %2$L and public.vector_dims(f.embedding) = %1$s and %3$s
                     order by (f.embedding::public.vector(%1$s) operator(public.<=>) $1) %4$s limit $5)$q$,
                   dim, g, fact_visible,
                   case when vera.group_vector_index_ready('facts', g, dim) then '' else '+ 0, 5' end,
                   fact_key) as query
                where exists (select from vera.term_statistics(array[g], 'fact', '{}') st where st.documents > 0)
               union all
               select g, 'passage', ready, case when ready then format($q$
                   (select 'passage'::vera.item_kind as kind, r.group_id, r.chunk_id as item_id, r.distance,
                           -- numbered as the scan returns them
                           null::bytea as order_key, r.episode_id, r.ordinal, row_number() over () as position
                      from (select c.group_id, c.chunk_id, c.episode_id, c.ordinal,
                                   c.embedding::public.vector(%1$s) operator(public.<=>) $1 as distance
                              from vera.chunks c
                             where c.group_id = %2$L and public.vector_dims(c.embedding) = %1$s and %3$s
                             order by c.embedding::public.vector(%1$s) operator(public.<=>) $1 limit $7) r)$q$,
                   dim, g, passage_published)
               else
                   -- exactly: the group's passages sorted by distance first (the fenced subqueries
                   -- keep any index out of the sort), then checked for being current in that order
                   -- until n are, with those tying with the n-th; the static statement below sorts
                   -- them by order key. Joining every passage to its episode before the sort checked
                   -- all of them: a group of 2,000 passages took 13.2 ms that way, 7.8 this way. (Its
                   -- passages are not returned raw as a large group's are: when fewer than n of the
                   -- nearest are current, another scan would sort the whole group again.)
                   format($q$
                   (select 'passage'::vera.item_kind as kind, c.group_id, c.chunk_id as item_id, c.distance,
                           vera.passage_order_key(s.name, e.external_id, e.version, c.ordinal) as order_key,
                           null::uuid as episode_id, null::integer as ordinal, null::bigint as position
                      from (select m.* from (select c.group_id, c.chunk_id, c.episode_id, c.ordinal,
                                                    c.embedding::public.vector(%1$s) operator(public.<=>) $1 as distance
                                               from vera.chunks c
                                              where c.group_id = %2$L and public.vector_dims(c.embedding) = %1$s
                                                and %3$s
                                             offset 0) m
                             order by m.distance offset 0) c
                      join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
                      join vera.sources s on s.group_id = e.group_id and s.source_id = e.source_id
                     where %4$s
                     order by c.distance
                     fetch first ($5) rows with ties)$q$,
                   dim, g, passage_published, episode_current) end
                 from (select vera.group_vector_index_ready('chunks', g, dim) as ready) index_state
                where exists (select from vera.term_statistics(array[g], 'passage', '{}') st where st.documents > 0)) parts;
    end if;
    -- a first scan reads n rows: ef_search (by default at least n, see
    -- vera.search) keeps that many in its first pass over the graph
    scan_limit := n;
    while per_group is not null loop
        execute format($q$
            select array_agg(h.kind), array_agg(h.group_id), array_agg(h.item_id), array_agg(h.distance),
                   array_agg(h.order_key), array_agg(h.episode_id), array_agg(h.ordinal), array_agg(h.position)
              from (%s) h$q$, per_group)
          into found_kinds, found_groups, found_ids, found_distances, found_keys, found_episodes, found_ordinals,
               found_positions
          using query_embedding, vector_groups, reference, personal_group, n, caller, scan_limit;
        -- a group scanned again replaces its earlier rows
        select coalesce(array_agg(u.kind), '{}'), coalesce(array_agg(u.group_id), '{}'),
               coalesce(array_agg(u.item_id), '{}'), coalesce(array_agg(u.distance), '{}'),
               coalesce(array_agg(u.order_key), '{}'), coalesce(array_agg(u.episode_id), '{}'),
               coalesce(array_agg(u.ordinal), '{}'), coalesce(array_agg(u.position), '{}')
          into raw_kinds, raw_groups, raw_ids, raw_distances, raw_keys, raw_episodes, raw_ordinals, raw_positions
          from (select *
                  from unnest(raw_kinds, raw_groups, raw_ids, raw_distances, raw_keys, raw_episodes, raw_ordinals,
                              raw_positions) as kept(kind, group_id, item_id, distance, order_key, episode_id,
                                                     ordinal, position)
                 where kept.position is null or kept.group_id <> all (short_groups)
                union all
                select *
                  from unnest(found_kinds, found_groups, found_ids, found_distances, found_keys, found_episodes,
                              found_ordinals, found_positions)) u;
        -- Kept: the first n current passages of each group's scan (current as
        -- episode_current says); listed: the n nearest of every row. A group
        -- whose scan filled its limit and kept fewer than n is scanned again.
        with raw as (
            select *
              from unnest(raw_kinds, raw_groups, raw_ids, raw_distances, raw_keys, raw_episodes, raw_ordinals,
                          raw_positions) as u(kind, group_id, item_id, distance, order_key, episode_id, ordinal,
                                              position)),
        current_passage as materialized (
            -- each passage's episode and source looked up by key (the fenced
            -- lateral subqueries): the generic plan, which cannot count the
            -- passages, once joined the group's sources first and read every
            -- episode of each (9.6 ms a search on 2,002 passages of 886 records)
            select r.kind, r.group_id, r.item_id, r.distance,
                   vera.passage_order_key(s.name, e.external_id, e.version, r.ordinal) as order_key,
                   row_number() over (partition by r.group_id order by r.position) as nth
              from raw r
             cross join lateral (
                   select e.source_id, e.external_id, e.version
                     from vera.episodes e
                    where e.group_id = r.group_id and e.episode_id = r.episode_id
                      and e.status <> 'retracted' and e.observed_at <= reference
                      and not exists (select from vera.episodes newer
                                       where newer.group_id = e.group_id and newer.source_id = e.source_id
                                         and newer.external_id = e.external_id and newer.version > e.version
                                         and newer.observed_at <= reference and newer.status <> 'retracted')
                   offset 0) e
             cross join lateral (
                   select s.name from vera.sources s where s.group_id = r.group_id and s.source_id = e.source_id
                   offset 0) s
             where r.position is not null),
        every_row as (
            select r.kind, r.group_id, r.item_id, r.distance, r.order_key from raw r where r.position is null
            union all
            select p.kind, p.group_id, p.item_id, p.distance, p.order_key from current_passage p where p.nth <= n),
        short as (
            select r.group_id, r.kept
              from (select u.group_id, count(*) as scanned,
                           (select count(*) from current_passage p where p.group_id = u.group_id) as kept
                      from unnest(raw_groups, raw_positions) as u(group_id, position)
                     where u.position is not null group by u.group_id) r
             where r.scanned >= scan_limit and r.kept < n)
        select array_agg(l.kind), array_agg(l.item_id), array_agg(l.group_id), array_agg(l.distance),
               (select array_agg(s.group_id) from short s), (select min(s.kept) from short s)
          into vector_kinds, vector_ids, vector_owners, vector_distances, short_groups, fewest_kept
          from (select * from every_row w
                 -- the iterative scan returns rows in relaxed order: sort them exactly
                 order by w.distance, w.kind, w.order_key, array_position(group_order, w.group_id), w.item_id
                 limit n) l;
        exit when short_groups is null;
        -- enough rows for n current ones at the share of current rows that
        -- the short group with the fewest had, and a fifth more; at most
        -- 4.8 times as many (when it kept a fourth of n or fewer)
        scan_limit := least(ceil(scan_limit * 1.2 * n / greatest(coalesce(fewest_kept, 0), n / 4.0)),
                            2147483647)::integer;
        per_group := (select string_agg(u.query, ' union all ')
                        from unnest(scanned_groups, scans) as u(group_id, query) where u.group_id = any (short_groups));
    end loop;

    -- Ranks from 1; equal scores share a rank (1, 1, 3): two facts that match
    -- the same words equally are equally relevant, and the blend's other
    -- signals (authority, verification, ...) decide between them, then the
    -- order of equal scores (vera.blend).
    return query
        with lexical_list as (
            select u.kind, u.group_id, u.item_id, u.score,
                   (rank() over (order by u.score desc))::integer as position
              from unnest(lexical_kinds, lexical_owners, lexical_ids, lexical_scores, lexical_keys)
                   as u(kind, group_id, item_id, score, order_key)
             order by u.score desc, u.kind, u.order_key, array_position(group_order, u.group_id), u.item_id
             limit n),
        vector_list as (
            select u.kind, u.group_id, u.item_id, u.distance, (rank() over (order by u.distance))::integer as position
              from unnest(vector_kinds, vector_owners, vector_ids, vector_distances) as u(kind, group_id, item_id, distance)),
        listed as (
            -- a candidate's BM25 score as its lexical round computed it and its distance as the vector
            -- half measured it: the same statements on the same row and arguments as the ones below,
            -- so the same values to the last bit
            select coalesce(l.kind, v.kind) as kind, coalesce(l.group_id, v.group_id) as group_id,
                   coalesce(l.item_id, v.item_id) as item_id, l.position as lexical_position,
                   v.position as vector_position, l.score as listed_score, v.distance as listed_distance
              from lexical_list l
              full join vector_list v on v.kind = l.kind and v.item_id = l.item_id),
        measuring as (
            -- what a half did not measure of a candidate found by the other: its score when words were
            -- searched, its similarity when it lies in a group searched by vector
            select li.*, (idf_mass is not null and li.listed_score is null) as needs_score,
                   (query_embedding is not null and li.group_id = any (vector_groups) and li.listed_distance is null)
                       as needs_similarity
              from listed li),
        stored as (
            -- those candidates' words and vector, read from their rows (a passage's stored length too,
            -- vera.chunks.words); a candidate both halves measured needs no read
            select m.*, f.tsv, null::integer as words, f.embedding
              from measuring m join vera.facts f on f.group_id = m.group_id and f.fact_id = m.item_id
             where m.kind = 'fact' and (m.needs_score or m.needs_similarity)
            union all
            select m.*, c.tsv, c.words, c.embedding
              from measuring m join vera.chunks c on c.group_id = m.group_id and c.chunk_id = m.item_id
             where m.kind = 'passage' and (m.needs_score or m.needs_similarity)
            union all
            select m.*, null::tsvector, null::integer, null::public.vector
              from measuring m
             where not (m.needs_score or m.needs_similarity))
        select s.kind, s.group_id, s.item_id, s.lexical_position, s.vector_position,
               vera.lexical_match(
                   case when s.listed_score is not null and idf_mass is not null then s.listed_score
                        -- a passage scored with its stored length (the same value to the last bit: the same
                        -- statement, the same arguments, so the same plan and order of the sum)
                        when s.kind = 'passage' then
                       (select b.score
                          from vera.bm25_passage_score(s.tsv, s.words, passage_terms, passage_idfs, passage_length) b
                         where idf_mass is not null)
                   else -- a fact
                       (select b.score
                          from vera.bm25_document_score(s.kind, s.tsv, fact_terms, fact_idfs, fact_length) b
                         where idf_mass is not null)
                   end,
                   idf_mass),
               case when s.listed_distance is not null then 1 - s.listed_distance
                    when query_embedding is not null and s.group_id = any (vector_groups)
                         and public.vector_dims(s.embedding) = dim
                    then 1 - (s.embedding operator(public.<=>) query_embedding) end
          from stored s;
end
$$;
comment on function vera.search_candidates(text[], text[], text[], public.vector, timestamptz, text, integer, integer) is
    'Internal: stage 1, lexical and vector candidates with their ranks (reads past RLS, checks the groups itself)';
alter function vera.search_candidates(text[], text[], text[], public.vector, timestamptz, text, integer, integer)
    owner to vera_searcher;
-- vera.search (a definer: vera_owner) calls it; vera_searcher owns it
grant execute on function vera.search_candidates(text[], text[], text[], public.vector, timestamptz, text, integer,
                                                 integer)
    to vera_owner;

reset role;
