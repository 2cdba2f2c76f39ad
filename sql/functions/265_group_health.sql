-- A group's health for its admins (the console's Health page, GET /v1/health):
-- its jobs in the queue and the last check of its graph. The queue and the
-- checks across every tenant are the operator's (vera.queue_lag,
-- vera.graph_check_results, granted to the worker and operators only); these
-- answer the same questions for the groups the caller administers, and count
-- nothing else: Procrastinate's tables have no row-level security, so every
-- job counted here is one whose args name one of those groups (every job
-- VERA defers carries its group_id: vera.enqueue_job's callers), and a job of
-- another tenant never adds to a count.
--
-- Admins, not viewers: the queue tells what the group's members are doing
-- (ingestion runs, extractions, erasures still to clean up) and when, which
-- is operating the group, as requesting a source's run on a schedule
-- (set_source_interval) and settling an erasure's cleanup are.
set role vera_owner;

-- Internal: the groups a health call covers: the one named, if the caller
-- administers it, else every group the caller administers. 42501 when the
-- caller administers the named group not (another tenant's group and a group
-- that exists nowhere alike), or no group at all; VA005 unauthenticated.
create or replace function vera.health_groups(of_group text)
returns text[]
language plpgsql stable
set search_path = vera, pg_temp
as $$
declare
    targets text[];
begin
    perform vera.require_principal();
    if of_group is not null then
        perform vera.require_role(of_group, 'admin');
        return array[of_group];
    end if;
    targets := vera.administrable_groups();
    if cardinality(targets) = 0 then
        raise exception 'permission denied: a group''s health is for its admins, and you administer no group'
            using errcode = '42501';
    end if;
    return targets;
end
$$;
comment on function vera.health_groups(text) is
    'Internal: the group named if the caller administers it, else every group it administers (42501: none)';

-- Contract: the jobs of the groups the caller administers (or of the one
-- named), per group, queue and state: 'todo' due and waiting, 'scheduled'
-- waiting for a later time, 'doing' running; of the running, how many are
-- stalled (their worker sent no heartbeat for stalled_after seconds, or is
-- gone: Procrastinate's test, which a worker uses to queue them again); and
-- when the oldest fell due (its schedule, else when it was deferred; for
-- 'scheduled', the earliest schedule). Finished jobs are not counted. Only
-- jobs whose args name one of those groups are read: another tenant's jobs
-- never count. stalled_after: 1 to 3600 seconds (22023).
-- Admins of each group. Errors: VA005, 42501, 22023.
-- (PL/pgSQL: the queue's schema is installed after the functions.)
create or replace function vera.group_jobs(of_group text default null, stalled_after double precision default 30)
returns table (group_id text, queue text, state text, jobs bigint, stalled bigint, oldest_due timestamptz)
language plpgsql stable security definer
set search_path = vera, procrastinate, pg_temp
as $$
declare
    targets text[];
begin
    if group_jobs.stalled_after is null or not group_jobs.stalled_after between 1 and 3600 then
        raise exception 'stalled_after must be from 1 to 3600 seconds' using errcode = '22023';
    end if;
    targets := vera.health_groups(group_jobs.of_group);
    return query
        with mine as (
            select j.args ->> 'group_id' as group_id, j.queue_name::text as queue,
                   case when j.status = 'doing' then 'doing'
                        when j.scheduled_at > now() then 'scheduled'
                        else 'todo' end as state,
                   j.status = 'doing' and (w.id is null or w.last_heartbeat
                                           < now() - pg_catalog.make_interval(secs => group_jobs.stalled_after))
                       as stalled,
                   coalesce(j.scheduled_at,
                            (select min(ev.at) from procrastinate.procrastinate_events ev
                              where ev.job_id = j.id and ev.type = 'deferred')) as due_at
              from procrastinate.procrastinate_jobs j
              left join procrastinate.procrastinate_workers w on w.id = j.worker_id
             where j.status in ('todo', 'doing') and j.args ->> 'group_id' = any (targets)
        )
        select m.group_id, m.queue, m.state, count(*), count(*) filter (where m.stalled), min(m.due_at)
          from mine m
         group by m.group_id, m.queue, m.state
         order by m.group_id, m.queue, m.state;
end
$$;
comment on function vera.group_jobs(text, double precision) is
    'Jobs queued or running for the groups the caller administers, per queue and state, with the stalled ones';
grant execute on function vera.group_jobs(text, double precision) to vera_app, vera_worker, vera_gateway;

-- Contract: the last graph check of each group the caller administers (or
-- of the one named), groups with drift first: its backend ('none': a worker
-- without a graph left facts unprojected), when it ran, the edges and nodes
-- PostgreSQL says the graph should hold and the graph held, and the drift
-- (what disagreed; null: none). A group never checked has no row.
-- Admins of each group. Errors: VA005, 42501.
create or replace function vera.group_graph_checks(of_group text default null)
returns table (group_id text, backend text, checked_at timestamptz, sql_edges bigint, graph_edges bigint,
               sql_nodes bigint, graph_nodes bigint, drift text)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    targets constant text[] := vera.health_groups(group_graph_checks.of_group);
begin
    return query
        select c.group_id, c.backend, c.checked_at, c.sql_edges, c.graph_edges, c.sql_nodes, c.graph_nodes, c.drift
          from vera.graph_checks c
         where c.group_id = any (targets)
         order by c.drift is null, c.group_id;
end
$$;
comment on function vera.group_graph_checks(text) is
    'The last graph check of each group the caller administers, drift first';
grant execute on function vera.group_graph_checks(text) to vera_app, vera_worker, vera_gateway;

reset role;
