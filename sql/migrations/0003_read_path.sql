-- 0003_read_path: the read path in SQL. vera.search (lexical + vector
-- candidates fused by reciprocal rank, then a six-signal blend), feedback
-- and weight calibration, snapshots that answer as they did when taken.
--
-- Apply with:  psql -v ON_ERROR_STOP=1 -1 -f 0003_read_path.sql
-- Frozen once released: changes go into a new numbered migration.

-- Owns the candidate stage of search: full-text @@ and pgvector's distance
-- operators are not leakproof, so under row-level security their indexes
-- cannot serve a tenant-filtered query; this role reads past RLS for the
-- candidate functions only, which check the caller's groups themselves.
do $roles$
begin
    if not exists (select from pg_catalog.pg_roles where rolname = 'vera_searcher') then
        create role vera_searcher nologin nosuperuser nocreatedb nocreaterole bypassrls noinherit;
    else
        alter role vera_searcher nologin nosuperuser nocreatedb nocreaterole bypassrls noinherit;
    end if;
end
$roles$;
grant vera_searcher to vera_owner with inherit true;
grant create, usage on schema vera to vera_searcher;

set role vera_owner;

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
    citation     jsonb
);

-- the blend a snapshot ranks with: the weight set's values (or the defaults)
-- copied, so a later calibration cannot change its answers
alter table vera.snapshots add column weights jsonb;
-- feedback counts and the citation as they were when the snapshot was taken
alter table vera.snapshot_items
    add column up_votes integer not null default 0,
    add column down_votes integer not null default 0,
    add column citation jsonb;

-- The lexical half of search reads one tenant's posting lists: the group
-- joins the full-text indexes (btree_gin, installed by 0002).
drop index vera.facts_tsv_idx;
create index facts_group_tsv_idx on vera.facts using gin (group_id, tsv);
drop index vera.chunks_tsv_idx;
create index chunks_group_tsv_idx on vera.chunks using gin (group_id, tsv);

-- Facts and chunks lose the HNSW indexes shared by all groups (0002 created
-- one per pinned dimension): search now reads each group through an index
-- of its own or exactly, and the shared ones only cost every write.
do $drop$
declare
    shared_index text;
begin
    for shared_index in
        select c.relname from pg_catalog.pg_class c
         where c.relnamespace = 'vera'::regnamespace and c.relkind = 'i'
           and c.relname ~ '^(facts|chunks)_embedding_[0-9]+_hnsw_idx$'
    loop
        execute format('drop index vera.%I', shared_index);
    end loop;
end
$drop$;

reset role;
-- ---- sql/functions/020_authenticate.sql
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
    -- last_used_at is advisory; at most one write a minute per key keeps hot keys
    -- cheap, and a row another transaction is stamping is skipped, not waited
    -- for: concurrent requests with one key must never queue behind each other
    update vera.api_keys k set last_used_at = pg_catalog.now()
     where k.key_id = (select h.key_id from vera.api_keys h
                        where h.key_id = key_row.key_id
                          and (h.last_used_at is null or h.last_used_at < pg_catalog.now() - interval '1 minute')
                          for update skip locked);
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

-- ---- sql/functions/070_settings.sql
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
        -- votes a calibration needs before its weights become the active set
        when 'ranking.calibration_min_samples' then '50'::jsonb
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
               or set_setting.name like 'retract.%') and (value::float8 < 0 or value::float8 > 86400))
           or (set_setting.name = 'ranking.calibration_min_samples'
               and (value::float8 < 1 or value::float8 > 1000000 or value::float8 <> trunc(value::float8))) then
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

-- ---- sql/functions/100_embeddings.sql
-- Embeddings: one model and dimension pinned per group, the entity-name HNSW
-- index per dimension in use, and validation of incoming vectors.
set role vera_owner;

-- Internal: creates the cosine HNSW index on entity names for one dimension
-- if missing. The column is an unsized vector (groups pin different
-- dimensions), so the index covers the rows of its dimension through a cast
-- and a predicate. Facts and chunks get no index shared by all groups:
-- search reads them group by group (175_vector_indexes.sql).
create or replace function vera.ensure_vector_indexes(dim integer)
returns void
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    target record;
begin
    for target in
        select * from (values ('entities', 'name_embedding')) as t(table_name, column_name)
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
    'Internal: the cosine HNSW index on entity names for one dimension';

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

-- ---- sql/functions/170_ranking.sql
-- Ranking building blocks: the search version snapshots pin, the six signals
-- of the blend, the weight sets, and the lexical query.
set role vera_owner;

-- Contract: the version of the ranking code. A snapshot records it and refuses
-- to answer once it differs; bump it whenever stage 1 or stage 2 changes what
-- a search returns.
create or replace function vera.search_version()
returns text
language sql immutable
set search_path = vera, pg_temp
as $$ select 'vera-search/1' $$;
comment on function vera.search_version() is 'Version of the ranking code; snapshots pin it';

-- Contract: the blend's default weights and recency half-life.
create or replace function vera.default_weights()
returns jsonb
language sql immutable
set search_path = vera, pg_temp
as $$
    select '{"relevance": 0.40, "authority": 0.18, "verification": 0.12, "recency": 0.12,
             "feedback": 0.08, "confidence": 0.10, "half_life": "30 days"}'::jsonb
$$;
comment on function vera.default_weights() is 'Default weights of the six signals and the recency half-life';

-- Internal: checks weights a caller passes in and completes them: the six
-- signals, each a non-negative number (absent ones count 0), scaled to sum 1;
-- half_life an interval of at least one second (default 30 days).
create or replace function vera.checked_weights(weights jsonb)
returns jsonb
language plpgsql immutable
set search_path = vera, pg_temp
as $$
declare
    signal_names constant text[] := array['relevance', 'authority', 'verification', 'recency', 'feedback', 'confidence'];
    unknown text;
    total float8 := 0;
    half_life interval;
    result jsonb := '{}';
    signal text;
begin
    if jsonb_typeof(weights) is distinct from 'object' then
        raise exception 'weights must be a JSON object of the six signals (%)', array_to_string(signal_names, ', ')
            using errcode = '22023';
    end if;
    select k into unknown from jsonb_object_keys(weights) k where not k = any (signal_names || 'half_life'::text) limit 1;
    if unknown is not null then
        raise exception 'unknown weight "%": the signals are %, plus half_life', unknown, array_to_string(signal_names, ', ')
            using errcode = '22023';
    end if;
    foreach signal in array signal_names loop
        if weights ? signal and (jsonb_typeof(weights -> signal) <> 'number' or (weights ->> signal)::float8 < 0) then
            raise exception 'weight % must be a non-negative number, got %', signal, weights -> signal using errcode = '22023';
        end if;
        total := total + coalesce((weights ->> signal)::float8, 0);
    end loop;
    if total <= 0 then
        raise exception 'at least one weight must be positive' using errcode = '22023';
    end if;
    foreach signal in array signal_names loop
        result := result || jsonb_build_object(signal, coalesce((weights ->> signal)::float8, 0) / total);
    end loop;
    begin
        half_life := coalesce(weights ->> 'half_life', '30 days')::interval;
    exception when others then
        raise exception 'half_life must be an interval such as "30 days", got %', weights -> 'half_life'
            using errcode = '22023';
    end;
    if half_life < interval '1 second' then
        raise exception 'half_life must be at least one second, got %', half_life using errcode = '22023';
    end if;
    return result || jsonb_build_object('half_life', half_life::text);
end
$$;
comment on function vera.checked_weights(jsonb) is
    'Internal: validates weights (six non-negative numbers, optional half_life) and scales them to sum 1';

-- Contract: the weights a group's searches use now: its active weight set,
-- else the defaults. Search reads it on every call, so a calibration takes
-- effect at once.
create or replace function vera.active_weights(group_id text)
returns jsonb
language sql stable
set search_path = vera, pg_temp
as $$
    select coalesce(
        (select jsonb_build_object(
                    'relevance', w.relevance, 'authority', w.authority, 'verification', w.verification,
                    'recency', w.recency, 'feedback', w.feedback, 'confidence', w.confidence,
                    'half_life', w.half_life::text, 'weight_set_id', w.weight_set_id)
           from vera.ranking_weights w
          where w.group_id = active_weights.group_id and w.active),
        vera.default_weights())
$$;
comment on function vera.active_weights(text) is 'The active weight set of a group (RLS applies), else the defaults';

-- Signals, each in [0, 1]. Inlined into the blend (plain SQL, immutable).

