-- What an ingestion sends to the extraction model, and what it leaves for an
-- explicit command (issue 29): an ingestion run asks for its own new episodes'
-- passages only (vera.request_episode_extraction); the group's older backlog
-- (passages no model has been through, say because none was configured when
-- they were stored) waits for `vera extract --backlog`, which first says how
-- much it is (vera.extraction_backlog) and what it would cost.
set role vera_owner;

-- Contract: asks the worker to extract claims from the passages of the given
-- episodes of group_id that no model version has been through (at most 1,000
-- episodes per job; 22023 beyond). Members; returns the job id. The job
-- carries the caller's principal.
create or replace function vera.request_episode_extraction(group_id text, episode_ids uuid[])
returns bigint
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(request_episode_extraction.group_id, 'member');
    if coalesce(cardinality(episode_ids), 0) not between 1 and 1000 then
        raise exception 'episode_ids must hold from 1 to 1000 episodes' using errcode = '22023';
    end if;
    return vera.enqueue_job('vera.extract', jsonb_build_object(
        'group_id', request_episode_extraction.group_id, 'redo', false,
        'episodes', to_jsonb(request_episode_extraction.episode_ids)));
end
$$;
comment on function vera.request_episode_extraction(text, uuid[]) is
    'Defers an extract job over the passages of some episodes of the group, on behalf of the caller; members';
grant execute on function vera.request_episode_extraction(text, uuid[]) to vera_app, vera_worker, vera_gateway;

-- Contract: up to max_rows passages of the given episodes of group_id that no
-- model version has been through, in episode and passage order, with the
-- SHA-256 of their text; as vera.passages_to_extract leaves out retracted
-- episodes, rejected passages and other principals' proposals. Members.
create or replace function vera.episode_passages_to_extract(
    group_id text, model_version text, episode_ids uuid[], max_rows integer
)
returns table (chunk_id uuid, episode_id uuid, ordinal integer, text text, content_sha256 bytea)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(episode_passages_to_extract.group_id, 'member');
    if episode_passages_to_extract.max_rows is null or episode_passages_to_extract.max_rows not between 1 and 1000 then
        raise exception 'max_rows must be from 1 to 1000' using errcode = '22023';
    end if;
    return query
    select c.chunk_id, c.episode_id, c.ordinal, c.text, sha256(convert_to(c.text, 'UTF8'))
      from vera.chunks c
      join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
     where c.group_id = episode_passages_to_extract.group_id
       and c.episode_id = any (episode_passages_to_extract.episode_ids)
       and vera.passage_sendable(e.status, c.lifecycle, c.proposed_by)
       and vera.passage_pending(c.group_id, c.chunk_id, episode_passages_to_extract.model_version, false)
     order by c.episode_id, c.ordinal
     limit episode_passages_to_extract.max_rows;
end
$$;
comment on function vera.episode_passages_to_extract(text, text, uuid[], integer) is
    'The passages of some episodes of the group that no model has been through (members)';
grant execute on function vera.episode_passages_to_extract(text, text, uuid[], integer) to vera_worker;

-- Contract: how much an extract job over group_id would send to a model: the
-- passages vera.passages_to_extract would return (redo as there) and their
-- characters in all, for an estimate of tokens and cost before asking. Members.
create or replace function vera.extraction_backlog(group_id text, model_version text, redo boolean)
returns table (passages bigint, characters bigint)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(extraction_backlog.group_id, 'member');
    return query
    select count(*), coalesce(sum(char_length(c.text)), 0)::bigint
      from vera.chunks c
      join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
     where c.group_id = extraction_backlog.group_id
       and vera.passage_sendable(e.status, c.lifecycle, c.proposed_by)
       and vera.passage_pending(c.group_id, c.chunk_id, extraction_backlog.model_version,
                                coalesce(extraction_backlog.redo, false));
end
$$;
comment on function vera.extraction_backlog(text, text, boolean) is
    'How many passages (and characters) of the group an extract job would send to a model (members)';
grant execute on function vera.extraction_backlog(text, text, boolean) to vera_app, vera_worker, vera_gateway;

reset role;
