-- Bookkeeping of applied migrations: one row per applied file with the
-- SHA-256 of the file as it was applied. It lives outside the vera schema, so
-- a database built with psql alone has the same vera catalog. Used by the
-- runner (vera db migrate) and by the container's init script alike.
create schema if not exists vera_meta;
create table if not exists vera_meta.migrations (
    version    integer primary key,
    name       text not null,
    sha256     text not null,
    applied_at timestamptz not null default now(),
    applied_by text not null default session_user
);
