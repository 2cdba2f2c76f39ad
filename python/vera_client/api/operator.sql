-- Named queries of vera_client.api.operator: operator work on an operator connection (no caller; row-level security does not apply).
-- Each starts with "-- name: NAME" and a one-line description (api/queries.py loads them).

-- name: create_tenant
-- Operator: a new organisation, its owner and the owner's first API key.
select *
from vera.create_tenant(%(organisation)s, %(owner)s, %(email)s);

-- name: find_tenant_owner
-- Operator (bypasses RLS as a superuser): the oldest organisation of that name and its first owner.
select g.group_id, m.principal_id
from vera.groups g
join vera.memberships m on m.group_id = g.group_id and m.role = 'owner'
where g.kind = 'organisation' and g.name = %(organisation)s
order by g.created_at, m.granted_at
limit 1;

-- name: revoke_all_keys
-- Operator: revokes every live key of a principal.
update vera.api_keys set revoked_at = now()
where principal_id = %(principal)s and revoked_at is null;

-- name: issue_key
-- Operator: a new key for a principal, returned once.
select api_key from vera.issue_api_key(%(principal)s, %(name)s, null);

-- name: add_source_root
-- Operator: lets an organisation's folder sources lie at or below a folder; the organisation's id.
select vera.add_source_root(%(organisation)s, %(root)s);

-- name: remove_source_root
-- Operator: withdraws a folder from an organisation's source roots; whether it was there.
select vera.remove_source_root(%(organisation)s, %(root)s);

-- name: list_source_roots
-- Operator: the folders each organisation's folder sources may lie in (one organisation, or all).
select *
from vera.list_source_roots(%(organisation)s);

-- name: read_path_installed
-- Whether vera.missing_vector_indexes exists (not before the first migrate).
select to_regprocedure('vera.missing_vector_indexes(integer)') is not null;

-- name: missing_vector_indexes
-- Per-group HNSW indexes that are due, with the statements that build them.
select *
from vera.missing_vector_indexes(%(min_rows)s);

-- name: app_login_exists
-- Operator: one row when a role of that name exists, saying whether it is an application login (a member of vera_app).
select exists (select from pg_catalog.pg_auth_members m
                where m.member = r.oid and m.roleid = 'vera_app'::regrole) as app_login
from pg_catalog.pg_roles r
where r.rolname = %(role)s;

-- name: app_logins
-- Operator: every application login (a direct member of vera_app), its limits and its sessions now.
-- The limits are the operator's (this database's setting vera_login.<role>, which vera.authenticate
-- applies), else the role's own settings (a login made before them, which the login may change).
select r.rolname, r.rolcanlogin, r.rolconnlimit,
       coalesce((select 'statement_timeout=' || substring(s.setting from '[=,]statement_timeout=([^,]*)')
                   from pg_catalog.pg_db_role_setting d, unnest(d.setconfig) s(setting)
                  where d.setrole = 0 and d.setdatabase = (select oid from pg_catalog.pg_database
                                                           where datname = current_database())
                    and starts_with(s.setting, 'vera_login.' || r.rolname || '=')),
                (select s.setting from pg_catalog.pg_db_role_setting d, unnest(d.setconfig) s(setting)
                  where d.setrole = r.oid and d.setdatabase = 0 and s.setting like 'statement\_timeout=%%'))
           as statement_timeout,
       coalesce((select 'idle_in_transaction_session_timeout='
                        || substring(s.setting from '[=,]idle_in_transaction_session_timeout=([^,]*)')
                   from pg_catalog.pg_db_role_setting d, unnest(d.setconfig) s(setting)
                  where d.setrole = 0 and d.setdatabase = (select oid from pg_catalog.pg_database
                                                           where datname = current_database())
                    and starts_with(s.setting, 'vera_login.' || r.rolname || '=')),
                (select s.setting from pg_catalog.pg_db_role_setting d, unnest(d.setconfig) s(setting)
                  where d.setrole = r.oid and d.setdatabase = 0
                    and s.setting like 'idle\_in\_transaction\_session\_timeout=%%')) as idle_timeout,
       (select count(*) from pg_catalog.pg_stat_activity a where a.usesysid = r.oid) as sessions
from pg_catalog.pg_roles r
join pg_catalog.pg_auth_members m on m.member = r.oid and m.roleid = 'vera_app'::regrole
order by r.rolname;

-- name: app_login_databases
-- Operator: the databases on which a role holds privileges of its own (CONNECT for a login).
select d.datname
from pg_catalog.pg_database d, pg_catalog.aclexplode(d.datacl) a
where a.grantee = %(role)s::regrole
group by d.datname
order by d.datname;

-- name: end_app_login_sessions
-- Operator: ends every session of an application login, waiting up to 5 s for each; how many were ended.
select count(*) filter (where pg_catalog.pg_terminate_backend(a.pid, 5000))
from pg_catalog.pg_stat_activity a
where a.usename = %(role)s and a.pid <> pg_catalog.pg_backend_pid();
