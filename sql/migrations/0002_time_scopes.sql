-- 0002_time_scopes: the time scope of a passage, the periods its text states
-- ("from 1811 to 1827", "tháng 3 năm 2020"), read without a model when it is
-- stored (vera_client/domain/time_scopes.py) or stated outright by its
-- record's front matter (valid_from/valid_to). Null: not read yet (a passage
-- stored before this migration, or by a caller that passed none: `vera
-- reprocess --time-scopes` reads them); empty: read, and it states no time.
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.
set role vera_owner;

alter table vera.chunks
    add column time_scope tstzmultirange,
    add column time_scope_version smallint
        constraint chunks_time_scope_version_nonnegative check (time_scope_version >= 0),
    add constraint chunks_time_scope_read_together
        check ((time_scope is null) = (time_scope_version is null));
comment on column vera.chunks.time_scope is
    'Periods the passage states (null: not read yet; empty: states none)';
comment on column vera.chunks.time_scope_version is
    'Version of VERA''s reader that read time_scope (time_scopes.EXTRACTION_VERSION); 0: stated by the caller or front matter';

-- The period signal of the blend: whether an item's time (a fact's
-- validity, a passage's scope) overlaps the period a search asks about
-- (vera.search's `during`). A seventh weight.
alter table vera.ranking_weights
    add column period real not null default 0
        constraint ranking_weights_period_range check (period between 0 and 1),
    drop constraint ranking_weights_sum_to_one,
    add constraint ranking_weights_sum_to_one check (
        abs(relevance + authority + verification + recency + feedback + confidence + period - 1) < 0.001);
comment on table vera.ranking_weights is 'Weight sets of the seven-signal blend; at most one active per group';
-- A group's calibrated set gets the default period share (0.20), the six
-- others 0.80 of theirs, so that a search asking about a period ranks by it
-- before the group is calibrated again. A search without `during` divides
-- the six by (1 - period) (vera.blend): it scores exactly as before. The set
-- is replaced, not edited (sets are history: a context pack names its own).
-- As the role running the migration (a superuser or the database's owner):
-- vera_owner is bound by the table's forced row-level security and, acting
-- for no principal, would see no set.
reset role;
create temporary table calibrated_sets on commit drop as
select w.* from vera.ranking_weights w where w.active;
update vera.ranking_weights w
   set active = false
  from calibrated_sets c
 where w.group_id = c.group_id and w.weight_set_id = c.weight_set_id;
insert into vera.ranking_weights (group_id, relevance, authority, verification, recency, feedback, confidence,
                                  period, half_life, sample_count, separation, active, created_by)
select c.group_id, c.relevance * 0.8, c.authority * 0.8, c.verification * 0.8, c.recency * 0.8,
       c.feedback * 0.8, c.confidence * 0.8, 0.2, c.half_life, c.sample_count, c.separation, true, c.created_by
  from calibrated_sets c;
set role vera_owner;
-- a candidate carries its time (vera.candidate_signals) for the blend to compare
alter type vera.search_item add attribute time_scope tstzmultirange;
-- a vote keeps the seventh signal too (null: the search asked about no period)
alter table vera.feedback drop constraint feedback_signals_six;
alter table vera.context_pack_items drop constraint context_pack_items_signals_six;
-- the rows are filled in as the role running the migration (a superuser, or
-- the owner of the database): vera_owner is bound by the tables' forced
-- row-level security and, acting for no principal, would see none of them
reset role;
update vera.feedback set signals = signals || array[null::real];
update vera.context_pack_items set signals = signals || array[null::real];
set role vera_owner;
alter table vera.feedback add constraint feedback_signals_seven check (cardinality(signals) = 7);
comment on table vera.feedback is 'Votes on hits, with the query and the hit''s seven signals';
alter table vera.context_pack_items add constraint context_pack_items_signals_seven check (cardinality(signals) = 7);
-- a snapshot's copy of a passage keeps the scope it had, and the reader that read it
alter table vera.snapshot_items
    add column time_scope tstzmultirange,
    add column time_scope_version smallint;

-- signatures that change: the old ones go (sql/functions/ creates the new)
drop function if exists vera.search(text, public.vector, integer, timestamptz, text[], jsonb, integer, integer,
                                    text, double precision, double precision, integer);
drop function if exists vera.blend(vera.search_item[], jsonb, timestamptz, integer);
drop function if exists vera.search_snapshot(text, text, text, public.vector, integer, integer, integer, text,
                                             double precision, double precision);
drop function if exists vera.record_feedback(vera.item_kind, uuid, text, text, public.vector, timestamptz, text[],
                                             text);

-- vera.remember takes the time scopes of its passages (sql/functions/216_remember.sql)
drop function if exists vera.remember(text, jsonb, text, timestamptz, text, jsonb, jsonb, text);

reset role;
