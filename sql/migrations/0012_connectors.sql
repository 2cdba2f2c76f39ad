-- 0012_connectors: connectors beyond folders (sql/functions/117_source_runs.sql):
-- a source's schedule (interval_s), when it was last pruned, and its runs.
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.
set role vera_owner;

alter table vera.sources
    add column interval_s integer constraint sources_interval_range check (interval_s between 60 and 31536000),
    add column pruned_at timestamptz,
    add column scheduled_at timestamptz;

create table vera.source_runs (
    group_id    text not null,
    run_id      uuid not null default gen_random_uuid(),
    source_id   uuid not null,
    started_at  timestamptz not null default now(),
    finished_at timestamptz,
    status      text not null default 'running'
                constraint source_runs_status_known
                check (status in ('running', 'done', 'stopped', 'failed', 'interrupted')),
    items       integer not null default 0,
    unchanged   integer not null default 0,
    retracted   integer not null default 0,
    skipped     integer not null default 0,
    error       text constraint source_runs_error_length check (char_length(error) <= 2000),
    primary key (group_id, run_id),
    -- an erased source takes its runs' history with it (their errors name its records)
    foreign key (group_id, source_id) references vera.sources (group_id, source_id) on delete cascade
);
create index source_runs_latest_idx on vera.source_runs (group_id, source_id, started_at desc);
comment on table vera.source_runs is 'Connector runs over a source: when, how they ended, what they counted';

reset role;
