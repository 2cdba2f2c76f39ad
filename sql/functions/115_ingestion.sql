-- Ingestion by connectors: the worker reads a registered source (a folder of
-- Markdown, a CMDB export, ...) incrementally. What it has seen is the
-- source's cursor, kept beside the source so that a crash resumes where the
-- last committed file left off; a caller asks for a run by deferring a job
-- that carries its own principal, so the worker acts with the caller's rights.
set role vera_owner;

-- Contract: the sources of one group (or of every readable group), without
-- their cursors, with how many of their records are live in VERA.
create or replace function vera.list_sources(of_group text default null)
returns table (
    group_id text, source_id uuid, kind text, name text, uri text, trust_tier smallint,
    config jsonb, created_at timestamptz, retracted_at timestamptz, tracked_records integer
)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_principal();
    if list_sources.of_group is not null and vera.role_in(list_sources.of_group) is null then
        raise exception 'group % is not readable by the caller', vera.shown(list_sources.of_group) using errcode = '42501';
    end if;
    return query
    select s.group_id, s.source_id, s.kind, s.name, s.uri, s.trust_tier, s.config, s.created_at, s.retracted_at,
           vera.tracked_records(s.group_id, s.source_id)
      from vera.sources s
     where list_sources.of_group is null or s.group_id = list_sources.of_group
     order by s.group_id, s.name;
end
$$;
comment on function vera.list_sources(text) is 'The sources of a group (or of every readable group), by name';
grant execute on function vera.list_sources(text) to vera_app, vera_worker, vera_gateway;

-- Contract: a source's cursor: one entry per record key (a file's relative
-- path), as the connector wrote it ({} before the first run).
create or replace function vera.source_cursor(group_id text, source_id uuid)
returns jsonb
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_principal();
    return coalesce((vera.visible_source(source_cursor.group_id, source_cursor.source_id)).cursor, '{}');
end
$$;
comment on function vera.source_cursor(text, uuid) is 'A source''s incremental cursor; {} before the first run';
grant execute on function vera.source_cursor(text, uuid) to vera_app, vera_worker, vera_gateway;

-- Contract: merges changes into a source's cursor: a key with a JSON object
-- sets that record's entry, a key with null removes it. Members, so that the
-- change commits in the same transaction as the episode it describes.
create or replace function vera.advance_source_cursor(group_id text, source_id uuid, changes jsonb)
returns integer
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    tracked integer;
begin
    perform vera.require_role(advance_source_cursor.group_id, 'member');
    perform vera.visible_source(advance_source_cursor.group_id, advance_source_cursor.source_id);
    if jsonb_typeof(advance_source_cursor.changes) is distinct from 'object' then
        raise exception 'cursor changes must be a JSON object of record key -> entry or null' using errcode = '22023';
    end if;
    if exists (select from jsonb_each(advance_source_cursor.changes) c
                where jsonb_typeof(c.value) not in ('object', 'null') or char_length(c.key) not between 1 and 1000) then
        raise exception 'each cursor change is a record key (1-1000 characters) with an object or null'
            using errcode = '22023';
    end if;
    update vera.sources s
       set cursor = (coalesce(s.cursor, '{}')
                     || jsonb_strip_nulls(advance_source_cursor.changes))
                    - array(select c.key from jsonb_each(advance_source_cursor.changes) c
                             where jsonb_typeof(c.value) = 'null')
     where s.group_id = advance_source_cursor.group_id and s.source_id = advance_source_cursor.source_id
    returning (select count(*)::integer from jsonb_object_keys(s.cursor)) into tracked;
    return tracked;
end
$$;
comment on function vera.advance_source_cursor(text, uuid, jsonb) is
    'Merges per-record entries into a source''s cursor (null removes one); members';
grant execute on function vera.advance_source_cursor(text, uuid, jsonb) to vera_app, vera_worker, vera_gateway;

-- Contract: asks the worker to read a source (or one path below its root).
-- The job carries the caller's principal: the worker vouches for it, so the
-- run writes with the caller's rights (retracting deleted records needs an
-- admin). Members and above; returns the job id.
create or replace function vera.request_ingest(group_id text, source_id uuid, path text default null)
returns bigint
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    found_source vera.sources;
begin
    perform vera.require_role(request_ingest.group_id, 'member');
    found_source := vera.visible_source(request_ingest.group_id, request_ingest.source_id);
    if found_source.retracted_at is not null then
        raise exception 'source % was retracted: register it again to read it', found_source.name
            using errcode = '22023';
    end if;
    if request_ingest.path is not null
       and (char_length(request_ingest.path) > 1000 or request_ingest.path ~ '(^|/)[.][.](/|$)'
            or request_ingest.path ~ '^/') then
        raise exception 'path must be a relative path below the source''s root, without ..' using errcode = '22023';
    end if;
    return vera.enqueue_job('vera.ingest_source', jsonb_build_object(
        'group_id', request_ingest.group_id, 'source_id', request_ingest.source_id,
        'principal_id', vera.current_principal(), 'path', request_ingest.path));
end
$$;
comment on function vera.request_ingest(text, uuid, text) is
    'Defers an ingestion run of a source for the worker, on behalf of the caller; members';
grant execute on function vera.request_ingest(text, uuid, text) to vera_app, vera_worker, vera_gateway;

reset role;
