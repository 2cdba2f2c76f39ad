-- 0002_write_path: the write path in SQL. Sources, episodes and chunks are
-- ingested idempotently; claims are published with trust-tier grading, the
-- contamination guard, entity resolution and supersession; reviews,
-- retraction and erasure; follow-up work goes to Procrastinate's queue in
-- the same transaction (the outbox; `vera db migrate` installs the queue's
-- schema, see docs/operations.md).
--
-- Apply with:  psql -v ON_ERROR_STOP=1 -1 -f 0002_write_path.sql
-- Frozen once released: changes go into a new numbered migration.

-- group-scoped trigram probes for entity resolution (a contrib module, like pg_trgm)
create extension if not exists btree_gin;

-- Owns the trigram probe of entity resolution: pg_trgm's % operator is not
-- leakproof, so under row-level security no index can serve it; this role
-- reads past RLS for that one function, which checks the group itself.
do $roles$
begin
    if not exists (select from pg_catalog.pg_roles where rolname = 'vera_resolver') then
        create role vera_resolver nologin nosuperuser nocreatedb nocreaterole bypassrls noinherit;
    else
        alter role vera_resolver nologin nosuperuser nocreatedb nocreaterole bypassrls noinherit;
    end if;
end
$roles$;
grant vera_resolver to vera_owner with inherit true;
grant create, usage on schema vera to vera_resolver;

set role vera_owner;

-- a proposal a reviewer approved
alter type vera.fact_lifecycle add value if not exists 'accepted';

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

alter table vera.facts
    add column stated_valid_to timestamptz,
    add column proposed_for text references vera.groups (group_id),
    add column origin jsonb;
-- until now valid_to was only ever what the claim stated
update vera.facts set stated_valid_to = valid_to where superseded_by is null;

alter table vera.facts
    -- superseded_by is derived (vera.rebuild_timelines); its foreign-key check
    -- locked every successor row on each supersession
    drop constraint facts_group_id_superseded_by_fkey,
    -- principals are never deleted; the check cost every published claim a lookup
    drop constraint facts_proposed_by_fkey,
    drop constraint facts_superseded_has_successor,
    add constraint facts_superseded_has_successor check (
        lifecycle <> 'superseded' or superseded_by is not null or valid_to is not null
        or retired_at is not null),
    add constraint facts_proposal_has_target check (lifecycle <> 'proposal' or proposed_for is not null),
    add constraint facts_stated_validity_order check (stated_valid_to is null or stated_valid_to >= valid_from);

-- supersession and retraction update lifecycle, successor and validity: no
-- index mentions them and pages keep room, so those updates stay in place (HOT)
alter table vera.facts set (fillfactor = 85);
drop index vera.facts_current_idx;
-- valid-time reads are the read path's to index, measured
drop index vera.facts_validity_idx;
create index facts_timeline_idx on vera.facts (group_id, subject_entity_id, predicate, valid_from);
create index facts_proposed_for_idx on vera.facts (proposed_for) where proposed_for is not null;
create index facts_origin_episode_idx on vera.facts ((origin ->> 'episode_id')) where origin is not null;

drop index vera.entity_aliases_norm_trgm_idx;
create index entity_aliases_group_trgm_idx on vera.entity_aliases using gin (group_id, alias_norm gin_trgm_ops);

reset role;

-- ===== sql/schema/090_settings.sql =====

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

-- ===== sql/functions/070_settings.sql =====

-- Settings: documented defaults, overridable per group by its admins.
set role vera_owner;

-- The defaults, and the only setting names there are.
create or replace function vera.setting_default(name text)
returns jsonb
language sql immutable
set search_path = vera, pg_temp
as $$
    select case name
        -- entity resolution ladder: pg_trgm similarity that links a name to an alias
        when 'er.trigram_link' then '0.85'::jsonb
        -- cosine similarity of name embeddings that links at once
        when 'er.semantic_link' then '0.86'::jsonb
        -- cosine similarity from which candidates go to the equivalence judge
        when 'er.semantic_candidate' then '0.55'::jsonb
        -- how many candidates the judge sees
        when 'er.candidate_limit' then '5'::jsonb
        -- enqueue a contradiction-judge job for new values of multi-valued predicates
        when 'judge.contradiction' then 'false'::jsonb
        -- how long a retract_cleanup job waits for the caller to clean up in-process
        when 'retract.cleanup_delay_seconds' then '60'::jsonb
    end
$$;
comment on function vera.setting_default(text) is 'Default value of a setting; null for an unknown name';

-- Contract: a setting's value in a group (its override, else the default).
create or replace function vera.setting(group_id text, name text)
returns jsonb
language sql stable
set search_path = vera, pg_temp
as $$
    select coalesce(
        (select s.value from vera.group_settings s where s.group_id = setting.group_id and s.name = setting.name),
        vera.setting_default(setting.name))
$$;
comment on function vera.setting(text, text) is 'A setting''s value in a group: its override, else the default';

-- Contract: overrides a setting in a group the caller administers (null resets
-- it to the default). Unknown names and values of the wrong type are refused.
create or replace function vera.set_setting(group_id text, name text, value jsonb)
returns jsonb
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    fallback jsonb := vera.setting_default(set_setting.name);
begin
    perform vera.require_role(set_setting.group_id, 'admin');
    if fallback is null then
        raise exception 'unknown setting %', set_setting.name using errcode = '22023';
    end if;
    if value is null then
        delete from vera.group_settings s where s.group_id = set_setting.group_id and s.name = set_setting.name;
    else
        if jsonb_typeof(value) <> jsonb_typeof(fallback)
           or (jsonb_typeof(value) = 'number' and set_setting.name like 'er.%'
               and set_setting.name <> 'er.candidate_limit' and (value::float8 < 0 or value::float8 > 1))
           or (jsonb_typeof(value) = 'number' and (set_setting.name = 'er.candidate_limit'
               or set_setting.name like 'retract.%') and (value::float8 < 0 or value::float8 > 86400)) then
            raise exception 'invalid value % for setting % (default %)', value, set_setting.name, fallback
                using errcode = '22023';
        end if;
        insert into vera.group_settings as s (group_id, name, value, updated_by)
        values (set_setting.group_id, set_setting.name, value, vera.current_principal())
        on conflict on constraint group_settings_pkey do update
            set value = excluded.value, updated_at = now(), updated_by = excluded.updated_by;
    end if;
    perform vera.audit(set_setting.group_id, 'setting.set', 'setting', set_setting.name,
                       jsonb_build_object('value', value));
    return vera.setting(set_setting.group_id, set_setting.name);
end
$$;
comment on function vera.set_setting(text, text, jsonb) is
    'Overrides (or with null resets) a setting in a group the caller administers';

reset role;

-- ===== sql/functions/080_outbox.sql =====

-- The transactional outbox: follow-up work for the worker is deferred as a
-- Procrastinate job in the same transaction as the write that needs it, by
-- calling Procrastinate's own defer function. A rollback leaves no job; a
-- commit always has it.
set role vera_owner;

-- Internal: defers one job and returns its id. Each task has its own queue,
-- named after it without the 'vera.' prefix (vera.embed -> embed), so that
-- workers can be scaled, or held back, per kind of work.
-- Procrastinate's functions use unqualified names, hence its schema on the path.
create or replace function vera.enqueue_job(
    task_name text, args jsonb, scheduled_at timestamptz default null
)
returns bigint
language plpgsql volatile security definer
set search_path = vera, procrastinate, pg_temp
as $$
declare
    job_ids bigint[];
begin
    if pg_catalog.to_regprocedure('procrastinate.procrastinate_defer_jobs_v1(procrastinate.procrastinate_job_to_defer_v1[])') is null then
        raise exception 'the job queue (Procrastinate''s schema "procrastinate") is not installed: run vera db migrate'
            using errcode = 'VJ001';
    end if;
    job_ids := procrastinate.procrastinate_defer_jobs_v1(array[
        row(pg_catalog.regexp_replace(task_name, '^vera[.]', ''), task_name, 0, null, null, args, scheduled_at)
            ::procrastinate.procrastinate_job_to_defer_v1]);
    return job_ids[1];
end
$$;
comment on function vera.enqueue_job(text, jsonb, timestamptz) is
    'Internal: defers a Procrastinate job in the current transaction (the outbox)';

reset role;

-- ===== sql/functions/090_normalize.sql =====

-- Normalisation of names and predicates.
--
-- These pure functions pin no search_path, unlike every other function here:
-- a SET clause keeps PostgreSQL from inlining a SQL function and costs a
-- settings save and restore per call (they run once per claim). They call
-- only schema-qualified pg_catalog functions, so the path cannot matter.
set role vera_owner;

