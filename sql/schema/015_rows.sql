-- Rows that several functions of the SQL API return, each spelled once:
-- the functions say `returns setof vera.<row>` (columns by name, as callers
-- select them). A column added here is added to every function returning
-- the row; changing one needs a migration that drops those functions first
-- (0006_rows created these).
set role vera_owner;

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

-- A fact as the reads show it (vera.get_fact, vera.fact_details): triple by
-- name, grading, validity and citation.
create type vera.fact_row as (
    fact_id      uuid,
    group_id     text,
    subject      text,
    predicate    text,
    object       text,
    fact_text    text,
    lifecycle    vera.fact_lifecycle,
    tier         smallint,
    authority    real,
    verification vera.verification,
    confidence   real,
    valid_from   timestamptz,
    valid_to     timestamptz,
    recorded_at  timestamptz,
    proposed_for text,
    citation     jsonb
);

-- A fact an exploration reached, at its hop, then the columns of
-- vera.fact_row: vera.explore, vera.explore_facts (explore through the
-- graph) and vera.explored_rows, which both return.
create type vera.explored_fact as (
    hop          integer,
    fact_id      uuid,
    group_id     text,
    subject      text,
    predicate    text,
    object       text,
    fact_text    text,
    lifecycle    vera.fact_lifecycle,
    tier         smallint,
    authority    real,
    verification vera.verification,
    confidence   real,
    valid_from   timestamptz,
    valid_to     timestamptz,
    recorded_at  timestamptz,
    proposed_for text,
    citation     jsonb
);

-- A fact as a group's graph holds it, and whether it belongs there:
-- vera.graph_facts, vera.graph_group_facts and vera.graph_rows under them.
create type vera.graph_fact as (
    fact_id           uuid,
    group_id          text,
    episode_id        uuid,
    source_id         uuid,
    subject_id        uuid,
    subject_name      text,
    object_id         uuid,
    object_name       text,
    predicate         text,
    fact_text         text,
    lifecycle         text,
    valid_from        timestamptz,
    valid_to          timestamptz,
    recorded_at       timestamptz,
    retired_at        timestamptz,
    fact_embedding    public.vector,
    subject_embedding public.vector,
    object_embedding  public.vector,
    belongs           boolean
);

-- A key just issued, shown this once: vera.create_api_key, vera.issue_api_key.
create type vera.new_api_key as (
    key_id  uuid,
    prefix  text,
    api_key text
);

-- A vote recorded on a hit: vera.record_feedback, vera.record_pack_feedback.
create type vera.recorded_feedback as (
    feedback_id uuid,
    group_id    text,
    signals     jsonb,
    created     boolean
);

-- An entity by its group: vera.explore_starts, vera.readable_entities.
create type vera.entity_ref as (
    group_id  text,
    entity_id uuid
);

reset role;
