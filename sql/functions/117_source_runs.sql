-- Connector runs (python/vera_worker/connectors/): each run over a source is
-- recorded (vera.source_runs) for `vera source list`; a connector asks which
-- of its records VERA holds and in which version (content-hash no-ops without
-- a cursor entry per record), which are live (prune), and the schedule
-- queues the sources whose interval has passed.
set role vera_owner;

-- Contract: starts a run over a source and returns its id. A run of the same
-- source still marked running never ended (its worker died or was killed):
-- it is marked interrupted. Members.
create or replace function vera.begin_source_run(group_id text, source_id uuid)
returns uuid
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    started uuid;
begin
    perform vera.require_role(begin_source_run.group_id, 'member');
    perform vera.visible_source(begin_source_run.group_id, begin_source_run.source_id);
    update vera.source_runs r set status = 'interrupted', finished_at = now()
     where r.group_id = begin_source_run.group_id and r.source_id = begin_source_run.source_id
       and r.status = 'running';
    insert into vera.source_runs (group_id, source_id)
    values (begin_source_run.group_id, begin_source_run.source_id)
    returning run_id into started;
    return started;
end
$$;
comment on function vera.begin_source_run(text, uuid) is 'Starts a recorded connector run over a source; members';
grant execute on function vera.begin_source_run(text, uuid) to vera_worker;

