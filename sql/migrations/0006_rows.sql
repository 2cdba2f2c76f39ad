-- 0006_rows: the rows that several functions return become types
-- (sql/schema/015_rows.sql), each spelled once; the functions return
-- `setof vera.<row>` with the same columns, names and order as before, so
-- every `select ... from vera.f(...)` reads them as it did. A return type
-- cannot change in place (create or replace refuses it): the functions go
-- here, and sql/functions/ creates them again, with their grants, in the
-- same transaction.
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.
set role vera_owner;

drop function if exists vera.search(text, public.vector, integer, timestamptz, text[], jsonb, integer, integer, text,
                                    double precision, double precision, integer, tstzrange);
drop function if exists vera.blend(vera.search_item[], jsonb, timestamptz, integer, tstzrange);
drop function if exists vera.search_snapshot(text, text, text, public.vector, integer, integer, integer, text,
                                             double precision, double precision, tstzrange);
drop function if exists vera.fact_details(uuid[]);
drop function if exists vera.get_fact(uuid, text[]);
drop function if exists vera.explored_rows(uuid[], integer[], integer);
drop function if exists vera.explore(text, integer, timestamptz, text[], integer);
drop function if exists vera.explore_facts(uuid[], integer[], timestamptz, text[], integer);
drop function if exists vera.graph_rows(text, uuid[], uuid, integer, boolean);
drop function if exists vera.graph_facts(text, uuid[]);
drop function if exists vera.graph_group_facts(text, uuid, integer);
drop function if exists vera.issue_api_key(uuid, text, timestamptz);
drop function if exists vera.create_api_key(text, timestamptz, uuid);
drop function if exists vera.record_feedback(vera.item_kind, uuid, text, text, public.vector, timestamptz, text[], text,
                                             tstzrange);
drop function if exists vera.record_pack_feedback(uuid, integer, text, public.vector, text);
drop function if exists vera.readable_entities(text, text[]);
drop function if exists vera.explore_starts(text, text[]);

-- A hit of a search: vera.search, vera.search_snapshot, and the blend that
-- ranks both (vera.blend).
create type vera.search_hit as (
    rank         integer,
    kind         vera.item_kind,
    item_id      uuid,
    group_id     text,
    text         text,
    subject      text,
    predicate    text,
    object       text,
    score        real,
    -- the seven signals the score blends
    relevance    real,
    authority    real,
    verification real,
    recency      real,
    feedback     real,
    confidence   real,
    period       real,
    citation     jsonb
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