-- human-verified 1.0, graded by the pipeline 0.6, awaiting verification 0.2;
-- a passage (raw source text, never graded) counts as graded
create or replace function vera.verification_signal(verification vera.verification)
returns real
language sql immutable
as $$
    select case verification when 'human_verified' then 1.0 when 'pending' then 0.2 else 0.6 end::real
$$;
comment on function vera.verification_signal(vera.verification) is
    'Verification signal: human_verified 1.0, auto (and passages) 0.6, pending 0.2';

-- exp(-ln 2 * age / half_life), age from the start of validity to the
-- reference instant; 0 once the validity has ended at that instant
create or replace function vera.recency_signal(valid_from timestamptz, valid_to timestamptz,
                                                reference timestamptz, half_life interval)
returns real
language sql immutable
as $$
    select case
        when valid_to is not null and valid_to <= reference then 0
        -- past 100 half-lives the value is below 1e-30 (and exp would underflow)
        when extract(epoch from reference - valid_from) > 100 * extract(epoch from half_life) then 0
        else exp(-ln(2) * greatest(extract(epoch from reference - valid_from), 0)
                 / extract(epoch from half_life))
    end::real
$$;
comment on function vera.recency_signal(timestamptz, timestamptz, timestamptz, interval) is
    'Recency signal: exponential decay with the half-life; 0 when invalidated at the reference instant';

-- (up + 1) / (up + down + 2): 0.5 without votes
create or replace function vera.feedback_signal(up_votes integer, down_votes integer)
returns real
language sql immutable
as $$ select ((coalesce(up_votes, 0) + 1)::float8 / (coalesce(up_votes, 0) + coalesce(down_votes, 0) + 2))::real $$;
comment on function vera.feedback_signal(integer, integer) is 'Feedback signal: (up + 1) / (up + down + 2)';

-- Words that carry no meaning on their own in English and Vietnamese. The
-- index keeps them ('simple' configuration); only the query drops them, since
-- with OR semantics a "the" would match most of the corpus. Question words
-- (where, who, đâu, ai) stay: they are what a question is about.
create or replace function vera.search_stopwords()
returns text[]
language sql immutable
as $$
    select array[
        'a', 'an', 'and', 'are', 'as', 'at', 'be', 'been', 'but', 'by', 'can', 'did', 'do', 'does', 'for',
        'from', 'had', 'has', 'have', 'i', 'if', 'in', 'into', 'is', 'it', 'its', 'of', 'on', 'or', 's',
        'so', 'such', 't', 'than', 'that', 'the', 'their', 'then', 'there', 'these', 'they', 'this',
        'those', 'to', 'was', 'were', 'will', 'with', 'would', 'you', 'your', 'we', 'our', 'me', 'my',
        'về', 'của', 'là', 'và', 'các', 'những', 'được', 'cho', 'với', 'này', 'đó', 'thì', 'mà', 'một',
        'đã', 'đang', 'sẽ', 'bị', 'bởi', 'tại', 'từ', 'theo', 'như', 'nhưng', 'hay', 'hoặc', 'rằng'
    ]
$$;
comment on function vera.search_stopwords() is 'Function words the lexical query leaves out (English, Vietnamese)';

-- Contract: the lexical half's query: the words of the text, lower-cased with
-- diacritics kept ('simple'), stopwords left out, any of them (OR). Null
-- when nothing searchable remains (only punctuation or stopwords).
create or replace function vera.lexical_query(query text)
returns tsquery
language sql immutable
set search_path = vera, pg_temp
as $$
    select nullif(string_agg(quote_literal(t.lexeme), ' | ' order by t.lexeme), '')::tsquery
      from unnest(to_tsvector('simple'::regconfig, coalesce(query, ''))) t
     where not t.lexeme = any (vera.search_stopwords())
$$;
comment on function vera.lexical_query(text) is
    'The lexical half''s tsquery: the query''s words (simple configuration) minus stopwords, OR-ed; null if none';

-- Internal: whether a fact is an answer at an instant (valid time, current
-- knowledge): a published or superseded revision whose validity covers it
-- and that no newer version of its source took back; a proposal only in
-- its proposer's own personal scope. Pending, rejected, retracted and
-- accepted (copied elsewhere) rows never are. Plain SQL so that it inlines.
create or replace function vera.fact_visible(lifecycle vera.fact_lifecycle, group_id text, retired_at timestamptz,
                                             valid_from timestamptz, valid_to timestamptz,
                                             reference timestamptz, personal_group text)
returns boolean
language sql immutable
as $$
    select retired_at is null
       and valid_from <= reference and (valid_to is null or valid_to > reference)
       and (lifecycle in ('published', 'superseded')
            or (lifecycle = 'proposal' and group_id = personal_group))
$$;
comment on function vera.fact_visible(vera.fact_lifecycle, text, timestamptz, timestamptz, timestamptz,
                                      timestamptz, text) is
    'Internal: whether a fact answers at an instant (published/superseded revision valid then; own proposals)';

reset role;

-- ---- sql/functions/175_vector_indexes.sql
-- Per-group HNSW indexes. One HNSW index shared by every tenant answers a
-- tenant's query with the nearest rows of all tenants, which the tenant
-- filter then throws away (a 10% tenant gets 4 of 40); pgvector's iterative
-- scan recovers them at 5-15 ms a query. A large group therefore gets an
-- index of its own (the group is its predicate) and a small one is searched
-- exactly (docs/benchmarks.md has the figures).
set role vera_owner;

-- Internal: the name of a group's own HNSW index on a table, for one dimension.
create or replace function vera.group_vector_index_name(table_name text, group_id text, dim integer)
returns text
language sql immutable
as $$ select format('%s_%s_%s_hnsw_idx', table_name, dim, translate(group_id, ':', '_')) $$;
comment on function vera.group_vector_index_name(text, text, integer) is
    'Internal: name of a group''s own HNSW index on a table for one dimension';

-- Internal: whether that index exists and may be used (an index still being
-- built concurrently, or whose build failed, is not valid yet).
create or replace function vera.group_vector_index_ready(table_name text, group_id text, dim integer)
returns boolean
language sql stable
set search_path = vera, pg_temp
as $$
    select coalesce((
        select i.indisvalid and i.indisready
          from pg_catalog.pg_index i
         where i.indexrelid = pg_catalog.to_regclass(
                   format('vera.%I', vera.group_vector_index_name(table_name, group_id, dim)))), false)
$$;
comment on function vera.group_vector_index_ready(text, text, integer) is
    'Internal: whether a group''s own HNSW index exists and is valid';

-- Contract (operators): the per-group HNSW indexes that should exist and do
-- not, each with the statements that build it without blocking writers
-- (CREATE INDEX CONCURRENTLY, which cannot run inside a function or a
-- transaction: `vera db maintain` runs them one by one). A group needs its
-- own index on facts or chunks once it holds min_rows vectors of a
-- dimension there. An index whose concurrent build failed is dropped and
-- built again. Reads every group's row counts, so it belongs to
-- vera_searcher (past RLS) and answers only with names and counts.
create or replace function vera.missing_vector_indexes(min_rows integer default 5000)
returns table (group_id text, table_name text, dim integer, vector_rows bigint, index_name text, statements text[])
language plpgsql stable security definer
set search_path = vera, public, pg_temp
as $$
begin
    if min_rows is null or min_rows < 1 then
        raise exception 'min_rows must be at least 1, got %', coalesce(min_rows::text, 'null') using errcode = '22023';
    end if;
    return query
        with counts as (
            select 'facts'::text as table_name, f.group_id, public.vector_dims(f.embedding) as dim, count(*) as vector_rows
              from vera.facts f where f.embedding is not null group by 1, 2, 3
            union all
            select 'chunks', c.group_id, public.vector_dims(c.embedding), count(*)
              from vera.chunks c where c.embedding is not null group by 1, 2, 3
        )
        select c.group_id, c.table_name, c.dim, c.vector_rows, name.index_name,
               case when to_regclass(format('vera.%I', name.index_name)) is not null
                    then array[format('drop index concurrently if exists vera.%I', name.index_name)] else '{}' end
               || format('create index concurrently if not exists %I on vera.%I using hnsw '
                         '((embedding::public.vector(%s)) public.vector_cosine_ops) '
                         'where group_id = %L and public.vector_dims(embedding) = %s',
                         name.index_name, c.table_name, c.dim, c.group_id, c.dim)
          from counts c
          cross join lateral (select vera.group_vector_index_name(c.table_name, c.group_id, c.dim) as index_name) name
         where c.vector_rows >= min_rows
           and not vera.group_vector_index_ready(c.table_name, c.group_id, c.dim)
         order by c.vector_rows desc, c.group_id, c.table_name;
