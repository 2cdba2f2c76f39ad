-- 0001_initial: schema v1 of VERA (tenancy, sources, episodes, chunks,
-- entities, predicates, facts, feedback, ranking weights, snapshots, audit),
-- its SQL API for authentication and provisioning, and row-level security.
--
-- Apply with:  psql -v ON_ERROR_STOP=1 -1 -f 0001_initial.sql
-- as a superuser (extensions and roles are created here); every other object
-- is created as, and owned by, the NOLOGIN role vera_owner.
-- Frozen once released: changes go into a new numbered migration.

-- ===== sql/schema/000_bootstrap.sql =====

-- Bootstrap: extensions, roles and the vera schema.
--
-- This is the only part of the bundle that needs a superuser (or a cloud
-- "rds_superuser"-like role): extensions and roles are cluster objects.
-- Everything after it runs as vera_owner, a NOLOGIN role without BYPASSRLS,
-- so that even the definer functions stay inside row-level security.

create extension if not exists vector;
create extension if not exists pg_trgm;
create extension if not exists unaccent;

do $roles$
declare
    role_spec record;
begin
    -- Roles are shared by every database of a cluster, so they may exist already.
    for role_spec in
        select * from (values
            -- owns every vera object; definer functions run as it; nobody logs in as it
            ('vera_owner',    'nologin nosuperuser nocreatedb nocreaterole nobypassrls noinherit'),
            -- applications: read through RLS, write only through the SQL API
            ('vera_app',      'login nosuperuser nocreatedb nocreaterole nobypassrls inherit'),
            -- Procrastinate workers: row DML inside RLS (embeddings, projections, cleanup)
            ('vera_worker',   'login nosuperuser nocreatedb nocreaterole nobypassrls inherit'),
            -- HTTP/MCP servers that verify callers themselves (OAuth) and vouch for a principal
            ('vera_gateway',  'login nosuperuser nocreatedb nocreaterole nobypassrls inherit'),
            -- people or tools that provision tenants; granted to a DBA's login by hand
            ('vera_operator', 'nologin nosuperuser nocreatedb nocreaterole nobypassrls inherit')
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

-- Nothing vera_owner creates is callable by PUBLIC; sql/rls/grants.sql grants
-- each function to the roles that need it.
alter default privileges for role vera_owner revoke execute on functions from public;

-- ===== sql/schema/010_types.sql =====

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
-- rejected: a reviewer said no.
create type vera.fact_lifecycle as enum (
    'published', 'pending_review', 'proposal', 'superseded', 'retracted', 'rejected'
);

create type vera.predicate_cardinality as enum ('functional', 'multi');

create type vera.item_kind as enum ('fact', 'passage');

reset role;

-- ===== sql/schema/020_tenancy.sql =====

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
    last_used_at  timestamptz,
    constraint api_keys_expiry_after_creation check (expires_at is null or expires_at > created_at)
);
create index api_keys_principal_idx on vera.api_keys (principal_id);
comment on table vera.api_keys is 'API keys, stored as SHA-256 only; prefix for lookup';

-- Who the current transaction acts for. One row per backend, valid only for
-- the transaction that wrote it (matched on transaction start time), so it
-- behaves like a transaction-local setting that the caller cannot forge:
-- nobody but the definer functions may write it, unlike a custom GUC.
create unlogged table vera.auth_context (
    backend_pid   integer primary key,
    xact_started  timestamptz not null,
    principal_id  uuid not null,
    key_id        uuid,
    readable      text[] not null,
    writable      text[] not null,
    administrable text[] not null
);
comment on table vera.auth_context is 'Transaction-scoped caller identity, written only by vera.authenticate*';

reset role;

-- ===== sql/schema/030_sources.sql =====

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
    primary key (group_id, chunk_id),
    foreign key (group_id, episode_id) references vera.episodes (group_id, episode_id) on delete cascade,
    constraint chunks_ordinal_unique unique (group_id, episode_id, ordinal),
    constraint chunks_span_order check (char_end is null or char_start is null or char_end >= char_start)
);
create index chunks_tsv_idx on vera.chunks using gin (tsv);
comment on table vera.chunks is 'Ordered passages of an episode: text, full-text vector and embedding';

reset role;

-- ===== sql/schema/040_entities.sql =====

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
create index entity_aliases_norm_trgm_idx on vera.entity_aliases using gin (alias_norm gin_trgm_ops);
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

