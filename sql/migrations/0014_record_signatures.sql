-- 0014_record_signatures: a record version's change signature (issue 32):
-- what a connector can tell without reading a body (a file's modification
-- time and size), stored with the version it describes, so that a re-run
-- reads only what changed without a per-record cursor entry
-- (sql/functions/118_record_signatures.sql).
--
-- Folder sources kept one cursor entry per file (mtime_ns, size, sha256,
-- episode_id) until now: each entry becomes the signature of the version it
-- names when that version still holds the same content, and the entries leave
-- the cursor (only the connector's "@position" stays). A file whose entry did
-- not match is read once more by the next run and found unchanged by its hash.
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.
set role vera_owner;

alter table vera.episodes
    add column signature text constraint episodes_signature_length check (char_length(signature) between 1 and 200);
comment on column vera.episodes.signature is
    'What the connector saw of this version without reading it (a file''s mtime_ns:size); null when none';

update vera.episodes e
   set signature = (c.value ->> 'mtime_ns') || ':' || (c.value ->> 'size')
  from vera.sources s, jsonb_each(s.cursor) c
 where s.cursor is not null and c.key not like '@%' and jsonb_typeof(c.value) = 'object'
   and (c.value ->> 'mtime_ns') ~ '^[0-9]{1,20}$' and (c.value ->> 'size') ~ '^[0-9]{1,20}$'
   and (c.value ->> 'sha256') ~ '^[0-9a-f]{64}$'
   and (c.value ->> 'episode_id') ~ '^[0-9a-f-]{36}$'
   and e.group_id = s.group_id and e.source_id = s.source_id and e.external_id = c.key
   and e.episode_id = (c.value ->> 'episode_id')::uuid
   and e.content_sha256 = decode(c.value ->> 'sha256', 'hex');

update vera.sources s
   set cursor = coalesce((select jsonb_object_agg(c.key, c.value) from jsonb_each(s.cursor) c
                           where c.key like '@%'), '{}')
 where s.cursor is not null and exists (select from jsonb_object_keys(s.cursor) k where k not like '@%');

reset role;
