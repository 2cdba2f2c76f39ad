-- Provisioning: tenants (organisations), nested groups, principals and
-- memberships. Each function checks the caller's role itself and audits.
set role vera_owner;

-- Internal: a principal with its personal u: scope, where it is owner.
create or replace function vera.insert_principal(
    kind vera.principal_kind, display_name text, email text
)
returns uuid
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    personal text := vera.new_group_id('personal');
    principal uuid;
begin
    if kind is null then
        raise exception 'principal kind must be given' using errcode = '22023';
    end if;
    if coalesce(btrim(display_name), '') = '' then
        raise exception 'display_name must not be empty' using errcode = '22023';
    end if;
    if char_length(btrim(display_name)) > 200 then
        raise exception 'display_name is over 200 characters' using errcode = '22001';
    end if;
    if char_length(btrim(email)) > 320 then
        raise exception 'email is over 320 characters' using errcode = '22001';
    end if;
    if nullif(btrim(email), '') !~ '^[^@\s]+@[^@\s]+$' then
        raise exception 'email % is not an address', vera.shown(email) using errcode = '22023';
    end if;
    insert into vera.groups (group_id, kind, name)
    values (personal, 'personal', 'personal: ' || btrim(display_name));
    insert into vera.principals (kind, display_name, email, personal_group_id)
    values (kind, btrim(display_name), nullif(btrim(email), ''), personal)
    returning principal_id into principal;
    insert into vera.memberships (group_id, principal_id, role) values (personal, principal, 'owner');
    return principal;
end
$$;
comment on function vera.insert_principal(vera.principal_kind, text, text) is
    'Internal: creates a principal and its personal scope';

-- Contract (operators only): creates an organisation, its first owner and an
-- API key for that owner. The key is returned here once and never again.
create or replace function vera.create_tenant(
    organisation_name text, owner_name text, owner_email text default null
)
returns table (group_id text, principal_id uuid, api_key text)
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    org text := vera.new_group_id('organisation');
    owner_id uuid;
    issued record;
begin
    if coalesce(btrim(organisation_name), '') = '' or coalesce(btrim(owner_name), '') = '' then
        raise exception 'organisation_name and owner_name must not be empty' using errcode = '22023';
    end if;
    insert into vera.groups (group_id, kind, name) values (org, 'organisation', btrim(organisation_name));
    owner_id := vera.insert_principal('user', owner_name, owner_email);
    insert into vera.memberships (group_id, principal_id, role) values (org, owner_id, 'owner');
    select * into issued from vera.issue_api_key(owner_id, 'initial key', null);
    insert into vera.audit_log (group_id, principal_id, action, target_kind, target_id, detail)
    values (org, owner_id, 'tenant.create', 'group', org,
            jsonb_build_object('owner', owner_id, 'operator', session_user));
    return query select org, owner_id, issued.api_key;
end
$$;
comment on function vera.create_tenant(text, text, text) is
    'Operators: creates an organisation with its owner and returns the owner''s first API key once';
grant execute on function vera.create_tenant(text, text, text) to vera_operator;

-- Contract: creates a workspace (under an organisation) or a project (under an
-- organisation or workspace). Requires admin in the parent. Returns the new id.
create or replace function vera.create_group(parent_group_id text, kind vera.group_kind, name text)
returns text
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    parent_kind vera.group_kind;
    new_id text;
begin
    perform vera.require_role(create_group.parent_group_id, 'admin');
    if create_group.kind is null or create_group.kind not in ('workspace', 'project') then
        raise exception 'only workspaces and projects can be created inside a group, not %', create_group.kind
            using errcode = '22023';
    end if;
    select g.kind into parent_kind from vera.groups g where g.group_id = create_group.parent_group_id;
    if parent_kind = 'personal' or (create_group.kind = 'workspace' and parent_kind <> 'organisation')
       or (create_group.kind = 'project' and parent_kind = 'project') then
        raise exception 'a % cannot be created inside a %', create_group.kind, parent_kind using errcode = '22023';
    end if;
    if coalesce(btrim(create_group.name), '') = '' then
        raise exception 'group name must not be empty' using errcode = '22023';
    end if;
    if char_length(btrim(create_group.name)) > 200 then
        raise exception 'group name is over 200 characters' using errcode = '22001';
    end if;
    new_id := vera.new_group_id(create_group.kind);
    insert into vera.groups (group_id, kind, parent_group_id, name)
    values (new_id, create_group.kind, create_group.parent_group_id, btrim(create_group.name));
    perform vera.audit(create_group.parent_group_id, 'group.create', 'group', new_id,
                       jsonb_build_object('kind', create_group.kind));
    perform vera.refresh_auth_context();
    return new_id;