-- Contract: ends a run: its status (done, stopped, failed), its counts
-- ({"items", "unchanged", "retracted", "skipped"}: whole numbers), the error
-- that ended it (one line, cut to 2,000 characters) and whether it pruned
-- (the source's pruned_at). Then the searched tables' statistics are
-- brought up to date if autovacuum has not (vera.refresh_planner_statistics).
-- Members.
create or replace function vera.end_source_run(
    group_id text, run_id uuid, status text, counts jsonb default '{}', error text default null,
    pruned boolean default false
)
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    ended vera.source_runs;
begin
    perform vera.require_role(end_source_run.group_id, 'member');
    if end_source_run.status is null or end_source_run.status not in ('done', 'stopped', 'failed') then
        raise exception 'a run ends done, stopped or failed, not %', coalesce(end_source_run.status, 'null')
            using errcode = '22023';
    end if;
    if exists (select from jsonb_each(coalesce(end_source_run.counts, '{}')) c
                where c.key not in ('items', 'unchanged', 'retracted', 'skipped')
                   or jsonb_typeof(c.value) <> 'number' or (c.value #>> '{}') !~ '^[0-9]{1,9}$') then
        raise exception 'counts are items, unchanged, retracted and skipped: whole numbers' using errcode = '22023';
    end if;
    update vera.source_runs r
       set status = end_source_run.status, finished_at = now(),
           items = coalesce((end_source_run.counts ->> 'items')::integer, 0),
           unchanged = coalesce((end_source_run.counts ->> 'unchanged')::integer, 0),
           retracted = coalesce((end_source_run.counts ->> 'retracted')::integer, 0),
           skipped = coalesce((end_source_run.counts ->> 'skipped')::integer, 0),
           error = left(end_source_run.error, 2000)
     where r.group_id = end_source_run.group_id and r.run_id = end_source_run.run_id
    returning * into ended;
    if not found then
        raise exception 'unknown run % in group %', end_source_run.run_id, vera.shown(end_source_run.group_id)
            using errcode = 'VN001';
    end if;
    if end_source_run.pruned then
        update vera.sources s set pruned_at = ended.started_at
         where s.group_id = ended.group_id and s.source_id = ended.source_id;
    end if;
    -- the first search after a load is planned on statistics of what it loaded
    -- (119_planner_statistics.sql); a help, not part of the run's record: should the analyze fail,
    -- the run still ends (autovacuum will analyze) and the worker's log says why
    begin
        perform vera.refresh_planner_statistics();
    exception when others then
        raise warning 'the statistics of the searched tables were not refreshed: %', sqlerrm;
    end;
end
$$;
comment on function vera.end_source_run(text, uuid, text, jsonb, text, boolean) is
    'Ends a recorded connector run with its status, counts and error; members';
grant execute on function vera.end_source_run(text, uuid, text, jsonb, text, boolean) to vera_worker;

-- Contract: what a connector's run needs beside the source's config: the
-- name of the environment variable holding its secret (never the secret),
-- when it was last pruned, and its schedule. Members.
create or replace function vera.source_run_settings(group_id text, source_id uuid)
returns table (token_env text, pruned_at timestamptz, interval_s integer)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    src vera.sources;
begin
    perform vera.require_role(source_run_settings.group_id, 'member');
    src := vera.visible_source(source_run_settings.group_id, source_run_settings.source_id);
    return query select src.token_env, src.pruned_at, src.interval_s;
end
$$;
comment on function vera.source_run_settings(text, uuid) is
    'A source''s token_env (the variable''s name), last prune and interval, for its connector; members';
grant execute on function vera.source_run_settings(text, uuid) to vera_worker;

-- Contract: the latest version VERA holds of each of these records of a
-- source (at most 10,000 ids a call): its content hash, its episode, whether
-- it is live (not retracted) and its change signature (what the connector saw
-- of it without reading it, vera.note_record_signatures; null when none).
-- Ids it never saw are not returned. Members.
drop function if exists vera.record_heads(text, uuid, text[]);
create or replace function vera.record_heads(group_id text, source_id uuid, external_ids text[])
returns table (external_id text, content_sha256 bytea, episode_id uuid, live boolean, signature text)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(record_heads.group_id, 'member');
    perform vera.visible_source(record_heads.group_id, record_heads.source_id);
    if cardinality(record_heads.external_ids) > 10000 then
        raise exception 'at most 10000 record ids per call, got %', cardinality(record_heads.external_ids)
            using errcode = '54000';
    end if;
    return query
    select distinct on (e.external_id) e.external_id, e.content_sha256, e.episode_id, e.status <> 'retracted',
           e.signature
      from vera.episodes e
     where e.group_id = record_heads.group_id and e.source_id = record_heads.source_id
       and e.external_id = any (record_heads.external_ids)
     order by e.external_id, e.version desc;
end
$$;
comment on function vera.record_heads(text, uuid, text[]) is
    'The latest version of each named record of a source: hash, episode, live, signature; members';
grant execute on function vera.record_heads(text, uuid, text[]) to vera_worker;

-- Contract: the records of a source whose latest version is live, with that
-- episode: what a prune compares with the source's own id listing. Members.
create or replace function vera.live_records(group_id text, source_id uuid)
returns table (external_id text, episode_id uuid)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(live_records.group_id, 'member');
    perform vera.visible_source(live_records.group_id, live_records.source_id);
    return query
    select h.external_id, h.episode_id
      from (select distinct on (e.external_id) e.external_id, e.episode_id, e.status
              from vera.episodes e
             where e.group_id = live_records.group_id and e.source_id = live_records.source_id
             order by e.external_id, e.version desc) h
     where h.status <> 'retracted'
     order by h.external_id;
end
$$;
comment on function vera.live_records(text, uuid) is 'A source''s records whose latest version is live; members';
grant execute on function vera.live_records(text, uuid) to vera_worker;

-- Contract: sets how often the schedule reads a source (seconds, 60 to a
-- year; null: only when asked). Admins.
create or replace function vera.set_source_interval(group_id text, source_id uuid, interval_s integer)
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(set_source_interval.group_id, 'admin');
    perform vera.visible_source(set_source_interval.group_id, set_source_interval.source_id);
    if set_source_interval.interval_s is not null and set_source_interval.interval_s not between 60 and 31536000 then
        raise exception 'interval_s is 60 seconds to a year (31536000), not %', set_source_interval.interval_s
            using errcode = '22023';
    end if;
    update vera.sources s set interval_s = set_source_interval.interval_s
     where s.group_id = set_source_interval.group_id and s.source_id = set_source_interval.source_id;
    perform vera.audit(set_source_interval.group_id, 'source.schedule', 'source', set_source_interval.source_id::text,
                       jsonb_build_object('interval_s', set_source_interval.interval_s));
end
$$;
comment on function vera.set_source_interval(text, uuid, integer) is
    'Sets how often the schedule reads a source (null: only when asked); admins';
grant execute on function vera.set_source_interval(text, uuid, integer) to vera_app, vera_worker, vera_gateway;

-- Contract: the sources of the caller's readable groups (or one group) with
-- their connector's state: the cursor's position (what an HTTP or git
-- connector resumes from), how many of its records are live in VERA, the
-- schedule, and the last run: when, how it ended, its counts and its error.
create or replace function vera.source_status(of_group text default null)
returns table (
    group_id text, source_id uuid, name text, kind text, interval_s integer, cursor_position jsonb,
    tracked_records integer, last_started timestamptz, last_finished timestamptz, last_status text,
    items integer, unchanged integer, retracted integer, skipped integer, error text
)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_principal();
    if source_status.of_group is not null and vera.role_in(source_status.of_group) is null then
        raise exception 'group % is not readable by the caller', vera.shown(source_status.of_group) using errcode = '42501';
    end if;
    return query
    select s.group_id, s.source_id, s.name, s.kind, s.interval_s, s.cursor -> '@position',
           vera.tracked_records(s.group_id, s.source_id),
           r.started_at, r.finished_at, r.status, r.items, r.unchanged, r.retracted, r.skipped, r.error
      from vera.sources s
      left join lateral (select * from vera.source_runs x
                          where x.group_id = s.group_id and x.source_id = s.source_id
                          order by x.started_at desc limit 1) r on true
     where (source_status.of_group is null or s.group_id = source_status.of_group)
       and s.group_id = any (vera.readable_groups())
     order by s.group_id, s.name;
end
$$;
comment on function vera.source_status(text) is
    'Sources with their cursor position, schedule and last run, for `vera source list`';
grant execute on function vera.source_status(text) to vera_app, vera_worker, vera_gateway;

-- Contract: the schedule. Queues an ingestion run of every live source whose
-- interval has passed since its last run started or was queued, for the
-- principal who registered it; returns the sources queued. The worker's
-- periodic task calls it with no caller (operators may too).
create or replace function vera.request_due_ingests()
returns table (group_id text, source_id uuid, job_id bigint)
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    due record;
begin
    if vera.current_principal() is not null then
        raise exception 'the schedule runs as the worker: a principal asks with vera.request_ingest'
            using errcode = '42501';
    end if;
    for due in
        select s.group_id, s.source_id, s.created_by
          from vera.sources s
         where s.interval_s is not null and s.retracted_at is null and s.created_by is not null
           and greatest(s.scheduled_at,
                        (select max(r.started_at) from vera.source_runs r
                          where r.group_id = s.group_id and r.source_id = s.source_id),
                        '-infinity'::timestamptz)
               <= now() - make_interval(secs => s.interval_s)
         order by s.group_id, s.source_id
           for update of s skip locked
    loop
        update vera.sources s set scheduled_at = now()
         where s.group_id = due.group_id and s.source_id = due.source_id;
        group_id := due.group_id;
        source_id := due.source_id;
        job_id := vera.enqueue_job('vera.ingest_source', jsonb_build_object(
            'group_id', due.group_id, 'source_id', due.source_id, 'principal_id', due.created_by, 'path', null));
        return next;
    end loop;
end
$$;
comment on function vera.request_due_ingests() is
    'The schedule: queues a run of every source whose interval has passed (worker and operators)';
alter function vera.request_due_ingests() owner to vera_searcher;
-- its owner queues the runs (as vera.request_ingest would for their principal)
grant execute on function vera.enqueue_job(text, jsonb, timestamptz) to vera_searcher;
grant execute on function vera.request_due_ingests() to vera_worker, vera_operator;

reset role;