end
$$;
comment on function vera.missing_vector_indexes(integer) is
    'Per-group HNSW indexes due (groups with at least min_rows vectors) and the statements that build them';
alter function vera.missing_vector_indexes(integer) owner to vera_searcher;

reset role;

-- ---- sql/functions/180_search.sql
-- The read path: vera.search, one call. Stage 1 finds candidates with a
-- lexical half (GIN full text) and a vector half (HNSW, cosine) and fuses
-- their ranks (RRF); stage 2 blends six signals into the score. Snapshot
-- search (200_snapshots.sql) reuses stage 2 as it is.
set role vera_owner;

-- pgvector defines its settings (hnsw.*) when its library loads; load it now
-- so that the SET clauses below are checked as those settings rather than as
-- unknown placeholders, which only a superuser may set.
do $load$ begin perform '[1]'::public.vector; end $load$;

-- Internal: stage 1 over the live tables. Returns each candidate with its
-- rank in the lexical and in the vector list (null when absent from one).
--
-- It belongs to vera_searcher, which bypasses row-level security, and makes
-- the group check RLS would make (the caller's readable groups) itself: the
-- full-text @@ operator and pgvector's distance operators are not leakproof,
-- so under RLS the planner may not use the GIN index for @@ at all, and
-- would check every matching row against the policy before the index's own
-- quals. vera.search then reads the candidates' details under RLS again.
--
-- HNSW returns the nearest rows first and filters afterwards: with a tenant
-- filter a scan of one index shared by all tenants runs dry before n rows
-- pass, and pgvector's iterative scan, which keeps going, costs 5-15 ms
-- (docs/benchmarks.md). So each group is searched on its own: through its
-- own HNSW index when it is large, exactly when it is small; the iterative
-- scan (relaxed order, re-sorted here) only covers the rows that the
-- valid-time filter drops.
create or replace function vera.search_candidates(
    lexical_groups text[], lexical tsquery,
    vector_groups text[], query_embedding public.vector,
    reference timestamptz, personal_group text, n integer, ef_search integer)
returns table (kind vera.item_kind, group_id text, item_id uuid, lexical_rank integer, vector_rank integer)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
set hnsw.iterative_scan = relaxed_order
set hnsw.ef_search = 40
as $$
declare
    readable constant text[] := vera.readable_groups();
    -- a passage answers at the reference instant when its episode is the
    -- latest version of its record observed by then and was not taken back
    passage_visible constant text := $p$
        e.status <> 'retracted' and e.observed_at <= $3
        and not exists (select from vera.episodes newer
                         where newer.group_id = e.group_id and newer.source_id = e.source_id
                           and newer.external_id = e.external_id and newer.version > e.version
                           and newer.observed_at <= $3 and newer.status <> 'retracted')$p$;
    fact_visible constant text := $f$
        vera.fact_visible(f.lifecycle, f.group_id, f.retired_at, f.valid_from, f.valid_to, $3, $4)$f$;
    lexical_kinds vera.item_kind[];
    lexical_ids uuid[];
    lexical_owners text[];
    lexical_scores float8[];
    vector_kinds vera.item_kind[];
    vector_ids uuid[];
    vector_owners text[];
    vector_distances float8[];
    per_group text;
    dim integer := public.vector_dims(query_embedding);
begin
    lexical_groups := array(select g from unnest(lexical_groups) g where g = any (readable));
    vector_groups := array(select g from unnest(vector_groups) g where g = any (readable));
    perform set_config('hnsw.ef_search', greatest(ef_search, 1)::text, true);

    if lexical is not null and cardinality(lexical_groups) > 0 then
        execute format($q$
            select array_agg(h.kind), array_agg(h.item_id), array_agg(h.group_id), array_agg(h.score)
              from (select * from (
                      (select 'fact'::vera.item_kind as kind, f.group_id, f.fact_id as item_id,
                              ts_rank(f.tsv, $1) as score
                         from vera.facts f
                        where f.tsv @@ $1 and f.group_id = any ($2) and %1$s
                        order by 4 desc, 3 limit $5)
                      union all
                      (select 'passage'::vera.item_kind, c.group_id, c.chunk_id, ts_rank(c.tsv, $1)
                         from vera.chunks c
                         join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
                        where c.tsv @@ $1 and c.group_id = any ($2) and %2$s
                        order by 4 desc, 3 limit $5)) both_kinds
                     order by score desc, item_id limit $5) h$q$, fact_visible, passage_visible)
          into lexical_kinds, lexical_ids, lexical_owners, lexical_scores
          using lexical, lexical_groups, reference, personal_group, n;
    end if;

    if query_embedding is not null and cardinality(vector_groups) > 0 then
        -- One nearest-neighbour query per group and table, all in one
        -- statement. A group with an HNSW index of its own (a large one, see
        -- vera.missing_vector_indexes) is searched through it: the group
        -- filter is the index's predicate, so the scan returns the group's
        -- neighbours and nothing is filtered away but the few rows outside
        -- valid time (the iterative scan covers those). A small group is
        -- searched exactly: "+ 0" keeps the shared HNSW index out (its
        -- nearest rows would mostly belong to other tenants), the primary
        -- key finds the group's rows and they are sorted by distance.
        select string_agg(format($q$
                   (select 'fact'::vera.item_kind as kind, f.group_id, f.fact_id as item_id,
                           f.embedding::public.vector(%1$s) operator(public.<=>) $1 as distance
                      from vera.facts f
                     where f.group_id = %2$L and public.vector_dims(f.embedding) = %1$s and %3$s
                     order by (f.embedding::public.vector(%1$s) operator(public.<=>) $1) %4$s limit $5)
                   union all
                   (select 'passage'::vera.item_kind, c.group_id, c.chunk_id,
                           c.embedding::public.vector(%1$s) operator(public.<=>) $1
                      from vera.chunks c
                      join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
                     where c.group_id = %2$L and public.vector_dims(c.embedding) = %1$s and %5$s
                     order by (c.embedding::public.vector(%1$s) operator(public.<=>) $1) %6$s limit $5)$q$,
                   dim, g, fact_visible,
                   case when vera.group_vector_index_ready('facts', g, dim) then '' else '+ 0' end,
                   passage_visible,
                   case when vera.group_vector_index_ready('chunks', g, dim) then '' else '+ 0' end),
               ' union all ')
          into per_group
          from unnest(vector_groups) g;
        execute format($q$
            select array_agg(h.kind), array_agg(h.item_id), array_agg(h.group_id), array_agg(h.distance)
              from (select * from (%s) every_group
                     -- the iterative scan returns rows in relaxed order: sort them exactly
                     order by distance, item_id limit $5) h$q$, per_group)
          into vector_kinds, vector_ids, vector_owners, vector_distances
          using query_embedding, vector_groups, reference, personal_group, n;
    end if;

    -- Ranks from 1; equal scores share a rank (1, 1, 3): two facts that match
    -- the same words equally are equally relevant, and the blend's other
    -- signals (authority, verification, ...) decide between them.
    return query
        with lexical_list as (
            select u.kind, u.group_id, u.item_id, (rank() over (order by u.score desc))::integer as position
              from unnest(lexical_kinds, lexical_owners, lexical_ids, lexical_scores) as u(kind, group_id, item_id, score)),
        vector_list as (
            select u.kind, u.group_id, u.item_id, (rank() over (order by u.distance))::integer as position
              from unnest(vector_kinds, vector_owners, vector_ids, vector_distances) as u(kind, group_id, item_id, distance))
        select coalesce(l.kind, v.kind), coalesce(l.group_id, v.group_id), coalesce(l.item_id, v.item_id),
               l.position, v.position
          from lexical_list l
          full join vector_list v on v.kind = l.kind and v.item_id = l.item_id;
end
$$;
comment on function vera.search_candidates(text[], tsquery, text[], public.vector, timestamptz, text, integer, integer) is
    'Internal: stage 1, lexical and vector candidates with their ranks (reads past RLS, checks the groups itself)';
alter function vera.search_candidates(text[], tsquery, text[], public.vector, timestamptz, text, integer, integer)
    owner to vera_searcher;

-- Internal: stage 2, the blend. Relevance is the fused stage-1 score
-- min-max normalised over the batch (1 when the batch has one score); the
-- other five signals come from each item; weights per group (key "*" for
-- all). Ties fall to the fused score, then to the item id, so equal inputs
-- always give the same order.
create or replace function vera.blend(items vera.search_item[], weights_by_group jsonb,
                                      reference timestamptz, k integer)
returns table (
    rank integer, kind vera.item_kind, item_id uuid, group_id text, text text,
    subject text, predicate text, object text, score real,
    relevance real, authority real, verification real, recency real, feedback real, confidence real,
    citation jsonb)
language sql stable
set search_path = vera, pg_temp
as $$
    with batch as (
        select i.*, min(i.fused) over () as lowest, max(i.fused) over () as highest,
               coalesce(weights_by_group -> i.group_id, weights_by_group -> '*') as weights
          from unnest(items) i
    ), signals as (
        select b.*,
               (case when b.highest > b.lowest then (b.fused - b.lowest) / (b.highest - b.lowest) else 1 end)::real
                   as relevance_signal,
               vera.verification_signal(b.verification) as verification_score,
               vera.recency_signal(b.valid_from, b.valid_to, reference, (b.weights ->> 'half_life')::interval)
                   as recency_signal,
               vera.feedback_signal(b.up_votes, b.down_votes) as feedback_score
          from batch b
    ), scored as (
        select s.*,
               (s.relevance_signal * (s.weights ->> 'relevance')::float8
                + s.authority * (s.weights ->> 'authority')::float8
                + s.verification_score * (s.weights ->> 'verification')::float8
                + s.recency_signal * (s.weights ->> 'recency')::float8
                + s.feedback_score * (s.weights ->> 'feedback')::float8
                + s.confidence * (s.weights ->> 'confidence')::float8)::real as total
          from signals s
    )
    select (row_number() over (order by s.total desc, s.fused desc, s.item_id))::integer,
           s.kind, s.item_id, s.group_id, s.text, s.subject, s.predicate, s.object, s.total,
           s.relevance_signal, s.authority, s.verification_score, s.recency_signal, s.feedback_score, s.confidence,
           s.citation
      from scored s
     order by s.total desc, s.fused desc, s.item_id
     limit k
$$;
comment on function vera.blend(vera.search_item[], jsonb, timestamptz, integer) is
    'Internal: stage 2, the six-signal blend over a batch of candidates';

-- Internal: when the next version of a record was observed (null while this
-- one is the latest): the end of its passages' validity.
create or replace function vera.next_version_observed(group_id text, source_id uuid, external_id text, version integer)
returns timestamptz
language sql stable
set search_path = vera, pg_temp
as $$
    select min(newer.observed_at) from vera.episodes newer
     where newer.group_id = next_version_observed.group_id and newer.source_id = next_version_observed.source_id
       and newer.external_id = next_version_observed.external_id and newer.version > next_version_observed.version
       and newer.status <> 'retracted'
$$;
comment on function vera.next_version_observed(text, uuid, text, integer) is
    'Internal: when the next (not retracted) version of a record was observed';

-- Internal: what the blend reads of each live stage-1 candidate (grading,
-- validity, votes). Text and citation are left out: only the k hits that
-- survive the blend need them (vera.hit_details). Runs under RLS.
create or replace function vera.candidate_signals(
    kinds vera.item_kind[], ids uuid[], owners text[], fused double precision[])
returns setof vera.search_item
language sql stable
set search_path = vera, pg_temp
as $$
    with candidate as (
        select * from unnest(kinds, ids, owners, fused) as u(kind, item_id, group_id, fused)
    ), votes as (
        select fb.item_kind, fb.item_id, count(*) filter (where fb.vote > 0)::integer as up_votes,
               count(*) filter (where fb.vote < 0)::integer as down_votes
          from vera.feedback fb
          join candidate c on fb.group_id = c.group_id and fb.item_kind = c.kind and fb.item_id = c.item_id
         group by 1, 2
    )
    select row('fact'::vera.item_kind, f.fact_id, f.group_id, c.fused, null, null, null, null, f.authority,
               f.verification, f.confidence, f.valid_from, f.valid_to, coalesce(v.up_votes, 0),
               coalesce(v.down_votes, 0), null)::vera.search_item
      from candidate c
      join vera.facts f on f.group_id = c.group_id and f.fact_id = c.item_id
      left join votes v on v.item_kind = 'fact' and v.item_id = f.fact_id
     where c.kind = 'fact'
    union all
    select row('passage'::vera.item_kind, ch.chunk_id, ch.group_id, c.fused, null, null, null, null,
               vera.tier_authority(src.trust_tier), null, 1.0, ep.observed_at, next_version.observed_at,
               coalesce(v.up_votes, 0), coalesce(v.down_votes, 0), null)::vera.search_item
      from candidate c
      join vera.chunks ch on ch.group_id = c.group_id and ch.chunk_id = c.item_id
      join vera.episodes ep on ep.group_id = ch.group_id and ep.episode_id = ch.episode_id
      join vera.sources src on src.group_id = ep.group_id and src.source_id = ep.source_id
      left join votes v on v.item_kind = 'passage' and v.item_id = ch.chunk_id
      left join lateral vera.next_version_observed(ep.group_id, ep.source_id, ep.external_id, ep.version)
           next_version(observed_at) on true
     where c.kind = 'passage'
$$;
comment on function vera.candidate_signals(vera.item_kind[], uuid[], text[], double precision[]) is
    'Internal: blend inputs (grading, validity, votes) of live candidates';

-- Internal: what a hit shows: its text, the triple of a fact (names of
-- subject and object), and its citation (source, episode, chunk or
-- evidence span, validity, tier, verification, recorded time). A proposal's
-- provenance lives in origin, since its own row sits in a u: scope. Runs
-- under RLS.
create or replace function vera.hit_details(kinds vera.item_kind[], ids uuid[], owners text[])
returns table (kind vera.item_kind, item_id uuid, text text, subject text, predicate text, object text,
               citation jsonb)
language sql stable
set search_path = vera, pg_temp
as $$
    with hit as (
        select * from unnest(kinds, ids, owners) as u(kind, item_id, group_id)
    ), fact as (
        select f.*, coalesce(f.origin ->> 'group_id', f.group_id) as provenance_group,
               coalesce(f.source_id, (f.origin ->> 'source_id')::uuid) as provenance_source,
               coalesce(f.episode_id, (f.origin ->> 'episode_id')::uuid) as provenance_episode,
               coalesce(f.chunk_id, (f.origin ->> 'chunk_id')::uuid) as provenance_chunk
          from hit h
          join vera.facts f on f.group_id = h.group_id and f.fact_id = h.item_id
         where h.kind = 'fact'
    )
    select 'fact'::vera.item_kind, f.fact_id, f.fact_text, subj.canonical_name, f.predicate,
           coalesce(obj.canonical_name, f.object_value),
           jsonb_build_object(
               'group_id', f.group_id,
               'source', case when src.source_id is not null then jsonb_build_object(
                   'source_id', src.source_id, 'name', src.name, 'kind', src.kind, 'uri', src.uri) end,
               'episode', case when ep.episode_id is not null then jsonb_build_object(
                   'episode_id', ep.episode_id, 'external_id', ep.external_id, 'version', ep.version,
                   'title', ep.title, 'uri', ep.uri) end,
               'chunk', case when ch.chunk_id is not null then jsonb_build_object(
                   'chunk_id', ch.chunk_id, 'ordinal', ch.ordinal, 'heading', ch.heading) end,
               'evidence', case when f.evidence_start is not null or f.evidence_end is not null then
                   jsonb_build_object('start', f.evidence_start, 'end', f.evidence_end,
                                      'text', substr(ch.text, f.evidence_start + 1,
                                                     f.evidence_end - f.evidence_start)) end,
               'valid_from', f.valid_from, 'valid_to', f.valid_to, 'tier', f.tier,
               'verification', f.verification, 'lifecycle', f.lifecycle, 'recorded_at', f.recorded_at,
               'proposed_for', f.proposed_for)
      from fact f
      join vera.entities subj on subj.group_id = f.group_id and subj.entity_id = f.subject_entity_id
      left join vera.entities obj on obj.group_id = f.group_id and obj.entity_id = f.object_entity_id
      left join vera.sources src on src.group_id = f.provenance_group and src.source_id = f.provenance_source
      left join vera.episodes ep on ep.group_id = f.provenance_group and ep.episode_id = f.provenance_episode
      left join vera.chunks ch on ch.group_id = f.provenance_group and ch.chunk_id = f.provenance_chunk
    union all
    select 'passage'::vera.item_kind, ch.chunk_id, ch.text, null, null, null,
           jsonb_build_object(
               'group_id', ch.group_id,
               'source', jsonb_build_object('source_id', src.source_id, 'name', src.name, 'kind', src.kind,
                                            'uri', src.uri),
               'episode', jsonb_build_object('episode_id', ep.episode_id, 'external_id', ep.external_id,
                                             'version', ep.version, 'title', ep.title, 'uri', ep.uri),
               'chunk', jsonb_build_object('chunk_id', ch.chunk_id, 'ordinal', ch.ordinal, 'heading', ch.heading),
               'evidence', case when ch.char_start is not null then
                   jsonb_build_object('start', ch.char_start, 'end', ch.char_end) end,
               'valid_from', ep.observed_at,
               'valid_to', vera.next_version_observed(ep.group_id, ep.source_id, ep.external_id, ep.version),
               'tier', src.trust_tier, 'verification', null, 'lifecycle', null, 'recorded_at', ch.created_at)
      from hit h
      join vera.chunks ch on ch.group_id = h.group_id and ch.chunk_id = h.item_id
      join vera.episodes ep on ep.group_id = ch.group_id and ep.episode_id = ch.episode_id
      join vera.sources src on src.group_id = ep.group_id and src.source_id = ep.source_id
     where h.kind = 'passage'
$$;
comment on function vera.hit_details(vera.item_kind[], uuid[], text[]) is
    'Internal: text, triple and citation of hits';

-- Contract: hybrid search over the caller's readable groups (or the subset
-- named in groups), one call. Stage 1: the lexical half (the query's words,
-- OR-ed, stopwords left out) and the vector half (the query embedding
-- against the groups pinned to its dimension and, when given, model) each
-- return their top `candidates` (default 4 * k) facts and passages valid at
-- as_of (default now); reciprocal rank fusion adds lexical_weight / (k_rrf +
-- rank) and vector_weight / (k_rrf + rank), ranks from 1. Stage 2 blends
-- six signals with each group's active weights (or the weights given).
-- Returns at most k hits, best first; an empty result when nothing matches,
-- including a query of only stopwords or punctuation. Errors: 22023 (bad
-- arguments), 42501 (a group the caller cannot read), VE001 (an embedding no
-- searched group is pinned to), VA005 (not authenticated).
create or replace function vera.search(
    query text default null,
    query_embedding public.vector default null,
    k integer default 10,
    as_of timestamptz default null,
    groups text[] default null,
    weights jsonb default null,
    k_rrf integer default 1,
    candidates integer default null,
    embedding_model text default null,
    lexical_weight double precision default 1,
    vector_weight double precision default 1,
    ef_search integer default null)
