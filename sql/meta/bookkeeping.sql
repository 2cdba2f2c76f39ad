-- Bookkeeping of the database's schema, outside the vera schema so that a
-- database built with psql alone has the same vera catalog. Used by the
-- runner (vera db migrate) and by the script of vera db sql alike.
create schema if not exists vera_meta;

-- one row per applied migration, with the SHA-256 of the file as applied
create table if not exists vera_meta.migrations (
    version    integer primary key,
    name       text not null,
    sha256     text not null,
    applied_at timestamptz not null default now(),
    applied_by text not null default session_user
);

-- third-party schemas VERA installs (Procrastinate's job queue), by version
create table if not exists vera_meta.components (
    name         text primary key,
    version      text not null,
    sha256       text not null,
    installed_at timestamptz not null default now()
);
