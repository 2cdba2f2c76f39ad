-- Idempotency keys of the HTTP API (sql/schema/140_idempotency.sql): a
-- write with an Idempotency-Key header begins here, runs, and records its
-- answer here; a retry with the same key and the same request gets that
-- answer back and does nothing. Each step is its own transaction, so a
-- second request arriving while the first runs finds the key taken
-- (VI002) instead of running the write again; a write that fails before
-- it commits forgets its key (vera.forget_idempotent) so it can be retried.
set role vera_owner;

-- How long an idempotency key is remembered after its first use.
create or replace function vera.idempotency_window()
returns interval
language sql immutable
set search_path = vera, pg_temp
as $$ select interval '24 hours' $$;
comment on function vera.idempotency_window() is 'Internal: how long an HTTP idempotency key is remembered';

-- Claim an idempotency key for a request of the caller (its hash: sha256
-- hex of method, route and body). Answers (status, response): both null when
-- the key is new (the caller runs the request, then vera.finish_idempotent),
-- or the answer recorded for the same request before. Errors: 22023 (a key
-- of 1 to 200 characters, a hash of 64 hex digits), VI001 (the key was used
-- for another request), VI002 (the request with this key is still running).
create or replace function vera.begin_idempotent(key text, request_hash text)
returns table (status integer, response jsonb)
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
    personal text;
    found_row vera.idempotency_keys;
begin
    if key is null or char_length(key) not between 1 and 200 then
        raise exception 'an Idempotency-Key has 1 to 200 characters' using errcode = '22023';
    end if;
    if request_hash is null or request_hash !~ '^[0-9a-f]{64}$' then
        raise exception 'a request hash is 64 hexadecimal digits' using errcode = '22023';
    end if;
    select p.personal_group_id into personal from vera.principals p where p.principal_id = caller;
    delete from vera.idempotency_keys k
     where k.group_id = personal and k.idempotency_key = begin_idempotent.key
       and k.created_at < now() - vera.idempotency_window();
    insert into vera.idempotency_keys (group_id, idempotency_key, request_hash)
    values (personal, begin_idempotent.key, begin_idempotent.request_hash)
    on conflict on constraint idempotency_keys_pkey do nothing;
    if found then
        return query select null::integer, null::jsonb;
        return;
    end if;
    select * into found_row from vera.idempotency_keys k
     where k.group_id = personal and k.idempotency_key = begin_idempotent.key;
    if found_row.request_hash <> begin_idempotent.request_hash then
        raise exception 'this Idempotency-Key was used for another request' using errcode = 'VI001';
    end if;
    if found_row.status is null then
        raise exception 'the request with this Idempotency-Key is still running' using errcode = 'VI002';
    end if;
    return query select found_row.status, found_row.response;
end
$$;
comment on function vera.begin_idempotent(text, text) is
    'Claim an HTTP Idempotency-Key for a request of the caller; the answer recorded before, if any';

-- Record the answer of the request that claimed an idempotency key (status
-- 200-599, response a JSON value); whether the caller held the key running.
create or replace function vera.finish_idempotent(key text, status integer, response jsonb)
returns boolean
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
begin
    if finish_idempotent.status is null or finish_idempotent.status not between 200 and 599 then
        raise exception 'an HTTP status is between 200 and 599' using errcode = '22023';
    end if;
    if finish_idempotent.response is null then
        raise exception 'the answer to record is missing' using errcode = '22023';
    end if;
    update vera.idempotency_keys k
       set status = finish_idempotent.status, response = finish_idempotent.response
     where k.group_id = (select p.personal_group_id from vera.principals p where p.principal_id = caller)
       and k.idempotency_key = finish_idempotent.key and k.status is null;
    return found;
end
$$;
comment on function vera.finish_idempotent(text, integer, jsonb) is
    'Record the answer of the request that claimed an HTTP Idempotency-Key';

-- Forget a running idempotency key of the caller (its request failed before
-- anything committed, so a retry may run it); whether there was one.
create or replace function vera.forget_idempotent(key text)
returns boolean
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
begin
    delete from vera.idempotency_keys k
     where k.group_id = (select p.personal_group_id from vera.principals p where p.principal_id = caller)
       and k.idempotency_key = forget_idempotent.key and k.status is null;
    return found;
end
$$;
comment on function vera.forget_idempotent(text) is 'Forget a running HTTP Idempotency-Key of the caller';

grant execute on function vera.begin_idempotent(text, text) to vera_app, vera_gateway;
grant execute on function vera.finish_idempotent(text, integer, jsonb) to vera_app, vera_gateway;
grant execute on function vera.forget_idempotent(text) to vera_app, vera_gateway;

reset role;