returns table (
    rank integer, kind vera.item_kind, item_id uuid, group_id text, text text,
    subject text, predicate text, object text, score real,
    relevance real, authority real, verification real, recency real, feedback real, confidence real,
    citation jsonb)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
    reference constant timestamptz := coalesce(as_of, now());
    lexical tsquery;
    targets text[];
    vector_targets text[];
    n integer;
    weight_map jsonb;
    stage_one record;
    items vera.search_item[];
begin
    targets := vera.search_targets(groups);
    n := vera.check_search_arguments(query, query_embedding, k, as_of, k_rrf, candidates,
                                     lexical_weight, vector_weight, ef_search);
    lexical := vera.lexical_query(query);
    vector_targets := vera.vector_targets(targets, query_embedding, embedding_model);
    if weights is not null then
        weight_map := jsonb_build_object('*', vera.checked_weights(weights));
    end if;
    if lexical is null and cardinality(vector_targets) = 0 then
        return;
    end if;

    select array_agg(c.kind) as kinds, array_agg(c.item_id) as ids, array_agg(c.group_id) as owners,
           array_agg(coalesce(lexical_weight / (k_rrf + c.lexical_rank)::float8, 0)
                     + coalesce(vector_weight / (k_rrf + c.vector_rank)::float8, 0)) as fused
      into stage_one
      from vera.search_candidates(targets, lexical, vector_targets, query_embedding, reference,
                                  (select p.personal_group_id from vera.principals p where p.principal_id = caller),
                                  n, coalesce(ef_search, least(greatest(100, n), 1000))) c;
    if stage_one.kinds is null then
        return;
    end if;
    items := array(select i from vera.candidate_signals(stage_one.kinds, stage_one.ids, stage_one.owners,
                                                         stage_one.fused) i);
    if weight_map is null then
        select jsonb_object_agg(g, vera.active_weights(g)) into weight_map
          from (select distinct i.group_id as g from unnest(items) i) owners;
    end if;
    -- the blend ranks every candidate; only the k hits get their text and citation
    return query
        with ranked as (select * from vera.blend(items, weight_map, reference, k)),
             details as (select * from vera.hit_details((select array_agg(r.kind) from ranked r),
                                                        (select array_agg(r.item_id) from ranked r),
                                                        (select array_agg(r.group_id) from ranked r)))
        select r.rank, r.kind, r.item_id, r.group_id, d.text, d.subject, d.predicate, d.object, r.score,
               r.relevance, r.authority, r.verification, r.recency, r.feedback, r.confidence, d.citation
          from ranked r
          join details d on d.kind = r.kind and d.item_id = r.item_id
         order by r.rank;
