-- Stage 2 of search: what the blend reads of each candidate
-- (vera.candidate_signals) and the seven-signal blend itself (vera.blend),
-- which ranks them. vera.search (180_search.sql) and snapshot search
-- (200_snapshots.sql, over the snapshot's copies) share it.
set role vera_owner;

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
-- validity, last confirmation, votes, its order key, its time: a fact's
-- validity, a passage's stated scope, and its own measures: lexical match,
-- similarity and the match confidence read from them). Text and
-- citation are left out: only the k hits that survive the blend need them
-- (vera.hit_details). Runs under RLS.
create or replace function vera.candidate_signals(
    kinds vera.item_kind[], ids uuid[], owners text[], lexical_matches double precision[],
    similarities double precision[], matches real[])
returns setof vera.search_item
language sql stable
set search_path = vera, pg_temp
as $$
    with candidate as (
        select * from unnest(kinds, ids, owners, lexical_matches, similarities, matches)
                      as u(kind, item_id, group_id, lexical_match, similarity, match)
    ), votes as (
        select fb.item_kind, fb.item_id, count(*) filter (where fb.vote > 0)::integer as up_votes,
               count(*) filter (where fb.vote < 0)::integer as down_votes
          from vera.feedback fb
          join candidate c on fb.group_id = c.group_id and fb.item_kind = c.kind and fb.item_id = c.item_id
         group by 1, 2
    )
    select row('fact'::vera.item_kind, f.fact_id, f.group_id, null, null, null, null, f.authority,
               f.verification, f.confidence, f.valid_from, f.valid_to, coalesce(v.up_votes, 0),
               coalesce(v.down_votes, 0), null, stated.observed_at,
               vera.fact_order_key(f.fact_text, f.predicate, f.object_value, f.valid_from)
               || vera.group_order_key(g.kind, g.name),
               tstzmultirange(tstzrange(f.valid_from, f.valid_to)), c.lexical_match, c.similarity,
               c.match)::vera.search_item
      from candidate c
      join vera.facts f on f.group_id = c.group_id and f.fact_id = c.item_id
      join vera.groups g on g.group_id = f.group_id
      left join vera.episodes stated on stated.group_id = f.group_id and stated.episode_id = f.episode_id
      left join votes v on v.item_kind = 'fact' and v.item_id = f.fact_id
     where c.kind = 'fact'
    union all
    select row('passage'::vera.item_kind, ch.chunk_id, ch.group_id, null, null, null, null,
               vera.tier_authority(src.trust_tier), ch.verification, 1.0, ep.observed_at, next_version.observed_at,
               coalesce(v.up_votes, 0), coalesce(v.down_votes, 0), null, null,
               vera.passage_order_key(src.name, ep.external_id, ep.version, ch.ordinal)
               || vera.group_order_key(g.kind, g.name), ch.time_scope, c.lexical_match, c.similarity,
               c.match)::vera.search_item
      from candidate c
      join vera.chunks ch on ch.group_id = c.group_id and ch.chunk_id = c.item_id
      join vera.episodes ep on ep.group_id = ch.group_id and ep.episode_id = ch.episode_id
      join vera.sources src on src.group_id = ep.group_id and src.source_id = ep.source_id
      join vera.groups g on g.group_id = ch.group_id
      left join votes v on v.item_kind = 'passage' and v.item_id = ch.chunk_id
      -- vera.next_version_observed, written out: a call per passage (its SET clause keeps it from being
      -- inlined) cost more than the index probe itself
      left join lateral (select min(newer.observed_at) as observed_at
                           from vera.episodes newer
                          where newer.group_id = ep.group_id and newer.source_id = ep.source_id
                            and newer.external_id = ep.external_id and newer.version > ep.version
                            and newer.status <> 'retracted') next_version on true
     where c.kind = 'passage'
$$;
comment on function vera.candidate_signals(vera.item_kind[], uuid[], text[], double precision[],
                                           double precision[], real[]) is
    'Internal: blend inputs (grading, validity, votes, own measures, order key) of live candidates';

