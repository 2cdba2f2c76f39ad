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

-- vera.remember takes the time scopes of its passages (sql/functions/216_remember.sql)
drop function if exists vera.remember(text, jsonb, text, timestamptz, text, jsonb, jsonb, text);

reset role;
