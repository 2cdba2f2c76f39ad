-- Offboarding a person: an admin disables a principal (every API key and
-- every OIDC login of it refused from the next transaction on: vera.authenticate,
-- authenticate_principal and principal_for_identity check principals.disabled_at,
-- VA006), enables it again, and lists and revokes (never issues) a member's keys.
-- Every action is audited in the groups it concerns.
set role vera_owner;

-- Internal: the principal as the caller may act on it. VN001 when it is unknown
-- or shares no group the caller can read (another tenant's principal reads as
-- unknown); 42501 unless the caller administers every group it is a direct
-- member of (its personal scope aside), holding there at least its role.
create or replace function vera.administered_principal(principal uuid)
returns vera.principals
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    target vera.principals;
begin
    perform vera.require_principal();
    select * into target from vera.principals p where p.principal_id = principal;
    if not found or not exists (
        select from vera.memberships m
         where m.principal_id = target.principal_id and m.group_id <> target.personal_group_id
           and m.group_id = any (vera.readable_groups())) then
        raise exception 'unknown principal %', principal using errcode = 'VN001';
    end if;
    if not vera.administers_principal(target.principal_id) then
        raise exception 'permission denied: you must administer every group of principal % (at least at its role)',
            principal using errcode = '42501';
    end if;
    return target;
end
$$;
comment on function vera.administered_principal(uuid) is
    'Internal: a principal the caller administers in every one of its groups; VN001 unknown, 42501 otherwise';

-- Contract: disables a principal (admins of every group it belongs to): from
-- the next transaction on, none of its API keys and none of its OIDC logins
-- authenticates (VA006). Refused with VP001 when it is the last owner of a
-- group who could still sign in, and with 22023 for the caller itself.
-- False when it was already disabled.
create or replace function vera.disable_principal(principal_id uuid, reason text default null)
returns boolean
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    target vera.principals;
    orphaned text;
    theirs text[];
begin
    perform vera.check_length(reason, 'reason', 2000);
    target := vera.administered_principal(disable_principal.principal_id);
    if target.principal_id = vera.current_principal() then
        raise exception 'you cannot disable yourself' using errcode = '22023';
    end if;
    -- the principal's row first, then its groups' owner rows in one order (as keep_an_owner)
    perform from vera.principals p where p.principal_id = target.principal_id for update;
    select coalesce(array_agg(m.group_id order by m.group_id), '{}') into theirs
      from vera.memberships m
     where m.principal_id = target.principal_id and m.group_id <> target.personal_group_id;
    perform from vera.memberships m
     where m.group_id = any (theirs) and m.role = 'owner'
     order by m.group_id, m.principal_id
       for update of m;
    select m.group_id into orphaned
      from vera.memberships m
     where m.principal_id = target.principal_id and m.role = 'owner' and m.group_id = any (theirs)
       and not exists (select from vera.memberships o
                         join vera.principals op on op.principal_id = o.principal_id
                        where o.group_id = m.group_id and o.role = 'owner'
                          and o.principal_id <> target.principal_id and op.disabled_at is null)
     order by m.group_id
     limit 1;
    if orphaned is not null then
        raise exception 'principal % is the last owner of % who can sign in: make another owner first',
            target.principal_id, orphaned using errcode = 'VP001';
    end if;
    if target.disabled_at is not null then
        return false;
    end if;
    update vera.principals p set disabled_at = now() where p.principal_id = target.principal_id;
    perform vera.audit(g, 'principal.disable', 'principal', target.principal_id::text,
                       jsonb_build_object('reason', reason))
       from unnest(theirs) g;
    return true;
end
$$;
comment on function vera.disable_principal(uuid, text) is
    'Disables a principal (every key and OIDC login refused); admins of all its groups; the last owner is kept';
grant execute on function vera.disable_principal(uuid, text) to vera_app, vera_worker, vera_gateway;

