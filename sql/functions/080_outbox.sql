-- The transactional outbox: follow-up work for the worker is deferred as a
-- Procrastinate job in the same transaction as the write that needs it, by
-- calling Procrastinate's own defer function. A rollback leaves no job; a
-- commit always has it.
set role vera_owner;

-- Internal: defers one job and returns its id; its args name the caller's principal. Each task has its own queue,
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
    job_ids := procrastinate.procrastinate_defer_jobs_v1(array[
        row(pg_catalog.regexp_replace(task_name, '^vera[.]', ''), task_name, 0,
            case when task_name = 'vera.project_to_graph' then 'graph:' || (args ->> 'group_id') end, null,
            jsonb_build_object('principal_id', vera.current_principal()) || args, scheduled_at)
            ::procrastinate.procrastinate_job_to_defer_v1]);
    return job_ids[1];
end
$$;
comment on function vera.enqueue_job(text, jsonb, timestamptz) is
    'Internal: defers a Procrastinate job in the current transaction (the outbox)';

reset role;
