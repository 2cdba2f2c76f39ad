-- Change signatures (issue 32): what a connector can tell of a record without
-- reading its body (a file's modification time and size), kept with the
-- version it describes (vera.episodes.signature). A run asks record_heads
-- which signatures VERA holds and reads only the records whose signature
-- changed; once a version is written, or found unchanged by its hash, the
-- runner notes the signature it saw, so the next run does not read it again.
set role vera_owner;

-- Contract: notes the signatures a connector saw of records of a source: a
-- JSON array of {"external_id", "sha256" (hex of the content read), "signature"
-- (1 to 200 characters)}, at most 10,000 a call. Each is stored on the
-- record's latest version when that version is live and holds that content
-- (a version written since by another run keeps its own); returns how many
-- were stored. Members.
create or replace function vera.note_record_signatures(group_id text, source_id uuid, signatures jsonb)
returns integer
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    noted integer;
begin
    perform vera.require_role(note_record_signatures.group_id, 'member');
    perform vera.visible_source(note_record_signatures.group_id, note_record_signatures.source_id);
    if jsonb_typeof(note_record_signatures.signatures) is distinct from 'array' then
        raise exception 'signatures must be a JSON array of {"external_id", "sha256", "signature"}'
            using errcode = '22023';
    end if;
    if jsonb_array_length(note_record_signatures.signatures) > 10000 then
        raise exception 'at most 10000 signatures per call, got %', jsonb_array_length(note_record_signatures.signatures)
            using errcode = '54000';
    end if;
    if exists (select from jsonb_array_elements(note_record_signatures.signatures) x
                where jsonb_typeof(x) <> 'object'
                   or jsonb_typeof(x -> 'external_id') is distinct from 'string'
                   or char_length(x ->> 'external_id') not between 1 and 2000
                   or jsonb_typeof(x -> 'sha256') is distinct from 'string'
                   or (x ->> 'sha256') !~ '^[0-9a-f]{64}$'
                   or jsonb_typeof(x -> 'signature') is distinct from 'string'
                   or char_length(x ->> 'signature') not between 1 and 200) then
        raise exception 'each signature is {"external_id": 1-2000 characters, "sha256": 64 hex digits, '
            '"signature": 1-200 characters}' using errcode = '22023';
    end if;
    with wanted as (
        select distinct on (x ->> 'external_id') x ->> 'external_id' as external_id,
               decode(x ->> 'sha256', 'hex') as sha256, x ->> 'signature' as signature
          from jsonb_array_elements(note_record_signatures.signatures) x
         order by x ->> 'external_id'
    ), heads as (
        select distinct on (e.external_id) e.episode_id, e.external_id, e.content_sha256, e.status
          from vera.episodes e
         where e.group_id = note_record_signatures.group_id and e.source_id = note_record_signatures.source_id
           and e.external_id in (select w.external_id from wanted w)
         order by e.external_id, e.version desc
    )
    update vera.episodes e set signature = w.signature
      from heads h join wanted w on w.external_id = h.external_id
     where e.group_id = note_record_signatures.group_id and e.episode_id = h.episode_id
       and h.status <> 'retracted' and h.content_sha256 = w.sha256
       and e.signature is distinct from w.signature;
    get diagnostics noted = row_count;
    return noted;
end
$$;
comment on function vera.note_record_signatures(text, uuid, jsonb) is
    'Stores the change signatures a connector saw on the records'' live latest versions; members';
grant execute on function vera.note_record_signatures(text, uuid, jsonb) to vera_worker;

-- Internal: how many records of a source VERA holds live (its latest version
-- not retracted): what list_sources and source_status show as tracked.
create or replace function vera.tracked_records(of_group text, of_source uuid)
returns integer
language sql stable
set search_path = vera, pg_temp
as $$
    select count(*)::integer
      from (select distinct on (e.external_id) e.status
              from vera.episodes e
             where e.group_id = of_group and e.source_id = of_source
             order by e.external_id, e.version desc) h
     where h.status <> 'retracted'
$$;
comment on function vera.tracked_records(text, uuid) is
    'Internal: how many records of a source have a live latest version';

reset role;
