-- 0011_idempotency_keys: the HTTP API's Idempotency-Key store
-- (sql/schema/140_idempotency.sql; its policies in sql/rls/010_policies.sql,
-- its functions in sql/functions/260_idempotency.sql).
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.
set role vera_owner;

create table vera.idempotency_keys (
    group_id        text not null references vera.groups (group_id),
    idempotency_key text not null
                    constraint idempotency_keys_key_length check (char_length(idempotency_key) between 1 and 200),
    request_hash    text not null constraint idempotency_keys_hash_shape check (request_hash ~ '^[0-9a-f]{64}$'),
    status          integer constraint idempotency_keys_status_http check (status between 200 and 599),
    response        jsonb,
    created_at      timestamptz not null default now(),
    primary key (group_id, idempotency_key),
    constraint idempotency_keys_personal_scope check (group_id ~ '^u:'),
    constraint idempotency_keys_answer_whole check ((status is null) = (response is null))
);
comment on table vera.idempotency_keys is 'Idempotency-Key of HTTP API writes: the request''s hash and the answer it got';

reset role;
