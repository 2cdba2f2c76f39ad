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

reset role;