-- ===== sql/schema/050_facts.sql =====

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
    superseded_by     uuid,
    -- provenance
    source_id         uuid,
    episode_id        uuid,
    chunk_id          uuid,
    evidence_start    integer,
    evidence_end      integer,
    proposed_by       uuid references vera.principals (principal_id),
    reviewed_by       uuid references vera.principals (principal_id),
    reviewed_at       timestamptz,
    primary key (group_id, fact_id),
    foreign key (group_id, subject_entity_id) references vera.entities (group_id, entity_id),
    foreign key (group_id, object_entity_id) references vera.entities (group_id, entity_id),
    foreign key (group_id, predicate) references vera.predicates (group_id, name),
    foreign key (group_id, superseded_by) references vera.facts (group_id, fact_id),
    foreign key (group_id, source_id) references vera.sources (group_id, source_id),
    -- erasure deletes episodes and chunks; the retracted fact keeps its group
    foreign key (group_id, episode_id) references vera.episodes (group_id, episode_id)
        on delete set null (episode_id),
    foreign key (group_id, chunk_id) references vera.chunks (group_id, chunk_id)
        on delete set null (chunk_id),
    constraint facts_validity_order check (valid_to is null or valid_to >= valid_from),
    constraint facts_evidence_order check (
        evidence_end is null or evidence_start is null or evidence_end >= evidence_start),
    constraint facts_superseded_has_successor check (
        lifecycle <> 'superseded' or superseded_by is not null or valid_to is not null)
);
-- current value(s) of a subject's predicate: supersession and graph projection
create index facts_current_idx on vera.facts (group_id, subject_entity_id, predicate)
    where lifecycle = 'published';
create index facts_tsv_idx on vera.facts using gin (tsv);
create index facts_validity_idx on vera.facts (group_id, valid_from, valid_to);
create index facts_episode_idx on vera.facts (group_id, episode_id) where episode_id is not null;
create index facts_source_idx on vera.facts (group_id, source_id) where source_id is not null;
create index facts_object_entity_idx on vera.facts (group_id, object_entity_id) where object_entity_id is not null;
comment on table vera.facts is 'Claims with trust tier, verification, lifecycle, validity and provenance';

reset role;

-- ===== sql/schema/060_ranking.sql =====

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

-- ===== sql/schema/070_snapshots.sql =====

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
    primary key (group_id, snapshot_id, item_kind, item_id),
    foreign key (group_id, snapshot_id) references vera.snapshots (group_id, snapshot_id) on delete cascade
);
-- erasure finds and deletes snapshot copies that cite an erased episode
create index snapshot_items_episode_idx on vera.snapshot_items (group_id, episode_id) where episode_id is not null;
create index snapshot_items_tsv_idx on vera.snapshot_items using gin (tsv);
comment on table vera.snapshot_items is 'Copied retrieval inputs (facts and passages) of a snapshot';

reset role;

-- ===== sql/schema/080_audit.sql =====

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

-- ===== sql/functions/010_auth_context.sql =====

-- The caller's identity for the current transaction, as row-level security
-- sees it. Policies call these through a scalar subquery so that each is
-- evaluated once per statement, not once per row.
--
-- They are SECURITY DEFINER because vera.auth_context is not readable by the
-- application roles; they return nothing but the caller's own row.
set role vera_owner;

create or replace function vera.current_principal()
returns uuid
language sql stable security definer
set search_path = vera, pg_temp
as $$
    select principal_id
    from vera.auth_context
    where backend_pid = pg_catalog.pg_backend_pid()
      and xact_started = pg_catalog.transaction_timestamp()
$$;
comment on function vera.current_principal() is
    'Principal the current transaction authenticated as, or null';

create or replace function vera.readable_groups()
returns text[]
language sql stable security definer
set search_path = vera, pg_temp
as $$
    select coalesce((
        select readable
        from vera.auth_context
        where backend_pid = pg_catalog.pg_backend_pid()
          and xact_started = pg_catalog.transaction_timestamp()), '{}')
$$;
comment on function vera.readable_groups() is
    'Groups the current transaction may read (any role); empty when unauthenticated';

create or replace function vera.writable_groups()
returns text[]
language sql stable security definer
set search_path = vera, pg_temp
as $$
    select coalesce((
        select writable
        from vera.auth_context
        where backend_pid = pg_catalog.pg_backend_pid()
          and xact_started = pg_catalog.transaction_timestamp()), '{}')
$$;
comment on function vera.writable_groups() is
    'Groups the current transaction may write (member or above); empty when unauthenticated';

create or replace function vera.administrable_groups()
returns text[]
language sql stable security definer
set search_path = vera, pg_temp
as $$
    select coalesce((
        select administrable
        from vera.auth_context
        where backend_pid = pg_catalog.pg_backend_pid()
          and xact_started = pg_catalog.transaction_timestamp()), '{}')
$$;
comment on function vera.administrable_groups() is
    'Groups the current transaction administers (admin or owner); empty when unauthenticated';

-- Raise VA005 unless the transaction has authenticated; returns the principal.
create or replace function vera.require_principal()
returns uuid
language plpgsql stable
set search_path = vera, pg_temp
as $$
declare
    caller uuid := vera.current_principal();
