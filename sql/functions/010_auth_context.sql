-- The caller's identity for the current transaction, as row-level security
-- sees it. Policies call these through a scalar subquery so that each is
-- evaluated once per statement, not once per row.
--
-- They are SECURITY DEFINER because vera.auth_context is not readable by the
-- application roles; they return nothing but the caller's own row.
-- The row counts only in the top-level transaction that wrote it (writing it
-- assigned the transaction id); a transaction that has no id yet cannot be it.
set role vera_owner;

create or replace function vera.current_principal()
returns uuid
language sql stable security definer
set search_path = vera, pg_temp
as $$
    select principal_id
    from vera.auth_context
    where backend_pid = pg_catalog.pg_backend_pid()
      and xact_id = pg_catalog.pg_current_xact_id_if_assigned()
$$;
comment on function vera.current_principal() is
    'Principal the current transaction authenticated as, or null';
-- row-level security's policies call it, as whoever they apply to
grant execute on function vera.current_principal() to public;

create or replace function vera.readable_groups()
returns text[]
language sql stable security definer
set search_path = vera, pg_temp
as $$
    select coalesce((
        select readable
        from vera.auth_context
        where backend_pid = pg_catalog.pg_backend_pid()
          and xact_id = pg_catalog.pg_current_xact_id_if_assigned()), '{}')
$$;
comment on function vera.readable_groups() is
    'Groups the current transaction may read (any role); empty when unauthenticated';
-- row-level security's policies call it, as whoever they apply to
grant execute on function vera.readable_groups() to public;

create or replace function vera.writable_groups()
returns text[]
language sql stable security definer
set search_path = vera, pg_temp
as $$
    select coalesce((
        select writable
        from vera.auth_context
        where backend_pid = pg_catalog.pg_backend_pid()
          and xact_id = pg_catalog.pg_current_xact_id_if_assigned()), '{}')
$$;
comment on function vera.writable_groups() is
    'Groups the current transaction may write (member or above); empty when unauthenticated';
-- row-level security's policies call it, as whoever they apply to
grant execute on function vera.writable_groups() to public;

create or replace function vera.administrable_groups()
returns text[]
language sql stable security definer
set search_path = vera, pg_temp
as $$
    select coalesce((
        select administrable
        from vera.auth_context
        where backend_pid = pg_catalog.pg_backend_pid()
          and xact_id = pg_catalog.pg_current_xact_id_if_assigned()), '{}')
$$;
comment on function vera.administrable_groups() is
    'Groups the current transaction administers (admin or owner); empty when unauthenticated';
-- row-level security's policies call it, as whoever they apply to
grant execute on function vera.administrable_groups() to public;

-- Raise VA005 unless the transaction has authenticated; returns the principal.
create or replace function vera.require_principal()
returns uuid
language plpgsql stable
set search_path = vera, pg_temp
as $$
declare
    caller uuid := vera.current_principal();
begin
    if caller is null then
        raise exception 'not authenticated: call vera.authenticate(api_key) first, in the same transaction'
            using errcode = 'VA005';
    end if;
    return caller;
end
$$;
comment on function vera.require_principal() is
    'The authenticated principal of this transaction; raises VA005 when there is none';
grant execute on function vera.require_principal() to vera_app, vera_worker, vera_gateway;

-- Raise 42501 unless the caller holds at least min_role in the group.
create or replace function vera.require_role(target_group text, min_role vera.member_role)
returns void
language plpgsql stable
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_principal();
    if target_group is null
       or not target_group = any (case min_role
            when 'viewer' then vera.readable_groups()
            when 'member' then vera.writable_groups()
            else vera.administrable_groups() end)
       or (min_role = 'owner' and vera.role_in(target_group) < 'owner') then
        raise exception 'permission denied: % role required in group %', min_role, coalesce(vera.shown(target_group), '(none)')
            using errcode = '42501';
    end if;
end
$$;
comment on function vera.require_role(text, vera.member_role) is
    'Raises 42501 unless the authenticated caller holds min_role (or above) in the group';
grant execute on function vera.require_role(text, vera.member_role) to vera_app, vera_worker, vera_gateway;

reset role;