end
$$;
comment on function vera.search(text, public.vector, integer, timestamptz, text[], jsonb, integer, integer, text,
                                 double precision, double precision, integer) is
    'Hybrid search (lexical + vector, RRF, six-signal blend) over the caller''s readable groups, as of an instant';

-- Internal: the groups a search covers: all the caller reads, or the ones
-- named, each of which it must be able to read (42501).
create or replace function vera.search_targets(groups text[])
returns text[]
language plpgsql stable
set search_path = vera, pg_temp
as $$
declare
    readable constant text[] := vera.readable_groups();
    unreadable text;
begin
    if groups is null then
        return readable;
    end if;
    if cardinality(groups) = 0 then
        raise exception 'groups must name at least one group (or be null for every readable group)'
            using errcode = '22023';
    end if;
    select g into unreadable from unnest(groups) g where g is null or not g = any (readable) limit 1;
    if found then
        raise exception 'permission denied: cannot read group %', coalesce(unreadable, '(null)') using errcode = '42501';
    end if;
    return array(select distinct g from unnest(groups) g);
end
$$;
comment on function vera.search_targets(text[]) is 'Internal: the groups a search covers (42501 for unreadable ones)';

-- Internal: refuses bad search arguments with 22023; returns the number of
-- candidates each half retrieves.
create or replace function vera.check_search_arguments(
    query text, query_embedding public.vector, k integer, as_of timestamptz, k_rrf integer, candidates integer,
    lexical_weight double precision, vector_weight double precision, ef_search integer)
returns integer
language plpgsql immutable
set search_path = vera, public, pg_temp
as $$
begin
    if coalesce(btrim(query), '') = '' and query_embedding is null then
        raise exception 'search needs a query text or a query embedding' using errcode = '22023';
    end if;
    if char_length(query) > 4000 then
        raise exception 'query is % characters; at most 4000', char_length(query) using errcode = '22001';
    end if;
    if k is null or k < 1 or k > 1000 then
        raise exception 'k must be between 1 and 1000, got %', coalesce(k::text, 'null') using errcode = '22023';
    end if;
    if as_of is not null and not isfinite(as_of) then
        raise exception 'as_of must be a finite timestamp, got %', as_of using errcode = '22023';
    end if;
    if k_rrf is null or k_rrf < 0 or k_rrf > 10000 then
        raise exception 'k_rrf must be between 0 and 10000, got %', coalesce(k_rrf::text, 'null') using errcode = '22023';
    end if;
    if candidates is not null and (candidates < 1 or candidates > 10000) then
        raise exception 'candidates must be between 1 and 10000, got %', candidates using errcode = '22023';
    end if;
    -- "between" also refuses NaN, which PostgreSQL sorts above every number
    if not coalesce(lexical_weight between 0 and 1000000 and vector_weight between 0 and 1000000, false)
       or lexical_weight + vector_weight = 0 then
        raise exception 'lexical_weight and vector_weight must be finite, between 0 and 1000000, and not both 0'
            using errcode = '22023';
    end if;
    if ef_search is not null and (ef_search < 1 or ef_search > 1000) then
        raise exception 'ef_search must be between 1 and 1000, got %', ef_search using errcode = '22023';
    end if;
    return coalesce(candidates, 4 * k);
end
$$;
comment on function vera.check_search_arguments(text, public.vector, integer, timestamptz, integer, integer,
                                                 double precision, double precision, integer) is
    'Internal: checks search arguments (22023, 22001); returns the candidates per half';

-- Internal: the searched groups whose pinned embedding matches the query
-- embedding (dimension, and model when named). None when no embedding is
-- given or no searched group holds vectors; VE001 when some do, but none
-- in this dimension and model.
create or replace function vera.vector_targets(targets text[], query_embedding public.vector, embedding_model text)
returns text[]
language plpgsql stable
set search_path = vera, public, pg_temp
as $$
declare
    dim constant integer := public.vector_dims(query_embedding);
    matching text[];
    pins text;
