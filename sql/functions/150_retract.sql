-- Retraction and erasure of sources and episodes, end to end.
--
-- Retraction takes a source's knowledge out of search (lifecycle retracted),
-- restores the values it had superseded, and queues the graph edges for
-- removal. Erasure also deletes the episodes, their chunks, the facts drawn
-- from them, snapshot copies and feedback citing them, and queues deletion
-- of the raw bytes. PostgreSQL commits first, with a retract_cleanup job
-- scheduled a little ahead; the caller cleans up at once and settles the job
-- (vera.cleanup_work, vera.settle_cleanup); the worker runs what is left when due.
set role vera_owner;

-- Internal: retracts (and with erase, deletes) episodes of one group.
-- Returns the retract_cleanup job id.
create or replace function vera.withdraw_episodes(
    target_group text, episode_ids uuid[], erase boolean, action text, target_kind text, target_id text,
    reason text
)
returns bigint
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    withdrawn record;
    restored record;
    object_keys jsonb;
    erased record;
    withdrawn_groups text[];
    withdrawn_ids uuid[];
    job record;
    cleanup_job bigint;
begin
    perform vera.check_length(reason, 'reason', 2000);
    -- lock order: the histories of every fact drawn from the episodes, all at once
    -- before any fact row is touched (as publishing does), so that retraction and
    -- publishing never wait on each other's rows (READ COMMITTED, VT001 otherwise)
    perform vera.lock_histories(array_agg(f.group_id), array_agg(f.subject_entity_id), array_agg(f.predicate))
       from vera.facts f
      where (f.group_id = target_group and f.episode_id = any (episode_ids))
         or (f.origin ->> 'episode_id')::uuid = any (episode_ids);
    -- the facts drawn from the episodes, and proposals made from them
    with gone as (
        update vera.facts f set lifecycle = 'retracted', retired_at = coalesce(f.retired_at, now())
         where ((f.group_id = target_group and f.episode_id = any (episode_ids))
                or (f.origin ->> 'episode_id')::uuid = any (episode_ids))
           and f.lifecycle <> 'retracted'
        returning f.group_id, f.fact_id, f.subject_entity_id, f.predicate
    )
    select coalesce(jsonb_agg(gone.fact_id), '[]') as fact_ids,
           array_agg(gone.group_id) as g, array_agg(gone.subject_entity_id) as s, array_agg(gone.predicate) as p
      into withdrawn from gone;
    -- facts retracted earlier (say, with their source) still name their graph edges
    select coalesce(jsonb_agg(distinct f.fact_id), '[]') as fact_ids into erased
      from vera.facts f
     where (f.group_id = target_group and f.episode_id = any (episode_ids))
        or (f.origin ->> 'episode_id')::uuid = any (episode_ids);
    select coalesce(array_agg(f.group_id), '{}'), coalesce(array_agg(f.fact_id), '{}')
      into withdrawn_groups, withdrawn_ids
      from vera.facts f
     where (f.group_id = target_group and f.episode_id = any (episode_ids))
        or (f.origin ->> 'episode_id')::uuid = any (episode_ids);
    -- raw bytes that another episode still references stay (a record restored unchanged
    -- is a new version under the same content-addressed key)
    with withdrawn_keys as (
        select distinct e.object_key from vera.episodes e
         where e.group_id = target_group and e.episode_id = any (episode_ids) and e.object_key is not null
    ), kept_keys as (
        select distinct e.object_key from vera.episodes e
         where e.group_id = target_group and e.object_key in (select k.object_key from withdrawn_keys k)
           and not e.episode_id = any (episode_ids)
    )
    select coalesce(jsonb_agg(k.object_key order by k.object_key), '[]') into object_keys
      from withdrawn_keys k where k.object_key not in (select kept.object_key from kept_keys kept);

    update vera.episodes e set status = 'retracted'
     where e.group_id = target_group and e.episode_id = any (episode_ids);

    if erase then
        -- context packs keep no text of what is erased (sql/functions/215_context_packs.sql)
        perform vera.erase_pack_items(
            target_group, episode_ids,
            array(select (x #>> '{}')::uuid from jsonb_array_elements(erased.fact_ids) x),
            array(select c.chunk_id from vera.chunks c
                   where c.group_id = target_group and c.episode_id = any (episode_ids)));
        delete from vera.feedback fb
         where fb.group_id = target_group
           and ((fb.item_kind = 'fact' and fb.item_id in (select (x #>> '{}')::uuid from jsonb_array_elements(erased.fact_ids) x))
                or (fb.item_kind = 'passage' and fb.item_id in (
                        select c.chunk_id from vera.chunks c
                         where c.group_id = target_group and c.episode_id = any (episode_ids))));
        delete from vera.snapshot_items si
         where si.group_id = target_group
           and (si.episode_id = any (episode_ids)
                or (si.item_kind = 'fact' and si.item_id in (select (x #>> '{}')::uuid from jsonb_array_elements(erased.fact_ids) x)));
        delete from vera.facts f
         where (f.group_id = target_group and f.episode_id = any (episode_ids))
            or (f.origin ->> 'episode_id')::uuid = any (episode_ids);
        -- the claims extracted from their text, kept by its hash for reuse (sql/functions/240_extraction.sql)
        perform vera.forget_extractions(target_group, episode_ids);
        -- chunks go with their episodes (on delete cascade)
        delete from vera.episodes e where e.group_id = target_group and e.episode_id = any (episode_ids);
    end if;

    -- values these facts had superseded become current again
    select coalesce(jsonb_agg(t.fact_id) filter (where t.lifecycle = 'published'), '[]') as fact_ids,
           coalesce(array_agg(t.group_id) filter (where t.lifecycle = 'published'), '{}') as g,
           coalesce(array_agg(t.fact_id) filter (where t.lifecycle = 'published'), '{}') as ids
      into restored
      from vera.rebuild_timelines(withdrawn.g, withdrawn.s, withdrawn.p) t;

    -- the graph: withdrawn facts out, restored values' validity back, in each group they are in
    -- (proposals drawn from these episodes live in their proposers' u: scopes, whose graphs are
    -- updated for their owners). The cleanup below removes the target group's edges at once too;
    -- these jobs, ordered after every earlier projection of their group, make sure no earlier one
    -- that read the facts before this commit puts them back.
    for job in
        select x.g, jsonb_agg(distinct x.id) as ids from (
            select unnest(withdrawn_groups) as g, unnest(withdrawn_ids) as id
            union all
            select r.g, r.id from unnest(restored.g, restored.ids) as r(g, id)) x
         group by x.g
    loop
        perform vera.enqueue_job('vera.project_to_graph', jsonb_build_object(
            'group_id', job.g, 'fact_ids', job.ids)
            || case when job.g = target_group then '{}'::jsonb
                    else jsonb_build_object('principal_id', (select p.principal_id from vera.principals p
                                                              where p.personal_group_id = job.g)) end);
    end loop;
    cleanup_job := vera.enqueue_job('vera.retract_cleanup', jsonb_build_object(
        'group_id', target_group,
        'edge_ids', erased.fact_ids,
        'object_keys', case when erase then object_keys else '[]'::jsonb end,
        'episode_ids', to_jsonb(episode_ids),
        'restored_fact_ids', restored.fact_ids,
        'erase', erase),
        now() + make_interval(secs => (vera.setting(target_group, 'retract.cleanup_delay_seconds'))::float8));
    perform vera.audit(target_group, action, target_kind, target_id, jsonb_build_object(
        'reason', reason, 'episodes', cardinality(episode_ids), 'facts', jsonb_array_length(erased.fact_ids),
        'cleanup_job', cleanup_job));
    return cleanup_job;
end
$$;
comment on function vera.withdraw_episodes(text, uuid[], boolean, text, text, text, text) is
    'Internal: retracts or erases episodes and enqueues their retract_cleanup job';

-- Internal: retracts (or erases) one episode after checking the caller administers its group.
create or replace function vera.withdraw_episode(target_group text, target_episode uuid, erase boolean, reason text)
returns bigint
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(target_group, 'admin');
    if not exists (select from vera.episodes e where e.group_id = target_group and e.episode_id = target_episode) then
        raise exception 'unknown episode % in group %', target_episode, vera.shown(target_group) using errcode = 'VN001';
    end if;
    return vera.withdraw_episodes(target_group, array[target_episode], erase,
                                  case when erase then 'episode.erase' else 'episode.retract' end,
                                  'episode', target_episode::text, reason);
end
$$;
comment on function vera.withdraw_episode(text, uuid, boolean, text) is
    'Internal: retracts or erases one episode of a group the caller administers';

-- Contract: retracts one episode (admins). Returns the retract_cleanup job id.
create or replace function vera.retract_episode(group_id text, episode_id uuid, reason text default null)
returns bigint
language sql volatile security definer
set search_path = vera, pg_temp
as $$
    select vera.withdraw_episode(group_id, episode_id, false, reason)
$$;
comment on function vera.retract_episode(text, uuid, text) is 'Retracts an episode''s knowledge end to end; admins only';
grant execute on function vera.retract_episode(text, uuid, text) to vera_app, vera_worker, vera_gateway;

-- Contract: erases one episode (admins): retraction, then the episode, its
-- chunks, facts, snapshot copies and feedback are deleted and its raw bytes
-- queued for deletion. Returns the retract_cleanup job id.
create or replace function vera.erase_episode(group_id text, episode_id uuid, reason text default null)
returns bigint
language sql volatile security definer
set search_path = vera, pg_temp
as $$
    select vera.withdraw_episode(group_id, episode_id, true, reason)
$$;
comment on function vera.erase_episode(text, uuid, text) is 'Erases an episode and everything drawn from it; admins only';
grant execute on function vera.erase_episode(text, uuid, text) to vera_app, vera_worker, vera_gateway;

-- Contract: retracts every episode of a source and the source itself (admins);
-- new ingestion from it is refused until it is registered again. Its cursor is
-- emptied with it: it described episodes that are now retracted, so a source
-- registered again (vera source restore) has every file read afresh, each
-- becoming a new version of its record, rather than found "unchanged".
create or replace function vera.retract_source(group_id text, source_id uuid, reason text default null)
returns bigint
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    src vera.sources;
begin
    perform vera.require_role(retract_source.group_id, 'admin');
    src := vera.visible_source(retract_source.group_id, retract_source.source_id);
    update vera.sources s set retracted_at = coalesce(s.retracted_at, now()), cursor = '{}'
     where s.group_id = src.group_id and s.source_id = src.source_id;
    return vera.withdraw_episodes(
        src.group_id,
        coalesce((select array_agg(e.episode_id) from vera.episodes e
                   where e.group_id = src.group_id and e.source_id = src.source_id), '{}'),
        false, 'source.retract', 'source', src.source_id::text, reason);
end
$$;
comment on function vera.retract_source(text, uuid, text) is 'Retracts a source and all its episodes; admins only';
grant execute on function vera.retract_source(text, uuid, text) to vera_app, vera_worker, vera_gateway;

-- Contract: erases a source (admins): all its episodes as erase_episode does,
-- then the source row itself.
create or replace function vera.erase_source(group_id text, source_id uuid, reason text default null)
returns bigint
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    src vera.sources;
    cleanup_job bigint;
begin
    perform vera.require_role(erase_source.group_id, 'admin');
    src := vera.visible_source(erase_source.group_id, erase_source.source_id);
    cleanup_job := vera.withdraw_episodes(
        src.group_id,
        coalesce((select array_agg(e.episode_id) from vera.episodes e
                   where e.group_id = src.group_id and e.source_id = src.source_id), '{}'),
        true, 'source.erase', 'source', src.source_id::text, reason);
    -- facts of the source without an episode, and the source row itself
    perform vera.erase_pack_items(
        src.group_id, '{}',
        array(select f.fact_id from vera.facts f where f.group_id = src.group_id and f.source_id = src.source_id),
        '{}', src.source_id);
    -- their graph edges go too: a projection job finds them gone and removes them
    if exists (select from vera.facts f where f.group_id = src.group_id and f.source_id = src.source_id) then
        perform vera.enqueue_job('vera.project_to_graph', jsonb_build_object(
            'group_id', src.group_id,
            'fact_ids', (select jsonb_agg(f.fact_id) from vera.facts f
                          where f.group_id = src.group_id and f.source_id = src.source_id)));
    end if;
    delete from vera.facts f where f.group_id = src.group_id and f.source_id = src.source_id;
    delete from vera.sources s where s.group_id = src.group_id and s.source_id = src.source_id;
    return cleanup_job;
end
$$;
comment on function vera.erase_source(text, uuid, text) is 'Erases a source and everything drawn from it; admins only';
grant execute on function vera.erase_source(text, uuid, text) to vera_app, vera_worker, vera_gateway;

-- Contract: marks a retract_cleanup job completed after the caller cleaned up
-- in-process (graph edges removed, objects deleted), so the worker skips it.
-- Admins of the job's group. False when the job had already run or finished.
create or replace function vera.complete_cleanup(job_id bigint)
returns boolean
language plpgsql volatile security definer
set search_path = vera, procrastinate, pg_temp
as $$
declare
    job record;
begin
    perform vera.require_principal();
    select j.id, j.status, j.args ->> 'group_id' as group_id into job
      from procrastinate.procrastinate_jobs j
     where j.id = complete_cleanup.job_id and j.task_name = 'vera.retract_cleanup'
     for update;
    if not found or not (job.group_id = any (vera.administrable_groups())) then
        raise exception 'no retract_cleanup job % in a group you administer', complete_cleanup.job_id
            using errcode = 'VN001';
    end if;
    if job.status <> 'todo' then
        return false;
    end if;
    perform procrastinate.procrastinate_finish_job_v1(job.id, 'succeeded', false);
    return true;
end
$$;
comment on function vera.complete_cleanup(bigint) is
    'Marks a retract_cleanup job done after in-process cleanup; admins of its group';
grant execute on function vera.complete_cleanup(bigint) to vera_app, vera_worker, vera_gateway;

-- Contract: what a retract_cleanup job still names (its payload: group_id, edge_ids,
-- object_keys, erase), for the admin who requested it to clean up at once after
-- commit; null once the job ran, runs or finished. Admins of the job's group.
create or replace function vera.cleanup_work(job_id bigint)
returns jsonb
language plpgsql stable security definer
set search_path = vera, procrastinate, pg_temp
as $$
declare
    job record;
begin
    perform vera.require_principal();
    select j.status, j.args into job
      from procrastinate.procrastinate_jobs j
     where j.id = cleanup_work.job_id and j.task_name = 'vera.retract_cleanup'
       and j.args ->> 'group_id' = any (vera.administrable_groups());
    if not found then
        raise exception 'no retract_cleanup job % in a group you administer', cleanup_work.job_id
            using errcode = 'VN001';
    end if;
    return case when job.status = 'todo' then job.args end;
end
$$;
comment on function vera.cleanup_work(bigint) is
    'The payload of a pending retract_cleanup job, for its requester to clean up at once; admins of its group';
grant execute on function vera.cleanup_work(bigint) to vera_app, vera_worker, vera_gateway;

-- Contract: the requester of a retract_cleanup job reports what its at-once cleanup
-- left (graph edges it could not remove, or had no graph to remove from; raw objects
-- it could not delete). Nothing left: the job retires ('completed'). Otherwise the
-- job keeps only what is left, never more than it named, and falls due now: the
-- worker finishes it ('narrowed'). 'already_run' when the job had run or finished.
-- Admins of the job's group.
create or replace function vera.settle_cleanup(job_id bigint, edge_ids_left uuid[], object_keys_left text[])
returns text
language plpgsql volatile security definer
set search_path = vera, procrastinate, pg_temp
as $$
declare
    job record;
    edges jsonb;
    keys jsonb;
begin
    perform vera.require_principal();
    select j.id, j.status, j.args into job
      from procrastinate.procrastinate_jobs j
     where j.id = settle_cleanup.job_id and j.task_name = 'vera.retract_cleanup'
       and j.args ->> 'group_id' = any (vera.administrable_groups())
     for update;
    if not found then
        raise exception 'no retract_cleanup job % in a group you administer', settle_cleanup.job_id
            using errcode = 'VN001';
    end if;
    if job.status <> 'todo' then
        return 'already_run';
    end if;
    -- only what the job itself names: a requester cannot add work to it
    select coalesce(jsonb_agg(x order by x), '[]') into edges
      from jsonb_array_elements_text(coalesce(job.args -> 'edge_ids', '[]')) x
     where x::uuid = any (coalesce(edge_ids_left, '{}'));
    select coalesce(jsonb_agg(x order by x), '[]') into keys
      from jsonb_array_elements_text(coalesce(job.args -> 'object_keys', '[]')) x
     where x = any (coalesce(object_keys_left, '{}'));
    if jsonb_array_length(edges) = 0 and jsonb_array_length(keys) = 0 then
        perform procrastinate.procrastinate_finish_job_v1(job.id, 'succeeded', false);
        return 'completed';
    end if;
    update procrastinate.procrastinate_jobs j
       set args = j.args || jsonb_build_object('edge_ids', edges, 'object_keys', keys),
           scheduled_at = least(j.scheduled_at, now())
     where j.id = job.id;
    return 'narrowed';
end
$$;
comment on function vera.settle_cleanup(bigint, uuid[], text[]) is
    'Retires a retract_cleanup job, or narrows it to what the requester''s cleanup left; admins of its group';
grant execute on function vera.settle_cleanup(bigint, uuid[], text[]) to vera_app, vera_worker, vera_gateway;

reset role;
