-- Enumerated types shared by the tables and the SQL API.
set role vera_owner;

-- o: organisation, w: workspace, p: project, u: personal (one per principal)
create type vera.group_kind as enum ('organisation', 'workspace', 'project', 'personal');

-- Declared in ascending order on purpose: enum comparison gives the total
-- order viewer < member < admin < owner that permission checks rely on.
create type vera.member_role as enum ('viewer', 'member', 'admin', 'owner');

create type vera.principal_kind as enum ('user', 'service');

create type vera.episode_status as enum ('received', 'extracted', 'failed', 'retracted');

create type vera.verification as enum ('human_verified', 'auto', 'pending');

-- published: current knowledge; pending_review: tier-3 claim awaiting an admin;
-- proposal: unverified claim kept in the proposer's u: scope; superseded: an
-- older value of a functional predicate; retracted: its source was withdrawn;
-- rejected: a reviewer said no; accepted: a proposal a reviewer approved, whose
-- published copy now lives in the shared scope it was proposed for.
create type vera.fact_lifecycle as enum (
    'published', 'pending_review', 'proposal', 'superseded', 'retracted', 'rejected', 'accepted'
);

create type vera.predicate_cardinality as enum ('functional', 'multi');

create type vera.item_kind as enum ('fact', 'passage');

-- Working rows of entity resolution (vera.resolve_entities). Definer functions
-- keep such state in arrays of this type rather than temporary tables, which a
-- caller could pre-create (with triggers) in its own temporary schema.
-- Working rows of vera.publish_claims, one per claim.
create type vera.claim_work as (
    claim             integer,
    target_group      text,
    lifecycle         vera.fact_lifecycle,
    subject           text,
    subject_type      text,
    subject_embedding public.vector,
    predicate         text,
    functional        boolean,
    object            text,
    object_is_entity  boolean,
    object_type       text,
    confidence        real,
    verification      vera.verification,
    valid_from        timestamptz,
    stated_valid_to   timestamptz,
    chunk_id          uuid,
    evidence_start    integer,
    evidence_end      integer,
    fact_text         text,
    embedding         public.vector,
    subject_entity_id uuid,
    object_entity_id  uuid,
    resolution        text,
    fact_id           uuid,
    candidates        uuid[]
);

create type vera.entity_resolution as (
    ordinal     integer,
    group_id    text,
    name        text,
    norm        text,
    embedding   public.vector,
    entity_type text,
    entity_id   uuid,
    method      text,
    candidates  uuid[]
);

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

reset role;