begin
    if query_embedding is null then
        return '{}';
    end if;
    select array_agg(g.group_id) filter (where g.embedding_dim = dim
                                           and (vector_targets.embedding_model is null
                                                or g.embedding_model = vector_targets.embedding_model)),
           string_agg(distinct format('%s (%s dimensions)', g.embedding_model, g.embedding_dim), ', ')
      into matching, pins
      from vera.groups g
     where g.group_id = any (targets) and g.embedding_dim is not null;
    if pins is not null and matching is null then
        raise exception 'query embedding is % (% dimensions), but the groups searched are pinned to %',
            coalesce(vector_targets.embedding_model, 'of no named model'), dim, pins using errcode = 'VE001';
    end if;
    return coalesce(matching, '{}');
end
$$;
comment on function vera.vector_targets(text[], public.vector, text) is
    'Internal: searched groups pinned to the query embedding''s dimension (and model); VE001 when none is';

reset role;

-- ---- sql/functions/190_feedback.sql
-- Feedback on hits and the calibration of the blend's weights from it.
set role vera_owner;

-- Contract: records the caller's vote ('up' or 'down') on a hit of a query,
-- with the six signals the hit has for that query. The signals are computed
-- here by running the search again (a client cannot hand in made-up ones),
-- so the item must be among the first 100 hits of the query (VN001
-- otherwise). One vote per principal, hit and query: voting again replaces it.
create or replace function vera.record_feedback(
    kind vera.item_kind, item_id uuid, query text, vote text,
    query_embedding public.vector default null, as_of timestamptz default null, groups text[] default null,
    embedding_model text default null)
returns table (feedback_id uuid, group_id text, signals jsonb, created boolean)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
    normalised_query text;
    hit record;
    vote_sign smallint;
begin
    if kind is null or item_id is null then
        raise exception 'feedback needs the kind and id of a hit' using errcode = '22023';
    end if;
    vote_sign := case lower(btrim(coalesce(vote, ''))) when 'up' then 1 when 'down' then -1 end;
    if vote_sign is null then
        raise exception 'vote must be ''up'' or ''down'', got %', coalesce(quote_literal(vote), 'null')
            using errcode = '22023';
    end if;
    normalised_query := regexp_replace(lower(btrim(coalesce(query, ''))), '\s+', ' ', 'g');
    if normalised_query = '' then
        raise exception 'feedback needs the query the hit answered' using errcode = '22023';
    end if;
    select * into hit
      from vera.search(query, query_embedding, k => 100, as_of => record_feedback.as_of,
                       groups => record_feedback.groups, embedding_model => record_feedback.embedding_model) s
     where s.kind = record_feedback.kind and s.item_id = record_feedback.item_id;
    if not found then
        raise exception '% % is not among the first 100 hits of this query', kind, item_id using errcode = 'VN001';
    end if;
    return query
        insert into vera.feedback as fb (group_id, principal_id, item_kind, item_id, query_text, query_sha256, vote,
                                         signals)
        values (hit.group_id, caller, kind, item_id, btrim(query), sha256(convert_to(normalised_query, 'UTF8')),
                vote_sign, array[hit.relevance, hit.authority, hit.verification, hit.recency, hit.feedback,
                                 hit.confidence])
        on conflict on constraint feedback_one_vote do update
            set vote = excluded.vote, signals = excluded.signals, query_text = excluded.query_text,
                created_at = now()
        returning fb.feedback_id, fb.group_id,
                  jsonb_build_object('relevance', hit.relevance, 'authority', hit.authority,
                                     'verification', hit.verification, 'recency', hit.recency,
                                     'feedback', hit.feedback, 'confidence', hit.confidence),
                  (xmax = 0);
end
$$;
comment on function vera.record_feedback(vera.item_kind, uuid, text, text, public.vector, timestamptz, text[], text) is
    'Records the caller''s up/down vote on a hit of a query, with the hit''s six signals';

-- Contract: derives the blend's weights of a group from its feedback by the
-- mean-difference rule: each signal's separation is its mean on helpful
-- (up) hits minus its mean on unhelpful (down) hits; a signal earns weight in
-- proportion to a positive separation, none gets a negative weight, and the
-- weights sum to 1. The set becomes the group's active one (search uses it
-- from the next call) only when the votes reach the group's
-- ranking.calibration_min_samples (or min_samples), both kinds of vote are
-- present and some signal separates; otherwise it is returned, not kept.
-- Admins only.
create or replace function vera.calibrate_weights(group_id text, min_samples integer default null)
returns table (weight_set_id uuid, persisted boolean, sample_count integer, helpful integer, unhelpful integer,
               weights jsonb, separation jsonb)
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    signal_names constant text[] := array['relevance', 'authority', 'verification', 'recency', 'feedback', 'confidence'];
    needed integer;
    stats record;
    gap float8;
    positive_total float8 := 0;
    new_weights jsonb := '{}';
    gaps jsonb := '{}';
    i integer;
    kept uuid;
begin
    perform vera.require_role(calibrate_weights.group_id, 'admin');
    needed := coalesce(min_samples, (vera.setting(calibrate_weights.group_id, 'ranking.calibration_min_samples'))::integer);
    if needed < 1 then
        raise exception 'min_samples must be at least 1, got %', needed using errcode = '22023';
    end if;
    select count(*)::integer as total,
           count(*) filter (where f.vote > 0)::integer as ups,
           count(*) filter (where f.vote < 0)::integer as downs,
           array[avg(f.signals[1]) filter (where f.vote > 0), avg(f.signals[2]) filter (where f.vote > 0),
                 avg(f.signals[3]) filter (where f.vote > 0), avg(f.signals[4]) filter (where f.vote > 0),
                 avg(f.signals[5]) filter (where f.vote > 0), avg(f.signals[6]) filter (where f.vote > 0)] as up_means,
           array[avg(f.signals[1]) filter (where f.vote < 0), avg(f.signals[2]) filter (where f.vote < 0),
                 avg(f.signals[3]) filter (where f.vote < 0), avg(f.signals[4]) filter (where f.vote < 0),
                 avg(f.signals[5]) filter (where f.vote < 0), avg(f.signals[6]) filter (where f.vote < 0)] as down_means
      into stats
      from vera.feedback f
     where f.group_id = calibrate_weights.group_id;

    sample_count := stats.total;
    helpful := stats.ups;
    unhelpful := stats.downs;
    persisted := false;
    if stats.ups = 0 or stats.downs = 0 then
        -- no contrast to learn from
        return next;
        return;
    end if;
    for i in 1 .. 6 loop
        gap := stats.up_means[i] - stats.down_means[i];
        gaps := gaps || jsonb_build_object(signal_names[i], round(gap::numeric, 6));
        positive_total := positive_total + greatest(gap, 0);
    end loop;
    separation := gaps;
    if positive_total <= 0 then
        return next;
        return;
    end if;
    for i in 1 .. 6 loop
        new_weights := new_weights || jsonb_build_object(
            signal_names[i], round((greatest((gaps ->> signal_names[i])::float8, 0) / positive_total)::numeric, 6));
    end loop;
    weights := new_weights || jsonb_build_object(
        'half_life', vera.active_weights(calibrate_weights.group_id) ->> 'half_life');
    if stats.total < needed then
        return next;
        return;
    end if;

    update vera.ranking_weights w set active = false where w.group_id = calibrate_weights.group_id and w.active;
    insert into vera.ranking_weights as w (group_id, relevance, authority, verification, recency, feedback, confidence,
                                           half_life, sample_count, separation, active, created_by)
    values (calibrate_weights.group_id, (weights ->> 'relevance')::real, (weights ->> 'authority')::real,
            (weights ->> 'verification')::real, (weights ->> 'recency')::real, (weights ->> 'feedback')::real,
            (weights ->> 'confidence')::real, (weights ->> 'half_life')::interval, stats.total, gaps, true,
            vera.current_principal())
    returning w.weight_set_id into kept;
    weight_set_id := kept;
    persisted := true;
    perform vera.audit(calibrate_weights.group_id, 'ranking.calibrate', 'ranking_weights', kept::text,
                       jsonb_build_object('weights', weights, 'separation', gaps, 'sample_count', stats.total));
    return next;
end
$$;
comment on function vera.calibrate_weights(text, integer) is
    'Derives blend weights from feedback (mean-difference rule); activates them above the minimum sample count';

