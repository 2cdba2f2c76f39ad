-- Idempotency keys of the HTTP API (docs/http-api.md): a write sent again
-- with the same Idempotency-Key header is answered from here instead of
-- being done twice. A key lives in its principal's own u: scope, so only
-- that principal's requests find it; it is forgotten a day after it was
-- first used (vera.begin_idempotent replaces an expired row).
set role vera_owner;

create table vera.idempotency_keys (
    -- the principal's personal scope
    group_id        text not null references vera.groups (group_id),
    idempotency_key text not null
                    constraint idempotency_keys_key_length check (char_length(idempotency_key) between 1 and 200),
    -- sha256 (hex) of the method, route and body: the same key with another request is refused
    request_hash    text not null constraint idempotency_keys_hash_shape check (request_hash ~ '^[0-9a-f]{64}$'),
    -- null while the request runs; then the answer given, replayed to a retry
    status          integer constraint idempotency_keys_status_http check (status between 200 and 599),
    response        jsonb,
    created_at      timestamptz not null default now(),
    primary key (group_id, idempotency_key),
    constraint idempotency_keys_personal_scope check (group_id ~ '^u:'),
    constraint idempotency_keys_answer_whole check ((status is null) = (response is null))
);
comment on table vera.idempotency_keys is 'Idempotency-Key of HTTP API writes: the request''s hash and the answer it got';

reset role;