-- Contract: enables a disabled principal again (admins of every group it
-- belongs to). Its keys that were not revoked work again. False when it was
-- not disabled.
create or replace function vera.enable_principal(principal_id uuid, reason text default null)
returns boolean
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    target vera.principals;
begin
    perform vera.check_length(reason, 'reason', 2000);
    target := vera.administered_principal(enable_principal.principal_id);
    update vera.principals p set disabled_at = null
     where p.principal_id = target.principal_id and p.disabled_at is not null;
    if not found then
        return false;
    end if;
    perform vera.audit(m.group_id, 'principal.enable', 'principal', target.principal_id::text,
                       jsonb_build_object('reason', reason))
       from vera.memberships m
      where m.principal_id = target.principal_id and m.group_id <> target.personal_group_id;
    return true;
end
$$;
comment on function vera.enable_principal(uuid, text) is
    'Enables a disabled principal again; admins of all its groups';
grant execute on function vera.enable_principal(uuid, text) to vera_app, vera_worker, vera_gateway;

-- Internal: a direct member of a group the caller administers, whose groups in
-- that organisation the caller all administers at least at its role (a key acts
-- in all of them). VN001 when it is no member of the group; 42501 otherwise.
create or replace function vera.administered_member(target_group text, principal uuid)
returns void
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(target_group, 'admin');
    if not exists (select from vera.memberships m join vera.principals p on p.principal_id = m.principal_id
                    where m.group_id = target_group and m.principal_id = principal
                      and m.group_id <> p.personal_group_id) then
        raise exception 'no member % in group %', principal, vera.shown(target_group) using errcode = 'VN001';
    end if;
    if not vera.administers_principal(principal, target_group) then
        raise exception 'permission denied: you must administer every group of member % in this organisation (at least at its role)',
            principal using errcode = '42501';
    end if;
end
$$;
comment on function vera.administered_member(text, uuid) is
    'Internal: a member of the group whose groups of this organisation the caller administers; VN001/42501 otherwise';

-- Contract: the API keys of a member of a group the caller administers (no
-- secret material); audited.
create or replace function vera.list_member_keys(group_id text, principal_id uuid)
returns table (key_id uuid, prefix text, name text, created_at timestamptz,
               expires_at timestamptz, revoked_at timestamptz, last_used_at timestamptz)
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.administered_member(list_member_keys.group_id, list_member_keys.principal_id);
    perform vera.audit(list_member_keys.group_id, 'member_key.list', 'principal',
                       list_member_keys.principal_id::text, '{}');
    return query select * from vera.keys_of(list_member_keys.principal_id);
end
$$;
comment on function vera.list_member_keys(text, uuid) is
    'The API keys of a member of a group the caller administers (no secrets)';
grant execute on function vera.list_member_keys(text, uuid) to vera_app, vera_worker, vera_gateway;

-- Contract: revokes a member's key (by id or prefix), at once and for good;
-- admins as list_member_keys. VN001 for a key of no member of the group.
-- False when it was already revoked. Issuing a member's key stays its own.
create or replace function vera.revoke_member_key(group_id text, key text)
returns boolean
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    target vera.api_keys;
begin
    perform vera.require_role(revoke_member_key.group_id, 'admin');
    perform vera.check_length(key, 'key', 100);
    select * into target from vera.api_keys k
     where k.prefix = revoke_member_key.key or k.key_id::text = revoke_member_key.key
     for update;
    if not found or not exists (select from vera.memberships m
                                 where m.group_id = revoke_member_key.group_id
                                   and m.principal_id = target.principal_id) then
        raise exception 'no API key % of a member of %', vera.shown(key), vera.shown(revoke_member_key.group_id)
            using errcode = 'VN001';
    end if;
    perform vera.administered_member(revoke_member_key.group_id, target.principal_id);
    if target.revoked_at is not null then
        return false;
    end if;
    update vera.api_keys k set revoked_at = now() where k.key_id = target.key_id;
    perform vera.audit(revoke_member_key.group_id, 'member_key.revoke', 'api_key', target.prefix,
                       jsonb_build_object('principal', target.principal_id));
    return true;
end
$$;
comment on function vera.revoke_member_key(text, text) is
    'Revokes an API key of a member of a group the caller administers';
grant execute on function vera.revoke_member_key(text, text) to vera_app, vera_worker, vera_gateway;

reset role;