-- Contract: makes the defaults the group's weights again (admins).
create or replace function vera.reset_weights(group_id text)
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(reset_weights.group_id, 'admin');
    update vera.ranking_weights w set active = false where w.group_id = reset_weights.group_id and w.active;
    perform vera.audit(reset_weights.group_id, 'ranking.reset', 'ranking_weights', null, '{}');
end
$$;
comment on function vera.reset_weights(text) is 'Deactivates a group''s calibrated weights: search uses the defaults again';

reset role;

-- ---- sql/functions/200_snapshots.sql
-- Snapshots: a group's retrieval inputs frozen at one instant, searchable
-- later with the same answers, and refused once their pins no longer hold.
set role vera_owner;

-- Contract: copies everything a search of the group could return now
-- (facts and passages, with their text, full-text vector, embedding,
-- grading, validity, votes and citation) and pins the embedding model and
-- dimension, the search version and the weights. Must run in a REPEATABLE
-- READ (or SERIALIZABLE) transaction, so that the pins and every copied row
-- come from one view of the data (25000 otherwise). The snapshot is sealed
-- as the last step; readers refuse one that is not. Members of the group.
create or replace function vera.create_snapshot(group_id text, name text)
returns table (snapshot_id uuid, item_count integer, created_at timestamptz)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
    reference constant timestamptz := now();
    personal text;
    pinned record;
    weights jsonb;
    snapshot uuid;
    copied integer;
begin
    perform vera.require_role(create_snapshot.group_id, 'member');
    if current_setting('transaction_isolation') not in ('repeatable read', 'serializable') then
        raise exception 'create_snapshot needs a REPEATABLE READ transaction (begin isolation level repeatable read)'
            using errcode = '25000';
    end if;
    if coalesce(btrim(name), '') = '' or char_length(btrim(name)) > 200 then
        raise exception 'snapshot name must be 1 to 200 characters' using errcode = '22023';
    end if;
    if exists (select from vera.snapshots s where s.group_id = create_snapshot.group_id and s.name = btrim(create_snapshot.name)) then
        raise exception 'group % already has a snapshot named %', create_snapshot.group_id, btrim(name)
            using errcode = '23505';
    end if;
    select p.personal_group_id into personal from vera.principals p where p.principal_id = caller;
    select g.embedding_model, g.embedding_dim into pinned from vera.groups g where g.group_id = create_snapshot.group_id;
    weights := vera.active_weights(create_snapshot.group_id);

    insert into vera.snapshots as s (group_id, name, embedding_model, embedding_dim, search_version, weight_set_id,
                                     weights, created_at, created_by)
    values (create_snapshot.group_id, btrim(name), pinned.embedding_model, pinned.embedding_dim, vera.search_version(),
            (weights ->> 'weight_set_id')::uuid, weights - 'weight_set_id', reference, caller)
    returning s.snapshot_id into snapshot;

    -- the same visibility rules and the same blend inputs as a live search
    with visible as (
        select 'fact'::vera.item_kind as kind, f.fact_id as item_id
          from vera.facts f
         where f.group_id = create_snapshot.group_id
           and vera.fact_visible(f.lifecycle, f.group_id, f.retired_at, f.valid_from, f.valid_to, reference, personal)
        union all
        select 'passage', c.chunk_id
          from vera.chunks c
          join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
         where c.group_id = create_snapshot.group_id
           and e.status <> 'retracted' and e.observed_at <= reference
           and not exists (select from vera.episodes newer
                            where newer.group_id = e.group_id and newer.source_id = e.source_id
                              and newer.external_id = e.external_id and newer.version > e.version
                              and newer.observed_at <= reference and newer.status <> 'retracted')
    ), signals as (
        select i.*
          from vera.candidate_signals(
                   (select array_agg(v.kind) from visible v), (select array_agg(v.item_id) from visible v),
                   (select array_agg(create_snapshot.group_id) from visible v),
                   (select array_agg(0::float8) from visible v)) i
    ), details as (
        select d.*
          from vera.hit_details((select array_agg(v.kind) from visible v), (select array_agg(v.item_id) from visible v),
                                (select array_agg(create_snapshot.group_id) from visible v)) d
    ), inputs as (
        select s.kind, s.item_id, s.group_id, d.text, d.subject, d.predicate, d.object, s.authority,
               s.verification, s.confidence, s.valid_from, s.valid_to, s.up_votes, s.down_votes, d.citation
          from signals s join details d on d.kind = s.kind and d.item_id = s.item_id
    )
    insert into vera.snapshot_items (group_id, snapshot_id, item_kind, item_id, text, tsv, embedding, subject, predicate,
                                     object, tier, authority, verification, confidence, valid_from, valid_to,
                                     recorded_at, source_id, episode_id, chunk_id, up_votes, down_votes, citation)
    select create_snapshot.group_id, snapshot, i.kind, i.item_id, i.text, coalesce(f.tsv, c.tsv),
           coalesce(f.embedding, c.embedding), i.subject, i.predicate, i.object, (i.citation ->> 'tier')::smallint,
           i.authority, i.verification, i.confidence, i.valid_from, i.valid_to,
           coalesce(f.recorded_at, c.created_at),
           (i.citation -> 'source' ->> 'source_id')::uuid, (i.citation -> 'episode' ->> 'episode_id')::uuid,
           (i.citation -> 'chunk' ->> 'chunk_id')::uuid, i.up_votes, i.down_votes, i.citation
      from inputs i
      left join vera.facts f on i.kind = 'fact' and f.group_id = i.group_id and f.fact_id = i.item_id
      left join vera.chunks c on i.kind = 'passage' and c.group_id = i.group_id and c.chunk_id = i.item_id;
    get diagnostics copied = row_count;

    update vera.snapshots s set sealed_at = clock_timestamp()
     where s.group_id = create_snapshot.group_id and s.snapshot_id = snapshot;
    perform vera.audit(create_snapshot.group_id, 'snapshot.create', 'snapshot', snapshot::text,
                       jsonb_build_object('name', btrim(name), 'items', copied));
    snapshot_id := snapshot;
    item_count := copied;
    created_at := reference;
    return next;
end
$$;
comment on function vera.create_snapshot(text, text) is
    'Freezes a group''s retrieval inputs with their pins (model, dimension, search version, weights)';

-- Contract: a group's snapshots, newest first.
create or replace function vera.list_snapshots(group_id text)
returns table (snapshot_id uuid, name text, created_at timestamptz, sealed boolean, item_count integer,
               embedding_model text, embedding_dim integer, search_version text, weights jsonb)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(list_snapshots.group_id, 'viewer');
    return query
        select s.snapshot_id, s.name, s.created_at, s.sealed_at is not null,
               (select count(*)::integer from vera.snapshot_items i
                 where i.group_id = s.group_id and i.snapshot_id = s.snapshot_id),
               s.embedding_model, s.embedding_dim, s.search_version, s.weights
          from vera.snapshots s
         where s.group_id = list_snapshots.group_id
         order by s.created_at desc, s.name;
end
$$;
comment on function vera.list_snapshots(text) is 'A group''s snapshots with their pins, newest first';

-- Contract: deletes a snapshot and its copies (members of the group).
create or replace function vera.drop_snapshot(group_id text, name text)
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    dropped uuid;
begin
    perform vera.require_role(drop_snapshot.group_id, 'member');
    delete from vera.snapshots s where s.group_id = drop_snapshot.group_id and s.name = btrim(drop_snapshot.name)
    returning s.snapshot_id into dropped;
    if dropped is null then
        raise exception 'group % has no snapshot named %', drop_snapshot.group_id, name using errcode = 'VN001';
    end if;
    perform vera.audit(drop_snapshot.group_id, 'snapshot.drop', 'snapshot', dropped::text,
                       jsonb_build_object('name', btrim(name)));
end
$$;
comment on function vera.drop_snapshot(text, text) is 'Deletes a snapshot and its copied items';

-- Internal: stage 1 over a snapshot's copies: the lexical half through the
-- copies' GIN index, the vector half by exact cosine distance (snapshots
-- are read rarely and carry no HNSW index). Like vera.search_candidates it
-- belongs to vera_searcher and checks the group itself.
create or replace function vera.snapshot_candidates(
    group_id text, snapshot_id uuid, lexical tsquery, query_embedding public.vector, n integer)