begin
    if caller is null then
        raise exception 'not authenticated: call vera.authenticate(api_key) first, in the same transaction'
            using errcode = 'VA005';
    end if;
    return caller;
end
$$;
comment on function vera.require_principal() is
    'The authenticated principal of this transaction; raises VA005 when there is none';

-- Raise 42501 unless the caller holds at least min_role in the group.
create or replace function vera.require_role(target_group text, min_role vera.member_role)
returns void
language plpgsql stable
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_principal();
    if target_group is null
       or not target_group = any (case min_role
            when 'viewer' then vera.readable_groups()
            when 'member' then vera.writable_groups()
            else vera.administrable_groups() end)
       or (min_role = 'owner' and vera.role_in(target_group) < 'owner') then
        raise exception 'permission denied: % role required in group %', min_role, coalesce(target_group, '(none)')
            using errcode = '42501';
    end if;
end
$$;
comment on function vera.require_role(text, vera.member_role) is
    'Raises 42501 unless the authenticated caller holds min_role (or above) in the group';

reset role;

-- ===== sql/functions/020_authenticate.sql =====

-- Authentication: an API key (any application), or a principal that a
-- trusted server role has verified itself (the HTTP/MCP gateway, workers).
-- Both compute the caller's groups once and store them for the transaction.
set role vera_owner;

-- Effective role of a principal in every group it reaches: a membership
-- applies to the group and all of its descendants; the highest role wins.
create or replace function vera.effective_roles(principal uuid)
returns table (group_id text, role vera.member_role)
language sql stable security definer
set search_path = vera, pg_temp
as $$
    with recursive reach(group_id, role) as (
        select m.group_id, m.role
        from vera.memberships m
        where m.principal_id = principal
        union all
        select g.group_id, r.role
        from reach r
        join vera.groups g on g.parent_group_id = r.group_id
    )
    select reach.group_id, max(reach.role)
    from reach
    group by reach.group_id
$$;
comment on function vera.effective_roles(uuid) is
    'Groups a principal reaches through memberships (inherited by descendants) with its highest role';

-- Effective role of the authenticated caller in one group, or null.
create or replace function vera.role_in(target_group text)
returns vera.member_role
language sql stable security definer
set search_path = vera, pg_temp
as $$
    select e.role from vera.effective_roles(vera.current_principal()) e where e.group_id = target_group
$$;
comment on function vera.role_in(text) is 'Effective role of the authenticated caller in a group, or null';

create or replace function vera.set_auth_context(principal uuid, key uuid)
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    roles record;
begin
    if not exists (select from vera.principals p where p.principal_id = principal and p.disabled_at is null) then
        raise exception 'principal % is unknown or disabled', principal using errcode = 'VA006';
    end if;

    select coalesce(array_agg(e.group_id order by e.group_id), '{}') as readable,
           coalesce(array_agg(e.group_id order by e.group_id) filter (where e.role >= 'member'), '{}') as writable,
           coalesce(array_agg(e.group_id order by e.group_id) filter (where e.role >= 'admin'), '{}') as administrable
      into roles
      from vera.effective_roles(principal) e;

    insert into vera.auth_context as c
        (backend_pid, xact_started, principal_id, key_id, readable, writable, administrable)
    values (pg_catalog.pg_backend_pid(), pg_catalog.transaction_timestamp(), principal, key,
            roles.readable, roles.writable, roles.administrable)
    on conflict (backend_pid) do update
        set xact_started = excluded.xact_started,
            principal_id = excluded.principal_id,
            key_id = excluded.key_id,
            readable = excluded.readable,
            writable = excluded.writable,
            administrable = excluded.administrable;
end
$$;
comment on function vera.set_auth_context(uuid, uuid) is
    'Internal: records the caller and its groups for the current transaction only';

-- Recompute the current transaction's groups after a change to the caller's
-- own reach (a group it created, a membership it changed).
create or replace function vera.refresh_auth_context()
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    context vera.auth_context;
begin
    select * into context from vera.auth_context c
     where c.backend_pid = pg_catalog.pg_backend_pid()
       and c.xact_started = pg_catalog.transaction_timestamp();
    if found then
        perform vera.set_auth_context(context.principal_id, context.key_id);
    end if;
end
$$;
comment on function vera.refresh_auth_context() is
    'Internal: recomputes the caller''s groups for the rest of the transaction';

-- Contract: authenticates an API key of the form vera_<12 hex>_<43 base64url>
-- for the current transaction and returns the caller's principal id.
-- Errors: VA001 malformed, VA002 not recognised, VA003 revoked, VA004 expired,
-- VA006 principal disabled. Outside a transaction block the context ends with
-- the statement, so call it first inside BEGIN ... COMMIT.
create or replace function vera.authenticate(api_key text)
returns uuid
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    parts text[];
    key_row vera.api_keys;
