-- Privileges on the database itself (issue 27). Logins belong to the whole
-- cluster, and PostgreSQL grants CONNECT and TEMPORARY on every new
-- database to PUBLIC: a login made for one tenant's database could connect
-- to another's on the same cluster and list its functions and index names,
-- and could create temporary tables (objects of its own, in a schema of its
-- own, that outlive its statements). So PUBLIC gets neither; the worker and
-- the gateway (VERA's own server processes) may connect, and each
-- application login is granted CONNECT on the database it was made for
-- (python/vera_client/adapters/postgres/logins.py). No VERA role needs
-- TEMPORARY: the SQL API keeps its working state in arrays
-- (sql/schema/010_types.sql), and the migrations run as the database's owner.
--
-- Run by the role that migrates (a superuser or the database's owner: only
-- they may grant on the database; anyone else gets a warning and changes
-- nothing). Idempotent.
do $database$
begin
    execute format('revoke connect, temporary on database %I from public', current_database());
    execute format('grant connect on database %I to vera_worker, vera_gateway', current_database());
end
$database$;
