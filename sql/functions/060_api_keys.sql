-- API keys: issue (secret shown once), list, revoke.
set role vera_owner;

-- Internal: stores the hash of a fresh key and returns the key once.
create or replace function vera.issue_api_key(principal uuid, name text, expires_at timestamptz)
returns setof vera.new_api_key
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    new_prefix text := left(replace(pg_catalog.gen_random_uuid()::text, '-', ''), 12);
    key text := 'vera_' || new_prefix || '_' || vera.new_secret();
    new_id uuid;
begin
    if coalesce(btrim(name), '') = '' then
        raise exception 'API key name must not be empty' using errcode = '22023';
    end if;
    if char_length(btrim(name)) > 200 then
        raise exception 'API key name is over 200 characters' using errcode = '22001';
    end if;
    if expires_at is not null and not isfinite(expires_at) then
        raise exception 'API key expiry must be a finite time (leave it null for a key that does not expire)'
            using errcode = '22023';
    end if;
    if expires_at is not null and expires_at <= now() then
        raise exception 'API key expiry % is not in the future', expires_at using errcode = '22023';
    end if;
    insert into vera.api_keys (principal_id, prefix, key_sha256, name, expires_at)
    values (principal, new_prefix, pg_catalog.sha256(pg_catalog.convert_to(key, 'UTF8')), btrim(name), expires_at)
    returning api_keys.key_id into new_id;
    insert into vera.api_key_usage (key_id) values (new_id);
    return query select new_id, new_prefix, key;
end
$$;
comment on function vera.issue_api_key(uuid, text, timestamptz) is 'Internal: creates a key and returns it once';

-- True when the caller may manage keys of the principal: its own, or a
-- service account all of whose groups the caller administers, holding at
-- least the account's role in each (a key must not lend the caller a role).
create or replace function vera.may_manage_keys_of(principal uuid)
returns boolean
language sql stable security definer
set search_path = vera, pg_temp
as $$
    select principal = vera.current_principal()
        or (exists (select from vera.principals p where p.principal_id = principal and p.kind = 'service')
            and vera.administers_principal(principal))
$$;
comment on function vera.may_manage_keys_of(uuid) is 'Internal: the caller may issue or revoke this principal''s keys';

-- Contract: issues an API key for the caller (or for a service account in a
-- group the caller administers). The key is returned here once; only its
-- SHA-256 is kept.
create or replace function vera.create_api_key(
    name text, expires_at timestamptz default null, principal_id uuid default null
)
returns setof vera.new_api_key
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    target uuid := coalesce(create_api_key.principal_id, vera.require_principal());
    personal text;
begin
    perform vera.require_principal();
    if not vera.may_manage_keys_of(target) then
        raise exception 'permission denied: cannot issue keys for principal %', target using errcode = '42501';
    end if;
    select p.personal_group_id into personal from vera.principals p where p.principal_id = target;
    return query select * from vera.issue_api_key(target, name, expires_at);
    perform vera.audit(personal, 'api_key.create', 'principal', target::text,
                       jsonb_build_object('name', name, 'expires_at', expires_at));
end
$$;
comment on function vera.create_api_key(text, timestamptz, uuid) is
    'Issues an API key for the caller or a service account it administers; the key is shown once';
grant execute on function vera.create_api_key(text, timestamptz, uuid) to vera_app, vera_worker, vera_gateway;

-- Contract: revokes a key by id or prefix. Revocation is immediate and final,
-- and never waits for the key's users (their use is stamped in api_key_usage).
create or replace function vera.revoke_api_key(key text)
returns boolean
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    target vera.api_keys;
    personal text;
begin
    perform vera.require_principal();
    select * into target from vera.api_keys k
     where k.prefix = key or k.key_id::text = key
     for update;
    if not found or not vera.may_manage_keys_of(target.principal_id) then
        raise exception 'API key % not found', vera.shown(key) using errcode = 'VN001';
    end if;
    if target.revoked_at is not null then
        return false;
    end if;
    update vera.api_keys k set revoked_at = now() where k.key_id = target.key_id;
    select p.personal_group_id into personal from vera.principals p where p.principal_id = target.principal_id;
    perform vera.audit(personal, 'api_key.revoke', 'api_key', target.prefix, '{}');
    return true;
end
$$;
comment on function vera.revoke_api_key(text) is 'Revokes an API key (by id or prefix) the caller manages';
grant execute on function vera.revoke_api_key(text) to vera_app, vera_worker, vera_gateway;

-- Contract: the caller's own keys, without any secret material.
-- Internal: a principal's keys as they are listed (no secret material), oldest
-- first: what list_api_keys shows its caller and list_member_keys an admin.
create or replace function vera.keys_of(principal_id uuid)
returns table (key_id uuid, prefix text, name text, created_at timestamptz,
               expires_at timestamptz, revoked_at timestamptz, last_used_at timestamptz)
language sql stable
set search_path = vera, pg_temp
as $$
    select k.key_id, k.prefix, k.name, k.created_at, k.expires_at, k.revoked_at, u.last_used_at
    from vera.api_keys k
    left join vera.api_key_usage u on u.key_id = k.key_id
    where k.principal_id = keys_of.principal_id
    order by k.created_at
$$;
comment on function vera.keys_of(uuid) is 'Internal: a principal''s keys as listed (no secrets)';

create or replace function vera.list_api_keys()
returns table (key_id uuid, prefix text, name text, created_at timestamptz,
               expires_at timestamptz, revoked_at timestamptz, last_used_at timestamptz)
language sql stable security definer
set search_path = vera, pg_temp
as $$
    select * from vera.keys_of(vera.require_principal())
$$;
comment on function vera.list_api_keys() is 'Lists the caller''s API keys (no secrets)';
grant execute on function vera.list_api_keys() to vera_app, vera_worker, vera_gateway;

reset role;
