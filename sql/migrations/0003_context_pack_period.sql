-- 0003_context_pack_period: a context pack keeps the period its search asked
-- about (issue 16: the `during` a caller passed, or the one its query's words
-- state) in its request, so that reading the pack again shows it and a vote
-- on one of its items is recorded as on that search. vera.store_context_pack
-- takes `during`; the signature without it goes (sql/functions/ creates the
-- new one). Packs stored before have no period in their request: read as none.
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.
set role vera_owner;

drop function if exists vera.store_context_pack(text, integer, jsonb, timestamptz, text[], double precision, integer,
                                                jsonb, text, jsonb, jsonb, jsonb);

reset role;