returns table (kind vera.item_kind, item_id uuid, lexical_rank integer, vector_rank integer)
language plpgsql stable security definer
set search_path = vera, public, pg_temp
as $$
begin
    if not snapshot_candidates.group_id = any (vera.readable_groups()) then
        raise exception 'permission denied: cannot read group %', snapshot_candidates.group_id using errcode = '42501';
    end if;
    return query
        with lexical_list as (
            select i.item_kind, i.item_id,
                   (rank() over (order by ts_rank(i.tsv, lexical) desc))::integer as position
              from vera.snapshot_items i
             where lexical is not null and i.tsv @@ lexical
               and i.group_id = snapshot_candidates.group_id and i.snapshot_id = snapshot_candidates.snapshot_id
             order by ts_rank(i.tsv, lexical) desc, i.item_id
             limit n),
        vector_list as (
            select i.item_kind, i.item_id,
                   (rank() over (order by i.embedding <=> query_embedding))::integer as position
              from vera.snapshot_items i
             where query_embedding is not null and public.vector_dims(i.embedding) = public.vector_dims(query_embedding)
               and i.group_id = snapshot_candidates.group_id and i.snapshot_id = snapshot_candidates.snapshot_id
             order by i.embedding <=> query_embedding, i.item_id
             limit n)
        select coalesce(l.item_kind, v.item_kind), coalesce(l.item_id, v.item_id), l.position, v.position
          from lexical_list l
          full join vector_list v on v.item_kind = l.item_kind and v.item_id = l.item_id;
end
$$;
comment on function vera.snapshot_candidates(text, uuid, tsquery, public.vector, integer) is
    'Internal: stage 1 over a snapshot''s copies (reads past RLS, checks the group itself)';
alter function vera.snapshot_candidates(text, uuid, tsquery, public.vector, integer) owner to vera_searcher;

-- Contract: searches a snapshot: the same stages as vera.search, over the
-- copies, with the snapshot's weights and its creation instant as "now", so
-- it answers what search answered when the snapshot was taken. Fails
-- closed: VS002 for a snapshot that was never sealed, VS001 when the
-- search version or the group's embedding pin has changed since.
create or replace function vera.search_snapshot(
    snapshot_group text,
    snapshot text,
    query text default null,
    query_embedding public.vector default null,
    k integer default 10,
    k_rrf integer default 1,
    candidates integer default null,
    embedding_model text default null,
    lexical_weight double precision default 1,
    vector_weight double precision default 1)
returns table (
    rank integer, kind vera.item_kind, item_id uuid, group_id text, text text,
    subject text, predicate text, object text, score real,
    relevance real, authority real, verification real, recency real, feedback real, confidence real,
    citation jsonb)
language plpgsql stable security definer
set search_path = vera, public, pg_temp
as $$
declare
    frozen vera.snapshots;
    current_pin record;
    n integer;
    lexical tsquery;
    items vera.search_item[];
begin
    perform vera.require_role(search_snapshot.snapshot_group, 'viewer');
    n := vera.check_search_arguments(query, query_embedding, k, null, k_rrf, candidates,
                                     lexical_weight, vector_weight, null);
    select * into frozen from vera.snapshots s
     where s.group_id = search_snapshot.snapshot_group and s.name = btrim(search_snapshot.snapshot);
    if not found then
        raise exception 'group % has no snapshot named %', search_snapshot.snapshot_group, snapshot using errcode = 'VN001';
    end if;
    if frozen.sealed_at is null then
        raise exception 'snapshot % is not sealed: its copy never completed; create it again', frozen.name
            using errcode = 'VS002';
    end if;
    if frozen.search_version <> vera.search_version() then
        raise exception 'snapshot % was taken with search version %, this database runs %: its answers cannot be reproduced',
            frozen.name, frozen.search_version, vera.search_version() using errcode = 'VS001';
    end if;
    select g.embedding_model, g.embedding_dim into current_pin from vera.groups g where g.group_id = frozen.group_id;
    if frozen.embedding_model is not null
       and (current_pin.embedding_model is distinct from frozen.embedding_model
            or current_pin.embedding_dim is distinct from frozen.embedding_dim) then
        raise exception 'snapshot % was taken with embedding model % (% dimensions); the group now uses % (% dimensions)',
            frozen.name, frozen.embedding_model, frozen.embedding_dim,
            coalesce(current_pin.embedding_model, 'none'), coalesce(current_pin.embedding_dim::text, '-')
            using errcode = 'VS001';
    end if;
    if query_embedding is not null and frozen.embedding_dim is not null
       and (public.vector_dims(query_embedding) <> frozen.embedding_dim
            or (embedding_model is not null and embedding_model <> frozen.embedding_model)) then
        raise exception 'query embedding is % (% dimensions), but snapshot % is pinned to % (% dimensions)',
            coalesce(embedding_model, 'of no named model'), public.vector_dims(query_embedding), frozen.name,
            frozen.embedding_model, frozen.embedding_dim using errcode = 'VE001';
    end if;
    lexical := vera.lexical_query(query);

    items := array(
        select row(i.item_kind, i.item_id, i.group_id,
                   coalesce(lexical_weight / (k_rrf + c.lexical_rank)::float8, 0)
                   + coalesce(vector_weight / (k_rrf + c.vector_rank)::float8, 0),
                   i.text, i.subject, i.predicate, i.object, i.authority, i.verification, i.confidence,
                   i.valid_from, i.valid_to, i.up_votes, i.down_votes, i.citation)::vera.search_item
          from vera.snapshot_candidates(frozen.group_id, frozen.snapshot_id, lexical,
                                        case when frozen.embedding_dim is not null then query_embedding end, n) c
          join vera.snapshot_items i
            on i.group_id = frozen.group_id and i.snapshot_id = frozen.snapshot_id
           and i.item_kind = c.kind and i.item_id = c.item_id);
    return query select * from vera.blend(items, jsonb_build_object('*', frozen.weights), frozen.created_at, k);
end
$$;
comment on function vera.search_snapshot(text, text, text, public.vector, integer, integer, integer, text,
                                         double precision, double precision) is
    'Searches a sealed snapshot with its pinned weights and instant; fails closed on changed pins (VS001/VS002)';

reset role;

-- ---- sql/rls/010_policies.sql
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

-- Readers vote too: a feedback row needs only read access to its hit's
-- group, and each principal writes only its own votes.
drop policy if exists insert_own_groups on vera.feedback;
drop policy if exists update_own_groups on vera.feedback;
drop policy if exists insert_own_votes on vera.feedback;
drop policy if exists update_own_votes on vera.feedback;
create policy insert_own_votes on vera.feedback for insert
    with check (group_id = any ((select vera.readable_groups())::text[])
                and principal_id = (select vera.current_principal()));
create policy update_own_votes on vera.feedback for update
    using (group_id = any ((select vera.readable_groups())::text[])
           and principal_id = (select vera.current_principal()))
    with check (group_id = any ((select vera.readable_groups())::text[])
                and principal_id = (select vera.current_principal()));

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

-- ---- sql/rls/020_grants.sql
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
    vera.complete_cleanup(bigint),
    vera.search_version(),
    vera.default_weights(),
    vera.active_weights(text),
    vera.lexical_query(text),
    vera.search(text, public.vector, integer, timestamptz, text[], jsonb, integer, integer, text, double precision,
                double precision, integer),
    vera.record_feedback(vera.item_kind, uuid, text, text, public.vector, timestamptz, text[], text),
    vera.calibrate_weights(text, integer),
    vera.reset_weights(text),
    vera.create_snapshot(text, text),
    vera.list_snapshots(text),
    vera.drop_snapshot(text, text),
    vera.search_snapshot(text, text, text, public.vector, integer, integer, integer, text, double precision,
                         double precision)
    to vera_app, vera_worker, vera_gateway;

grant execute on function vera.authenticate_principal(uuid) to vera_gateway, vera_worker;

-- the trigram probe's owner reads aliases past RLS (and checks the group itself)
grant select on vera.entity_aliases, vera.entities to vera_resolver;
grant execute on function vera.similar_aliases(integer[], text[], text[], float8[]) to vera_owner;

-- the candidate stage's owner reads past RLS (and checks the groups itself)
grant select on vera.facts, vera.chunks, vera.episodes, vera.snapshot_items to vera_searcher;
grant execute on function vera.fact_visible(vera.fact_lifecycle, text, timestamptz, timestamptz, timestamptz,
                                            timestamptz, text)
    to vera_searcher;
grant execute on function vera.group_vector_index_name(text, text, integer),
    vera.group_vector_index_ready(text, text, integer)
    to vera_searcher;
grant execute on function
    vera.search_candidates(text[], tsquery, text[], public.vector, timestamptz, text, integer, integer),
    vera.snapshot_candidates(text, uuid, tsquery, public.vector, integer)
    to vera_owner;

grant execute on function vera.create_tenant(text, text, text) to vera_operator;
grant execute on function vera.missing_vector_indexes(integer) to vera_operator;

reset role;

