-- Bootstrap: extensions, roles and the vera schema.
--
-- This is the only part of the bundle that needs a superuser (or a cloud
-- "rds_superuser"-like role): extensions and roles are cluster objects.
-- Everything after it runs as vera_owner, a NOLOGIN role without BYPASSRLS,
-- so that even the definer functions stay inside row-level security.

create extension if not exists vector;
create extension if not exists pg_trgm;
create extension if not exists unaccent;
create extension if not exists btree_gin;

do $roles$
declare
    role_spec record;
begin
    -- Roles are shared by every database of a cluster, so they may exist already.
    for role_spec in
        select * from (values
            -- owns every vera object; definer functions run as it; nobody logs in as it
            ('vera_owner',    'nologin nosuperuser nocreatedb nocreaterole nobypassrls noinherit'),
            -- applications: read through RLS, write only through the SQL API. A
            -- group: each SQL application logs in as a role of its own that is a
            -- member (provisioning.create_app_login), so that no application sees
            -- another's statements in pg_stat_activity nor may signal its backends
            ('vera_app',      'nologin nosuperuser nocreatedb nocreaterole nobypassrls inherit'),
            -- Procrastinate workers: row DML inside RLS (embeddings, projections, cleanup)
            ('vera_worker',   'login nosuperuser nocreatedb nocreaterole nobypassrls inherit'),
            -- HTTP/MCP servers that verify callers themselves (OAuth) and vouch for a principal
            ('vera_gateway',  'login nosuperuser nocreatedb nocreaterole nobypassrls inherit'),
            -- people or tools that provision tenants; granted to a DBA's login by hand
            ('vera_operator', 'nologin nosuperuser nocreatedb nocreaterole nobypassrls inherit'),
            -- owns the one function that must read past row-level security (the
            -- trigram probe of entity resolution) and checks the group itself
            ('vera_resolver', 'nologin nosuperuser nocreatedb nocreaterole bypassrls noinherit'),
            -- owns the candidate stage of search (GIN and HNSW probes, which
            -- RLS would keep off their indexes) and checks the groups itself
            ('vera_searcher', 'nologin nosuperuser nocreatedb nocreaterole bypassrls noinherit')
        ) as r(name, attributes)
    loop
        if not exists (select from pg_catalog.pg_roles where rolname = role_spec.name) then
            execute format('create role %I %s', role_spec.name, role_spec.attributes);
        else
            execute format('alter role %I %s', role_spec.name, role_spec.attributes);
        end if;
    end loop;
end
$roles$;

-- A superuser running this file must be able to act as vera_owner below;
-- a non-superuser DBA needs membership to do the same.
do $membership$
begin
    if not (select rolsuper from pg_catalog.pg_roles where rolname = current_user) then
        execute format('grant vera_owner to %I', current_user);
    end if;
end
$membership$;

create schema if not exists vera authorization vera_owner;
comment on schema vera is 'VERA knowledge memory: tables, SQL API and row-level security';

grant usage on schema vera to vera_app, vera_worker, vera_gateway, vera_operator;

-- vera_owner may hand vera_resolver the functions it must own (role
-- attributes such as BYPASSRLS are never inherited through membership)
grant vera_resolver to vera_owner with inherit true;
grant create, usage on schema vera to vera_resolver;
grant vera_searcher to vera_owner with inherit true;
grant create, usage on schema vera to vera_searcher;

-- Nothing vera_owner creates is callable by PUBLIC; each function's file in
-- sql/functions grants it to the roles that need it, beside its definition.
alter default privileges for role vera_owner revoke execute on functions from public;

-- Advisory locks are one keyspace for the whole database: a connection that
-- may take them could hold every bucket VERA's writers serialise on (they
-- take 1024 per-history buckets) and stall every tenant. Only vera_owner, as
-- whom the SQL API's definer functions run, may take them; the login roles
-- may not (a superuser, such as the migration runner, always may).
do $advisory$
declare
    f regprocedure;
begin
    for f in
        select p.oid::regprocedure from pg_catalog.pg_proc p
         where p.pronamespace = 'pg_catalog'::regnamespace and p.proname like '%advisory%'
    loop
        execute format('revoke execute on function %s from public', f);
        execute format('grant execute on function %s to vera_owner', f);
    end loop;
end
$advisory$;
