-- Authentication: an API key (any application), or a principal that a
-- trusted server role has verified itself (the HTTP/MCP gateway, workers).
-- Both compute the caller's groups once and store them for the transaction.
set role vera_owner;

-- Effective role of a principal in every group it reaches: a membership
-- applies to the group and all of its descendants; the highest role wins.
create or replace function vera.effective_roles(principal uuid)
returns table (group_id text, role vera.member_role)
language sql stable security definer
set search_path = vera, pg_temp
as $$
    with recursive reach(group_id, role) as (
        select m.group_id, m.role
        from vera.memberships m
        where m.principal_id = principal
        union all
        select g.group_id, r.role
        from reach r
        join vera.groups g on g.parent_group_id = r.group_id
    )
    select reach.group_id, max(reach.role)
    from reach
    group by reach.group_id
$$;
comment on function vera.effective_roles(uuid) is
    'Groups a principal reaches through memberships (inherited by descendants) with its highest role';

-- Effective role of the authenticated caller in one group, or null.
create or replace function vera.role_in(target_group text)
returns vera.member_role
language sql stable security definer
set search_path = vera, pg_temp
as $$
    select e.role from vera.effective_roles(vera.current_principal()) e where e.group_id = target_group
$$;
comment on function vera.role_in(text) is 'Effective role of the authenticated caller in a group, or null';
grant execute on function vera.role_in(text) to vera_app, vera_worker, vera_gateway;

-- The operator's limits of the session's login, applied to the current
-- transaction (issue 27). A role may change its own defaults for good
-- (`alter role current_user [in database ...] set statement_timeout = 0`,
-- PostgreSQL lets every role do so), so the login's role settings are not
-- what binds it: the operator's values are a setting of the database
-- (`alter database ... set "vera_login.<role>" = 'statement_timeout=30s,...'`,
-- which only the database's owner or a superuser may write; logins.py writes
-- it), read here from the catalog, not from the session, and set for the
-- transaction. Only the names listed here are applied. row_security is on
-- whatever the session says. A transaction may still `set local` after
-- authenticating: these bind what a login's defaults can change, not a
-- hostile statement in the transaction itself (docs/operations.md).
create or replace function vera.apply_login_limits()
returns void
language plpgsql volatile
set search_path = pg_catalog, pg_temp
as $$
declare
    entry text;
    limit_pair text[];
begin
    perform set_config('row_security', 'on', true);
    select substr(s.setting, length('vera_login.' || session_user || '=') + 1) into entry
      from pg_catalog.pg_db_role_setting d
     cross join unnest(d.setconfig) s(setting)
     where d.setrole = 0
       and d.setdatabase = (select oid from pg_catalog.pg_database where datname = current_database())
       and starts_with(s.setting, 'vera_login.' || session_user || '=');
    if entry is null then
        return;
    end if;
    for limit_pair in select regexp_match(p, '^\s*([a-z_]+)\s*=\s*(\S+)\s*$') from unnest(string_to_array(entry, ',')) p loop
        if limit_pair[1] in ('statement_timeout', 'idle_in_transaction_session_timeout', 'lock_timeout', 'work_mem') then
            perform set_config(limit_pair[1], limit_pair[2], true);
        end if;
    end loop;
end
$$;
comment on function vera.apply_login_limits() is
    'Internal: sets the operator''s limits of the session''s login (a database setting) for the transaction';

create or replace function vera.set_auth_context(principal uuid, key uuid)
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    roles record;
begin
    -- the context is a row of vera.auth_context, which a read-only transaction may not write
    if current_setting('transaction_read_only')::boolean then
        raise exception 'authentication records the caller for this transaction, which a READ ONLY transaction cannot: begin it READ WRITE (a read-only standby cannot authenticate)'
            using errcode = '25000';
    end if;
    if not exists (select from vera.principals p where p.principal_id = principal and p.disabled_at is null) then
        raise exception 'principal % is unknown or disabled', principal using errcode = 'VA006';
    end if;

    select coalesce(array_agg(e.group_id order by e.group_id), '{}') as readable,
           coalesce(array_agg(e.group_id order by e.group_id) filter (where e.role >= 'member'), '{}') as writable,
           coalesce(array_agg(e.group_id order by e.group_id) filter (where e.role >= 'admin'), '{}') as administrable
      into roles
      from vera.effective_roles(principal) e;

    insert into vera.auth_context as c
        (backend_pid, xact_id, principal_id, key_id, readable, writable, administrable)
    values (pg_catalog.pg_backend_pid(), pg_catalog.pg_current_xact_id(), principal, key,
            roles.readable, roles.writable, roles.administrable)
    on conflict (backend_pid) do update
        set xact_id = excluded.xact_id,
            principal_id = excluded.principal_id,
            key_id = excluded.key_id,
            readable = excluded.readable,
            writable = excluded.writable,
            administrable = excluded.administrable;