begin
    parts := pg_catalog.regexp_match(api_key, '^vera_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$');
    if parts is null then
        raise exception 'malformed API key: expected vera_<12 hex>_<43 base64url characters>'
            using errcode = 'VA001';
    end if;

    select * into key_row from vera.api_keys k where k.prefix = parts[1];
    -- the same answer for an unknown prefix and a wrong secret: a prefix alone proves nothing
    if not found or key_row.key_sha256 <> pg_catalog.sha256(pg_catalog.convert_to(api_key, 'UTF8')) then
        raise exception 'API key not recognised' using errcode = 'VA002';
    end if;
    if key_row.revoked_at is not null then
        raise exception 'API key % was revoked at %', key_row.prefix, key_row.revoked_at
            using errcode = 'VA003';
    end if;
    if key_row.expires_at is not null and key_row.expires_at <= pg_catalog.now() then
        raise exception 'API key % expired at %', key_row.prefix, key_row.expires_at
            using errcode = 'VA004';
    end if;

    perform vera.set_auth_context(key_row.principal_id, key_row.key_id);
    -- last_used_at is advisory; at most one write a minute per key keeps hot keys cheap
    update vera.api_keys k set last_used_at = pg_catalog.now()
     where k.key_id = key_row.key_id
       and (k.last_used_at is null or k.last_used_at < pg_catalog.now() - interval '1 minute');
    return key_row.principal_id;
end
$$;
comment on function vera.authenticate(text) is
    'Authenticates an API key for the current transaction; returns the principal id';

-- Contract: for trusted server roles only (vera_gateway, vera_worker), which
-- verified the caller themselves (OAuth token, job payload). Sets the same
-- transaction-local context as vera.authenticate.
create or replace function vera.authenticate_principal(principal uuid)
returns uuid
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    if principal is null then
        raise exception 'principal id must not be null' using errcode = '22004';
    end if;
    perform vera.set_auth_context(principal, null);
    return principal;
end
$$;
comment on function vera.authenticate_principal(uuid) is
    'Trusted server roles only: act as an already verified principal for the current transaction';

reset role;

-- ===== sql/functions/030_ids.sql =====

-- Opaque identifiers and secrets, from PostgreSQL's own CSPRNG
-- (gen_random_uuid), so no pgcrypto is required.
set role vera_owner;

-- 'o:' / 'w:' / 'p:' / 'u:' followed by 64 random bits in hex.
create or replace function vera.new_group_id(kind vera.group_kind)
returns text
language sql volatile
set search_path = vera, pg_temp
as $$
    select case kind when 'organisation' then 'o' when 'workspace' then 'w'
                     when 'project' then 'p' else 'u' end
           || ':' || left(replace(pg_catalog.gen_random_uuid()::text, '-', ''), 16)
$$;
comment on function vera.new_group_id(vera.group_kind) is 'Internal: a fresh opaque group id of the given kind';

-- 32 bytes with a full 256 bits of entropy: SHA-256 over three version-4
-- UUIDs (3 x 122 random bits), base64url without padding (43 characters).
create or replace function vera.new_secret()
returns text
language sql volatile
set search_path = vera, pg_temp
as $$
    select pg_catalog.rtrim(pg_catalog.translate(pg_catalog.encode(pg_catalog.sha256(
               pg_catalog.uuid_send(pg_catalog.gen_random_uuid())
            || pg_catalog.uuid_send(pg_catalog.gen_random_uuid())
            || pg_catalog.uuid_send(pg_catalog.gen_random_uuid())), 'base64'), '+/', '-_'), '=')
$$;
comment on function vera.new_secret() is 'Internal: 256 random bits, base64url (43 characters)';

reset role;

-- ===== sql/functions/040_audit.sql =====

-- Writing the audit log. Only definer functions append to it.
set role vera_owner;

create or replace function vera.audit(
    target_group text, action text, target_kind text, target_id text, detail jsonb default '{}'
)
returns void
language sql volatile security definer
set search_path = vera, pg_temp
as $$
    insert into vera.audit_log (group_id, principal_id, action, target_kind, target_id, detail)
    values (target_group, vera.current_principal(), action, target_kind, target_id, coalesce(detail, '{}'))
$$;
comment on function vera.audit(text, text, text, text, jsonb) is
    'Internal: appends one audit row attributed to the authenticated caller';

reset role;

-- ===== sql/functions/050_tenants.sql =====

-- Provisioning: tenants (organisations), nested groups, principals and
-- memberships. Each function checks the caller's role itself and audits.
set role vera_owner;

-- Internal: a principal with its personal u: scope, where it is owner.
create or replace function vera.insert_principal(
    kind vera.principal_kind, display_name text, email text
)
returns uuid
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    personal text := vera.new_group_id('personal');
    principal uuid;
