-- The transactional outbox: follow-up work for the worker is deferred as a
-- Procrastinate job in the same transaction as the write that needs it, by
-- calling Procrastinate's own defer function. A rollback leaves no job; a
-- commit always has it.
set role vera_owner;

-- Internal: defers one job and returns its id (or joins a waiting one: below); its
-- args name the caller's principal. Each task has its own queue,
-- named after it without the 'vera.' prefix (vera.embed -> embed), so that
-- workers can be scaled, or held back, per kind of work.
-- Procrastinate's functions use unqualified names, hence its schema on the path.
create or replace function vera.enqueue_job(
    task_name text, args jsonb, scheduled_at timestamptz default null
)
returns bigint
language plpgsql volatile security definer
set search_path = vera, procrastinate, pg_temp
as $$
declare
    job_ids bigint[];
    queue text := pg_catalog.regexp_replace(task_name, '^vera[.]', '');
    job_lock text := case when task_name = 'vera.project_to_graph' then 'graph:' || (args ->> 'group_id') end;
    job_args jsonb := jsonb_build_object('principal_id', vera.current_principal()) || args;
    -- the list a job of these tasks works through, item by item (each item read again when it runs)
    list_key text := case task_name when 'vera.judge_equivalence' then 'entities'
                                    when 'vera.project_to_graph' then 'fact_ids'
                                    when 'vera.embed' then 'fact_ids'
                                    when 'vera.judge_contradiction' then 'fact_ids' end;
    merged bigint;
begin
    if pg_catalog.to_regprocedure('procrastinate.procrastinate_defer_jobs_v1(procrastinate.procrastinate_job_to_defer_v1[])') is null then
        raise exception 'the job queue (Procrastinate''s schema "procrastinate") is not installed: run vera db migrate'
            using errcode = 'VJ001';
    end if;
    -- every job carries the principal whose request deferred it, so that the worker acts
    -- with exactly that caller's rights (authenticate_principal); operator work has none
    -- a group's projection jobs run one at a time, in the order they were deferred (Procrastinate's
    -- lock): each reads the facts as they are when it runs, so the last one leaves the graph as
    -- PostgreSQL is, however many workers there are
    -- A job that works through a list (facts to project or embed, entities or facts to judge) joins
    -- the group's job of the same task and caller still waiting to start, when there is one: an
    -- ingestion's files, each its own transaction, make one job, not one per file (a job costs the
    -- worker a fetch, its events and a finish; without a graph or a judge it does nothing else).
    -- Each item is read again when the job runs, so the job does what the separate ones would have;
    -- the job is locked until this transaction ends, so a worker starts it only with these items
    -- (SKIP LOCKED: a job a worker is taking or another writer is joining is left, and this one
    -- deferred anew). Not a job that waits for a time or a retry, nor one past 50 items, nor one
    -- older than the 50 newest waiting jobs (a write looks no further: a new job then). The
    -- items the job does not name yet are appended, in order.
    -- Joining rewrites the job's args, longer with each item, and a job costs the worker ~5 ms
    -- (its fetch, events, finish and task call): 50 items (measured 2026-12-07: ~0.4 ms a write
    -- over a new job's insert) balance the two.
    if list_key is not null and scheduled_at is null
       and pg_catalog.jsonb_typeof(job_args -> list_key) = 'array' then
        update procrastinate.procrastinate_jobs j
           set args = j.args || pg_catalog.jsonb_build_object(list_key, (j.args -> list_key) || coalesce((
                   select pg_catalog.jsonb_agg(e.item order by e.n)
                     from pg_catalog.jsonb_array_elements(job_args -> list_key) with ordinality as e(item, n)
                    where not (j.args -> list_key) @> pg_catalog.jsonb_build_array(e.item)), '[]'::jsonb))
         where j.status = 'todo' and j.id = (
                   select w.id from procrastinate.procrastinate_jobs w
                    -- among the newest waiting jobs only (Procrastinate's index of waiting jobs, read
                    -- backwards): the queue keeps its finished jobs, which a search by queue would read
                    where w.id = any (array(select n.id from procrastinate.procrastinate_jobs n
                                             where n.status = 'todo' order by n.priority, n.id desc limit 50))
                      and w.status = 'todo' and w.queue_name = queue and w.task_name = enqueue_job.task_name
                      and w.attempts = 0 and w.scheduled_at is null and w.lock is not distinct from job_lock
                      and (w.args - list_key) = (job_args - list_key)
                      and pg_catalog.jsonb_typeof(w.args -> list_key) = 'array'
                      and pg_catalog.jsonb_array_length(w.args -> list_key)
                          + pg_catalog.jsonb_array_length(job_args -> list_key) <= 50
                    order by w.id desc
                    limit 1
                    for update skip locked)
        returning j.id into merged;
        if merged is not null then
            return merged;
        end if;
    end if;
    job_ids := procrastinate.procrastinate_defer_jobs_v1(array[
        row(queue, task_name, 0, job_lock, null, job_args, scheduled_at)
            ::procrastinate.procrastinate_job_to_defer_v1]);
    return job_ids[1];
end
$$;
comment on function vera.enqueue_job(text, jsonb, timestamptz) is
    'Internal: defers a Procrastinate job in the current transaction (the outbox)';

reset role;
