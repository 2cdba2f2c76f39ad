-- 0001_baseline: VERA's first schema, whole. Extensions, roles and the vera
-- schema; enumerated and composite types; the tables with their constraints,
-- indexes and comments. Run once, as a superuser (extensions and roles are
-- cluster objects); every object after the bootstrap section is created as,
-- and owned by, the NOLOGIN role vera_owner.
--
-- What is NOT here, on purpose: functions (sql/functions) and row-level
-- security, policies and grants (sql/rls). Those files are idempotent and
-- the runner re-applies them after the pending migrations, in the same
-- transaction, on every `vera db migrate` (the script of `vera db sql` does
-- the same), so a function body lives in exactly one file.
--
-- Tables before functions works because no table definition calls a vera
-- function: defaults, checks, generated columns and index expressions use
-- built-ins only (pg_tests/test_catalog.py keeps it so). A table that needs
-- one would carry that function here, as part of its definition.
--
-- Later migrations hold run-once changes only (tables, types, indexes,
-- backfills, `drop function if exists` when a signature changes); they
-- cannot call vera functions either: on a new database those exist only
-- after every migration has run. sql/schema/ is the current state of the
-- same objects.
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.

-- ===== bootstrap (sql/schema/000_bootstrap.sql) =====
-- Bootstrap: extensions, roles and the vera schema.
--
-- This is the only part of the bundle that needs a superuser (or a cloud
-- "rds_superuser"-like role): extensions and roles are cluster objects.
-- Everything after it runs as vera_owner, a NOLOGIN role without BYPASSRLS,
-- so that even the definer functions stay inside row-level security.

create extension if not exists vector;
create extension if not exists pg_trgm;
create extension if not exists unaccent;
create extension if not exists btree_gin;

do $roles$
declare
    role_spec record;
begin
    -- Roles are shared by every database of a cluster, so they may exist already.
    for role_spec in
        select * from (values
            -- owns every vera object; definer functions run as it; nobody logs in as it
            ('vera_owner',    'nologin nosuperuser nocreatedb nocreaterole nobypassrls noinherit'),
            -- applications: read through RLS, write only through the SQL API. A
            -- group: each SQL application logs in as a role of its own that is a
            -- member (provisioning.create_app_login), so that no application sees
            -- another's statements in pg_stat_activity nor may signal its backends
            ('vera_app',      'nologin nosuperuser nocreatedb nocreaterole nobypassrls inherit'),
            -- Procrastinate workers: row DML inside RLS (embeddings, projections, cleanup)
            ('vera_worker',   'login nosuperuser nocreatedb nocreaterole nobypassrls inherit'),
            -- HTTP/MCP servers that verify callers themselves (OAuth) and vouch for a principal
            ('vera_gateway',  'login nosuperuser nocreatedb nocreaterole nobypassrls inherit'),
            -- people or tools that provision tenants; granted to a DBA's login by hand
            ('vera_operator', 'nologin nosuperuser nocreatedb nocreaterole nobypassrls inherit'),
            -- owns the one function that must read past row-level security (the
            -- trigram probe of entity resolution) and checks the group itself
            ('vera_resolver', 'nologin nosuperuser nocreatedb nocreaterole bypassrls noinherit'),
            -- owns the candidate stage of search (GIN and HNSW probes, which
            -- RLS would keep off their indexes) and checks the groups itself
            ('vera_searcher', 'nologin nosuperuser nocreatedb nocreaterole bypassrls noinherit')
        ) as r(name, attributes)
    loop
        if not exists (select from pg_catalog.pg_roles where rolname = role_spec.name) then
            execute format('create role %I %s', role_spec.name, role_spec.attributes);
        else
            execute format('alter role %I %s', role_spec.name, role_spec.attributes);
        end if;
    end loop;
end
$roles$;

-- A superuser running this file must be able to act as vera_owner below;
-- a non-superuser DBA needs membership to do the same.
do $membership$
begin
    if not (select rolsuper from pg_catalog.pg_roles where rolname = current_user) then
        execute format('grant vera_owner to %I', current_user);
    end if;
end
$membership$;

create schema if not exists vera authorization vera_owner;
comment on schema vera is 'VERA knowledge memory: tables, SQL API and row-level security';

grant usage on schema vera to vera_app, vera_worker, vera_gateway, vera_operator;

-- vera_owner may hand vera_resolver the functions it must own (role
-- attributes such as BYPASSRLS are never inherited through membership)
grant vera_resolver to vera_owner with inherit true;
grant create, usage on schema vera to vera_resolver;
grant vera_searcher to vera_owner with inherit true;
grant create, usage on schema vera to vera_searcher;

-- Nothing vera_owner creates is callable by PUBLIC; sql/rls/grants.sql grants
-- each function to the roles that need it.
alter default privileges for role vera_owner revoke execute on functions from public;

