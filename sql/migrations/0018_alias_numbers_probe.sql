-- 0018_alias_numbers_probe: entity resolution's trigram rung, for a name
-- with digits, reads only the group's aliases with the same numbers
-- (issue 32).
--
-- The rung links a name to an alias only when both carry the same number
-- sequence (db-1 and db-2 stay apart). For names that differ in their
-- numbers alone (page 1234 and page 1235, OPS-17 and OPS-18, a connector's
-- identifiers) the trigram index could not know that: most trigrams match,
-- so every probe rechecked hundreds of near siblings and compared them
-- (about 2.5 ms a name at 3,000 "Confluence page N" aliases, 435 rechecks
-- each). This index finds the aliases with the name's numbers directly;
-- vera.similar_aliases asks it for a name with digits, the trigram index
-- for any other. Partial: only aliases with digits are in it. The group
-- compares under "C", as in the trigram index, so that only the probe's
-- condition matches it.
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.

set role vera_owner;

create index entity_aliases_group_numbers_idx on vera.entity_aliases
    (group_id collate "C", regexp_replace(alias_norm, '[^0-9]+', ' ', 'g'))
    where alias_norm ~ '[0-9]';

reset role;