begin
    insert into vera.groups (group_id, kind, name)
    values (personal, 'personal', 'personal: ' || btrim(display_name));
    insert into vera.principals (kind, display_name, email, personal_group_id)
    values (kind, btrim(display_name), nullif(btrim(email), ''), personal)
    returning principal_id into principal;
    insert into vera.memberships (group_id, principal_id, role) values (personal, principal, 'owner');
    return principal;
end
$$;
comment on function vera.insert_principal(vera.principal_kind, text, text) is
    'Internal: creates a principal and its personal scope';

-- Contract (operators only): creates an organisation, its first owner and an
-- API key for that owner. The key is returned here once and never again.
create or replace function vera.create_tenant(
    organisation_name text, owner_name text, owner_email text default null
)
returns table (group_id text, principal_id uuid, api_key text)
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    org text := vera.new_group_id('organisation');
    owner_id uuid;
    issued record;
begin
    if coalesce(btrim(organisation_name), '') = '' or coalesce(btrim(owner_name), '') = '' then
        raise exception 'organisation_name and owner_name must not be empty' using errcode = '22023';
    end if;
    insert into vera.groups (group_id, kind, name) values (org, 'organisation', btrim(organisation_name));
    owner_id := vera.insert_principal('user', owner_name, owner_email);
    insert into vera.memberships (group_id, principal_id, role) values (org, owner_id, 'owner');
    select * into issued from vera.issue_api_key(owner_id, 'initial key', null);
    insert into vera.audit_log (group_id, principal_id, action, target_kind, target_id, detail)
    values (org, owner_id, 'tenant.create', 'group', org,
            jsonb_build_object('owner', owner_id, 'operator', session_user));
    return query select org, owner_id, issued.api_key;
end
$$;
comment on function vera.create_tenant(text, text, text) is
    'Operators: creates an organisation with its owner and returns the owner''s first API key once';

-- Contract: creates a workspace (under an organisation) or a project (under an
-- organisation or workspace). Requires admin in the parent. Returns the new id.
create or replace function vera.create_group(parent_group_id text, kind vera.group_kind, name text)
returns text
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    parent_kind vera.group_kind;
    new_id text;
begin
    perform vera.require_role(create_group.parent_group_id, 'admin');
    if create_group.kind not in ('workspace', 'project') then
        raise exception 'only workspaces and projects can be created inside a group, not %', create_group.kind
            using errcode = '22023';
    end if;
    select g.kind into parent_kind from vera.groups g where g.group_id = create_group.parent_group_id;
    if parent_kind = 'personal' or (create_group.kind = 'workspace' and parent_kind <> 'organisation')
       or (create_group.kind = 'project' and parent_kind = 'project') then
        raise exception 'a % cannot be created inside a %', create_group.kind, parent_kind using errcode = '22023';
    end if;
    if coalesce(btrim(create_group.name), '') = '' then
        raise exception 'group name must not be empty' using errcode = '22023';
    end if;
    new_id := vera.new_group_id(create_group.kind);
    insert into vera.groups (group_id, kind, parent_group_id, name)
    values (new_id, create_group.kind, create_group.parent_group_id, btrim(create_group.name));
    perform vera.audit(create_group.parent_group_id, 'group.create', 'group', new_id,
                       jsonb_build_object('kind', create_group.kind));
    perform vera.refresh_auth_context();
    return new_id;
end
$$;
comment on function vera.create_group(text, vera.group_kind, text) is
    'Creates a workspace or project under a group the caller administers';

-- Contract: creates a user or service account as a member of a group the
-- caller administers, with a role no higher than the caller's own.
create or replace function vera.create_principal(
    group_id text, kind vera.principal_kind, display_name text,
    role vera.member_role default 'member', email text default null
)
returns uuid
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    new_id uuid;
begin
    perform vera.require_role(create_principal.group_id, 'admin');
    if role > vera.role_in(create_principal.group_id) then
        raise exception 'cannot grant % in % while holding %', role, create_principal.group_id,
            vera.role_in(create_principal.group_id) using errcode = '42501';
    end if;
    if coalesce(btrim(display_name), '') = '' then
        raise exception 'display_name must not be empty' using errcode = '22023';
    end if;
    new_id := vera.insert_principal(kind, display_name, email);
    insert into vera.memberships (group_id, principal_id, role, granted_by)
    values (create_principal.group_id, new_id, role, vera.current_principal());
    perform vera.audit(create_principal.group_id, 'principal.create', 'principal', new_id::text,
                       jsonb_build_object('kind', kind, 'role', role));
    return new_id;
end
$$;
comment on function vera.create_principal(text, vera.principal_kind, text, vera.member_role, text) is
    'Creates a user or service account as a member of a group the caller administers';