end
$$;
comment on function vera.create_group(text, vera.group_kind, text) is
    'Creates a workspace or project under a group the caller administers';
grant execute on function vera.create_group(text, vera.group_kind, text) to vera_app, vera_worker, vera_gateway;

-- Internal: the organisation (or personal scope) at the top of a group's tree.
create or replace function vera.root_group(of_group text)
returns text
language sql stable security definer
set search_path = vera, pg_temp
as $$
    with recursive up(group_id, parent_group_id) as (
        select g.group_id, g.parent_group_id from vera.groups g where g.group_id = of_group
        union all
        select g.group_id, g.parent_group_id from up join vera.groups g on g.group_id = up.parent_group_id
    )
    select up.group_id from up where up.parent_group_id is null
$$;
comment on function vera.root_group(text) is 'Internal: the organisation or personal scope a group belongs to';

-- Internal: true when the caller administers every group the principal is a
-- direct member of (its own personal scope aside), holding there at least the
-- principal's role: acting on the principal can then give the caller nothing
-- it does not already hold. With `within`, only the principal's groups in the
-- same organisation count (a role is changed inside one tenant, and what a
-- principal holds in another tenant must neither block nor widen that);
-- without it, every group counts (a key acts in all of them), and there must
-- be one.
create or replace function vera.administers_principal(principal uuid, within text default null)
returns boolean
language sql stable security definer
set search_path = vera, pg_temp
as $$
    with theirs as (
        select m.group_id, m.role
        from vera.memberships m
        join vera.principals p on p.principal_id = m.principal_id
        where m.principal_id = principal and m.group_id <> p.personal_group_id
          and (within is null or vera.root_group(m.group_id) = vera.root_group(within))
    )
    select (within is not null or exists (select from theirs))
       and not exists (
            select from theirs t
              left join vera.effective_roles(vera.current_principal()) mine on mine.group_id = t.group_id
             where mine.role is null or mine.role < 'admin' or mine.role < t.role)
$$;
comment on function vera.administers_principal(uuid, text) is
    'Internal: the caller administers every group of the principal (within one tenant, if given), at least at its role';

-- Internal: raises 42501 when taking the owner role in a group from the
-- principal would leave the group without a direct owner. Locks the group's
-- owner rows, in one order, so two owners cannot each remove the other.
create or replace function vera.keep_an_owner(target_group text, principal uuid)
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    perform from vera.memberships m
     where m.group_id = target_group and m.role = 'owner'
     order by m.principal_id
       for update;
    if exists (select from vera.memberships m
                where m.group_id = target_group and m.principal_id = principal and m.role = 'owner')
       and not exists (select from vera.memberships m
                        where m.group_id = target_group and m.role = 'owner' and m.principal_id <> principal) then
        raise exception 'cannot remove or demote the last owner of %', target_group using errcode = '42501';
    end if;
end
$$;
comment on function vera.keep_an_owner(text, uuid) is
    'Internal: raises 42501 unless the group keeps a direct owner without the principal';

-- Contract: creates a user or service account as a member of a group the
-- caller administers, with a role no higher than the caller's own.
create or replace function vera.create_principal(
    group_id text, kind vera.principal_kind, display_name text,
    role vera.member_role default 'member', email text default null
)
returns uuid
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    new_id uuid;
begin
    perform vera.require_role(create_principal.group_id, 'admin');
    if role is null then
        raise exception 'role must be given' using errcode = '22023';
    end if;
    if role > vera.role_in(create_principal.group_id) then
        raise exception 'cannot grant % in % while holding %', role, create_principal.group_id,
            vera.role_in(create_principal.group_id) using errcode = '42501';
    end if;
    if coalesce(btrim(display_name), '') = '' then
        raise exception 'display_name must not be empty' using errcode = '22023';
    end if;
    new_id := vera.insert_principal(kind, display_name, email);
    insert into vera.memberships (group_id, principal_id, role, granted_by)
    values (create_principal.group_id, new_id, role, vera.current_principal());
    perform vera.audit(create_principal.group_id, 'principal.create', 'principal', new_id::text,
                       jsonb_build_object('kind', kind, 'role', role));
    return new_id;
end
$$;
comment on function vera.create_principal(text, vera.principal_kind, text, vera.member_role, text) is
    'Creates a user or service account as a member of a group the caller administers';
grant execute on function vera.create_principal(text, vera.principal_kind, text, vera.member_role, text)
    to vera_app, vera_worker, vera_gateway;

