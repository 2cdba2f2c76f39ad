-- Append-only audit log: who did what to which object, in which group.
set role vera_owner;

create table vera.audit_log (
    group_id     text not null references vera.groups (group_id),
    audit_id     bigint generated always as identity,
    at           timestamptz not null default now(),
    principal_id uuid,
    action       text not null constraint audit_log_action_format check (action ~ '^[a-z][a-z0-9_.]*$'),
    target_kind  text,
    target_id    text,
    detail       jsonb not null default '{}',
    primary key (group_id, audit_id)
);
create index audit_log_at_idx on vera.audit_log (group_id, at);
comment on table vera.audit_log is 'Append-only record of security-relevant and curation actions';

reset role;