-- Internal: stage 2, the blend. Relevance is the item's own match
-- confidence (vera.match_confidence: absolute, calibrated), never a
-- normalisation over the batch, so the order of two items changes only
-- through their own signals, never because a third one entered the list
-- (pg_tests/search/test_stable_order.py); the other signals come from each
-- item too (a fact's recency counts from the later of its valid_from and
-- its last confirmation, as of the reference); weights per group (key "*"
-- for all).
--
-- Equal scores are ordered by the item's own measures, then by what the
-- data decides, the same in any database: the match confidence; the
-- lexical match; the similarity (an item a half did not measure after one
-- it did); facts before passages; the item's order key (a fact's text,
-- predicate, object and valid_from; a passage's source name, record,
-- version and ordinal; then the group's kind and name). Only copies
-- identical in all of these (the same text stated twice in one group) fall
-- to their group and item ids.
create or replace function vera.blend(items vera.search_item[], weights_by_group jsonb,
                                      reference timestamptz, k integer, during tstzrange)
returns setof vera.search_hit
language sql stable
set search_path = vera, pg_temp
as $$
    with batch as materialized (
        select i.* from unnest(items) i
    ), weight_sets as materialized (
        -- each group's weights read out of the JSON once, not once per candidate (the same
        -- expressions, so the same values)
        select g.group_id, (w.weights ->> 'relevance')::float8 as relevance,
               (w.weights ->> 'authority')::float8 as authority,
               (w.weights ->> 'verification')::float8 as verification,
               (w.weights ->> 'recency')::float8 as recency, (w.weights ->> 'feedback')::float8 as feedback,
               (w.weights ->> 'confidence')::float8 as confidence, (w.weights ->> 'period')::float8 as period,
               (w.weights ->> 'half_life')::interval as half_life
          from (select distinct b.group_id from batch b) g
         cross join lateral (select coalesce(weights_by_group -> g.group_id, weights_by_group -> '*') as weights) w
    ), signals as (
        select b.*,
               coalesce(b.match, 0)::real as relevance_signal,
               vera.verification_signal(b.verification) as verification_score,
               vera.recency_signal(
                   case when b.confirmed_at is null then b.valid_from
                        else greatest(b.valid_from, least(b.confirmed_at, reference)) end,
                   b.valid_to, reference, w.half_life) as recency_signal,
               vera.feedback_signal(b.up_votes, b.down_votes) as feedback_score,
               vera.period_signal(b.time_scope, during) as period_signal,
               w.relevance as w_relevance, w.authority as w_authority, w.verification as w_verification,
               w.recency as w_recency, w.feedback as w_feedback, w.confidence as w_confidence,
               w.period as w_period
          from batch b
          join weight_sets w on w.group_id is not distinct from b.group_id
    ), scored as (
        select s.*,
               (s.relevance_signal * s.w_relevance
                + s.authority * s.w_authority
                + s.verification_score * s.w_verification
                + s.recency_signal * s.w_recency
                + s.feedback_score * s.w_feedback
                + s.confidence * s.w_confidence
                + coalesce(s.period_signal * s.w_period, 0))
               -- a search that asks about no period leaves the period signal out: the other six
               -- share its weight in proportion, so their scores are what they were before it
               / case when s.period_signal is null
                      then greatest(1 - coalesce(s.w_period, 0), 1e-9) else 1 end
               as blended
          from signals s
    ), totals as (
        -- a score below real's range is 0 (only tiny weights times tiny signals get there)
        select s.*, (case when s.blended < 1e-37 then 0 else s.blended end)::real as total from scored s
    )
    select (row_number() over (order by s.total desc, s.relevance_signal desc, s.lexical_match desc nulls last,
                                        s.similarity desc nulls last, s.kind, s.order_key, s.group_id,
                                        s.item_id))::integer,
           s.kind, s.item_id, s.group_id, s.text, s.subject, s.predicate, s.object, s.total,
           s.relevance_signal, s.relevance_signal >= vera.good_match_threshold(), s.lexical_match, s.similarity,
           s.relevance_signal, s.authority, s.verification_score, s.recency_signal, s.feedback_score, s.confidence,
           s.period_signal, s.citation
      from totals s
     order by 1
     limit k
$$;
comment on function vera.blend(vera.search_item[], jsonb, timestamptz, integer, tstzrange) is
    'Internal: stage 2, the seven-signal blend over a batch of candidates, equal scores in a documented order';

reset role;