end
$$;
comment on function vera.set_auth_context(uuid, uuid) is
    'Internal: records the caller and its groups for the current transaction only';

-- Recompute the current transaction's groups after a change to the caller's
-- own reach (a group it created, a membership it changed).
create or replace function vera.refresh_auth_context()
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    context vera.auth_context;
begin
    select * into context from vera.auth_context c
     where c.backend_pid = pg_catalog.pg_backend_pid()
       and c.xact_id = pg_catalog.pg_current_xact_id_if_assigned();
    if found then
        perform vera.set_auth_context(context.principal_id, context.key_id);
    end if;
end
$$;
comment on function vera.refresh_auth_context() is
    'Internal: recomputes the caller''s groups for the rest of the transaction';

-- Contract: authenticates an API key of the form vera_<12 hex>_<43 base64url>
-- for the current transaction and returns the caller's principal id.
-- Errors: VA001 malformed, VA002 not recognised, VA003 revoked, VA004 expired,
-- VA006 principal disabled. Outside a transaction block the context ends with
-- the statement, so call it first inside BEGIN ... COMMIT.
create or replace function vera.authenticate(api_key text)
returns uuid
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    parts text[];
    key_row vera.api_keys;
begin
    perform vera.apply_login_limits();
    parts := pg_catalog.regexp_match(api_key, '^vera_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$');
    if parts is null then
        raise exception 'malformed API key: expected vera_<12 hex>_<43 base64url characters>'
            using errcode = 'VA001';
    end if;

    select * into key_row from vera.api_keys k where k.prefix = parts[1];
    -- the same answer for an unknown prefix and a wrong secret: a prefix alone proves nothing
    if not found or key_row.key_sha256 <> pg_catalog.sha256(pg_catalog.convert_to(api_key, 'UTF8')) then
        raise exception 'API key not recognised' using errcode = 'VA002';
    end if;
    if key_row.revoked_at is not null then
        raise exception 'API key % was revoked at %', key_row.prefix, key_row.revoked_at
            using errcode = 'VA003';
    end if;
    if key_row.expires_at is not null and key_row.expires_at <= pg_catalog.now() then
        raise exception 'API key % expired at %', key_row.prefix, key_row.expires_at
            using errcode = 'VA004';
    end if;

    perform vera.set_auth_context(key_row.principal_id, key_row.key_id);
    -- last_used_at is advisory; at most one write a minute per key keeps hot keys
    -- cheap, and a row another transaction is stamping is skipped, not waited
    -- for: concurrent requests with one key must never queue behind each other.
    -- It lives apart from vera.api_keys, whose row this lock would otherwise
    -- hold until the caller's transaction ends, stalling a revocation.
    update vera.api_key_usage u set last_used_at = pg_catalog.now()
     where u.key_id = (select h.key_id from vera.api_key_usage h
                        where h.key_id = key_row.key_id
                          and (h.last_used_at is null or h.last_used_at < pg_catalog.now() - interval '1 minute')
                          for update skip locked);
    return key_row.principal_id;
end
$$;
comment on function vera.authenticate(text) is
    'Authenticates an API key for the current transaction; returns the principal id';
grant execute on function vera.authenticate(text) to vera_app, vera_worker, vera_gateway;

-- Contract: for trusted server roles only (vera_gateway, vera_worker), which
-- verified the caller themselves (OAuth token, job payload). Sets the same
-- transaction-local context as vera.authenticate.
create or replace function vera.authenticate_principal(principal uuid)
returns uuid
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.apply_login_limits();
    if principal is null then
        raise exception 'principal id must not be null' using errcode = '22004';
    end if;
    perform vera.set_auth_context(principal, null);
    return principal;
end
$$;
comment on function vera.authenticate_principal(uuid) is
    'Trusted server roles only: act as an already verified principal for the current transaction';
grant execute on function vera.authenticate_principal(uuid) to vera_gateway, vera_worker;

reset role;
