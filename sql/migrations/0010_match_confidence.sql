-- 0010_match_confidence: an absolute confidence per hit (issue 28). A hit's
-- relevance was its fused stage-1 score min-max normalised over the
-- candidates, so the best candidate always scored 1.00 and a third item
-- entering the list could flip the order of two others. Relevance is now
-- the hit's own calibrated match (vera.match_confidence, 170_ranking.sql),
-- read from its own lexical match (BM25 against the searched groups'
-- statistics) and cosine similarity: the blend's input no longer carries
-- the fused score or the stage-1 ranks but those two measures and the
-- match, and a hit shows its match, whether it is a good one, and both
-- measures. A return type cannot change in place: the functions that use
-- either type go here, the types are made again, and sql/functions/
-- creates the functions again, with their grants, in the same transaction.
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.
set role vera_owner;

drop function if exists vera.search(text, public.vector, integer, timestamptz, text[], jsonb, integer, integer, text,
                                    double precision, double precision, integer, tstzrange);
drop function if exists vera.search_snapshot(text, text, text, public.vector, integer, integer, integer, text,
                                             double precision, double precision, tstzrange);
drop function if exists vera.blend(vera.search_item[], jsonb, timestamptz, integer, tstzrange);
drop function if exists vera.candidate_signals(vera.item_kind[], uuid[], text[], double precision[], integer[],
                                               integer[]);
drop function if exists vera.search_candidates(text[], text[], text[], public.vector, timestamptz, text, integer,
                                               integer);
drop function if exists vera.snapshot_candidates(text, uuid, text[], public.vector, integer);

drop type vera.search_item;
drop type vera.search_hit;

-- One candidate of a search with everything the blend (stage 2) reads. Live
-- search and snapshot search both fill it, so both rank with the same code.
create type vera.search_item as (
    kind          vera.item_kind,
    item_id       uuid,
    group_id      text,
    text          text,
    subject       text,
    predicate     text,
    object        text,
    authority     real,
    -- null for passages: raw source text that no model has graded
    verification  vera.verification,
    confidence    real,
    valid_from    timestamptz,
    valid_to      timestamptz,
    up_votes      integer,
    down_votes    integer,
    citation      jsonb,
    -- when the source last stated a fact (its episode's observation); recency
    -- counts from the later of this and valid_from, so a long-standing value
    -- that a fresh export still states does not age. Null for passages.
    confirmed_at  timestamptz,
    -- what decides between equal scores after the item's own measures
    -- (vera.fact_order_key / vera.passage_order_key, then its group's kind and name)
    order_key     bytea,
    -- the item's time for the time signal: a fact's validity, a passage's
    -- stated scope (null: not read; empty: states none) (0002_time_scopes)
    time_scope    tstzmultirange,
    -- stage 1, the item's own measures: its BM25 score over the query's
    -- IDF mass (vera.lexical_match; null when words were not searched) and
    -- its cosine similarity to the query embedding (null when no vector
    -- was searched or the item has none)
    lexical_match double precision,
    similarity    double precision,
    -- the calibrated probability that the item answers (vera.match_confidence)
    match         real
);

-- A hit of a search: vera.search, vera.search_snapshot, and the blend that
-- ranks both (vera.blend).
create type vera.search_hit as (
    rank             integer,
    kind             vera.item_kind,
    item_id          uuid,
    group_id         text,
    text             text,
    subject          text,
    predicate        text,
    object           text,
    score            real,
    -- absolute: the calibrated probability that this hit answers the query,
    -- comparable across queries and groups, and whether it reaches the
    -- threshold (vera.good_match_threshold)
    match_confidence real,
    good_match       boolean,
    -- the two measures it is read from (see vera.search_item)
    lexical_match    double precision,
    similarity       double precision,
    -- the seven signals the score blends
    relevance        real,
    authority        real,
    verification     real,
    recency          real,
    feedback         real,
    confidence       real,
    period           real,
    citation         jsonb
);

reset role;
