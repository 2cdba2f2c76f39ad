-- Error messages: a value the caller passed is shown cut short, so a huge
-- argument never makes a huge message (or a huge log line).
set role vera_owner;

-- The first max_chars (100) characters of a value for an error message,
-- with an ellipsis and the full length when it was longer; null for null.
create or replace function vera.shown(value text, max_chars integer default 100)
returns text
language sql immutable strict parallel safe
set search_path = vera, pg_temp
as $$
    select case
        when char_length(value) <= max_chars then value
        else left(value, max_chars) || '… (' || char_length(value) || ' characters)'
    end
$$;
comment on function vera.shown(text, integer) is
    'A caller''s value for an error message: at most max_chars (100) characters, then an ellipsis and the length';

grant execute on function vera.shown(text, integer) to public;
-- by name too for the graph's readers, which run as vera_searcher (230_graph.sql)
grant execute on function vera.shown(text, integer) to vera_searcher;

-- Refuses a text over its documented limit with 22001, naming the argument.
create or replace function vera.check_length(value text, what text, max_chars integer)
returns void
language plpgsql immutable parallel safe
set search_path = vera, pg_temp
as $$
begin
    if char_length(value) > max_chars then
        raise exception '% is % characters; at most %', what, char_length(value), max_chars using errcode = '22001';
    end if;
end
$$;
comment on function vera.check_length(text, text, integer) is
    'Internal: refuses a text over its limit (22001)';

-- Refuses a row limit outside 1..at_most with 22023 (the reads of the MCP
-- tools: get_entity, explore, changes, conflicts, list_proposals).
create or replace function vera.check_max_rows(max_rows integer, at_most integer default 1000)
returns void
language plpgsql immutable parallel safe
set search_path = vera, pg_temp
as $$
begin
    if max_rows is null or max_rows not between 1 and at_most then
        raise exception 'max_rows must be between 1 and %, got %', at_most, coalesce(max_rows::text, 'null')
            using errcode = '22023';
    end if;
end
$$;
comment on function vera.check_max_rows(integer, integer) is
    'Internal: refuses a row limit outside 1..at_most (22023)';

-- Refuses an infinite as_of with 22023; null (now) passes.
create or replace function vera.check_as_of(as_of timestamptz)
returns void
language plpgsql immutable parallel safe
set search_path = vera, pg_temp
as $$
begin
    if as_of is not null and not isfinite(as_of) then
        raise exception 'as_of must be a finite time (null means now)' using errcode = '22023';
    end if;
end
$$;
comment on function vera.check_as_of(timestamptz) is 'Internal: refuses an infinite as_of (22023)';

-- Internal: whether t is a world time VERA stores (a claim's validity, an
-- episode's observation): any finite time PostgreSQL stores, from its
-- earliest (4714-11-24 BC) to before the year 10000. History is knowledge
-- too: the 1700 Cascadia earthquake, a museum open since 1797, 15 March 44
-- BC. A year of five digits is a typo or an overflow no source states, and
-- no client reads it (ISO 8601's years and Python's datetime stop at 9999);
-- infinities are no time at all. null (an open end) is null. Not declared
-- strict: the planner would fold a null call before the EXECUTE check
-- (120_entities.sql says the same of names_differ_trivially).
create or replace function vera.is_world_time(t timestamptz)
returns boolean
language sql immutable parallel safe
as $$
    select pg_catalog.isfinite(t) and t < '10000-01-01 00:00+00'::timestamptz
$$;
comment on function vera.is_world_time(timestamptz) is
    'Internal: a finite time before the year 10000 (from 4714 BC, PostgreSQL''s earliest)';

reset role;