-- Advisory locks are one keyspace for the whole database: a connection that
-- may take them could hold every bucket VERA's writers serialise on (they
-- take 1024 per-history buckets) and stall every tenant. Only vera_owner, as
-- whom the SQL API's definer functions run, may take them; the login roles
-- may not (a superuser, such as the migration runner, always may).
do $advisory$
declare
    f regprocedure;
begin
    for f in
        select p.oid::regprocedure from pg_catalog.pg_proc p
         where p.pronamespace = 'pg_catalog'::regnamespace and p.proname like '%advisory%'
    loop
        execute format('revoke execute on function %s from public', f);
        execute format('grant execute on function %s to vera_owner', f);
    end loop;
end
$advisory$;

-- ===== types (sql/schema/010_types.sql) =====
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
    kind         vera.item_kind,
    item_id      uuid,
    group_id     text,
    -- stage 1: reciprocal rank fusion of the lexical and vector ranks
    fused        double precision,
    text         text,
    subject      text,
    predicate    text,
    object       text,
    authority    real,
    -- null for passages: raw source text that no model has graded
    verification vera.verification,
    confidence   real,
    valid_from   timestamptz,
    valid_to     timestamptz,
    up_votes     integer,
    down_votes   integer,
    citation     jsonb,
    -- when the source last stated a fact (its episode's observation); recency
    -- counts from the later of this and valid_from, so a long-standing value
    -- that a fresh export still states does not age. Null for passages.
    confirmed_at timestamptz,
    -- stage 1: the item's rank in each half (null when absent from one), and
    -- its order key (vera.fact_order_key / vera.passage_order_key, then its
    -- group's kind and name): what decides between equal scores
    lexical_rank integer,
    vector_rank  integer,
    order_key    bytea
);

reset role;

-- ===== tenancy (sql/schema/020_tenancy.sql) =====
-- Tenancy: groups (scopes), principals, memberships, API keys, and the
-- per-transaction authentication context that row-level security reads.
set role vera_owner;

-- A scope of knowledge. Ids are opaque and assigned by VERA ('o:' + 16 hex),
-- never chosen by a client. One embedding model and dimension is pinned per
-- group the first time it stores a vector.
create table vera.groups (
    group_id        text primary key
                    constraint groups_id_format check (group_id ~ '^[owpu]:[0-9a-f]{16}$'),
    kind            vera.group_kind not null,
    parent_group_id text references vera.groups (group_id),
    name            text not null
                    constraint groups_name_length check (char_length(btrim(name)) between 1 and 200),
    embedding_model text,
    embedding_dim   integer
                    constraint groups_embedding_dim_range check (embedding_dim between 1 and 16000),
    created_at      timestamptz not null default now(),
    constraint groups_kind_matches_prefix check (
        left(group_id, 1) = case kind
            when 'organisation' then 'o' when 'workspace' then 'w'
            when 'project' then 'p' else 'u' end),
    -- organisations and personal scopes are roots; workspaces and projects nest
    constraint groups_parent_by_kind check (
        (kind in ('organisation', 'personal')) = (parent_group_id is null)),
    constraint groups_embedding_pin_complete check (
        (embedding_model is null) = (embedding_dim is null))
);
create index groups_parent_idx on vera.groups (parent_group_id) where parent_group_id is not null;
comment on table vera.groups is 'Scopes of knowledge (o:/w:/p:/u:) with their hierarchy and embedding pin';

-- Users and service accounts. Identity spans tenants (one person may belong
-- to several organisations), so principals carry no group_id; what a principal
-- may do lives in memberships, which do.
create table vera.principals (
    principal_id      uuid primary key default gen_random_uuid(),
    kind              vera.principal_kind not null,
    display_name      text not null
                      constraint principals_name_length check (char_length(btrim(display_name)) between 1 and 200),
    email             text constraint principals_email_format check (email ~ '^[^@\s]+@[^@\s]+$'),
    personal_group_id text not null unique references vera.groups (group_id),
    created_at        timestamptz not null default now(),
    disabled_at       timestamptz
);
comment on table vera.principals is 'Users and service accounts; each owns one personal u: scope';

create table vera.memberships (
    group_id     text not null references vera.groups (group_id) on delete cascade,
    principal_id uuid not null references vera.principals (principal_id) on delete cascade,
    role         vera.member_role not null,
    granted_at   timestamptz not null default now(),
    granted_by   uuid references vera.principals (principal_id),
    primary key (group_id, principal_id)
);
create index memberships_principal_idx on vera.memberships (principal_id);
comment on table vera.memberships is 'Role of a principal in a group; it applies to the group''s descendants too';

-- API keys: 'vera_' || prefix || '_' || secret. The 256-bit secret is shown
-- once; only the SHA-256 of the whole key is stored. The prefix is public and
-- exists so a key can be found without scanning hashes.
create table vera.api_keys (
    key_id        uuid primary key default gen_random_uuid(),
    principal_id  uuid not null references vera.principals (principal_id) on delete cascade,
    prefix        text not null unique
                  constraint api_keys_prefix_format check (prefix ~ '^[0-9a-f]{12}$'),
    key_sha256    bytea not null
                  constraint api_keys_hash_length check (octet_length(key_sha256) = 32),
    name          text not null
                  constraint api_keys_name_length check (char_length(btrim(name)) between 1 and 200),
    created_at    timestamptz not null default now(),
    expires_at    timestamptz,
    revoked_at    timestamptz,
    constraint api_keys_expiry_after_creation check (expires_at is null or expires_at > created_at)
);
create index api_keys_principal_idx on vera.api_keys (principal_id);
comment on table vera.api_keys is 'API keys, stored as SHA-256 only; prefix for lookup';

-- When a key was last used, kept apart from the key: authenticating stamps it
-- under a row lock held to the end of the caller's transaction, and a key's
-- users must never stall its revocation, which updates vera.api_keys.
create table vera.api_key_usage (
    key_id        uuid primary key references vera.api_keys (key_id) on delete cascade,
    last_used_at  timestamptz
);
comment on table vera.api_key_usage is 'Last use of each API key, apart from the key so that revoking never waits';

-- Who the current transaction acts for. One row per backend, valid only for
-- the transaction that wrote it (matched on its top-level transaction id,
-- which writing the row assigns and which is never reused; not on the start
-- time, which the transactions of one simple-query string share), so it
-- behaves like a transaction-local setting that the caller cannot forge:
-- nobody but the definer functions may write it, unlike a custom GUC.
create unlogged table vera.auth_context (
    backend_pid   integer primary key,
    xact_id       xid8 not null,
    principal_id  uuid not null,
    key_id        uuid,
    readable      text[] not null,
    writable      text[] not null,
    administrable text[] not null
);
comment on table vera.auth_context is 'Transaction-scoped caller identity, written only by vera.authenticate*';

reset role;

-- ===== sources (sql/schema/030_sources.sql) =====
-- Sources, the episodes (versions of source records) they yield, and the
-- chunks of text that make free text searchable as passages.
set role vera_owner;

create table vera.sources (
    group_id    text not null references vera.groups (group_id),
    source_id   uuid not null default gen_random_uuid(),
    kind        text not null
                constraint sources_kind_format check (kind ~ '^[a-z][a-z0-9_]{0,39}$'),
    name        text not null
                constraint sources_name_length check (char_length(btrim(name)) between 1 and 200),
    uri         text,
    -- 1 authoritative, 2 curated (both auto-publish), 3 informational (review), 4 unverified (proposal)
    trust_tier  smallint not null constraint sources_trust_tier_range check (trust_tier between 1 and 4),
    -- name of the environment variable that holds the connector's secret; never the secret
    token_env   text constraint sources_token_env_format check (token_env ~ '^[A-Z_][A-Z0-9_]{0,127}$'),
    config      jsonb not null default '{}'
                constraint sources_config_object check (jsonb_typeof(config) = 'object'),
    cursor      jsonb,
    created_at  timestamptz not null default now(),
    created_by  uuid references vera.principals (principal_id),
    retracted_at timestamptz,
    primary key (group_id, source_id),
    constraint sources_name_unique unique (group_id, name)
);
comment on table vera.sources is 'Registered sources with their trust tier and incremental cursor';

create table vera.episodes (
    group_id       text not null,
    episode_id     uuid not null default gen_random_uuid(),
    source_id      uuid not null,
    external_id    text not null
                   constraint episodes_external_id_length check (char_length(external_id) between 1 and 2000),
    version        integer not null default 1 constraint episodes_version_positive check (version >= 1),
    content_sha256 bytea not null
                   constraint episodes_hash_length check (octet_length(content_sha256) = 32),
    object_key     text,
    mime           text,
    title          text,
    uri            text,
    observed_at    timestamptz not null default now(),
    recorded_at    timestamptz not null default now(),
    status         vera.episode_status not null default 'received',
    primary key (group_id, episode_id),
    foreign key (group_id, source_id) references vera.sources (group_id, source_id),
    constraint episodes_version_unique unique (group_id, source_id, external_id, version)
);
-- idempotent re-ingestion looks up the latest version of a record by hash
create index episodes_record_hash_idx on vera.episodes (group_id, source_id, external_id, content_sha256);
comment on table vera.episodes is 'One version of one source record: content hash, raw-bytes key, status';

create table vera.chunks (
    group_id   text not null,
    chunk_id   uuid not null default gen_random_uuid(),
    episode_id uuid not null,
    ordinal    integer not null constraint chunks_ordinal_nonnegative check (ordinal >= 0),
    heading    text,
    text       text not null constraint chunks_text_length check (char_length(text) between 1 and 20000),
    char_start integer,
    char_end   integer,
    -- 'simple': no stemming, no stopwords, diacritics kept (Vietnamese matches by exact form)
    tsv        tsvector generated always as (to_tsvector('simple'::regconfig, coalesce(heading, '') || ' ' || text)) stored,
    embedding  vector,
    created_at timestamptz not null default now(),
    -- The contamination guard, as for claims (vera.store_chunks grades by the
    -- source's tier): tier 1-2 text is published; tier-3 text waits for review
    -- (pending_review: out of search until an admin approves it); tier-4 text
    -- is a proposal that only its proposer searches, and that only its
    -- proposer and the scope's admins read, until approved; rejected text
    -- answers nobody. In a u: scope everything is published. Unlike a claim,
    -- a proposed passage stays in the shared scope beside its episode (the
    -- foreign key to the episode, and facts citing it as evidence, keep it in
    -- the episode's group), so its privacy is this row's, enforced by the
    -- read_proposed_passages policy and by the candidate stage.
    lifecycle  vera.fact_lifecycle not null default 'published'
               constraint chunks_lifecycle_kind
               check (lifecycle in ('published', 'pending_review', 'proposal', 'rejected')),
    verification vera.verification not null default 'auto',
    -- who stored it (for a proposal: its proposer); no foreign key, as on facts
    proposed_by uuid,
    -- stored as a proposal: private to its proposer and the scope's admins unless approved
    proposed   boolean not null default false,
    reviewed_by uuid references vera.principals (principal_id),
    reviewed_at timestamptz,
    primary key (group_id, chunk_id),
    foreign key (group_id, episode_id) references vera.episodes (group_id, episode_id) on delete cascade,
    constraint chunks_ordinal_unique unique (group_id, episode_id, ordinal),
    constraint chunks_span_order check (char_end is null or char_start is null or char_end >= char_start),
    constraint chunks_proposal_is_proposed check (lifecycle <> 'proposal' or proposed)
);
-- the lexical half of search, by group (see facts_group_tsv_idx)
create index chunks_group_tsv_idx on vera.chunks using gin (group_id, tsv);
-- passages waiting for the admins of their scope (vera.pending_passages)
create index chunks_waiting_idx on vera.chunks (group_id) where lifecycle in ('pending_review', 'proposal');
comment on table vera.chunks is 'Ordered passages of an episode: text, full-text vector and embedding';

reset role;

-- ===== entities (sql/schema/040_entities.sql) =====
-- Entities, their aliases (the resolution ladder matches alias_norm), and
-- the ontology of predicates.
set role vera_owner;

create table vera.entities (
    group_id       text not null references vera.groups (group_id),
    entity_id      uuid not null default gen_random_uuid(),
    canonical_name text not null
                   constraint entities_name_length check (char_length(btrim(canonical_name)) between 1 and 500),
    entity_type    text,
    -- provisional: linked by a semantic near-match that awaits the equivalence judge
    status         text not null default 'active'
                   constraint entities_status_known check (status in ('active', 'provisional', 'merged')),
    merged_into    uuid,
    name_embedding vector,
    created_at     timestamptz not null default now(),
    primary key (group_id, entity_id),
    foreign key (group_id, merged_into) references vera.entities (group_id, entity_id),
    constraint entities_merge_target check ((status = 'merged') = (merged_into is not null))
);
comment on table vera.entities is 'Things facts are about; canonical name, type and name embedding';

create table vera.entity_aliases (
    group_id   text not null,
    entity_id  uuid not null,
    alias      text not null constraint entity_aliases_alias_length check (char_length(alias) between 1 and 500),
    -- written from vera.normalize_name(alias): case- and width-folded, diacritics kept
    alias_norm text not null constraint entity_aliases_norm_nonempty check (alias_norm <> ''),
    created_at timestamptz not null default now(),
    primary key (group_id, entity_id, alias_norm),
    foreign key (group_id, entity_id) references vera.entities (group_id, entity_id) on delete cascade
);
create index entity_aliases_norm_idx on vera.entity_aliases (group_id, alias_norm);
-- trigram probes within one group: btree_gin puts the group into the same index,
-- so a probe reads only the group's postings (about 1 ms at 20,000 aliases)
create index entity_aliases_group_trgm_idx on vera.entity_aliases using gin (group_id, alias_norm gin_trgm_ops);
comment on table vera.entity_aliases is 'Names an entity is known by, normalised for exact and fuzzy matching';

create table vera.predicates (
    group_id    text not null references vera.groups (group_id),
    name        text not null
                constraint predicates_upper_snake check (name ~ '^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$' and char_length(name) <= 100),
    -- functional: one value at a time per subject (a new value supersedes); multi: values coexist
    cardinality vera.predicate_cardinality not null default 'multi',
    description text,
    created_at  timestamptz not null default now(),
    primary key (group_id, name)
);
comment on table vera.predicates is 'The ontology of a group: UPPER_SNAKE predicates, functional or multi-valued';

reset role;

-- ===== facts (sql/schema/050_facts.sql) =====
-- Facts: subject-predicate-object claims with trust, verification,
-- lifecycle, bitemporal validity and provenance.
set role vera_owner;

create table vera.facts (
    group_id          text not null,
    fact_id           uuid not null default gen_random_uuid(),
    subject_entity_id uuid not null,
    predicate         text not null,
    object_entity_id  uuid,
    object_value      text not null
                      constraint facts_object_length check (char_length(object_value) between 1 and 2000),
    fact_text         text not null
                      constraint facts_text_length check (char_length(fact_text) between 1 and 4000),
    tsv               tsvector generated always as (to_tsvector('simple'::regconfig, fact_text)) stored,
    embedding         vector,
    -- grading: tier of the source, authority derived from it, verification, model confidence
    tier              smallint not null constraint facts_tier_range check (tier between 1 and 4),
    authority         real not null constraint facts_authority_range check (authority between 0 and 1),
    verification      vera.verification not null,
    confidence        real not null default 1 constraint facts_confidence_range check (confidence between 0 and 1),
    lifecycle         vera.fact_lifecycle not null,
    -- valid time: when the fact holds in the world
    valid_from        timestamptz not null default now(),
    valid_to          timestamptz,
    -- transaction time: when VERA learnt it and when it stopped being current knowledge
    recorded_at       timestamptz not null default now(),
    retired_at        timestamptz,
    -- the next value of a functional predicate: derived data that only
    -- vera.rebuild_timelines writes. Deliberately not a foreign key: its check
    -- would lock every successor row (FOR KEY SHARE) on each supersession.
    superseded_by     uuid,
    -- provenance
    source_id         uuid,
    episode_id        uuid,
    chunk_id          uuid,
    evidence_start    integer,
    evidence_end      integer,
    -- who published or proposed it; no foreign key: principals are never
    -- deleted, and the check cost every published claim a lookup
    proposed_by       uuid,
    reviewed_by       uuid references vera.principals (principal_id),
    reviewed_at       timestamptz,
    -- validity end as the claim stated it; valid_to is derived from it and
    -- from the next value of a functional predicate
    stated_valid_to   timestamptz,
    -- a proposal lives in its proposer's u: scope and names the shared scope it
    -- is meant for; its provenance there (group, source, episode, chunk) sits in
    -- origin, since foreign keys cannot leave the row's group
    proposed_for      text references vera.groups (group_id),
    origin            jsonb,
    primary key (group_id, fact_id),
    foreign key (group_id, subject_entity_id) references vera.entities (group_id, entity_id),
    foreign key (group_id, object_entity_id) references vera.entities (group_id, entity_id),
    foreign key (group_id, predicate) references vera.predicates (group_id, name),
    foreign key (group_id, source_id) references vera.sources (group_id, source_id),
    -- erasure deletes episodes and chunks; the retracted fact keeps its group
    foreign key (group_id, episode_id) references vera.episodes (group_id, episode_id)
        on delete set null (episode_id),
    foreign key (group_id, chunk_id) references vera.chunks (group_id, chunk_id)
        on delete set null (chunk_id),
    constraint facts_validity_order check (valid_to is null or valid_to >= valid_from),
    constraint facts_evidence_order check (
        evidence_end is null or evidence_start is null or evidence_end >= evidence_start),
    -- superseded in valid time (a successor, a closed validity) or in
    -- transaction time (a new version of its episode no longer says it)
    constraint facts_superseded_has_successor check (
        lifecycle <> 'superseded' or superseded_by is not null or valid_to is not null
        or retired_at is not null),
    constraint facts_proposal_has_target check (lifecycle <> 'proposal' or proposed_for is not null),
    constraint facts_stated_validity_order check (stated_valid_to is null or stated_valid_to >= valid_from)
) with (fillfactor = 85);
-- The valid-time history of a subject's predicate: supersession rebuilds it.
-- No index mentions lifecycle, superseded_by, valid_to or retired_at (not even
-- in a predicate), and pages keep 15% free: supersession and retraction then
-- update rows in place (HOT) without touching any index.
create index facts_timeline_idx on vera.facts (group_id, subject_entity_id, predicate, valid_from);
-- proposals awaiting the admins of the scope they are meant for
create index facts_proposed_for_idx on vera.facts (proposed_for) where proposed_for is not null;
-- erasure finds proposals that cite an erased episode
create index facts_origin_episode_idx on vera.facts ((origin ->> 'episode_id')) where origin is not null;
-- the lexical half of search, one tenant at a time: with the group in the
-- index (btree_gin) a query reads only its groups' posting lists, not the
-- matches of every tenant (3x faster at 100,000 facts in 10 tenants)
create index facts_group_tsv_idx on vera.facts using gin (group_id, tsv);
create index facts_episode_idx on vera.facts (group_id, episode_id) where episode_id is not null;
create index facts_source_idx on vera.facts (group_id, source_id) where source_id is not null;
create index facts_object_entity_idx on vera.facts (group_id, object_entity_id) where object_entity_id is not null;
comment on table vera.facts is 'Claims with trust tier, verification, lifecycle, validity and provenance';

reset role;

-- ===== ranking (sql/schema/060_ranking.sql) =====
-- Feedback votes with the signal vector a hit had, and the ranking weight
-- sets that calibration derives from them.
set role vera_owner;

create table vera.feedback (
    group_id     text not null references vera.groups (group_id),
    feedback_id  uuid not null default gen_random_uuid(),
    principal_id uuid not null references vera.principals (principal_id),
    item_kind    vera.item_kind not null,
    item_id      uuid not null,
    query_text   text not null constraint feedback_query_length check (char_length(query_text) between 1 and 4000),
    query_sha256 bytea not null constraint feedback_query_hash_length check (octet_length(query_sha256) = 32),
    vote         smallint not null constraint feedback_vote_sign check (vote in (-1, 1)),
    -- relevance, authority, verification, recency, feedback, confidence, in that order
    signals      real[] not null constraint feedback_signals_six check (cardinality(signals) = 6),
    created_at   timestamptz not null default now(),
    primary key (group_id, feedback_id),
    constraint feedback_one_vote unique (group_id, principal_id, item_kind, item_id, query_sha256)
);
create index feedback_item_idx on vera.feedback (group_id, item_kind, item_id);
comment on table vera.feedback is 'Votes on hits, with the query and the hit''s six signals';

create table vera.ranking_weights (
    group_id      text not null references vera.groups (group_id),
    weight_set_id uuid not null default gen_random_uuid(),
    relevance     real not null constraint ranking_weights_relevance_range check (relevance between 0 and 1),
    authority     real not null constraint ranking_weights_authority_range check (authority between 0 and 1),
    verification  real not null constraint ranking_weights_verification_range check (verification between 0 and 1),
    recency       real not null constraint ranking_weights_recency_range check (recency between 0 and 1),
    feedback      real not null constraint ranking_weights_feedback_range check (feedback between 0 and 1),
    confidence    real not null constraint ranking_weights_confidence_range check (confidence between 0 and 1),
    half_life     interval not null default '30 days'
                  constraint ranking_weights_half_life_positive check (half_life > interval '0'),
    sample_count  integer not null default 0,
    separation    jsonb,
    active        boolean not null default false,
    created_at    timestamptz not null default now(),
    created_by    uuid references vera.principals (principal_id),
    primary key (group_id, weight_set_id),
    constraint ranking_weights_sum_to_one check (
        abs(relevance + authority + verification + recency + feedback + confidence - 1) < 0.001)
);
create unique index ranking_weights_one_active_idx on vera.ranking_weights (group_id) where active;
comment on table vera.ranking_weights is 'Weight sets of the six-signal blend; at most one active per group';

reset role;

-- ===== snapshots (sql/schema/070_snapshots.sql) =====
-- Snapshots: frozen copies of a group's retrieval inputs, with the pins
-- (model, dimension, search version, weights) a reader must still match.
set role vera_owner;

create table vera.snapshots (
    group_id        text not null references vera.groups (group_id),
    snapshot_id     uuid not null default gen_random_uuid(),
    name            text not null constraint snapshots_name_length check (char_length(btrim(name)) between 1 and 200),
    embedding_model text,
    embedding_dim   integer,
    search_version  text not null,
    weight_set_id   uuid,
    created_at      timestamptz not null default now(),
    created_by      uuid references vera.principals (principal_id),
    -- null until the copy has committed in full; readers refuse unsealed snapshots
    sealed_at       timestamptz,
    -- the blend the snapshot ranks with: the weight set's values (or the
    -- defaults) copied, so a later calibration cannot change its answers
    weights         jsonb,
    primary key (group_id, snapshot_id),
    foreign key (group_id, weight_set_id) references vera.ranking_weights (group_id, weight_set_id),
    constraint snapshots_name_unique unique (group_id, name)
);
comment on table vera.snapshots is 'Pinned, sealed copies of a group''s retrieval inputs';

create table vera.snapshot_items (
    group_id      text not null,
    snapshot_id   uuid not null,
    item_kind     vera.item_kind not null,
    item_id       uuid not null,
    text          text not null,
    tsv           tsvector not null,
    embedding     vector,
    subject       text,
    predicate     text,
    object        text,
    tier          smallint,
    authority     real,
    verification  vera.verification,
    confidence    real,
    valid_from    timestamptz,
    valid_to      timestamptz,
    recorded_at   timestamptz not null,
    source_id     uuid,
    episode_id    uuid,
    chunk_id      uuid,
    -- feedback counts and the citation as they were when the snapshot was taken
    up_votes      integer not null default 0,
    down_votes    integer not null default 0,
    citation      jsonb,
    confirmed_at  timestamptz,
    -- what orders equal scores, as live search orders them (vera.search_item.order_key)
    order_key     bytea,
    primary key (group_id, snapshot_id, item_kind, item_id),
    foreign key (group_id, snapshot_id) references vera.snapshots (group_id, snapshot_id) on delete cascade
);
-- erasure finds and deletes snapshot copies that cite an erased episode
create index snapshot_items_episode_idx on vera.snapshot_items (group_id, episode_id) where episode_id is not null;
create index snapshot_items_tsv_idx on vera.snapshot_items using gin (tsv);
comment on table vera.snapshot_items is 'Copied retrieval inputs (facts and passages) of a snapshot';

reset role;

-- ===== term_stats (sql/schema/075_term_stats.sql) =====
-- Term statistics of the lexical half (BM25, see sql/functions/165_term_stats.sql):
-- per group and kind (facts, passages), how many documents hold each term
-- and how long the documents are. Only the definer functions read and write
-- them (vera_owner through its policy, vera_searcher past RLS); a tenant's
-- scores come from the statistics of exactly the groups it searches.
set role vera_owner;

-- The counts of committed writes. The term '' (never a lexeme) stands for
-- the corpus: its documents are all the group's counted documents, its
-- tokens their summed length (a document's length: its distinct words). For
-- a real term, documents is its document frequency and tokens its
-- occurrences.
create table vera.term_stats (
    group_id  text not null references vera.groups (group_id),
    kind      vera.item_kind not null,
    term      text not null,
    documents bigint not null,
    tokens    bigint not null,
    primary key (group_id, kind, term)
);
comment on table vera.term_stats is 'BM25 statistics per group, kind and term (term '''' is the corpus)';

-- A transaction's changes until it commits: each statement that adds or
-- removes documents appends its net change per (group, kind, term) here, and
-- at commit one deferred trigger applies them all to term_stats in one
-- sorted statement and deletes them. Rows never outlive their transaction
-- (unlogged: a crash loses only transactions that never committed), so the
-- only rows anyone sees here are its own transaction's.
create unlogged table vera.term_stat_changes (
    group_id    text not null,
    change_id   bigint generated always as identity,
    transaction xid8 not null default pg_current_xact_id(),
    kind        vera.item_kind not null,
    term        text not null,
    documents   bigint not null,
    tokens      bigint not null,
    primary key (group_id, change_id)
);
create index term_stat_changes_transaction_idx on vera.term_stat_changes (transaction);
create index term_stat_changes_term_idx on vera.term_stat_changes (group_id, kind, term);
comment on table vera.term_stat_changes is 'BM25 statistics: the net changes of open transactions, applied at their commit';

-- One row per open transaction with changes: its deferred trigger applies them.
create unlogged table vera.term_stat_transactions (
    transaction xid8 primary key default pg_current_xact_id()
);
comment on table vera.term_stat_transactions is 'BM25 statistics: open transactions whose changes apply at commit';

-- A snapshot ranks its copies with the statistics its group had when it was taken.
create table vera.snapshot_term_stats (
    group_id    text not null,
    snapshot_id uuid not null,
    kind        vera.item_kind not null,
    term        text not null,
    documents   bigint not null,
    tokens      bigint not null,
    primary key (group_id, snapshot_id, kind, term),
    foreign key (group_id, snapshot_id) references vera.snapshots (group_id, snapshot_id) on delete cascade
);
comment on table vera.snapshot_term_stats is 'BM25 statistics of a snapshot''s group when it was taken';

reset role;

-- ===== audit (sql/schema/080_audit.sql) =====
-- Append-only audit log: who did what to which object, in which group.
set role vera_owner;

create table vera.audit_log (
    group_id     text not null references vera.groups (group_id),
    audit_id     bigint generated always as identity,
    at           timestamptz not null default now(),
    principal_id uuid,
    action       text not null constraint audit_log_action_format check (action ~ '^[a-z][a-z0-9_.]*$'),
    target_kind  text,
    target_id    text,
    detail       jsonb not null default '{}',
    primary key (group_id, audit_id)
);
create index audit_log_at_idx on vera.audit_log (group_id, at);
comment on table vera.audit_log is 'Append-only record of security-relevant and curation actions';

reset role;

-- ===== settings (sql/schema/090_settings.sql) =====
-- Per-group settings: entity-resolution thresholds, judges, cleanup delay.
-- Absent rows mean the documented default (vera.setting).
set role vera_owner;

create table vera.group_settings (
    group_id   text not null references vera.groups (group_id),
    name       text not null constraint group_settings_name_format check (name ~ '^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$'),
    value      jsonb not null,
    updated_at timestamptz not null default now(),
    updated_by uuid references vera.principals (principal_id),
    primary key (group_id, name)
);
comment on table vera.group_settings is 'Per-group overrides of VERA''s settings (defaults in vera.setting_default)';

reset role;

-- ===== context_packs (sql/schema/100_context_packs.sql) =====
-- Context packs: what vera_client's assembler handed an agent for a
-- request (the best hits that fit a token budget, what was left out and why,
-- conflicting values, freshness warnings), kept so that the agent can cite
-- and vote on it later. A pack lives in its principal's own u: scope: only
-- that principal reads it.
set role vera_owner;

create table vera.context_packs (
    -- the principal's personal scope
    group_id          text not null references vera.groups (group_id),
    pack_id           uuid not null default gen_random_uuid(),
    -- no foreign keys but the group's: group_id leads every key (distribution by group)
    principal_id      uuid not null,
    -- the groups the search covered (erasure in one of them scrubs the pack)
    searched_groups   text[] not null,
    -- query, token_budget, as_of, scopes, min_authority, max_tier
    request           jsonb not null constraint context_packs_request_object check (jsonb_typeof(request) = 'object'),
    weights           jsonb,
    assembler_version text not null
                      constraint context_packs_assembler_length check (char_length(assembler_version) between 1 and 100),
    -- [{kind, item_id, reason, tokens}], [{subject, predicate, values: [...]}], [{kind, item_id, reason, detail}]
    omitted           jsonb not null default '[]' constraint context_packs_omitted_array check (jsonb_typeof(omitted) = 'array'),
    conflicts         jsonb not null default '[]' constraint context_packs_conflicts_array check (jsonb_typeof(conflicts) = 'array'),
    warnings          jsonb not null default '[]' constraint context_packs_warnings_array check (jsonb_typeof(warnings) = 'array'),
    created_at        timestamptz not null default now(),
    primary key (group_id, pack_id),
    constraint context_packs_personal_scope check (group_id ~ '^u:')
);
comment on table vera.context_packs is 'Context packs assembled for a principal: request, weights, omissions, conflicts, warnings';

create table vera.context_pack_items (
    group_id      text not null,
    pack_id       uuid not null,
    position      integer not null constraint context_pack_items_position_positive check (position >= 1),
    item_kind     vera.item_kind not null,
    item_id       uuid not null,
    -- where the fact or passage lives, and the episode and source it came from:
    -- erasing them empties the item (vera.erase_pack_items)
    item_group_id text not null,
    episode_id    uuid,
    source_id     uuid,
    text          text not null,
    tokens        integer not null constraint context_pack_items_tokens_nonnegative check (tokens >= 0),
    citation      jsonb not null,
    -- relevance, authority, verification, recency, feedback, confidence, in that order
    signals       real[] not null constraint context_pack_items_signals_six check (cardinality(signals) = 6),
    erased        boolean not null default false,
    primary key (group_id, pack_id, position),
    foreign key (group_id, pack_id) references vera.context_packs (group_id, pack_id) on delete cascade,
    constraint context_pack_items_erased_empty check (not erased or text = '')
);
-- erasure finds the items citing what it erases
create index context_pack_items_provenance_idx on vera.context_pack_items (item_group_id, episode_id);
create index context_pack_items_item_idx on vera.context_pack_items (item_group_id, item_id);
comment on table vera.context_pack_items is 'The items of a context pack, in order, with their text, tokens, citation and signals';

-- ===== identities (sql/schema/110_identities.sql) =====
-- External identities: an OIDC subject (issuer, subject) and the principal it
-- was provisioned as the first time the gateway saw one of its tokens. Like
-- principals, identity spans tenants, so the table carries no group_id; it is
-- read and written only through the definer functions of
-- sql/functions/220_identities.sql, which only the gateway may call.
set role vera_owner;

create table vera.external_identities (
    issuer       text not null
                 constraint external_identities_issuer_length check (char_length(issuer) between 1 and 2048),
    -- OpenID Connect Core 1.0, 2: a subject is at most 255 ASCII characters
    subject      text not null
                 constraint external_identities_subject_length check (char_length(subject) between 1 and 255),
    principal_id uuid not null references vera.principals (principal_id) on delete cascade,
    created_at   timestamptz not null default now(),
    primary key (issuer, subject)
);
create index external_identities_principal_idx on vera.external_identities (principal_id);
comment on table vera.external_identities is
    'OIDC subjects (issuer, subject) and the principal each was provisioned as, just in time';

reset role;

-- ===== graph (sql/schema/120_graph.sql) =====
-- The graph projection's last check per group (vera graph check, and the
-- periodic job that runs it): counts and digests on both sides. Written and
-- read only through the definer functions of sql/functions/230_graph.sql
-- (the worker and operators); no application role may touch it.
set role vera_owner;

create table vera.graph_checks (
    group_id     text not null references vera.groups (group_id) on delete cascade,
    backend      text not null constraint graph_checks_backend_known check (backend in ('neo4j', 'falkordb')),
    checked_at   timestamptz not null default now(),
    sql_edges    bigint not null,
    graph_edges  bigint not null,
    sql_nodes    bigint not null,
    graph_nodes  bigint not null,
    sql_digest   text not null,
    graph_digest text not null,
    -- what disagrees, in a few words (null: nothing)
    drift        text,
    primary key (group_id)
);
comment on table vera.graph_checks is
    'The last comparison of each group''s graph with PostgreSQL: counts, digests and drift';

reset role;
