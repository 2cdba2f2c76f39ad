-- Snapshots: frozen copies of a group's retrieval inputs, with the pins
-- (model, dimension, search version, weights, ontology, policy, assembler)
-- a reader must still match.
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
    -- the group's ontology, policy and assembler version when it was taken
    -- (vera.group_rules; 0009_snapshot_pins): null for a snapshot taken before
    pins            jsonb,
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
    -- a passage's time scope as it was, and the version of the reader that read it (0002_time_scopes)
    time_scope    tstzmultirange,
    time_scope_version smallint,
    primary key (group_id, snapshot_id, item_kind, item_id),
    foreign key (group_id, snapshot_id) references vera.snapshots (group_id, snapshot_id) on delete cascade
);
-- erasure finds and deletes snapshot copies that cite an erased episode
create index snapshot_items_episode_idx on vera.snapshot_items (group_id, episode_id) where episode_id is not null;
create index snapshot_items_tsv_idx on vera.snapshot_items using gin (tsv);
comment on table vera.snapshot_items is 'Copied retrieval inputs (facts and passages) of a snapshot';

reset role;