-- Contract: the form names are matched by. Unicode NFKC (folds full-width and
-- compatibility forms), lower case, every run of characters that are neither
-- letters nor digits (whitespace, punctuation, symbols) collapsed to one
-- space, trimmed. Diacritics are kept: 'Nguyễn' and 'Nguyen' stay different
-- names. Needs a UTF-8 database whose ctype knows Unicode (the embedded
-- server's builtin C.UTF-8 does).
create or replace function vera.normalize_name(name text)
returns text
language sql immutable strict parallel safe
as $$
    select pg_catalog.btrim(pg_catalog.regexp_replace(
        pg_catalog.lower(pg_catalog.normalize(name, 'NFKC')),
        -- combining marks (U+0300-036F, 1AB0-1AFF, 1DC0-1DFF, 20D0-20FF, FE20-FE2F) are part of letters
        '[^[:alnum:]\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+', ' ', 'g'))
$$;
comment on function vera.normalize_name(text) is
    'Matching form of a name: NFKC, lower case, punctuation and whitespace collapsed, diacritics kept';

-- Contract: a predicate in UPPER_SNAKE ('runs on', 'runsOn', 'RUNS-ON' -> RUNS_ON);
-- null when nothing usable is left or it does not start with a letter.
create or replace function vera.normalize_predicate(predicate text)
returns text
language sql immutable strict parallel safe
as $$
    select case when normalized ~ '^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$' and char_length(normalized) <= 100
                then normalized end
    from (select pg_catalog.btrim(pg_catalog.upper(pg_catalog.regexp_replace(
                 -- split camelCase before upper-casing
                 pg_catalog.regexp_replace(pg_catalog.normalize(predicate, 'NFKC'), '([a-z0-9])([A-Z])', '\1_\2', 'g'),
                 '[^[:alnum:]]+', '_', 'g')), '_') as normalized) p
$$;
comment on function vera.normalize_predicate(text) is 'UPPER_SNAKE form of a predicate, or null';

reset role;

-- ===== sql/functions/100_embeddings.sql =====

-- Embeddings: one model and dimension pinned per group, HNSW indexes per
-- dimension in use, and validation of incoming vectors.
set role vera_owner;

-- Internal: creates the cosine HNSW indexes for one dimension if missing.
-- The column is an unsized vector (groups pin different dimensions), so each
-- index covers the rows of its dimension through a cast and a predicate.
create or replace function vera.ensure_vector_indexes(dim integer)
returns void
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    target record;
begin
    for target in
        select * from (values ('facts', 'embedding'), ('chunks', 'embedding'), ('entities', 'name_embedding'))
            as t(table_name, column_name)
    loop
        execute format(
            'create index if not exists %I on vera.%I using hnsw ((%I::vector(%s)) vector_cosine_ops) '
            'where vector_dims(%I) = %s',
            format('%s_%s_%s_hnsw_idx', target.table_name, target.column_name, dim),
            target.table_name, target.column_name, dim, target.column_name, dim);
    end loop;
end
$$;
comment on function vera.ensure_vector_indexes(integer) is
    'Internal: cosine HNSW indexes on facts, chunks and entities for one dimension';

-- Internal: pins (model, dim) on a group at its first vector, and refuses a
-- different model or dimension afterwards (a model change is a reprocess).
create or replace function vera.pin_embedding(target_group text, model text, dim integer)
returns void
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    pinned record;
begin
    if coalesce(pg_catalog.btrim(model), '') = '' then
        raise exception 'embedding_model is required when vectors are given' using errcode = '22023';
    end if;
    select g.embedding_model, g.embedding_dim into pinned from vera.groups g where g.group_id = target_group;
    if pinned.embedding_model is null then
        -- only the first pin locks the group row (writers with vectors would otherwise queue on it)
        select g.embedding_model, g.embedding_dim into pinned from vera.groups g
         where g.group_id = target_group for update;
    end if;
    if pinned.embedding_model is null then
        update vera.groups g set embedding_model = model, embedding_dim = dim where g.group_id = target_group;
        perform vera.ensure_vector_indexes(dim);
    elsif pinned.embedding_model <> model or pinned.embedding_dim <> dim then
        raise exception 'group % is pinned to embedding model % (% dimensions); got % (% dimensions)',
            target_group, pinned.embedding_model, pinned.embedding_dim, model, dim using errcode = 'VE001';
    end if;
end
$$;
comment on function vera.pin_embedding(text, text, integer) is
    'Internal: pins a group''s embedding model and dimension, or refuses a mismatch (VE001)';

-- Internal: parses JSON number arrays into vectors, all of one dimension.
-- Returns the dimension (null when no vector is given). JSON cannot carry NaN;
-- out-of-range numbers become infinite in float4 and are refused (VE002).
create or replace function vera.parse_vectors(vectors jsonb, what text, out dim integer, out parsed public.vector[])
language plpgsql stable
set search_path = vera, public, pg_temp
as $$
declare
    dims integer[];
begin
    if vectors is null or jsonb_typeof(vectors) <> 'array' then
        return;
    end if;
    begin
        select array_agg(case when jsonb_typeof(v) = 'null' then null else (v::text)::public.vector end order by i),
               array_agg(distinct public.vector_dims((v::text)::public.vector)) filter (where jsonb_typeof(v) <> 'null')
          into parsed, dims
          from jsonb_array_elements(vectors) with ordinality as e(v, i);
    exception when data_exception or invalid_text_representation then
        raise exception 'invalid % embedding: % (numbers only, finite, as a JSON array)', what, sqlerrm
            using errcode = 'VE002';
    end;
    if cardinality(dims) > 1 then
        raise exception '% embeddings of different dimensions in one call: %', what, dims using errcode = 'VE001';
    end if;
    dim := dims[1];
end
$$;
comment on function vera.parse_vectors(jsonb, text) is 'Internal: JSON arrays of numbers to vectors of one dimension';

reset role;

-- ===== sql/functions/110_sources.sql =====

-- Ingestion: sources, episodes (versions of a source record) and chunks.
set role vera_owner;

-- Contract: registers (or updates, by name) a source in a group the caller
-- administers: its trust tier decides how its claims are published, so only
-- admins set it. Returns the source id.
create or replace function vera.register_source(
    group_id text, kind text, name text, trust_tier integer,
    token_env text default null, config jsonb default '{}', uri text default null
)
returns uuid
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    registered uuid;
begin
    perform vera.require_role(register_source.group_id, 'admin');
    if register_source.trust_tier is null or register_source.trust_tier not between 1 and 4 then
        raise exception 'trust_tier must be 1 (authoritative), 2 (curated), 3 (informational) or 4 (unverified), not %',
            coalesce(register_source.trust_tier::text, 'null') using errcode = '22023';
    end if;
    if register_source.kind is null or register_source.kind !~ '^[a-z][a-z0-9_]{0,39}$' then
        raise exception 'source kind must be a lower-case identifier (markdown, jira, ...), not %',
            coalesce(register_source.kind, 'null') using errcode = '22023';
    end if;
    if coalesce(btrim(register_source.name), '') = '' or char_length(register_source.name) > 200 then
        raise exception 'source name must be 1 to 200 characters' using errcode = '22023';
    end if;
    if register_source.token_env is not null and register_source.token_env !~ '^[A-Z_][A-Z0-9_]{0,127}$' then
        raise exception 'token_env names an environment variable (A-Z, 0-9, _), it never holds the secret'
            using errcode = '22023';
    end if;
    if jsonb_typeof(coalesce(register_source.config, '{}')) <> 'object' then
        raise exception 'config must be a JSON object' using errcode = '22023';
    end if;
    insert into vera.sources as s (group_id, kind, name, trust_tier, token_env, config, uri, created_by)
    values (register_source.group_id, register_source.kind, btrim(register_source.name), register_source.trust_tier,
            register_source.token_env, coalesce(register_source.config, '{}'), register_source.uri,
            vera.current_principal())
    on conflict on constraint sources_name_unique do update
        set kind = excluded.kind, trust_tier = excluded.trust_tier, token_env = excluded.token_env,
            config = excluded.config, uri = excluded.uri, retracted_at = null
    returning s.source_id into registered;
    perform vera.audit(register_source.group_id, 'source.register', 'source', registered::text,
                       jsonb_build_object('name', btrim(register_source.name), 'kind', register_source.kind,
                                          'trust_tier', register_source.trust_tier));
    return registered;
end
$$;
comment on function vera.register_source(text, text, text, integer, text, jsonb, text) is
    'Registers or updates (by name) a source and its trust tier; admins only';

-- Internal: a source of the group that the caller can see, or VN001.
create or replace function vera.visible_source(target_group text, target_source uuid)
returns vera.sources
language plpgsql stable
set search_path = vera, pg_temp
as $$
declare
    found_source vera.sources;
begin
    select * into found_source from vera.sources s
     where s.group_id = target_group and s.source_id = target_source;
    if not found then
        raise exception 'unknown source % in group %', target_source, target_group using errcode = 'VN001';
    end if;
    return found_source;
end
$$;
comment on function vera.visible_source(text, uuid) is 'Internal: a visible source or VN001';

-- Contract: records one version of a source record. Unchanged content (same
-- SHA-256 as the latest version) is a no-op that returns the existing
-- episode; changed content becomes the next version. Members and above.
create or replace function vera.record_episode(
    group_id text, source_id uuid, external_id text, content_sha256 bytea,
    object_key text default null, mime text default null, observed_at timestamptz default now(),
    title text default null, uri text default null
)
returns table (episode_id uuid, version integer, created boolean)
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    src vera.sources;
    latest record;
begin
    perform vera.require_role(record_episode.group_id, 'member');
    src := vera.visible_source(record_episode.group_id, record_episode.source_id);
    if src.retracted_at is not null then
        raise exception 'source % was retracted at %; register it again to ingest from it', src.name, src.retracted_at
            using errcode = '22023';
    end if;
    if coalesce(record_episode.external_id, '') = '' or char_length(record_episode.external_id) > 2000 then
        raise exception 'external_id must be 1 to 2000 characters' using errcode = '22023';
    end if;
    if record_episode.content_sha256 is null or octet_length(record_episode.content_sha256) <> 32 then
        raise exception 'content_sha256 must be the 32-byte SHA-256 of the record''s content' using errcode = '22023';
    end if;
    -- one writer per record at a time, so two ingesters cannot both create version n+1
    perform pg_advisory_xact_lock(hashtextextended(
        record_episode.group_id || '/' || record_episode.source_id || '/' || record_episode.external_id, 0));
    select e.episode_id, e.version, e.content_sha256 into latest from vera.episodes e
     where e.group_id = record_episode.group_id and e.source_id = record_episode.source_id
       and e.external_id = record_episode.external_id
     order by e.version desc limit 1;
    if found and latest.content_sha256 = record_episode.content_sha256 then
        return query select latest.episode_id, latest.version, false;
        return;
    end if;
    return query
    insert into vera.episodes as e (group_id, source_id, external_id, version, content_sha256, object_key, mime,
                                    observed_at, title, uri)
    values (record_episode.group_id, record_episode.source_id, record_episode.external_id,
            coalesce(latest.version, 0) + 1, record_episode.content_sha256, record_episode.object_key,
            record_episode.mime, coalesce(record_episode.observed_at, now()), record_episode.title, record_episode.uri)
    returning e.episode_id, e.version, true;
end
$$;
comment on function vera.record_episode(text, uuid, text, bytea, text, text, timestamptz, text, text) is
    'Records a version of a source record; unchanged content returns the existing episode';

-- Internal: an episode of the group that the caller can see, or VN001.
create or replace function vera.visible_episode(target_group text, target_episode uuid)
returns vera.episodes
language plpgsql stable
set search_path = vera, pg_temp
as $$
declare
    found_episode vera.episodes;
begin
    select * into found_episode from vera.episodes e
     where e.group_id = target_group and e.episode_id = target_episode;
    if not found then
        raise exception 'unknown episode % in group %', target_episode, target_group using errcode = 'VN001';
    end if;
    if found_episode.status = 'retracted' then
        raise exception 'episode % was retracted', target_episode using errcode = '22023';
    end if;
    return found_episode;
end
$$;
comment on function vera.visible_episode(text, uuid) is 'Internal: a visible, live episode or VN001';

-- Contract: stores an episode's chunks, in order: a JSON array of
-- {"text", "heading"?, "char_start"?, "char_end"?, "embedding"?: [numbers]}.
-- Ordinals are array positions from 0; storing again updates in place.
-- Vectors need embedding_model and must match the group's pin.
-- Limits: 20,000 characters of text per chunk, 10,000 chunks per call.
create or replace function vera.store_chunks(
    group_id text, episode_id uuid, chunks jsonb, embedding_model text default null
)
returns table (ordinal integer, chunk_id uuid)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    vectors record;
    problem text;
begin
    perform vera.require_role(store_chunks.group_id, 'member');
    perform vera.visible_episode(store_chunks.group_id, store_chunks.episode_id);
    if jsonb_typeof(store_chunks.chunks) is distinct from 'array' then
        raise exception 'chunks must be a JSON array of objects' using errcode = '22023';
    end if;
    if jsonb_array_length(store_chunks.chunks) > 10000 then
        raise exception 'at most 10000 chunks per call, got %', jsonb_array_length(store_chunks.chunks)
            using errcode = '54000';
    end if;
    select format('chunk %s: %s', i - 1, reason)
      into problem
      from jsonb_array_elements(store_chunks.chunks) with ordinality as a(c, i)
     cross join lateral (select case
               when jsonb_typeof(c) <> 'object' then 'not a JSON object'
               when coalesce(btrim(c ->> 'text'), '') = '' then 'text is empty'
               when char_length(c ->> 'text') > 20000 then 'text is over 20000 characters'
               when coalesce(jsonb_typeof(c -> 'char_start'), 'number') not in ('number', 'null')
                    or coalesce(jsonb_typeof(c -> 'char_end'), 'number') not in ('number', 'null')
                    or (c ->> 'char_start') !~ '^[0-9]{1,9}$' or (c ->> 'char_end') !~ '^[0-9]{1,9}$'
                   then 'char_start and char_end must be whole numbers'
           end as reason) checks
     where reason is not null
     order by i limit 1;
    if problem is not null then
        raise exception '%', problem
            using errcode = case when problem like '%over 20000%' then '22001' else '22023' end;
    end if;
    select * into vectors from vera.parse_vectors(
        (select jsonb_agg(coalesce(c -> 'embedding', 'null') order by i)
           from jsonb_array_elements(store_chunks.chunks) with ordinality as a(c, i)), 'chunk');
    if vectors.dim is not null then
        perform vera.pin_embedding(store_chunks.group_id, store_chunks.embedding_model, vectors.dim);
    end if;
    return query
    insert into vera.chunks as ch (group_id, episode_id, ordinal, heading, text, char_start, char_end, embedding)
    select store_chunks.group_id, store_chunks.episode_id, (a.i - 1)::integer, a.c ->> 'heading', a.c ->> 'text',
           (a.c ->> 'char_start')::integer, (a.c ->> 'char_end')::integer, v.vector
      from jsonb_array_elements(store_chunks.chunks) with ordinality as a(c, i)
      -- joined by position: subscripting the array once per row would be quadratic
      left join unnest(vectors.parsed) with ordinality as v(vector, i) on v.i = a.i
    on conflict on constraint chunks_ordinal_unique do update
        set heading = excluded.heading, text = excluded.text, char_start = excluded.char_start,
            char_end = excluded.char_end, embedding = excluded.embedding
    returning ch.ordinal, ch.chunk_id;
end
$$;
comment on function vera.store_chunks(text, uuid, jsonb, text) is
    'Stores an episode''s ordered chunks (text, heading, span, optional embedding)';

reset role;

-- ===== sql/functions/120_entities.sql =====

-- Entity resolution, set-based: exact normalised alias -> pg_trgm fuzzy ->
-- semantic (name embeddings). A very close embedding links at once; a looser
-- one only names candidates for the equivalence judge (a worker job) and the
-- new entity stays provisional meanwhile.
set role vera_owner;

-- Internal: for each (ordinal, group, normalised name), the most similar alias of that
-- group by pg_trgm similarity at or above the group's threshold, with the
-- same numbers in both (numbers tell siblings apart: db-1 / db-2, v1 / v2).
-- It belongs to vera_resolver, which bypasses row-level security: the %
-- operator is not leakproof, so under RLS the planner may not use the trigram
-- index for it and compares each name with every alias (50 ms a name at
-- 20,000 aliases instead of 1 ms). The group check RLS would make is made here.
create or replace function vera.similar_aliases(ordinals integer[], groups text[], norms text[], thresholds float8[])
returns table (ordinal integer, entity_id uuid, score real)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
-- During a bulk load the statistics lag behind the table, and a planner that
-- believes it small scans every alias once per name (50 ms instead of a few):
-- for this one probe, only the trigram index's bitmap scan is on the table.
set enable_seqscan = off
set enable_indexscan = off
as $$
declare
    probe record;
    best record;
begin
    if exists (select from unnest(groups) g where not g = any (vera.writable_groups())) then
        raise exception 'permission denied: member role required in every group resolved into' using errcode = '42501';
    end if;
    for probe in select * from unnest(ordinals, groups, norms, thresholds) as u(o, g, n, t) loop
        -- the % operator, which the index serves, reads this setting
        perform set_config('pg_trgm.similarity_threshold', probe.t::text, true);
        -- One query per name, planned with its values (EXECUTE): only when the
        -- planner sees the name's trigrams does it choose the trigram index;
        -- as a join it estimates the index from nothing and scans every alias.
        execute
            'select a.entity_id, similarity(a.alias_norm, $2) as score
               from vera.entity_aliases a
               join vera.entities e on e.group_id = a.group_id and e.entity_id = a.entity_id
              where a.group_id = $1 and a.alias_norm % $2 and e.status <> ''merged''
                and regexp_replace(a.alias_norm, ''[^0-9]+'', '' '', ''g'') = regexp_replace($2, ''[^0-9]+'', '' '', ''g'')
              order by 2 desc, e.created_at
              limit 1'
          into best
          using probe.g, probe.n;
        if best.entity_id is not null and best.score >= probe.t then
            ordinal := probe.o;
            entity_id := best.entity_id;
            score := best.score;
            return next;
        end if;
    end loop;
end
$$;
comment on function vera.similar_aliases(integer[], text[], text[], float8[]) is
    'Internal: the most similar alias per (group, name) by trigrams (reads past RLS, checks the groups itself)';
alter function vera.similar_aliases(integer[], text[], text[], float8[]) owner to vera_resolver;

-- Internal: resolves names to entities, creating what is not found.
-- Inputs are aligned arrays, one element per (group, name); names with the
-- same normalised form in a group resolve to the same entity.
-- method: exact | fuzzy | semantic | new | provisional. candidates: for a
-- provisional entity, the judge's candidate entity ids, best first.
create or replace function vera.resolve_entities(
    groups text[], names text[], embeddings public.vector[], types text[]
)
returns table (ordinal integer, entity_id uuid, method text, candidates uuid[])
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    work vera.entity_resolution[];
    previous_threshold text := coalesce(current_setting('pg_trgm.similarity_threshold', true), '0.3');
    threshold float8;
    pending vera.entity_resolution;
    nearest record;
    semantic_link float8;
    semantic_candidate float8;
    candidate_limit integer;
begin
    select array_agg(row(i::integer, g, btrim(n), vera.normalize_name(n), e, t, null, null, null)::vera.entity_resolution
                     order by i)
      into work
      from unnest(groups, names, embeddings, types) with ordinality as u(g, n, e, t, i);
    if work is null then
        return;
    end if;

    -- serialise resolution of the same names across transactions (1024 buckets, in order: no deadlock)
    perform pg_advisory_xact_lock(b)
       from (select distinct (hashtextextended(w.group_id || '/' || w.norm, 0) & 1023) as b
               from unnest(work) w order by 1) buckets;

    -- 1. exact normalised alias (the oldest live entity wins a tie), as one join
    select array_agg(row(w.ordinal, w.group_id, w.name, w.norm, w.embedding, w.entity_type,
                         hit.entity_id, case when hit.entity_id is not null then 'exact' end, null)::vera.entity_resolution
                     order by w.ordinal)
      into work
      from unnest(work) w
      left join (
          select distinct on (a.group_id, a.alias_norm) a.group_id, a.alias_norm, a.entity_id
            from vera.entity_aliases a
            join vera.entities e on e.group_id = a.group_id and e.entity_id = a.entity_id
           where e.status <> 'merged'
             and (a.group_id, a.alias_norm) in (select u.group_id, u.norm from unnest(work) u)
           order by a.group_id, a.alias_norm, e.created_at, e.entity_id) hit
        on hit.group_id = w.group_id and hit.alias_norm = w.norm;

    -- 2. trigram similarity to known aliases, at or above the group's threshold
    select array_agg(case when hit.entity_id is null then w
                          else row(w.ordinal, w.group_id, w.name, w.norm, w.embedding, w.entity_type,
                                   hit.entity_id, 'fuzzy', null)::vera.entity_resolution end order by w.ordinal)
      into work
      from unnest(work) w
      left join vera.similar_aliases(
              (select array_agg(u.ordinal order by u.ordinal) from unnest(work) u
                where u.entity_id is null and u.norm <> ''),
              (select array_agg(u.group_id order by u.ordinal) from unnest(work) u
                where u.entity_id is null and u.norm <> ''),
              (select array_agg(u.norm order by u.ordinal) from unnest(work) u
                where u.entity_id is null and u.norm <> ''),
              -- each group's threshold, looked up once per group
              (select array_agg(g.threshold order by u.ordinal)
                 from unnest(work) u
                 join (select d.group_id, (vera.setting(d.group_id, 'er.trigram_link'))::float8 as threshold
                         from (select distinct x.group_id from unnest(work) x) d) g on g.group_id = u.group_id
                where u.entity_id is null and u.norm <> '')) hit on hit.ordinal = w.ordinal;
    perform set_config('pg_trgm.similarity_threshold', previous_threshold, true);

    -- 3. name embeddings: the nearest entities of the same group and dimension
    for pending in select * from unnest(work) w where w.entity_id is null and w.embedding is not null loop
        semantic_link := (vera.setting(pending.group_id, 'er.semantic_link'))::float8;
        semantic_candidate := (vera.setting(pending.group_id, 'er.semantic_candidate'))::float8;
        candidate_limit := (vera.setting(pending.group_id, 'er.candidate_limit'))::integer;
        execute format(
            'select array_agg(entity_id order by distance) as ids, min(distance) as best '
            '  from (select e.entity_id, e.name_embedding::vector(%1$s) <=> $1::vector(%1$s) as distance '
            '          from vera.entities e '
            '         where e.group_id = $2 and vector_dims(e.name_embedding) = %1$s and e.status <> ''merged'' '
            '         order by distance limit $3) nearest '
            ' where distance <= 1 - $4', public.vector_dims(pending.embedding))
          into nearest
          using pending.embedding, pending.group_id, greatest(candidate_limit, 1), semantic_candidate;
        if nearest.best is not null and 1 - nearest.best >= semantic_link then
            pending.entity_id := nearest.ids[1];
            pending.method := 'semantic';
        elsif nearest.ids is not null and candidate_limit > 0 then
            pending.method := 'provisional';
            pending.candidates := nearest.ids[1:candidate_limit];
        end if;
        work[pending.ordinal] := pending;
    end loop;

    -- 4. the rest are new entities, one per (group, normalised name)
    with created as (
        insert into vera.entities (group_id, canonical_name, entity_type, status, name_embedding)
        select distinct on (w.group_id, w.norm) w.group_id, w.name, w.entity_type,
               case when w.method = 'provisional' then 'provisional' else 'active' end, w.embedding
          from unnest(work) w
         where w.entity_id is null
         order by w.group_id, w.norm, w.ordinal
        returning vera.entities.group_id, vera.entities.entity_id, vera.normalize_name(canonical_name) as norm
    )
    select array_agg(case when w.entity_id is null
                          then row(w.ordinal, w.group_id, w.name, w.norm, w.embedding, w.entity_type,
                                   c.entity_id, coalesce(w.method, 'new'), w.candidates)::vera.entity_resolution
                          else w end order by w.ordinal)
      into work
      from unnest(work) w
      left join created c on w.entity_id is null and c.group_id = w.group_id and c.norm = w.norm;

    -- every surface form becomes an alias of the entity it resolved to
    insert into vera.entity_aliases (group_id, entity_id, alias, alias_norm)
    select distinct on (w.group_id, w.entity_id, w.norm) w.group_id, w.entity_id, w.name, w.norm
      from unnest(work) w
     where w.norm <> ''
    on conflict do nothing;

    return query select w.ordinal, w.entity_id, w.method, w.candidates from unnest(work) w order by w.ordinal;
end
$$;
comment on function vera.resolve_entities(text[], text[], public.vector[], text[]) is
    'Internal: resolves names to entities (exact, fuzzy, semantic), creating the rest';

reset role;

-- ===== sql/functions/125_supersede.sql =====

-- Supersession: the valid-time history of functional predicates.
set role vera_owner;

-- Internal: rebuilds the history of each (group, subject, predicate) given,
-- for functional predicates. The live values (published or superseded, not
-- retired) are ordered by valid_from; each is closed at the next one's
-- valid_from (or earlier, where the claim itself stated an end) and points
-- to it; the last is the current value. Out-of-order arrivals therefore slot
-- into history, and retracting the current value brings back the previous.
-- Returns the facts whose lifecycle, successor or validity changed.
create or replace function vera.rebuild_timelines(groups text[], subjects uuid[], predicates text[])
returns table (group_id text, fact_id uuid, lifecycle vera.fact_lifecycle)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
begin
    -- one writer per history (1024 buckets, taken in order: no deadlock). Under
    -- READ COMMITTED the statements below then see every committed value.
    perform pg_advisory_xact_lock(b)
       from (select distinct (hashtextextended(k.g || '/' || k.s::text || '/' || k.p, 1) & 1023) as b
               from unnest(groups, subjects, predicates) as k(g, s, p)
              order by 1) buckets;

    return query
    with keys as (
        select distinct k.g, k.s, k.p
          from unnest(groups, subjects, predicates) as k(g, s, p)
          join vera.predicates pr on pr.group_id = k.g and pr.name = k.p and pr.cardinality = 'functional'
    ), history as (
        select f.group_id as g, f.fact_id as id, f.stated_valid_to,
               lead(f.fact_id) over w as next_id,
               lead(f.valid_from) over w as next_from
          from keys
          join vera.facts f on f.group_id = keys.g and f.subject_entity_id = keys.s and f.predicate = keys.p
         where f.lifecycle in ('published', 'superseded') and f.retired_at is null
        window w as (partition by f.group_id, f.subject_entity_id, f.predicate
                     order by f.valid_from, f.recorded_at, f.fact_id)
    ), wanted as (
        select h.g, h.id, h.next_id,
               case when h.next_id is null then 'published' else 'superseded' end::vera.fact_lifecycle as state,
               least(h.stated_valid_to, h.next_from) as valid_to
          from history h
    )
    update vera.facts f
       set lifecycle = wanted.state, superseded_by = wanted.next_id, valid_to = wanted.valid_to
      from wanted
     where f.group_id = wanted.g and f.fact_id = wanted.id
       and (f.lifecycle, f.superseded_by, f.valid_to)
           is distinct from (wanted.state, wanted.next_id, wanted.valid_to)
    returning f.group_id, f.fact_id, f.lifecycle;
end
$$;
comment on function vera.rebuild_timelines(text[], uuid[], text[]) is
    'Internal: re-derives supersession (successor, validity end, current value) of functional predicates';

reset role;

-- ===== sql/functions/130_publish.sql =====

-- Publishing claims: grading by trust tier, the contamination guard, entity
-- resolution, supersession and the outbox, for a whole batch at once.
set role vera_owner;

-- Authority of a source's trust tier. (Pure; no search_path pinned so that
-- it inlines, see 090_normalize.sql.)
create or replace function vera.tier_authority(tier integer)
returns real
language sql immutable strict parallel safe
as $$
    select case tier when 1 then 1.00 when 2 then 0.85 when 3 then 0.70 when 4 then 0.40 end::real
