-- Named queries of the migration runner (vera db migrate, vera db status) and
-- of the psql script that vera db sql prints (rendered there with literal
-- values, so both run the same statements). Each starts with "-- name: NAME"
-- and a one-line description; queries.py loads them once (the client's
-- queries are vera_client/api/*.sql).

-- name: server_version
-- The server's version as an integer (180001 for 18.1).
select current_setting('server_version_num')::integer;

-- name: available_extensions
-- Extensions VERA needs and the version the server can install (null if absent).
select wanted.name, available.default_version, installed.extversion
from unnest(%(names)s::text[]) as wanted(name)
left join pg_available_extensions available on available.name = wanted.name
left join pg_extension installed on installed.extname = wanted.name;

-- name: migration_table_exists
-- Whether the bookkeeping table exists yet (status must not create it).
select to_regclass('vera_meta.migrations') is not null;

-- name: lock_migrations
-- Serialises concurrent migrate runs on one database (released at commit).
select pg_advisory_xact_lock(hashtext('vera.migrations'));

-- name: set_local_setting
-- Sets a setting until the end of the transaction (what sql/meta/check.sql reads).
select set_config(%(name)s, %(value)s, true);

-- name: migration_pending
-- Whether a migration still has to run (its version is not recorded).
select not exists (select from vera_meta.migrations where version = %(version)s) as pending;

-- name: applied_migrations
-- Applied versions with the checksum of the file as it was applied.
select version, name, sha256 from vera_meta.migrations order by version;

-- name: record_migration
-- Marks one migration applied.
insert into vera_meta.migrations (version, name, sha256) values (%(version)s, %(name)s, %(sha256)s);

-- name: installed_component
-- Version of an installed third-party schema, or nothing.
select version, sha256 from vera_meta.components where name = %(name)s;

-- name: record_component
-- Records a third-party schema as installed.
insert into vera_meta.components (name, version, sha256) values (%(name)s, %(version)s, %(sha256)s);

-- name: component_missing
-- Whether a third-party schema is not recorded as installed yet.
select not exists (select from vera_meta.components where name = %(name)s) as missing;

-- name: procrastinate_absent
-- Whether Procrastinate's tables are absent (not installed by hand either).
select to_regclass('procrastinate.procrastinate_jobs') is null as absent;
