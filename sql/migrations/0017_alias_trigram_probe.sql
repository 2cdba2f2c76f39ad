-- 0017_alias_trigram_probe: entity resolution's trigram rung reads only the
-- trigram postings of the probed name within its group, whatever the
-- group's size (issue 32).
--
-- vera.similar_aliases asked for `a.group_id = $1 and a.alias_norm % $2`.
-- The btree indexes (entity_aliases_norm_idx, the primary key) serve the
-- group equality too, and the planner costs the % filter at a fraction of
-- its price (about 33 us a comparison for a 15-word name), so it preferred
-- a bitmap scan of the whole group through a btree and compared the name
-- with every alias: ~40 ms a name at 1,000 aliases, quadratic over a first
-- ingest of distinct long names (Confluence page titles). And the GIN
-- index's pending list (fastupdate) held a bulk load's new aliases
-- unindexed, read in full by every probe.
--
-- The trigram index's group column now compares under the "C" collation,
-- which only the probe asks for (`group_id = $1 collate "C"`): no btree
-- index matches that condition, so the probe's only index path is this
-- GIN index with both the group and the trigrams as its condition. Group
-- ids are ASCII and every collation involved is deterministic, so the
-- equality is the same equality. fastupdate is off: an alias is in the
-- index once inserted, never in a list every probe reads.
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.

set role vera_owner;

drop index if exists vera.entity_aliases_group_trgm_idx;
create index entity_aliases_group_trgm_idx on vera.entity_aliases
    using gin (group_id collate "C", alias_norm gin_trgm_ops) with (fastupdate = off);

reset role;