$$;
comment on function vera.tier_authority(integer) is 'Authority of a trust tier: 1.00, 0.85, 0.70, 0.40';

-- Internal: the first problem of a claim batch, as 'claim N: ...', or nothing.
-- Each claim object is parsed once into typed fields (jsonb_to_recordset).
create or replace function vera.claim_problem(claims jsonb)
returns table (problem text, sqlstate text)
language plpgsql stable
set search_path = vera, pg_temp
as $$
begin
    return query
    with parsed as materialized (
    select x.*
      -- every typed field is listed, so a value of the wrong type is caught here
      from rows from (jsonb_to_recordset(claims) as (
               subject text, predicate text, object text, fact_text text, confidence numeric, verification text,
               functional boolean, object_is_entity boolean, valid_from timestamptz, valid_to timestamptz,
               chunk integer, evidence_start integer, evidence_end integer))
           with ordinality as x(subject, predicate, object, fact_text, confidence, verification, functional,
                                object_is_entity, valid_from, valid_to, chunk, evidence_start, evidence_end, i)
    ), predicates as (
        -- a batch uses few predicates: normalise each once
        select distinct parsed.predicate as raw, vera.normalize_predicate(parsed.predicate) as normalized from parsed
    )
    select format('claim %s: %s', x.i - 1, checks.reason), checks.code
      from parsed x
      left join predicates pr on pr.raw = x.predicate
     cross join lateral (select case
            when coalesce(btrim(x.subject), '') = '' then 'subject is empty'
            when coalesce(btrim(x.predicate), '') = '' then 'predicate is empty'
            when pr.normalized is null
                then format('predicate "%s" has no UPPER_SNAKE form (letters, digits, separators; at most 100)', x.predicate)
            when coalesce(btrim(x.object), '') = '' then 'object is empty'
            when char_length(x.subject) > 500 then 'subject is over 500 characters'
            when char_length(x.object) > 2000 then 'object is over 2000 characters'
            when char_length(x.fact_text) > 4000 then 'fact_text is over 4000 characters'
            when x.confidence not between 0 and 1 then 'confidence must be a number from 0 to 1'
            when x.verification not in ('human_verified', 'auto', 'pending')
                then 'verification must be human_verified, auto or pending'
        end as reason,
        case when char_length(x.subject) > 500 or char_length(x.object) > 2000 or char_length(x.fact_text) > 4000
             then '22001' else '22023' end as code) checks
     where checks.reason is not null
     order by x.i
     limit 1;
