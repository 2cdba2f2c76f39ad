-- Per-group settings: entity-resolution thresholds, judges, cleanup delay.
-- Absent rows mean the documented default (vera.setting).
set role vera_owner;

create table vera.group_settings (
    group_id   text not null references vera.groups (group_id),
    name       text not null constraint group_settings_name_format check (name ~ '^[a-z][a-z0-9_]*(\.[a-z0-9_]+)*$'),
    value      jsonb not null,
    updated_at timestamptz not null default now(),
    updated_by uuid references vera.principals (principal_id),
    primary key (group_id, name)
);
comment on table vera.group_settings is 'Per-group overrides of VERA''s settings (defaults in vera.setting_default)';

reset role;
