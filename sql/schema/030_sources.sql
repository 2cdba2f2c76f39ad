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
    -- how often the schedule reads it, in seconds (null: only when asked, `vera ingest`)
    interval_s  integer constraint sources_interval_range check (interval_s between 60 and 31536000),
    -- when a connector's run last compared the source's id listing with what VERA holds (prune)
    pruned_at   timestamptz,
    -- when the schedule last queued a run of it (so a busy worker is not sent it twice)
    scheduled_at timestamptz,
    primary key (group_id, source_id),
    constraint sources_name_unique unique (group_id, name)
);
comment on table vera.sources is 'Registered sources with their trust tier and incremental cursor';

-- One run of a connector over a source: what `vera source list` shows of its
-- last run. A run that never ended (its worker died) is marked interrupted
-- when the next one begins.
create table vera.source_runs (
    group_id    text not null,
    run_id      uuid not null default gen_random_uuid(),
    source_id   uuid not null,
    started_at  timestamptz not null default now(),
    finished_at timestamptz,
    status      text not null default 'running'
                constraint source_runs_status_known
                check (status in ('running', 'done', 'stopped', 'failed', 'interrupted')),
    items       integer not null default 0,  -- new episodes or versions written
    unchanged   integer not null default 0,
    retracted   integer not null default 0,
    skipped     integer not null default 0,  -- bad items, each named in the worker's log
    error       text constraint source_runs_error_length check (char_length(error) <= 2000),
    primary key (group_id, run_id),
    -- an erased source takes its runs' history with it (their errors name its records)
    foreign key (group_id, source_id) references vera.sources (group_id, source_id) on delete cascade
);
create index source_runs_latest_idx on vera.source_runs (group_id, source_id, started_at desc);
comment on table vera.source_runs is 'Connector runs over a source: when, how they ended, what they counted';

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
    -- what the connector saw of it without reading it (a file's mtime_ns:size; 0014_record_signatures)
    signature      text constraint episodes_signature_length check (char_length(signature) between 1 and 200),
    primary key (group_id, episode_id),
    foreign key (group_id, source_id) references vera.sources (group_id, source_id),
    constraint episodes_version_unique unique (group_id, source_id, external_id, version)
);
-- idempotent re-ingestion looks up the latest version of a record by hash
create index episodes_record_hash_idx on vera.episodes (group_id, source_id, external_id, content_sha256);
comment on table vera.episodes is 'One version of one source record: content hash, raw-bytes key, status';
comment on column vera.episodes.signature is
    'What the connector saw of this version without reading it (a file''s mtime_ns:size); null when none';

create table vera.chunks (
    group_id   text not null,
    chunk_id   uuid not null default gen_random_uuid(),
    episode_id uuid not null,
    ordinal    integer not null constraint chunks_ordinal_nonnegative check (ordinal >= 0),
    heading    text,
    text       text not null constraint chunks_text_length check (char_length(text) between 1 and 20000),
    char_start integer,
    char_end   integer,
    -- vera.lexical_tsvector(coalesce(heading, '') || ' ' || text), set by the trigger chunks_set_tsv
    -- (sql/functions/173_lexical_terms.sql): 'simple' words (no stemming, no stopwords, diacritics
    -- kept), and a Vietnamese text's adjacent word pairs; kept in the row (storage main), not moved to
    -- TOAST, as every lexical round reads it (0020_passage_words_inline)
    tsv        tsvector storage main,
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
    -- the periods the passage states ("from 1811 to 1827"), read when it is stored
    -- (vera_client/domain/time_scopes.py) or stated by its record's front matter; null: not
    -- read yet (`vera reprocess --time-scopes`), empty: states none (0002_time_scopes)
    time_scope tstzmultirange,
    time_scope_version smallint constraint chunks_time_scope_version_nonnegative check (time_scope_version >= 0),
    -- its length as BM25 counts it: its distinct words, the lexemes of tsv less a Vietnamese
    -- text's word pairs (weight C), computed after chunks_set_tsv sets tsv (0019_passage_words)
    words      integer generated always as (pg_catalog.length(tsv) - pg_catalog.length(pg_catalog.ts_filter(tsv, '{c}'))) stored,
    primary key (group_id, chunk_id),
    foreign key (group_id, episode_id) references vera.episodes (group_id, episode_id) on delete cascade,
    constraint chunks_ordinal_unique unique (group_id, episode_id, ordinal),
    constraint chunks_span_order check (char_end is null or char_start is null or char_end >= char_start),
    constraint chunks_proposal_is_proposed check (lifecycle <> 'proposal' or proposed),
    constraint chunks_time_scope_read_together check ((time_scope is null) = (time_scope_version is null))
);
-- the lexical half of search: each word of a passage keyed by its group and length class
-- ("<group_id> <class> <lexeme>");
-- vera.passage_lexemes in sql/functions/174_passage_lexemes.sql, which the planner inlines into
-- this expression. A query reads only its groups' postings of its words (migration 0021); no
-- pending list (fastupdate off), which a round's every length class would read
create index chunks_group_lexemes_idx on vera.chunks using gin ((
    case when tsv = ''::tsvector then tsv
         else ('''' || (group_id || ' ' || width_bucket(words, '{32,64,128,256,512,1024,2048}'::integer[])::text) || ' '
               || substr(replace(regexp_replace(strip(tsv)::text, '((?:[^'' ]{250}){2})[^'' ]+', '\1', 'g'), ''' ''',
                                 ''' ''' || (group_id || ' ' || width_bucket(words, '{32,64,128,256,512,1024,2048}'::integer[])::text) || ' '), 2))::tsvector
    end)) with (fastupdate = off);
-- a group's shortest and longest passages, for the length classes a lexical round reads
-- (vera.lexical_candidates, sql/functions/177_lexical_candidates.sql)
create index chunks_group_words_idx on vera.chunks (group_id, words);
-- passages waiting for the admins of their scope (vera.pending_passages)
create index chunks_waiting_idx on vera.chunks (group_id) where lifecycle in ('pending_review', 'proposal');
comment on table vera.chunks is 'Ordered passages of an episode: text, full-text vector and embedding';
comment on column vera.chunks.time_scope is
    'Periods the passage states (null: not read yet; empty: states none)';
comment on column vera.chunks.time_scope_version is
    'Version of VERA''s reader that read time_scope (time_scopes.EXTRACTION_VERSION); 0: stated by the caller or front matter';

-- The folders an organisation's folder sources may name as their root (and what
-- lies below them), set by operators only (`vera tenant roots add`): a source's
-- root is a path on the worker's machine, and a worker serving several tenants
-- must not read one tenant's share for another. Checked by vera.register_source
-- (a root outside these: VR001) and again by the worker before it reads, on real
-- paths and within its own VERA_WORKER__SOURCE_ROOTS. A root group (organisation
-- or personal scope) with none may register no folder source (0007_source_roots).
create table vera.source_roots (
    group_id   text not null references vera.groups (group_id) on delete cascade,
    root       text not null
               constraint source_roots_absolute check (
                   root ~ '^/' and char_length(root) <= 4096
                   and (root = '/' or right(root, 1) <> '/')
                   and root !~ '//' and root !~ '(^|/)\.\.?(/|$)'),
    added_at   timestamptz not null default now(),
    added_by   text not null default session_user,
    primary key (group_id, root)
);
comment on table vera.source_roots is
    'Folders (absolute, normalised) below which an organisation''s folder sources may lie; operators only';

reset role;
