-- The read path: vera.search, one call. Stage 1 finds candidates with a
-- lexical half (GIN full text, 177_lexical_candidates.sql) and a vector half
-- (HNSW, cosine, over the groups of 176_vector_targets.sql), both in
-- 179_search_candidates.sql, and fuses their ranks (RRF); stage 2 blends
-- seven signals into the score (178_blend.sql). Snapshot search
-- (200_snapshots.sql) reuses stage 2 as it is. This file: the entry, its
-- argument checks, and what a hit shows (vera.hit_details).
set role vera_owner;

-- Contract: hybrid search over the caller's readable groups (or the subset
-- named in groups), one call. Stage 1: the lexical half (the query's words,
-- ranked by BM25, vera.lexical_candidates) and the vector half (the query embedding
-- against the groups pinned to its dimension and, when given, model) each
-- return their top `candidates` (default 4 * k, at least 40) facts and passages valid at
-- as_of (default now). Each candidate, whichever half found it, gets its
-- own lexical match and similarity, and from them its match confidence
-- (171_match_confidence.sql), an absolute probability that it answers;
-- lexical_weight and vector_weight scale each half's part of it (0 leaves a
-- half out; other values than 1 move it off its calibration). A group
-- whose pinned model does not read the query's language
-- (vera.model_reads: a Vietnamese query, a model of English) is searched
-- by the query's words alone, since vera-search/8. k_rrf is
-- checked but no longer used: since vera-search/7 relevance is the match
-- confidence, not a fusion of ranks. Stage 2 blends
-- seven signals with each group's active weights (or the weights given);
-- the seventh, period, compares each item's time (a fact's validity, a
-- passage's stated scope) with `during`, the period the query asks about,
-- and counts only when during is given (docs/time.md).
-- Each hit shows its match confidence and whether it reaches
-- vera.good_match_threshold() (good_match), so that a caller can say that
-- nothing known answers. Returns at most k hits, best first; an empty result when nothing matches,
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
returns setof vera.search_hit
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
-- Planned once a session, as stage 1 is (179_search_candidates.sql): PL/pgSQL's default planned
-- its statements anew for each call's values (the call of stage 1 alone ~0.3 ms of a search,
-- pg_stat_statements), and the setting holds for the functions it calls, so stage 2's SQL functions
-- are planned once too (hybrid 17.0 -> 16.1 ms at p50 at 1,000,000 passages, docs/benchmarks.md). A
-- generic plan is costed for the tables' statistics, not the call's arrays, and PostgreSQL makes it
-- again when those statistics are updated (autovacuum's analyze of a table that grew).
set plan_cache_mode = force_generic_plan
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
    -- a group whose pinned model does not read the query's language is searched by its words
    -- alone, as the clients search it (172_query_language.sql)
    vector_targets := array(select g.group_id from vera.groups g
                             where g.group_id = any (vector_targets)
                               and vera.model_reads(g.embedding_model, query));
    if weights is not null then
        weight_map := jsonb_build_object('*', vera.checked_weights(weights));
    end if;
    if cardinality(terms) = 0 and cardinality(vector_targets) = 0 then
        return;
    end if;

    select array_agg(c.kind) as kinds, array_agg(c.item_id) as ids, array_agg(c.group_id) as owners,
           array_agg(c.lexical_match) as lexical_matches, array_agg(c.similarity) as similarities,
           array_agg(vera.match_confidence(c.lexical_match, c.similarity, lexical_weight, vector_weight)) as matches
      into stage_one
      from vera.search_candidates(targets, terms, vector_targets, query_embedding, reference,
                                  (select p.personal_group_id from vera.principals p where p.principal_id = caller),
                                  n, coalesce(ef_search, least(greatest(100, n), 1000))) c;
    if stage_one.kinds is null then
        perform vera.notice_as_of_before_knowledge(targets, as_of);
        return;
    end if;
    items := array(select i from vera.candidate_signals(stage_one.kinds, stage_one.ids, stage_one.owners,
                                                         stage_one.lexical_matches, stage_one.similarities,
                                                         stage_one.matches) i);
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
               r.match_confidence, r.good_match, r.lexical_match, r.similarity, r.relevance, r.authority, r.verification, r.recency, r.feedback, r.confidence, r.period,
               d.citation
          from ranked r
          join details d on d.kind = r.kind and d.item_id = r.item_id
         order by r.rank;
end
$$;
comment on function vera.search(text, public.vector, integer, timestamptz, text[], jsonb, integer, integer, text,
                                 double precision, double precision, integer, tstzrange) is
    'Hybrid search (lexical + vector, RRF, seven-signal blend) over the caller''s readable groups, as of an instant';
grant execute on function vera.search(text, public.vector, integer, timestamptz, text[], jsonb, integer, integer,
                                      text, double precision, double precision, integer, tstzrange)
    to vera_app, vera_worker, vera_gateway;

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
    -- passages answer from their episode's observed_at, which a source may date back (as far as 4714 BC: vera.is_world_time)
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
-- A hit's score is its own (its match confidence does not depend on the
-- pool); the floor keeps every k up to 10 (the default) choosing among the
-- same candidates.
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
               'valid_to', next_version.observed_at,
               'tier', src.trust_tier, 'verification', ch.verification, 'lifecycle', ch.lifecycle,
               'recorded_at', ch.created_at,
               'proposed_for', case when ch.lifecycle = 'proposal' then ch.group_id end)
      from hit h
      join vera.chunks ch on ch.group_id = h.group_id and ch.chunk_id = h.item_id
      join vera.episodes ep on ep.group_id = ch.group_id and ep.episode_id = ch.episode_id
      join vera.sources src on src.group_id = ep.group_id and src.source_id = ep.source_id
      -- vera.next_version_observed written out, as vera.candidate_signals does: a call per hit (its SET
      -- clause keeps it from being inlined) cost more than the index probe itself
      left join lateral (select min(newer.observed_at) as observed_at
                           from vera.episodes newer
                          where newer.group_id = ep.group_id and newer.source_id = ep.source_id
                            and newer.external_id = ep.external_id and newer.version > ep.version
                            and newer.status <> 'retracted') next_version on true
     where h.kind = 'passage'
$$;
comment on function vera.hit_details(vera.item_kind[], uuid[], text[]) is
    'Internal: text, triple and citation of hits';

reset role;
