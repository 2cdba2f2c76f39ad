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