-- Contract: grants (or changes) a principal's role in a group the caller
-- administers. The principal must already belong to a group the caller reads,
-- so principals of other tenants cannot be probed or pulled in.
create or replace function vera.set_member_role(group_id text, principal_id uuid, role vera.member_role)
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(set_member_role.group_id, 'admin');
    if role > vera.role_in(set_member_role.group_id) then
        raise exception 'cannot grant % in % while holding %', role, set_member_role.group_id,
            vera.role_in(set_member_role.group_id) using errcode = '42501';
    end if;
    if not exists (select from vera.memberships m
                    where m.principal_id = set_member_role.principal_id
                      and m.group_id = any (vera.readable_groups())
                      and m.group_id not like 'u:%') then
        raise exception 'principal % not found in any group you can read', set_member_role.principal_id
            using errcode = 'VN001';
    end if;
    insert into vera.memberships as m (group_id, principal_id, role, granted_by)
    values (set_member_role.group_id, set_member_role.principal_id, role, vera.current_principal())
    on conflict on constraint memberships_pkey do update
        set role = excluded.role, granted_by = excluded.granted_by, granted_at = now();
    perform vera.audit(set_member_role.group_id, 'membership.set', 'principal',
                       set_member_role.principal_id::text, jsonb_build_object('role', role));
    perform vera.refresh_auth_context();
end
$$;
comment on function vera.set_member_role(text, uuid, vera.member_role) is
    'Grants or changes a principal''s role in a group the caller administers';

-- Contract: removes a principal from a group the caller administers.
-- An owner can only be removed by an owner; a group keeps at least one owner
-- among its direct members if it had one.
create or replace function vera.remove_member(group_id text, principal_id uuid)
returns boolean
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    removed_role vera.member_role;
begin
    perform vera.require_role(remove_member.group_id, 'admin');
    select m.role into removed_role from vera.memberships m
     where m.group_id = remove_member.group_id and m.principal_id = remove_member.principal_id
       for update;
    if not found then
        return false;
    end if;
    if remove_member.group_id like 'u:%' then
        raise exception 'a personal scope keeps its owner' using errcode = '42501';
    end if;
    if removed_role = 'owner' then
        perform vera.require_role(remove_member.group_id, 'owner');
        if not exists (select from vera.memberships m
                        where m.group_id = remove_member.group_id and m.role = 'owner'
                          and m.principal_id <> remove_member.principal_id) then
            raise exception 'cannot remove the last owner of %', remove_member.group_id using errcode = '42501';
        end if;
    end if;
    delete from vera.memberships m
     where m.group_id = remove_member.group_id and m.principal_id = remove_member.principal_id;
    perform vera.audit(remove_member.group_id, 'membership.remove', 'principal',
                       remove_member.principal_id::text, jsonb_build_object('role', removed_role));
    perform vera.refresh_auth_context();
    return true;
end
$$;
comment on function vera.remove_member(text, uuid) is 'Removes a principal from a group the caller administers';

-- Contract: the authenticated caller and every group it reaches, with roles.
create or replace function vera.whoami()
returns table (principal_id uuid, display_name text, kind vera.principal_kind,
               group_id text, group_kind vera.group_kind, group_name text,
               parent_group_id text, role vera.member_role)
language sql stable security definer
set search_path = vera, pg_temp
as $$
    select p.principal_id, p.display_name, p.kind, g.group_id, g.kind, g.name, g.parent_group_id, e.role
    from vera.principals p
    join vera.effective_roles(p.principal_id) e on true
    join vera.groups g on g.group_id = e.group_id
    where p.principal_id = vera.require_principal()
    order by g.group_id
$$;
comment on function vera.whoami() is 'The authenticated caller and each group it reaches, with its role';

reset role;

-- ===== sql/functions/060_api_keys.sql =====

-- API keys: issue (secret shown once), list, revoke.
set role vera_owner;

-- Internal: stores the hash of a fresh key and returns the key once.
create or replace function vera.issue_api_key(principal uuid, name text, expires_at timestamptz)
returns table (key_id uuid, prefix text, api_key text)
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    new_prefix text := left(replace(pg_catalog.gen_random_uuid()::text, '-', ''), 12);
    key text := 'vera_' || new_prefix || '_' || vera.new_secret();
    new_id uuid;
begin
    if coalesce(btrim(name), '') = '' then
        raise exception 'API key name must not be empty' using errcode = '22023';
    end if;
    if expires_at is not null and expires_at <= now() then
        raise exception 'API key expiry % is not in the future', expires_at using errcode = '22023';
    end if;
    insert into vera.api_keys (principal_id, prefix, key_sha256, name, expires_at)
    values (principal, new_prefix, pg_catalog.sha256(pg_catalog.convert_to(key, 'UTF8')), btrim(name), expires_at)
    returning api_keys.key_id into new_id;
    return query select new_id, new_prefix, key;
end
$$;
comment on function vera.issue_api_key(uuid, text, timestamptz) is 'Internal: creates a key and returns it once';

