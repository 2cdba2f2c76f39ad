-- Time scopes: the periods a passage states, sent by the caller as JSON
-- ([[start, end], ...]: ISO dates or timestamps, null where a range is open;
-- a date is midnight UTC) and stored as a tstzmultirange (vera.chunks).
-- VERA's reader (vera_client/domain/time_scopes.py) reads them at ingestion.
set role vera_owner;

-- Internal: one end of a range; what names the value in an error.
create or replace function vera.time_scope_bound(value jsonb, what text)
returns timestamptz
language plpgsql stable
set search_path = vera, pg_temp
as $$
begin
    if value is null or jsonb_typeof(value) = 'null' then
        return null;
    end if;
    if jsonb_typeof(value) <> 'string' then
        raise exception '%: an end must be an ISO date or timestamp, or null where open', what
            using errcode = '22023';
    end if;
    begin
        if (value #>> '{}') ~ '^\d{4}-\d{2}-\d{2}$' then
            return (value #>> '{}')::date::timestamp at time zone 'UTC';
        end if;
        return (value #>> '{}')::timestamptz;
    exception when datetime_field_overflow or invalid_datetime_format then
        raise exception '%: % is not an ISO date or timestamp', what, vera.shown(value #>> '{}')
            using errcode = '22007';
    end;
end
$$;
comment on function vera.time_scope_bound(jsonb, text) is 'Internal: one end of a time scope''s range';

-- Internal: a time scope from its JSON form (null stays null: not read);
-- what names it in errors (22023 malformed, 22007 not a date, 54000 too many
-- ranges). Ranges may overlap: the multirange merges them.
create or replace function vera.as_time_scope(scope jsonb, what text)
returns tstzmultirange
language plpgsql stable
set search_path = vera, pg_temp
as $$
declare
    result tstzmultirange := '{}';
    pair jsonb;
    position integer := 0;
    lower_end timestamptz;
    upper_end timestamptz;
begin
    if scope is null or jsonb_typeof(scope) = 'null' then
        return null;
    end if;
    if jsonb_typeof(scope) <> 'array' then
        raise exception '%: time_scope must be a JSON array of [start, end] pairs', what using errcode = '22023';
    end if;
    if jsonb_array_length(scope) > 1000 then
        raise exception '%: at most 1000 ranges in a time_scope, got %', what, jsonb_array_length(scope)
            using errcode = '54000';
    end if;
    for pair in select e from jsonb_array_elements(scope) e loop
        if jsonb_typeof(pair) <> 'array' or jsonb_array_length(pair) <> 2 then
            raise exception '%: time_scope range % must be a [start, end] pair', what, position using errcode = '22023';
        end if;
        lower_end := vera.time_scope_bound(pair -> 0, format('%s: time_scope range %s', what, position));
        upper_end := vera.time_scope_bound(pair -> 1, format('%s: time_scope range %s', what, position));
        if lower_end >= upper_end then
            raise exception '%: time_scope range % ends before it starts', what, position using errcode = '22023';
        end if;
        result := result + tstzmultirange(tstzrange(lower_end, upper_end, '[)'));
        position := position + 1;
    end loop;
    return result;
end
$$;
comment on function vera.as_time_scope(jsonb, text) is 'Internal: a time scope from [[start, end], ...] JSON';

-- Contract: for `vera reprocess --time-scopes`: the passages of a group
-- whose time scope VERA's reader has not read, or read with a version older
-- than reader_version (a scope stated by the caller or by front matter,
-- version 0, is never listed), in chunk id order after after_chunk, at most
-- max_rows (1..1000). Admins of the group only (42501): the list holds the
-- text of every passage, proposals and text awaiting review included.
create or replace function vera.passages_to_time_scope(
    group_id text, reader_version integer, after_chunk uuid default null, max_rows integer default 500
)
returns table (chunk_id uuid, heading text, text text)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(passages_to_time_scope.group_id, 'admin');
    perform vera.check_max_rows(max_rows);
    if reader_version is null or reader_version not between 1 and 32767 then
        raise exception 'reader_version must be between 1 and 32767' using errcode = '22023';
    end if;
    return query
    select c.chunk_id, c.heading, c.text
      from vera.chunks c
     where c.group_id = passages_to_time_scope.group_id
       and (c.time_scope_version is null or c.time_scope_version between 1 and reader_version - 1)
       and (after_chunk is null or c.chunk_id > after_chunk)
     order by c.chunk_id
     limit max_rows;
end
$$;
comment on function vera.passages_to_time_scope(text, integer, uuid, integer) is
    'Passages whose time scope was not read, or read by an older reader (vera reprocess --time-scopes)';
-- an admin's operation, done by the caller's own client (no model, no worker)
grant execute on function vera.passages_to_time_scope(text, integer, uuid, integer) to vera_app, vera_gateway;

-- Contract: records time scopes read again: a JSON array of {"chunk_id",
-- "time_scope": [[start, end], ...], "time_scope_version": n >= 1}, at
-- most 1000. Admins of the group only (42501); a chunk id that is not a
-- passage of the group is VN001, and nothing is written. Returns how many
-- passages were updated.
create or replace function vera.set_time_scopes(group_id text, scopes jsonb)
returns integer
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    updated integer;
    wanted integer;
begin
    perform vera.require_role(set_time_scopes.group_id, 'admin');
    if jsonb_typeof(scopes) is distinct from 'array' then
        raise exception 'scopes must be a JSON array of {chunk_id, time_scope, time_scope_version}'
            using errcode = '22023';
    end if;
    if jsonb_array_length(scopes) > 1000 then
        raise exception 'at most 1000 time scopes per call, got %', jsonb_array_length(scopes) using errcode = '54000';
    end if;
    if exists (select from jsonb_array_elements(scopes) e
                where jsonb_typeof(e) <> 'object'
                   or coalesce(e ->> 'chunk_id', '') !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                   or coalesce(e ->> 'time_scope_version', '') !~ '^[0-9]{1,4}$'
                   or (e ->> 'time_scope_version')::integer < 1
                   or coalesce(jsonb_typeof(e -> 'time_scope'), 'null') = 'null') then
        raise exception 'each item needs a chunk_id (a uuid), a time_scope and a time_scope_version of 1 or more'
            using errcode = '22023';
    end if;
    select count(distinct (e ->> 'chunk_id')::uuid) into wanted from jsonb_array_elements(scopes) e;
    update vera.chunks c
       set time_scope = vera.as_time_scope(e.item -> 'time_scope', format('chunk %s', e.item ->> 'chunk_id')),
           time_scope_version = (e.item ->> 'time_scope_version')::smallint
      from jsonb_array_elements(scopes) as e(item)
     where c.group_id = set_time_scopes.group_id
       and c.chunk_id = (e.item ->> 'chunk_id')::uuid;
    get diagnostics updated = row_count;
    if updated <> wanted then
        raise exception '% of % chunk ids are not passages of group %',
            wanted - updated, wanted, vera.shown(set_time_scopes.group_id) using errcode = 'VN001';
    end if;
    return updated;
end
$$;
comment on function vera.set_time_scopes(text, jsonb) is
    'Records time scopes read again by VERA''s reader (vera reprocess --time-scopes)';
grant execute on function vera.set_time_scopes(text, jsonb) to vera_app, vera_gateway;

reset role;
