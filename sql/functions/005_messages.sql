-- Error messages: a value the caller passed is shown cut short, so a huge
-- argument never makes a huge message (or a huge log line).
set role vera_owner;

-- The first 100 characters of a value for an error message, with an
-- ellipsis and the full length when it was longer; '(null)' for null.
create or replace function vera.shown(value text)
returns text
language sql immutable parallel safe
set search_path = vera, pg_temp
as $$
    select case
        when value is null then '(null)'
        when char_length(value) <= 100 then value
        else left(value, 100) || '… (' || char_length(value) || ' characters)'
    end
$$;
comment on function vera.shown(text) is
    'A caller''s value for an error message: at most 100 characters, then an ellipsis and the length';

grant execute on function vera.shown(text) to public;

reset role;