-- True when the caller may manage keys of the principal: its own, or a
-- service account that is a member of a group the caller administers.
create or replace function vera.may_manage_keys_of(principal uuid)
returns boolean
language sql stable security definer
set search_path = vera, pg_temp
as $$
    select principal = vera.current_principal()
        or exists (select from vera.principals p
                     join vera.memberships m on m.principal_id = p.principal_id
                    where p.principal_id = principal and p.kind = 'service'
                      and m.group_id = any (vera.administrable_groups()))
$$;
comment on function vera.may_manage_keys_of(uuid) is 'Internal: the caller may issue or revoke this principal''s keys';

-- Contract: issues an API key for the caller (or for a service account in a
-- group the caller administers). The key is returned here once; only its
-- SHA-256 is kept.
create or replace function vera.create_api_key(
    name text, expires_at timestamptz default null, principal_id uuid default null
)
returns table (key_id uuid, prefix text, api_key text)
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    target uuid := coalesce(create_api_key.principal_id, vera.require_principal());
    personal text;
begin
    perform vera.require_principal();
    if not vera.may_manage_keys_of(target) then
        raise exception 'permission denied: cannot issue keys for principal %', target using errcode = '42501';
    end if;
    select p.personal_group_id into personal from vera.principals p where p.principal_id = target;
    return query select * from vera.issue_api_key(target, name, expires_at);
    perform vera.audit(personal, 'api_key.create', 'principal', target::text,
                       jsonb_build_object('name', name, 'expires_at', expires_at));
end
$$;
comment on function vera.create_api_key(text, timestamptz, uuid) is
    'Issues an API key for the caller or a service account it administers; the key is shown once';

-- Contract: revokes a key by id or prefix. Revocation is immediate and final.
create or replace function vera.revoke_api_key(key text)
returns boolean
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    target vera.api_keys;
    personal text;
begin
    perform vera.require_principal();
    select * into target from vera.api_keys k
     where k.prefix = key or k.key_id::text = key
     for update;
    if not found or not vera.may_manage_keys_of(target.principal_id) then
        raise exception 'API key % not found', key using errcode = 'VN001';
    end if;
    if target.revoked_at is not null then
        return false;
    end if;
    update vera.api_keys k set revoked_at = now() where k.key_id = target.key_id;
    select p.personal_group_id into personal from vera.principals p where p.principal_id = target.principal_id;
    perform vera.audit(personal, 'api_key.revoke', 'api_key', target.prefix, '{}');
    return true;
end
$$;
comment on function vera.revoke_api_key(text) is 'Revokes an API key (by id or prefix) the caller manages';

-- Contract: the caller's own keys, without any secret material.
create or replace function vera.list_api_keys()
returns table (key_id uuid, prefix text, name text, created_at timestamptz,
               expires_at timestamptz, revoked_at timestamptz, last_used_at timestamptz)
language sql stable security definer
set search_path = vera, pg_temp
as $$
    select k.key_id, k.prefix, k.name, k.created_at, k.expires_at, k.revoked_at, k.last_used_at
    from vera.api_keys k
    where k.principal_id = vera.require_principal()
    order by k.created_at
$$;
comment on function vera.list_api_keys() is 'Lists the caller''s API keys (no secrets)';

reset role;

-- ===== sql/rls/010_policies.sql =====

-- Row-level security. Enabled and FORCED on every table, so the owner
-- (vera_owner, which the definer functions run as) is bound by it too.
--
-- Knowledge tables: the caller's groups decide, nothing else. A definer
-- function with a bug still cannot read or write another tenant's rows.
-- Identity tables (groups, principals, memberships, api_keys, auth_context)
-- and the audit log additionally let vera_owner through, because
-- authentication must read them before any caller context exists.
--
-- Idempotent: every policy is dropped and created again.
set role vera_owner;
set client_min_messages = warning;

do $policies$
declare
    knowledge_table text;
begin
    foreach knowledge_table in array array[
        'sources', 'episodes', 'chunks', 'entities', 'entity_aliases', 'predicates',
        'facts', 'feedback', 'ranking_weights', 'snapshots', 'snapshot_items']
    loop
        execute format('alter table vera.%I enable row level security', knowledge_table);
        execute format('alter table vera.%I force row level security', knowledge_table);
        execute format('drop policy if exists read_own_groups on vera.%I', knowledge_table);
        execute format('drop policy if exists insert_own_groups on vera.%I', knowledge_table);
        execute format('drop policy if exists update_own_groups on vera.%I', knowledge_table);
        execute format('drop policy if exists delete_own_groups on vera.%I', knowledge_table);
        -- the scalar subqueries make each function run once per statement
        execute format($p$create policy read_own_groups on vera.%I for select
            using (group_id = any ((select vera.readable_groups())::text[]))$p$, knowledge_table);
        execute format($p$create policy insert_own_groups on vera.%I for insert
            with check (group_id = any ((select vera.writable_groups())::text[]))$p$, knowledge_table);
        execute format($p$create policy update_own_groups on vera.%I for update
            using (group_id = any ((select vera.writable_groups())::text[]))
            with check (group_id = any ((select vera.writable_groups())::text[]))$p$, knowledge_table);
        execute format($p$create policy delete_own_groups on vera.%I for delete
            using (group_id = any ((select vera.writable_groups())::text[]))$p$, knowledge_table);
    end loop;
