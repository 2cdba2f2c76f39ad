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
grant execute on function vera.normalize_name(text) to vera_app, vera_worker, vera_gateway;

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
grant execute on function vera.normalize_predicate(text) to vera_app, vera_worker, vera_gateway;

reset role;
