-- 0009_snapshot_pins: a snapshot also pins the group's ontology (predicates
-- and cardinalities), its policy (grading rules, tier authorities, the
-- settings that decide what a write stores) and the context assembler's
-- version (sql/functions/198_snapshot_pins.sql), and list_snapshots shows
-- every pin and which no longer hold. Snapshots taken before have no pins
-- to compare: they fail closed (VS001) until taken again. list_snapshots'
-- row changes, which create or replace refuses: it goes here, and
-- sql/functions/ creates it again, with its grant, in the same transaction.
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.
set role vera_owner;

alter table vera.snapshots add column pins jsonb;

drop function if exists vera.list_snapshots(text);

reset role;