end
$policies$;

alter table vera.groups enable row level security;
alter table vera.groups force row level security;
drop policy if exists read_own_groups on vera.groups;
drop policy if exists owner_manages on vera.groups;
create policy read_own_groups on vera.groups for select
    using (group_id = any ((select vera.readable_groups())::text[]));
create policy owner_manages on vera.groups to vera_owner using (true) with check (true);

alter table vera.memberships enable row level security;
alter table vera.memberships force row level security;
drop policy if exists read_own_groups on vera.memberships;
drop policy if exists owner_manages on vera.memberships;
create policy read_own_groups on vera.memberships for select
    using (group_id = any ((select vera.readable_groups())::text[]));
create policy owner_manages on vera.memberships to vera_owner using (true) with check (true);

-- a principal is visible to itself and to callers who share a readable group
alter table vera.principals enable row level security;
alter table vera.principals force row level security;
drop policy if exists read_self_and_members on vera.principals;
drop policy if exists owner_manages on vera.principals;
create policy read_self_and_members on vera.principals for select
    using (principal_id = (select vera.current_principal())
           or exists (select from vera.memberships m
                       where m.principal_id = principals.principal_id
                         and m.group_id = any ((select vera.readable_groups())::text[])));
create policy owner_manages on vera.principals to vera_owner using (true) with check (true);

-- keys and the context table are reached only through definer functions
alter table vera.api_keys enable row level security;
alter table vera.api_keys force row level security;
drop policy if exists owner_manages on vera.api_keys;
create policy owner_manages on vera.api_keys to vera_owner using (true) with check (true);

alter table vera.auth_context enable row level security;
alter table vera.auth_context force row level security;
drop policy if exists owner_manages on vera.auth_context;
create policy owner_manages on vera.auth_context to vera_owner using (true) with check (true);

-- the audit log is appended by definer functions and read by group admins
alter table vera.audit_log enable row level security;
alter table vera.audit_log force row level security;
drop policy if exists read_administered_groups on vera.audit_log;
drop policy if exists owner_appends on vera.audit_log;
drop policy if exists owner_reads on vera.audit_log;
create policy read_administered_groups on vera.audit_log for select
    using (group_id = any ((select vera.administrable_groups())::text[]));
create policy owner_appends on vera.audit_log for insert to vera_owner with check (true);

reset role;

-- ===== sql/rls/020_grants.sql =====

-- Grants: what each role may touch. Idempotent (grant is a no-op when held).
--
-- vera_app     reads knowledge through RLS; writes only through the SQL API,
--              so curation rules (tiers, contamination guard) cannot be skipped.
-- vera_worker  also updates rows in place (embeddings, statuses) through RLS.
-- vera_gateway an HTTP/MCP server: the SQL API plus authenticate_principal.
-- vera_operator provisions tenants.
set role vera_owner;

grant select on vera.sources, vera.episodes, vera.chunks, vera.entities, vera.entity_aliases,
    vera.predicates, vera.facts, vera.feedback, vera.ranking_weights, vera.snapshots,
    vera.snapshot_items, vera.groups, vera.memberships, vera.principals, vera.audit_log
    to vera_app, vera_worker, vera_gateway;

grant insert, update, delete on vera.sources, vera.episodes, vera.chunks, vera.entities,
    vera.entity_aliases, vera.predicates, vera.facts, vera.snapshot_items
    to vera_worker;

-- helpers that policies call must be executable by whoever the policy applies to
grant execute on function vera.current_principal(), vera.readable_groups(), vera.writable_groups(),
    vera.administrable_groups()
    to public;

-- the public SQL API
grant execute on function
    vera.authenticate(text),
    vera.require_principal(),
    vera.require_role(text, vera.member_role),
    vera.role_in(text),
    vera.whoami(),
    vera.create_group(text, vera.group_kind, text),
    vera.create_principal(text, vera.principal_kind, text, vera.member_role, text),
    vera.set_member_role(text, uuid, vera.member_role),
    vera.remove_member(text, uuid),
    vera.create_api_key(text, timestamptz, uuid),
    vera.revoke_api_key(text),
    vera.list_api_keys()
    to vera_app, vera_worker, vera_gateway;

grant execute on function vera.authenticate_principal(uuid) to vera_gateway, vera_worker;

grant execute on function vera.create_tenant(text, text, text) to vera_operator;

reset role;
