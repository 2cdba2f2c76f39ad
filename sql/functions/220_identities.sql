-- External identities: the principal behind an OIDC subject, provisioned just
-- in time. Only the gateway (vera_gateway, which verified the token's
-- signature, issuer, audience and lifetime itself) and operators may call
-- these: they map an identity the caller asserts to a principal, which is
-- exactly what a tenant must never be able to do.
set role vera_owner;

-- Internal: raises unless (issuer, subject) is a well-formed identity.
create or replace function vera.check_identity(issuer text, subject text)
returns void
language plpgsql immutable
set search_path = vera, pg_temp
as $$
begin
    if issuer is null or subject is null then
        raise exception 'issuer and subject must not be null' using errcode = '22004';
    end if;
    if issuer = '' or subject = '' then
        raise exception 'issuer and subject must not be empty' using errcode = '22023';
    end if;
    if char_length(issuer) > 2048 then
        raise exception 'issuer is over 2048 characters' using errcode = '22001';
    end if;
    if char_length(subject) > 255 then
        raise exception 'subject is over 255 characters' using errcode = '22001';
    end if;
    -- control characters would make the audit log and any log line ambiguous
    if issuer ~ '[[:cntrl:]]' or subject ~ '[[:cntrl:]]' then
        raise exception 'issuer and subject must not contain control characters' using errcode = '22023';
    end if;
end
$$;
comment on function vera.check_identity(text, text) is
    'Internal: raises 22004/22023/22001 unless (issuer, subject) is a well-formed external identity';

-- Contract (gateway and operators only): the principal an external identity
-- was provisioned as, or null when it was never seen. Reads only: a known
-- subject's later requests write nothing. Errors: 22004/22023/22001 malformed
-- identity; VA006 the principal is disabled.
create or replace function vera.principal_for_identity(issuer text, subject text)
returns uuid
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    found_principal uuid;
    disabled timestamptz;
begin
    perform vera.check_identity(principal_for_identity.issuer, principal_for_identity.subject);
    select i.principal_id, p.disabled_at into found_principal, disabled
      from vera.external_identities i
      join vera.principals p on p.principal_id = i.principal_id
     where i.issuer = principal_for_identity.issuer and i.subject = principal_for_identity.subject;
    if disabled is not null then
        raise exception 'principal % of this identity is disabled', found_principal using errcode = 'VA006';
    end if;
    return found_principal;
end
$$;
comment on function vera.principal_for_identity(text, text) is
    'Gateway: the principal an external (OIDC) identity was provisioned as, or null; VA006 when disabled';
grant execute on function vera.principal_for_identity(text, text) to vera_gateway, vera_operator;

-- Contract (gateway and operators only): provisions an external identity
-- seen for the first time as a new user principal (with its personal scope,
-- through vera.insert_principal) holding `role` in `group_id`, and returns
-- it. Exactly once: concurrent first requests of one identity all get the
-- principal of the one that committed first (the others' work is rolled
-- back); an identity already provisioned gets its principal, unchanged.
-- The role is at most admin: no claim mapping mints owners.
-- Errors: 22004/22023/22001 malformed input; VN001 no such group;
-- VA006 the identity's principal is disabled.
create or replace function vera.provision_identity(
    issuer text, subject text, display_name text, email text, group_id text, role vera.member_role
)
returns uuid
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    target_kind vera.group_kind;
    new_principal uuid;
    existing uuid;
    violated text;
begin
    perform vera.check_identity(provision_identity.issuer, provision_identity.subject);
    if provision_identity.group_id is null or provision_identity.role is null then
        raise exception 'group_id and role must not be null' using errcode = '22004';
    end if;
    if provision_identity.role > 'admin' then
        raise exception 'an external identity is provisioned with a role up to admin, not %', provision_identity.role
            using errcode = '22023';
    end if;
    select g.kind into target_kind from vera.groups g where g.group_id = provision_identity.group_id;
    if not found then
        raise exception 'group % not found', vera.shown(provision_identity.group_id) using errcode = 'VN001';
    end if;
    if target_kind = 'personal' then
        raise exception 'an external identity cannot be provisioned into a personal scope' using errcode = '22023';
    end if;

    existing := vera.principal_for_identity(provision_identity.issuer, provision_identity.subject);
    if existing is not null then
        return existing;
    end if;

    begin
        new_principal := vera.insert_principal('user', provision_identity.display_name, provision_identity.email);
        insert into vera.memberships (group_id, principal_id, role)
        values (provision_identity.group_id, new_principal, provision_identity.role);
        -- a concurrent first request of the same identity waits here for the
        -- other to end, and then fails on the primary key if it committed
        insert into vera.external_identities (issuer, subject, principal_id)
        values (provision_identity.issuer, provision_identity.subject, new_principal);
        insert into vera.audit_log (group_id, principal_id, action, target_kind, target_id, detail)
        values (provision_identity.group_id, new_principal, 'identity.provision', 'principal', new_principal::text,
                jsonb_build_object('issuer', provision_identity.issuer, 'subject', provision_identity.subject,
                                   'role', provision_identity.role, 'gateway', session_user));
    exception when unique_violation then
        get stacked diagnostics violated = constraint_name;
        if violated is distinct from 'external_identities_pkey' then
            raise;
        end if;
        -- the other request won: this block's principal is rolled back, theirs is the one
        existing := vera.principal_for_identity(provision_identity.issuer, provision_identity.subject);
        return existing;
    end;
    return new_principal;
end
$$;
comment on function vera.provision_identity(text, text, text, text, text, vera.member_role) is
    'Gateway: provisions a first-seen external (OIDC) identity as a user with a role in a group, exactly once';
grant execute on function vera.provision_identity(text, text, text, text, text, vera.member_role)
    to vera_gateway, vera_operator;

reset role;