-- Contract: grants (or changes) a principal's role in a group the caller
-- administers. The principal must already belong to a group the caller reads,
-- so principals of other tenants cannot be probed or pulled in, and the caller
-- must administer every group of this organisation the principal belongs to,
-- at least at its role there (42501). The last direct owner of a group cannot
-- be demoted.
create or replace function vera.set_member_role(group_id text, principal_id uuid, role vera.member_role)
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(set_member_role.group_id, 'admin');
    if role is null then
        raise exception 'role must be given' using errcode = '22023';
    end if;
    if role > vera.role_in(set_member_role.group_id) then
        raise exception 'cannot grant % in % while holding %', role, set_member_role.group_id,
            vera.role_in(set_member_role.group_id) using errcode = '42501';
    end if;
    if not exists (select from vera.memberships m
                    where m.principal_id = set_member_role.principal_id
                      and m.group_id = any (vera.readable_groups())
                      and m.group_id not like 'u:%') then
        raise exception 'principal % not found in any group you can read', set_member_role.principal_id
            using errcode = 'VN001';
    end if;
    if not vera.administers_principal(set_member_role.principal_id, set_member_role.group_id) then
        raise exception 'permission denied: principal % is a member of groups here you do not administer at its role',
            set_member_role.principal_id using errcode = '42501';
    end if;
    if role < 'owner' then
        perform vera.keep_an_owner(set_member_role.group_id, set_member_role.principal_id);
    end if;
    insert into vera.memberships as m (group_id, principal_id, role, granted_by)
    values (set_member_role.group_id, set_member_role.principal_id, role, vera.current_principal())
    on conflict on constraint memberships_pkey do update
        set role = excluded.role, granted_by = excluded.granted_by, granted_at = now();
    perform vera.audit(set_member_role.group_id, 'membership.set', 'principal',
                       set_member_role.principal_id::text, jsonb_build_object('role', role));
    perform vera.refresh_auth_context();
end
$$;
comment on function vera.set_member_role(text, uuid, vera.member_role) is
    'Grants or changes a principal''s role in a group the caller administers';
grant execute on function vera.set_member_role(text, uuid, vera.member_role) to vera_app, vera_worker, vera_gateway;

-- Contract: removes a principal from a group the caller administers.
-- An owner can only be removed by an owner; a group keeps at least one owner
-- among its direct members if it had one.
create or replace function vera.remove_member(group_id text, principal_id uuid)
returns boolean
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    removed_role vera.member_role;
begin
    perform vera.require_role(remove_member.group_id, 'admin');
    -- the group's owner rows first, then the member's, as set_member_role does
    perform vera.keep_an_owner(remove_member.group_id, remove_member.principal_id);
    select m.role into removed_role from vera.memberships m
     where m.group_id = remove_member.group_id and m.principal_id = remove_member.principal_id
       for update;
    if not found then
        return false;
    end if;
    if remove_member.group_id like 'u:%' then
        raise exception 'a personal scope keeps its owner' using errcode = '42501';
    end if;
    if removed_role = 'owner' then
        perform vera.require_role(remove_member.group_id, 'owner');
    end if;
    delete from vera.memberships m
     where m.group_id = remove_member.group_id and m.principal_id = remove_member.principal_id;
    perform vera.audit(remove_member.group_id, 'membership.remove', 'principal',
                       remove_member.principal_id::text, jsonb_build_object('role', removed_role));
    perform vera.refresh_auth_context();
    return true;
end
$$;
comment on function vera.remove_member(text, uuid) is 'Removes a principal from a group the caller administers';
grant execute on function vera.remove_member(text, uuid) to vera_app, vera_worker, vera_gateway;

-- Contract: the authenticated caller and every group it reaches, with roles.
create or replace function vera.whoami()
returns table (principal_id uuid, display_name text, kind vera.principal_kind,
               group_id text, group_kind vera.group_kind, group_name text,
               parent_group_id text, role vera.member_role)
language sql stable security definer
set search_path = vera, pg_temp
as $$
    select p.principal_id, p.display_name, p.kind, g.group_id, g.kind, g.name, g.parent_group_id, e.role
    from vera.principals p
    join vera.effective_roles(p.principal_id) e on true
    join vera.groups g on g.group_id = e.group_id
    where p.principal_id = vera.require_principal()
    order by g.group_id
$$;
comment on function vera.whoami() is 'The authenticated caller and each group it reaches, with its role';
grant execute on function vera.whoami() to vera_app, vera_worker, vera_gateway;

reset role;
