-- Ingestion: sources, episodes (versions of a source record) and chunks.
set role vera_owner;

-- Contract: registers (or updates, by name) a source in a group the caller
-- administers: its trust tier decides how its claims are published, so only
-- admins set it. A config with a "root" (a folder source) must name an
-- absolute path at or below one of the organisation's source roots, which
-- operators set (vera.add_source_root; VR001 otherwise). A config's
-- "requests_per_second" (a connector's request rate) is a number from 0.1 to
-- 1,000 (22023 otherwise). Returns the source id.
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
    perform vera.check_length(register_source.uri, 'uri', 2000);
    if register_source.trust_tier is null or register_source.trust_tier not between 1 and 4 then
        raise exception 'trust_tier must be 1 (authoritative), 2 (curated), 3 (informational) or 4 (unverified), not %',
            coalesce(register_source.trust_tier::text, 'null') using errcode = '22023';
    end if;
    if register_source.kind is null or register_source.kind !~ '^[a-z][a-z0-9_]{0,39}$' then
        raise exception 'source kind must be a lower-case identifier (markdown, jira, ...), not %',
            coalesce(vera.shown(register_source.kind), 'null') using errcode = '22023';
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
    -- a connector's settings, not a place for data (it is read on every run)
    if pg_catalog.octet_length(register_source.config::text) > 65536 then
        raise exception 'config is over 65,536 bytes' using errcode = '22001';
    end if;
    -- a connector's token bucket (requests_per_second): a rate its worker can keep
    if register_source.config ? 'requests_per_second'
       and (jsonb_typeof(register_source.config -> 'requests_per_second') <> 'number'
            or (register_source.config ->> 'requests_per_second')::numeric not between 0.1 and 1000) then
        raise exception 'config requests_per_second must be a number from 0.1 to 1,000 (requests a second), not %',
            vera.shown((register_source.config -> 'requests_per_second')::text, 40) using errcode = '22023';
    end if;
    -- a folder source's root lies within its organisation's folders (VR001)
    perform vera.check_source_root(register_source.group_id, register_source.config);
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
grant execute on function vera.register_source(text, text, text, integer, text, jsonb, text)
    to vera_app, vera_worker, vera_gateway;

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
        raise exception 'unknown source % in group %', target_source, vera.shown(target_group) using errcode = 'VN001';
    end if;
    return found_source;
end
$$;
comment on function vera.visible_source(text, uuid) is 'Internal: a visible source or VN001';

-- Contract: records one version of a source record. Unchanged content (same
-- SHA-256 as the latest version, unless that version was retracted) is a
-- no-op that returns the existing episode; changed content becomes the next
-- version. Members and above.
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
    if coalesce(btrim(record_episode.external_id), '') = '' or char_length(record_episode.external_id) > 2000 then
        raise exception 'external_id must be 1 to 2000 characters, not blank' using errcode = '22023';
    end if;
    if not vera.is_world_time(record_episode.observed_at) or record_episode.observed_at > now() + interval '100 years' then
        raise exception 'observed_at must be a finite time (from 4714 BC) at most 100 years ahead, got %',
            record_episode.observed_at using errcode = '22023';
    end if;
    perform vera.check_length(record_episode.uri, 'uri', 2000);
    perform vera.check_length(record_episode.title, 'title', 2000);
    perform vera.check_length(record_episode.object_key, 'object_key', 2000);
    perform vera.check_length(record_episode.mime, 'mime', 200);
    if record_episode.content_sha256 is null or octet_length(record_episode.content_sha256) <> 32 then
        raise exception 'content_sha256 must be the 32-byte SHA-256 of the record''s content' using errcode = '22023';
    end if;
    -- one writer per record at a time, so two ingesters cannot both create version n+1
    -- (READ COMMITTED: the select below must see the version the last holder committed)
    perform vera.require_read_committed();
    perform pg_advisory_xact_lock(hashtextextended(
        record_episode.group_id || '/' || record_episode.source_id || '/' || record_episode.external_id, 0));
    select e.episode_id, e.version, e.content_sha256, e.status into latest from vera.episodes e
     where e.group_id = record_episode.group_id and e.source_id = record_episode.source_id
       and e.external_id = record_episode.external_id
     order by e.version desc limit 1;
    -- a retracted record that comes back (a deleted file restored) is a new version, even unchanged
    if found and latest.content_sha256 = record_episode.content_sha256 and latest.status <> 'retracted' then
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
grant execute on function vera.record_episode(text, uuid, text, bytea, text, text, timestamptz, text, text)
    to vera_app, vera_worker, vera_gateway;

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
        raise exception 'unknown episode % in group %', target_episode, vera.shown(target_group) using errcode = 'VN001';
    end if;
    if found_episode.status = 'retracted' then
        raise exception 'episode % was retracted', target_episode using errcode = '22023';
    end if;
    return found_episode;
end
$$;
comment on function vera.visible_episode(text, uuid) is 'Internal: a visible, live episode or VN001';

-- Contract: stores an episode's chunks, in order: a JSON array of
-- {"text", "heading"?, "char_start"?, "char_end"?, "embedding"?: [numbers],
-- "time_scope"?: [[start, end], ...], "time_scope_version"?: n}. A time scope
-- is the periods the passage states (ISO dates or timestamps, null where a
-- range is open; [] when it states none); the version is that of VERA's
-- reader that read it, 0 (the default) for a scope the caller states itself.
-- Ordinals are array positions from 0; storing again updates in place (the
-- same text and heading keep their grading and review; new text is graded
-- afresh). Vectors need embedding_model and must match the group's pin.
-- Grading, the contamination guard as for claims: text of a tier 1-2 source
-- is published (verification auto); of a tier-3 source it waits for review
-- (pending_review); of a tier-4 source it is a proposal of the caller,
-- which only the caller searches until an admin approves it
-- (vera.pending_passages, vera.review_passage). In a u: scope everything
-- is published; tier 3-4 text is verification pending wherever it lands.
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
    episode vera.episodes;
    tier integer;
    graded vera.fact_lifecycle;
begin
    perform vera.require_role(store_chunks.group_id, 'member');
    episode := vera.visible_episode(store_chunks.group_id, store_chunks.episode_id);
    select s.trust_tier into tier from vera.sources s
     where s.group_id = episode.group_id and s.source_id = episode.source_id;
    graded := case
        when (select g.kind from vera.groups g where g.group_id = store_chunks.group_id) = 'personal' then 'published'
        when tier <= 2 then 'published'
        when tier = 3 then 'pending_review'
        else 'proposal' end;
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
               when char_length(c ->> 'heading') > 2000 then 'heading is over 2000 characters'
               when coalesce(jsonb_typeof(c -> 'char_start'), 'number') not in ('number', 'null')
                    or coalesce(jsonb_typeof(c -> 'char_end'), 'number') not in ('number', 'null')
                    or (c ->> 'char_start') !~ '^[0-9]{1,9}$' or (c ->> 'char_end') !~ '^[0-9]{1,9}$'
                   then 'char_start and char_end must be whole numbers'
               when (c ->> 'char_end')::integer < (c ->> 'char_start')::integer then 'char_end is before char_start'
               when coalesce(jsonb_typeof(c -> 'time_scope_version'), 'null') <> 'null'
                    and (coalesce(jsonb_typeof(c -> 'time_scope'), 'null') = 'null'
                         or (c ->> 'time_scope_version') !~ '^[0-9]{1,4}$')
                   then 'time_scope_version must be a whole number, beside a time_scope'
           end as reason) checks
     where reason is not null
     order by i limit 1;
    if problem is not null then
        raise exception '%', problem
            using errcode = case when problem like '% is over % characters' then '22001' else '22023' end;
    end if;
    select * into vectors from vera.parse_vectors(
        (select jsonb_agg(coalesce(c -> 'embedding', 'null') order by i)
           from jsonb_array_elements(store_chunks.chunks) with ordinality as a(c, i)), 'chunk');
    if vectors.dim is not null then
        perform vera.pin_embedding(store_chunks.group_id, store_chunks.embedding_model, vectors.dim);
    end if;
    return query
    insert into vera.chunks as ch (group_id, episode_id, ordinal, heading, text, char_start, char_end, embedding,
                                   lifecycle, verification, proposed_by, proposed, time_scope, time_scope_version)
    select store_chunks.group_id, store_chunks.episode_id, (a.i - 1)::integer, a.c ->> 'heading', a.c ->> 'text',
           (a.c ->> 'char_start')::integer, (a.c ->> 'char_end')::integer, v.vector,
           graded, case when tier <= 2 then 'auto' else 'pending' end::vera.verification,
           vera.current_principal(), graded = 'proposal',
           t.scope,
           -- a scope without a version is the caller's own statement (0): `vera reprocess
           -- --time-scopes` reads again only what an older version of VERA's reader read
           case when t.scope is not null then coalesce((a.c ->> 'time_scope_version')::smallint, 0) end
      from jsonb_array_elements(store_chunks.chunks) with ordinality as a(c, i)
     cross join lateral (select vera.as_time_scope(a.c -> 'time_scope', format('chunk %s', a.i - 1)) as scope) t
      -- joined by position: subscripting the array once per row would be quadratic
      left join unnest(vectors.parsed) with ordinality as v(vector, i) on v.i = a.i
    on conflict on constraint chunks_ordinal_unique do update
        set heading = excluded.heading, text = excluded.text, char_start = excluded.char_start,
            char_end = excluded.char_end, embedding = excluded.embedding,
            time_scope = excluded.time_scope, time_scope_version = excluded.time_scope_version,
            -- what a reviewer decided holds for the text they read, not for another
            (lifecycle, verification, proposed_by, proposed, reviewed_by, reviewed_at) = (
                select case when unchanged then ch.lifecycle else excluded.lifecycle end,
                       case when unchanged then ch.verification else excluded.verification end,
                       case when unchanged then ch.proposed_by else excluded.proposed_by end,
                       case when unchanged then ch.proposed else excluded.proposed end,
                       case when unchanged then ch.reviewed_by end,
                       case when unchanged then ch.reviewed_at end
                  from (select ch.text = excluded.text
                               and ch.heading is not distinct from excluded.heading as unchanged) same)
    returning ch.ordinal, ch.chunk_id;
end
$$;
comment on function vera.store_chunks(text, uuid, jsonb, text) is
    'Stores an episode''s ordered chunks (text, heading, span, optional embedding and time scope)';
grant execute on function vera.store_chunks(text, uuid, jsonb, text) to vera_app, vera_worker, vera_gateway;

reset role;
