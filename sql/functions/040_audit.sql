-- Writing the audit log. Only definer functions append to it.
set role vera_owner;

create or replace function vera.audit(
    target_group text, action text, target_kind text, target_id text, detail jsonb default '{}'
)
returns void
language sql volatile security definer
set search_path = vera, pg_temp
as $$
    insert into vera.audit_log (group_id, principal_id, action, target_kind, target_id, detail)
    values (target_group, vera.current_principal(), action, target_kind, target_id, coalesce(detail, '{}'))
$$;
comment on function vera.audit(text, text, text, text, jsonb) is
    'Internal: appends one audit row attributed to the authenticated caller';

reset role;