exception when invalid_parameter_value or invalid_text_representation or invalid_datetime_format
               or datetime_field_overflow or numeric_value_out_of_range then
    -- a non-object element, or a field of the wrong type
    return query select format('claims must be JSON objects with fields of the right types: %s', sqlerrm), '22023'::text;
end
$$;
comment on function vera.claim_problem(jsonb) is 'Internal: the first invalid claim of a batch, or nothing';

-- Contract: publishes a batch of claims, all or nothing. claims is a JSON array of
--   {"subject", "predicate", "object"                     required strings
--    "subject_type", "object_is_entity", "object_type"    optional
--    "functional": true                                   declares a new predicate functional
--    "confidence": 0..1, "verification": human_verified | auto | pending
--    "valid_from", "valid_to"                             timestamps (valid time)
--    "chunk": ordinal, "evidence_start", "evidence_end"   evidence in the episode
--    "fact_text", "embedding": [..], "subject_embedding": [..]}
-- for an episode of group_id (or no episode: an agent's own claim, tier 4).
-- Grading: tiers 1-2 publish (authority 1.00 / 0.85), tier 3 waits for
-- review (0.70), tier 4 is a proposal (0.40). Shared scopes (o:, w:, p:)
-- accept only verified knowledge: tier 4 or verification 'pending' becomes a
-- proposal in the caller's own u: scope, naming the scope it is meant for.
-- Limits: 10,000 claims per call; subject 500, object 2,000, fact_text 4,000 characters.
-- Returns one row per claim (duplicates within the batch share a fact).
create or replace function vera.publish_claims(
    group_id text, episode_id uuid, claims jsonb, embedding_model text default null
)
returns table (claim integer, fact_id uuid, fact_group_id text, lifecycle vera.fact_lifecycle,
               subject_entity_id uuid, resolution text)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    caller uuid := vera.require_principal();
    scope vera.groups;
    episode vera.episodes;
    tier integer := 4;
    personal text;
    earlier_versions uuid[] := '{}';
    first_problem record;
    has_vectors boolean;
    fact_dim integer;
    fact_parsed public.vector[];
    subject_dim integer;
    subject_parsed public.vector[];
    work vera.claim_work[];
    retired record;
    changed record;
    judged record;
    job_group text;
begin
    perform vera.require_role(publish_claims.group_id, 'member');
    select * into scope from vera.groups g where g.group_id = publish_claims.group_id;
    if publish_claims.episode_id is not null then
        episode := vera.visible_episode(publish_claims.group_id, publish_claims.episode_id);
        select s.trust_tier into tier from vera.sources s
         where s.group_id = episode.group_id and s.source_id = episode.source_id;
        select coalesce(array_agg(e.episode_id), '{}') into earlier_versions from vera.episodes e
         where e.group_id = episode.group_id and e.source_id = episode.source_id
           and e.external_id = episode.external_id and e.version < episode.version;
    end if;
    if jsonb_typeof(publish_claims.claims) is distinct from 'array' then
        raise exception 'claims must be a JSON array of objects' using errcode = '22023';
    end if;
    if jsonb_array_length(publish_claims.claims) > 10000 then
        raise exception 'at most 10000 claims per call, got %', jsonb_array_length(publish_claims.claims)
            using errcode = '54000';
    end if;
    select * into first_problem from vera.claim_problem(publish_claims.claims);
    if first_problem.problem is not null then
        raise exception '%', first_problem.problem using errcode = first_problem.sqlstate;
    end if;
    select p.personal_group_id into personal from vera.principals p where p.principal_id = caller;

    -- vectors, only when some claim carries one
    has_vectors := publish_claims.claims @? '$[*] ? (exists (@.embedding) || exists (@.subject_embedding))';
    if has_vectors then
        select v.dim, v.parsed into fact_dim, fact_parsed from vera.parse_vectors(
            (select jsonb_agg(coalesce(c -> 'embedding', 'null') order by i)
               from jsonb_array_elements(publish_claims.claims) with ordinality as a(c, i)), 'fact') v;
        select v.dim, v.parsed into subject_dim, subject_parsed from vera.parse_vectors(
            (select jsonb_agg(coalesce(c -> 'subject_embedding', 'null') order by i)
               from jsonb_array_elements(publish_claims.claims) with ordinality as a(c, i)), 'subject') v;
        if fact_dim <> subject_dim then
            raise exception 'fact embeddings have % dimensions, subject embeddings %', fact_dim, subject_dim
                using errcode = 'VE001';
        end if;
    end if;

    -- parse and grade: one typed pass over the claims
    select array_agg(row(
               (x.i - 1)::integer,
               -- where the claim lands: the contamination guard
               case when graded.state = 'proposal' then personal else publish_claims.group_id end,
               graded.state,
               btrim(x.subject), x.subject_type, sv.v,
               pr.normalized, coalesce(x.functional, false),
               btrim(x.object), coalesce(x.object_is_entity, false), x.object_type,
               coalesce(x.confidence, 1), v.verification, x.valid_from, x.valid_to,
               null, x.evidence_start, x.evidence_end,
               coalesce(nullif(btrim(x.fact_text), ''),
                        btrim(x.subject) || ' ' || lower(replace(pr.normalized, '_', ' '))
                        || ' ' || btrim(x.object)),
               fv.v, null, null, null, gen_random_uuid(), null)::vera.claim_work order by x.i)
      into work
      from rows from (jsonb_to_recordset(publish_claims.claims) as (
               subject text, subject_type text, predicate text, functional boolean, object text,
               object_is_entity boolean, object_type text, confidence real, verification text,
               valid_from timestamptz, valid_to timestamptz, evidence_start integer, evidence_end integer,
               fact_text text))
           with ordinality as x(subject, subject_type, predicate, functional, object, object_is_entity, object_type,
                                confidence, verification, valid_from, valid_to, evidence_start, evidence_end,
                                fact_text, i)
      -- a batch uses few predicates: normalise each once
      join (select distinct p.predicate as raw, vera.normalize_predicate(p.predicate) as normalized
              from jsonb_to_recordset(publish_claims.claims) as p(predicate text)) pr on pr.raw = x.predicate
      -- joined by position (a subscript per row would be quadratic)
      left join unnest(fact_parsed) with ordinality as fv(v, fi) on has_vectors and fv.fi = x.i
      left join unnest(subject_parsed) with ordinality as sv(v, si) on has_vectors and sv.si = x.i
     cross join lateral (select coalesce(x.verification,
                                case when tier <= 2 then 'auto' else 'pending' end)::vera.verification
                             as verification) v
     cross join lateral (select case
                             when scope.kind = 'personal' then 'published'
                             when tier = 3 then 'pending_review'
                             when tier = 4 or v.verification = 'pending' then 'proposal'
                             else 'published' end::vera.fact_lifecycle as state) graded;

    if exists (select from unnest(work) w where w.stated_valid_to < w.valid_from) then
        raise exception 'claim %: valid_to is before valid_from',
            (select min(w.claim) from unnest(work) w where w.stated_valid_to < w.valid_from) using errcode = '22023';
    end if;

    -- the evidence chunk must belong to the episode
    if publish_claims.claims @? '$[*].chunk' then
        if publish_claims.episode_id is null then
            raise exception 'claims cite chunks but no episode was given' using errcode = '22023';
        end if;
        select array_agg(case when cited.ordinal is null then w
                              else row(w.claim, w.target_group, w.lifecycle, w.subject, w.subject_type, w.subject_embedding,
                                       w.predicate, w.functional, w.object, w.object_is_entity, w.object_type,
                                       w.confidence, w.verification, w.valid_from, w.stated_valid_to,
                                       coalesce(ch.chunk_id, '00000000-0000-0000-0000-000000000000'),
                                       w.evidence_start, w.evidence_end, w.fact_text, w.embedding,
                                       null, null, null, w.fact_id, null)::vera.claim_work end order by w.claim)
          into work
          from unnest(work) w
          left join lateral (select (publish_claims.claims -> w.claim ->> 'chunk')::integer as ordinal) cited on true
          left join vera.chunks ch on ch.group_id = episode.group_id and ch.episode_id = episode.episode_id
                                  and ch.ordinal = cited.ordinal;
        select w.claim, publish_claims.claims -> w.claim ->> 'chunk' as chunk into first_problem
          from unnest(work) w where w.chunk_id = '00000000-0000-0000-0000-000000000000' order by w.claim limit 1;
        if found then
            raise exception 'claim %: chunk % is not a chunk of episode %', first_problem.claim, first_problem.chunk,
                publish_claims.episode_id using errcode = '22023';
        end if;
    end if;

    -- pin the embedding model on every group that receives vectors
    if coalesce(fact_dim, subject_dim) is not null then
        perform vera.pin_embedding(g, publish_claims.embedding_model, coalesce(fact_dim, subject_dim))
           from (select distinct w.target_group as g from unnest(work) w order by 1) targets;
    end if;

    -- the ontology: unknown predicates join it, multi-valued unless declared functional
    insert into vera.predicates (group_id, name, cardinality)
    select distinct on (w.target_group, w.predicate) w.target_group, w.predicate,
           case when w.functional then 'functional' else 'multi' end::vera.predicate_cardinality
      from unnest(work) w
     order by w.target_group, w.predicate, w.functional desc
    on conflict do nothing;

    -- entities: subjects, and objects that are entities, resolved in the landing group
    with names as (
        select w.claim, 'subject' as role, w.target_group as g, w.subject as n, w.subject_embedding as e,
               w.subject_type as t
          from unnest(work) w
        union all
        select w.claim, 'object', w.target_group, w.object, null, w.object_type
          from unnest(work) w where w.object_is_entity
    ), numbered as (
        select row_number() over (order by names.claim, names.role desc) as position, names.* from names
    ), resolved as (
        select numbered.claim, numbered.role, r.entity_id as resolved_id, r.method, r.candidates
          from vera.resolve_entities(
                   (select array_agg(numbered.g order by numbered.position) from numbered),
                   (select array_agg(numbered.n order by numbered.position) from numbered),
                   (select array_agg(numbered.e order by numbered.position) from numbered),
                   (select array_agg(numbered.t order by numbered.position) from numbered)) r
          join numbered on numbered.position = r.ordinal
    )
    select array_agg(row(w.claim, w.target_group, w.lifecycle, w.subject, w.subject_type, w.subject_embedding,
                         w.predicate, w.functional, w.object, w.object_is_entity, w.object_type,
                         w.confidence, w.verification,
                         -- no stated valid_from: an unchanged restatement keeps the earlier version's,
                         -- otherwise the episode's observation time
                         coalesce(w.valid_from, carried.valid_from, episode.observed_at, now()),
                         w.stated_valid_to, w.chunk_id, w.evidence_start, w.evidence_end, w.fact_text, w.embedding,
                         s.resolved_id, o.resolved_id, s.method, w.fact_id, s.candidates)::vera.claim_work
                     order by w.claim)
      into work
      from unnest(work) w
      join resolved s on s.claim = w.claim and s.role = 'subject'
      left join resolved o on o.claim = w.claim and o.role = 'object'
      left join lateral (
          select f.valid_from from vera.facts f
           where cardinality(earlier_versions) > 0 and w.valid_from is null
             and f.group_id = episode.group_id and f.episode_id = any (earlier_versions)
             and f.subject_entity_id = s.resolved_id and f.predicate = w.predicate and f.object_value = w.object
           order by f.valid_from limit 1) carried on true;

    -- duplicates within the batch become one fact
    select array_agg(deduplicated.w order by (deduplicated.w).claim) into work
      from (select row(w.claim, w.target_group, w.lifecycle, w.subject, w.subject_type, w.subject_embedding,
                       w.predicate, w.functional, w.object, w.object_is_entity, w.object_type,
                       w.confidence, w.verification, w.valid_from, w.stated_valid_to, w.chunk_id,
                       w.evidence_start, w.evidence_end, w.fact_text, w.embedding,
                       w.subject_entity_id, w.object_entity_id, w.resolution,
                       first_value(w.fact_id) over (partition by w.target_group, w.subject_entity_id, w.predicate,
                                                    w.object, w.valid_from order by w.claim),
                       w.candidates)::vera.claim_work as w
              from unnest(work) w) deduplicated;

    insert into vera.facts (group_id, fact_id, subject_entity_id, predicate, object_entity_id, object_value, fact_text,
                            embedding, tier, authority, verification, confidence, lifecycle, valid_from, valid_to,
                            stated_valid_to, source_id, episode_id, chunk_id, evidence_start, evidence_end,
                            proposed_by, proposed_for, origin)
    select distinct on (w.fact_id)
           w.target_group, w.fact_id, w.subject_entity_id, w.predicate, w.object_entity_id, w.object, w.fact_text,
           w.embedding, tier, vera.tier_authority(tier), w.verification, w.confidence, w.lifecycle, w.valid_from,
           w.stated_valid_to, w.stated_valid_to,
           case when w.target_group = publish_claims.group_id then episode.source_id end,
           case when w.target_group = publish_claims.group_id then episode.episode_id end,
           case when w.target_group = publish_claims.group_id then w.chunk_id end,
           w.evidence_start, w.evidence_end, caller,
           case when w.lifecycle = 'proposal' then publish_claims.group_id end,
           -- a proposal carries its provenance and names: its reviewers cannot read its u: scope
           case when w.target_group <> publish_claims.group_id then jsonb_strip_nulls(jsonb_build_object(
               'group_id', publish_claims.group_id, 'source_id', episode.source_id,
               'episode_id', episode.episode_id, 'chunk_id', w.chunk_id, 'subject', w.subject,
               'subject_type', w.subject_type,
               'object_entity', case when w.object_is_entity then w.object end, 'object_type', w.object_type)) end
      from unnest(work) w
     order by w.fact_id, w.claim;

    -- a new version of a record supersedes what the earlier versions said
    with gone as (
        update vera.facts f set lifecycle = 'superseded', retired_at = now()
         where cardinality(earlier_versions) > 0
           and ((f.group_id = episode.group_id and f.episode_id = any (earlier_versions))
                or (f.origin ->> 'episode_id')::uuid = any (earlier_versions))
           and f.lifecycle in ('published', 'superseded', 'pending_review', 'proposal') and f.retired_at is null
        returning f.group_id, f.fact_id, f.subject_entity_id, f.predicate
    )
    select array_agg(gone.group_id) as g, array_agg(gone.fact_id) as ids, array_agg(gone.subject_entity_id) as s,
           array_agg(gone.predicate) as p
      into retired from gone;

    -- supersession of functional predicates, over the histories this batch touched
    with keys as (
        select w.target_group as g, w.subject_entity_id as s, w.predicate as p
          from unnest(work) w where w.lifecycle = 'published'
        union all
        select * from unnest(retired.g, retired.s, retired.p)
    ), rebuilt as (
        select t.group_id, t.fact_id, t.lifecycle
          from vera.rebuild_timelines((select array_agg(keys.g) from keys), (select array_agg(keys.s) from keys),
                                      (select array_agg(keys.p) from keys)) t
    )
    select coalesce(array_agg(rebuilt.group_id), '{}') as g, coalesce(array_agg(rebuilt.fact_id), '{}') as ids,
           coalesce(array_agg(rebuilt.lifecycle), '{}') as lifecycles
      into changed from rebuilt;

    -- the outbox: one job of each kind per group
    for job_group in
        select distinct x.g from (
            select w.target_group as g from unnest(work) w where w.lifecycle = 'published'
            union all select unnest(changed.g) union all select unnest(retired.g)) x
    loop
        perform vera.enqueue_job('vera.project_to_graph', jsonb_build_object(
            'group_id', job_group,
            'fact_ids', (select jsonb_agg(distinct ids.id) from (
                             select w.fact_id as id from unnest(work) w
                              where w.target_group = job_group and w.lifecycle = 'published'
                             union all
                             select c.id from unnest(changed.g, changed.ids) as c(g, id) where c.g = job_group
                             union all
                             select r.id from unnest(retired.g, retired.ids) as r(g, id) where r.g = job_group) ids)));
    end loop;
    for job_group in select distinct w.target_group from unnest(work) w where w.embedding is null loop
        perform vera.enqueue_job('vera.embed', jsonb_build_object(
            'group_id', job_group,
            'fact_ids', (select jsonb_agg(distinct w.fact_id) from unnest(work) w
                          where w.target_group = job_group and w.embedding is null)));
    end loop;
    for judged in
        select w.target_group as g,
               jsonb_agg(distinct jsonb_build_object('entity_id', w.subject_entity_id, 'name', w.subject,
                                                     'candidates', w.candidates)) as entities
          from unnest(work) w
         where w.resolution = 'provisional'
         group by w.target_group
    loop
        perform vera.enqueue_job('vera.judge_equivalence',
                                 jsonb_build_object('group_id', judged.g, 'entities', judged.entities));
    end loop;
    for job_group in
        select distinct w.target_group from unnest(work) w where w.lifecycle = 'published'
    loop
        continue when not (vera.setting(job_group, 'judge.contradiction'))::boolean;
        select jsonb_agg(distinct w.fact_id) as fact_ids into judged
          from unnest(work) w
          join vera.predicates pr on pr.group_id = w.target_group and pr.name = w.predicate and pr.cardinality = 'multi'
         where w.target_group = job_group and w.lifecycle = 'published'
           and exists (select from vera.facts f
                        where f.group_id = w.target_group and f.subject_entity_id = w.subject_entity_id
                          and f.predicate = w.predicate and f.lifecycle = 'published' and f.object_value <> w.object);
        if judged.fact_ids is not null then
            perform vera.enqueue_job('vera.judge_contradiction',
                                     jsonb_build_object('group_id', job_group, 'fact_ids', judged.fact_ids));
        end if;
    end loop;

    -- a new fact's lifecycle is what supersession left it
    return query
    select w.claim, w.fact_id, w.target_group, coalesce(c.lifecycle, w.lifecycle), w.subject_entity_id, w.resolution
      from unnest(work) w
      left join unnest(changed.ids, changed.lifecycles) as c(id, lifecycle) on c.id = w.fact_id
     order by w.claim;
end
$$;
comment on function vera.publish_claims(text, uuid, jsonb, text) is
    'Publishes a batch of claims with grading, the contamination guard, resolution and supersession';

reset role;

-- ===== sql/functions/140_review.sql =====

-- Review: admins of a scope approve or reject claims waiting for it
-- (tier-3 claims pending review in the scope, and proposals made for it from
-- someone's u: scope). Every decision is audited and reaches the outbox.
set role vera_owner;

-- Contract: what waits for review in a group the caller administers.
create or replace function vera.pending_reviews(group_id text)
returns table (fact_id uuid, fact_group_id text, lifecycle vera.fact_lifecycle, subject text, predicate text,
               object text, fact_text text, tier smallint, verification vera.verification, confidence real,
               proposed_by uuid, recorded_at timestamptz, origin jsonb)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(pending_reviews.group_id, 'admin');
    return query
    select f.fact_id, f.group_id, f.lifecycle, coalesce(f.origin ->> 'subject', e.canonical_name), f.predicate,
           f.object_value, f.fact_text, f.tier, f.verification, f.confidence, f.proposed_by, f.recorded_at, f.origin
      from vera.facts f
      -- a proposal's entities live in its proposer's u: scope; its origin names them
      left join vera.entities e on e.group_id = f.group_id and e.entity_id = f.subject_entity_id
     where (f.group_id = pending_reviews.group_id and f.lifecycle = 'pending_review')
        or (f.proposed_for = pending_reviews.group_id and f.lifecycle = 'proposal')
     order by f.recorded_at, f.fact_id;
end
$$;
comment on function vera.pending_reviews(text) is 'Claims pending review in, or proposed for, a group the caller administers';

-- Contract: decides on one claim waiting for group_id: 'approve' publishes it
-- there as human_verified (a proposal is copied from its u: scope into the
-- shared scope and marked accepted); 'reject' marks it rejected. Admins only.
-- Returns the published fact (on approval) or the rejected one.
create or replace function vera.review_claim(group_id text, fact_id uuid, decision text, note text default null)
returns table (result_fact_id uuid, result_group_id text, result_lifecycle vera.fact_lifecycle)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    claim vera.facts;
    subject_name text;
    object_name text;
    resolved_subject uuid;
    resolved_object uuid;
    published uuid;
    same_scope boolean;
begin
    perform vera.require_role(review_claim.group_id, 'admin');
    if review_claim.decision is null or review_claim.decision not in ('approve', 'reject') then
        raise exception 'decision must be approve or reject, not %', coalesce(review_claim.decision, 'null')
            using errcode = '22023';
    end if;
    select * into claim from vera.facts f
     where f.fact_id = review_claim.fact_id
       and ((f.group_id = review_claim.group_id and f.lifecycle = 'pending_review')
            or (f.proposed_for = review_claim.group_id and f.lifecycle = 'proposal'))
     for update;
    if not found then
        raise exception 'no claim % is waiting for review in %', review_claim.fact_id, review_claim.group_id
            using errcode = 'VN001';
    end if;

    if review_claim.decision = 'reject' then
        update vera.facts f set lifecycle = 'rejected', retired_at = now(), reviewed_by = vera.current_principal(),
                                reviewed_at = now()
         where f.group_id = claim.group_id and f.fact_id = claim.fact_id;
        perform vera.audit(review_claim.group_id, 'claim.reject', 'fact', claim.fact_id::text,
                           jsonb_build_object('note', review_claim.note, 'fact_group_id', claim.group_id));
        return query select claim.fact_id, claim.group_id, 'rejected'::vera.fact_lifecycle;
        return;
    end if;

    same_scope := claim.group_id = review_claim.group_id;
    if same_scope then
        update vera.facts f set lifecycle = 'published', verification = 'human_verified',
                                reviewed_by = vera.current_principal(), reviewed_at = now()
         where f.group_id = claim.group_id and f.fact_id = claim.fact_id;
        published := claim.fact_id;
        resolved_subject := claim.subject_entity_id;
    else
        -- a proposal: resolve its entities in the shared scope and publish a copy there
        subject_name := claim.origin ->> 'subject';
        object_name := claim.origin ->> 'object_entity';
        select r.entity_id into resolved_subject
          from vera.resolve_entities(array[review_claim.group_id], array[subject_name], array[null::public.vector],
                                     array[claim.origin ->> 'subject_type']) r;
        if object_name is not null then
            select r.entity_id into resolved_object
              from vera.resolve_entities(array[review_claim.group_id], array[object_name],
                                         array[null::public.vector], array[claim.origin ->> 'object_type']) r;
        end if;
        insert into vera.predicates (group_id, name) values (review_claim.group_id, claim.predicate)
        on conflict do nothing;
        published := gen_random_uuid();
        insert into vera.facts (group_id, fact_id, subject_entity_id, predicate, object_entity_id, object_value,
                                fact_text, embedding, tier, authority, verification, confidence, lifecycle,
                                valid_from, valid_to, stated_valid_to, source_id, episode_id, chunk_id,
                                evidence_start, evidence_end, proposed_by, reviewed_by, reviewed_at)
        select review_claim.group_id, published, resolved_subject, claim.predicate, resolved_object,
               claim.object_value, claim.fact_text, claim.embedding, claim.tier, claim.authority, 'human_verified',
               claim.confidence, 'published', claim.valid_from, claim.stated_valid_to, claim.stated_valid_to,
               ep.source_id, ep.episode_id, ch.chunk_id, claim.evidence_start, claim.evidence_end,
               claim.proposed_by, vera.current_principal(), now()
          from (select 1) one
          left join vera.episodes ep on ep.group_id = review_claim.group_id
                                    and ep.episode_id = (claim.origin ->> 'episode_id')::uuid
          left join vera.chunks ch on ch.group_id = review_claim.group_id
                                  and ch.chunk_id = (claim.origin ->> 'chunk_id')::uuid;
        update vera.facts f set lifecycle = 'accepted', retired_at = now(), reviewed_by = vera.current_principal(),
                                reviewed_at = now()
         where f.group_id = claim.group_id and f.fact_id = claim.fact_id;
    end if;

    perform vera.rebuild_timelines(array[review_claim.group_id], array[resolved_subject], array[claim.predicate]);
    perform vera.enqueue_job('vera.project_to_graph', jsonb_build_object(
        'group_id', review_claim.group_id,
        'fact_ids', (select jsonb_agg(f.fact_id) from vera.facts f
                      where f.group_id = review_claim.group_id and f.subject_entity_id = resolved_subject
                        and f.predicate = claim.predicate and f.lifecycle in ('published', 'superseded'))));
    perform vera.audit(review_claim.group_id, 'claim.approve', 'fact', published::text,
                       jsonb_build_object('note', review_claim.note, 'reviewed_fact_id', claim.fact_id,
                                          'reviewed_group_id', claim.group_id));
    return query select f.fact_id, f.group_id, f.lifecycle from vera.facts f
                  where f.group_id = review_claim.group_id and f.fact_id = published;
end
$$;
comment on function vera.review_claim(text, uuid, text, text) is
    'Approves (publishes, human_verified) or rejects a claim waiting for review in a group; admins only';

reset role;

-- ===== sql/functions/150_retract.sql =====

-- Retraction and erasure of sources and episodes, end to end.
--
-- Retraction takes a source's knowledge out of search (lifecycle retracted),
-- restores the values it had superseded, and queues the graph edges for
-- removal. Erasure also deletes the episodes, their chunks, the facts drawn
-- from them, snapshot copies and feedback citing them, and queues deletion
-- of the raw bytes. PostgreSQL commits first, with a retract_cleanup job
-- scheduled a little ahead; the caller may clean up at once and mark the job
-- completed (vera.complete_cleanup), otherwise the worker runs it when due.
set role vera_owner;

-- Internal: retracts (and with erase, deletes) episodes of one group.
-- Returns the retract_cleanup job id.
create or replace function vera.withdraw_episodes(
    target_group text, episode_ids uuid[], erase boolean, action text, target_kind text, target_id text,
    reason text
)
returns bigint
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    withdrawn record;
    restored record;
    object_keys jsonb;
    erased record;
    cleanup_job bigint;
begin
    -- the facts drawn from the episodes, and proposals made from them
    with gone as (
        update vera.facts f set lifecycle = 'retracted', retired_at = coalesce(f.retired_at, now())
         where ((f.group_id = target_group and f.episode_id = any (episode_ids))
                or (f.origin ->> 'episode_id')::uuid = any (episode_ids))
           and f.lifecycle <> 'retracted'
        returning f.group_id, f.fact_id, f.subject_entity_id, f.predicate
    )
    select coalesce(jsonb_agg(gone.fact_id), '[]') as fact_ids,
           array_agg(gone.group_id) as g, array_agg(gone.subject_entity_id) as s, array_agg(gone.predicate) as p
      into withdrawn from gone;
    -- facts retracted earlier (say, with their source) still name their graph edges
    select coalesce(jsonb_agg(distinct f.fact_id), '[]') as fact_ids into erased
      from vera.facts f
     where (f.group_id = target_group and f.episode_id = any (episode_ids))
        or (f.origin ->> 'episode_id')::uuid = any (episode_ids);
    select coalesce(jsonb_agg(e.object_key) filter (where e.object_key is not null), '[]') into object_keys
      from vera.episodes e where e.group_id = target_group and e.episode_id = any (episode_ids);

    update vera.episodes e set status = 'retracted'
     where e.group_id = target_group and e.episode_id = any (episode_ids);

    if erase then
        delete from vera.feedback fb
         where fb.group_id = target_group
           and ((fb.item_kind = 'fact' and fb.item_id in (select (x #>> '{}')::uuid from jsonb_array_elements(erased.fact_ids) x))
                or (fb.item_kind = 'passage' and fb.item_id in (
                        select c.chunk_id from vera.chunks c
                         where c.group_id = target_group and c.episode_id = any (episode_ids))));
        delete from vera.snapshot_items si
         where si.group_id = target_group
           and (si.episode_id = any (episode_ids)
                or (si.item_kind = 'fact' and si.item_id in (select (x #>> '{}')::uuid from jsonb_array_elements(erased.fact_ids) x)));
        delete from vera.facts f
         where (f.group_id = target_group and f.episode_id = any (episode_ids))
            or (f.origin ->> 'episode_id')::uuid = any (episode_ids);
        -- chunks go with their episodes (on delete cascade)
        delete from vera.episodes e where e.group_id = target_group and e.episode_id = any (episode_ids);
    end if;

    -- values these facts had superseded become current again
    select coalesce(jsonb_agg(t.fact_id) filter (where t.lifecycle = 'published'), '[]') as fact_ids into restored
      from vera.rebuild_timelines(withdrawn.g, withdrawn.s, withdrawn.p) t;

    cleanup_job := vera.enqueue_job('vera.retract_cleanup', jsonb_build_object(
        'group_id', target_group,
        'edge_ids', erased.fact_ids,
        'object_keys', case when erase then object_keys else '[]'::jsonb end,
        'episode_ids', to_jsonb(episode_ids),
        'restored_fact_ids', restored.fact_ids,
        'erase', erase),
        now() + make_interval(secs => (vera.setting(target_group, 'retract.cleanup_delay_seconds'))::float8));
    perform vera.audit(target_group, action, target_kind, target_id, jsonb_build_object(
        'reason', reason, 'episodes', cardinality(episode_ids), 'facts', jsonb_array_length(erased.fact_ids),
        'cleanup_job', cleanup_job));
    return cleanup_job;
end
$$;
comment on function vera.withdraw_episodes(text, uuid[], boolean, text, text, text, text) is
    'Internal: retracts or erases episodes and enqueues their retract_cleanup job';

-- Internal: retracts (or erases) one episode after checking the caller administers its group.
create or replace function vera.withdraw_episode(target_group text, target_episode uuid, erase boolean, reason text)
returns bigint
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(target_group, 'admin');
    if not exists (select from vera.episodes e where e.group_id = target_group and e.episode_id = target_episode) then
        raise exception 'unknown episode % in group %', target_episode, target_group using errcode = 'VN001';
    end if;
    return vera.withdraw_episodes(target_group, array[target_episode], erase,
                                  case when erase then 'episode.erase' else 'episode.retract' end,
                                  'episode', target_episode::text, reason);
end
$$;
comment on function vera.withdraw_episode(text, uuid, boolean, text) is
    'Internal: retracts or erases one episode of a group the caller administers';

-- Contract: retracts one episode (admins). Returns the retract_cleanup job id.
create or replace function vera.retract_episode(group_id text, episode_id uuid, reason text default null)
returns bigint
language sql volatile security definer
set search_path = vera, pg_temp
as $$
    select vera.withdraw_episode(group_id, episode_id, false, reason)
$$;
comment on function vera.retract_episode(text, uuid, text) is 'Retracts an episode''s knowledge end to end; admins only';

-- Contract: erases one episode (admins): retraction, then the episode, its
-- chunks, facts, snapshot copies and feedback are deleted and its raw bytes
-- queued for deletion. Returns the retract_cleanup job id.
create or replace function vera.erase_episode(group_id text, episode_id uuid, reason text default null)
returns bigint
language sql volatile security definer
set search_path = vera, pg_temp
as $$
    select vera.withdraw_episode(group_id, episode_id, true, reason)
$$;
comment on function vera.erase_episode(text, uuid, text) is 'Erases an episode and everything drawn from it; admins only';

-- Contract: retracts every episode of a source and the source itself (admins);
-- new ingestion from it is refused until it is registered again.
create or replace function vera.retract_source(group_id text, source_id uuid, reason text default null)
returns bigint
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    src vera.sources;
begin
    perform vera.require_role(retract_source.group_id, 'admin');
    src := vera.visible_source(retract_source.group_id, retract_source.source_id);
    update vera.sources s set retracted_at = coalesce(s.retracted_at, now())
     where s.group_id = src.group_id and s.source_id = src.source_id;
    return vera.withdraw_episodes(
        src.group_id,
        coalesce((select array_agg(e.episode_id) from vera.episodes e
                   where e.group_id = src.group_id and e.source_id = src.source_id), '{}'),
        false, 'source.retract', 'source', src.source_id::text, reason);
end
$$;
comment on function vera.retract_source(text, uuid, text) is 'Retracts a source and all its episodes; admins only';

-- Contract: erases a source (admins): all its episodes as erase_episode does,
-- then the source row itself.
create or replace function vera.erase_source(group_id text, source_id uuid, reason text default null)
returns bigint
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    src vera.sources;
    cleanup_job bigint;
begin
    perform vera.require_role(erase_source.group_id, 'admin');
    src := vera.visible_source(erase_source.group_id, erase_source.source_id);
    cleanup_job := vera.withdraw_episodes(
        src.group_id,
        coalesce((select array_agg(e.episode_id) from vera.episodes e
                   where e.group_id = src.group_id and e.source_id = src.source_id), '{}'),
        true, 'source.erase', 'source', src.source_id::text, reason);
    -- facts of the source without an episode, and the source row itself
    delete from vera.facts f where f.group_id = src.group_id and f.source_id = src.source_id;
    delete from vera.sources s where s.group_id = src.group_id and s.source_id = src.source_id;
    return cleanup_job;
end
$$;
comment on function vera.erase_source(text, uuid, text) is 'Erases a source and everything drawn from it; admins only';

-- Contract: marks a retract_cleanup job completed after the caller cleaned up
-- in-process (graph edges removed, objects deleted), so the worker skips it.
-- Admins of the job's group. False when the job had already run or finished.
create or replace function vera.complete_cleanup(job_id bigint)
returns boolean
language plpgsql volatile security definer
set search_path = vera, procrastinate, pg_temp
as $$
declare
    job record;
begin
    perform vera.require_principal();
    select j.id, j.status, j.args ->> 'group_id' as group_id into job
      from procrastinate.procrastinate_jobs j
     where j.id = complete_cleanup.job_id and j.task_name = 'vera.retract_cleanup'
     for update;
    if not found or not (job.group_id = any (vera.administrable_groups())) then
        raise exception 'no retract_cleanup job % in a group you administer', complete_cleanup.job_id
            using errcode = 'VN001';
    end if;
    if job.status <> 'todo' then
        return false;
    end if;
    perform procrastinate.procrastinate_finish_job_v1(job.id, 'succeeded', false);
    return true;
end
$$;
comment on function vera.complete_cleanup(bigint) is
    'Marks a retract_cleanup job done after in-process cleanup; admins of its group';

reset role;

-- ===== sql/functions/160_predicates.sql =====

-- The ontology: declaring predicates ahead of the claims that use them.
set role vera_owner;

-- Contract: declares (or re-declares) a predicate in a group the caller
-- administers; the name is normalised to UPPER_SNAKE and returned.
-- Turning a multi-valued predicate functional rebuilds its histories.
create or replace function vera.declare_predicate(
    group_id text, name text, cardinality vera.predicate_cardinality default 'multi', description text default null
)
returns text
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    normalized text := vera.normalize_predicate(declare_predicate.name);
    affected record;
begin
    perform vera.require_role(declare_predicate.group_id, 'admin');
    if normalized is null then
        raise exception 'predicate % has no UPPER_SNAKE form', coalesce(declare_predicate.name, 'null')
            using errcode = '22023';
    end if;
    insert into vera.predicates as p (group_id, name, cardinality, description)
    values (declare_predicate.group_id, normalized, coalesce(declare_predicate.cardinality, 'multi'),
            declare_predicate.description)
    on conflict on constraint predicates_pkey do update
        set cardinality = excluded.cardinality, description = coalesce(excluded.description, p.description);
    select array_agg(f.group_id) as g, array_agg(f.subject_entity_id) as s, array_agg(f.predicate) as p
      into affected
      from vera.facts f
     where f.group_id = declare_predicate.group_id and f.predicate = normalized and f.lifecycle = 'published';
    perform vera.rebuild_timelines(affected.g, affected.s, affected.p);
    perform vera.audit(declare_predicate.group_id, 'predicate.declare', 'predicate', normalized,
                       jsonb_build_object('cardinality', declare_predicate.cardinality));
    return normalized;
end
$$;
comment on function vera.declare_predicate(text, text, vera.predicate_cardinality, text) is
    'Declares a predicate (functional or multi-valued) in a group''s ontology; admins only';

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
        'facts', 'feedback', 'ranking_weights', 'snapshots', 'snapshot_items', 'group_settings']
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

-- Proposals live in their proposer's u: scope; the admins of the scope they
-- are proposed for may see them, decide on them and erase them.
drop policy if exists read_proposals_for_administered_groups on vera.facts;
drop policy if exists update_proposals_for_administered_groups on vera.facts;
drop policy if exists delete_proposals_for_administered_groups on vera.facts;
create policy read_proposals_for_administered_groups on vera.facts for select
    using (proposed_for = any ((select vera.administrable_groups())::text[]));
create policy update_proposals_for_administered_groups on vera.facts for update
    using (proposed_for = any ((select vera.administrable_groups())::text[]))
    with check (proposed_for = any ((select vera.administrable_groups())::text[]));
create policy delete_proposals_for_administered_groups on vera.facts for delete
    using (proposed_for = any ((select vera.administrable_groups())::text[]));

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
    vera.snapshot_items, vera.groups, vera.memberships, vera.principals, vera.audit_log, vera.group_settings
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
    vera.list_api_keys(),
    vera.normalize_name(text),
    vera.normalize_predicate(text),
    vera.tier_authority(integer),
    vera.setting_default(text),
    vera.setting(text, text),
    vera.set_setting(text, text, jsonb),
    vera.register_source(text, text, text, integer, text, jsonb, text),
    vera.record_episode(text, uuid, text, bytea, text, text, timestamptz, text, text),
    vera.store_chunks(text, uuid, jsonb, text),
    vera.declare_predicate(text, text, vera.predicate_cardinality, text),
    vera.publish_claims(text, uuid, jsonb, text),
    vera.pending_reviews(text),
    vera.review_claim(text, uuid, text, text),
    vera.retract_episode(text, uuid, text),
    vera.erase_episode(text, uuid, text),
    vera.retract_source(text, uuid, text),
    vera.erase_source(text, uuid, text),
    vera.complete_cleanup(bigint)
    to vera_app, vera_worker, vera_gateway;

grant execute on function vera.authenticate_principal(uuid) to vera_gateway, vera_worker;

-- the trigram probe's owner reads aliases past RLS (and checks the group itself)
grant select on vera.entity_aliases, vera.entities to vera_resolver;
grant execute on function vera.similar_aliases(integer[], text[], text[], float8[]) to vera_owner;

grant execute on function vera.create_tenant(text, text, text) to vera_operator;

reset role;
