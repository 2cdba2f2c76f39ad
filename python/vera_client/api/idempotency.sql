-- Named queries of vera_client.api.idempotency: the HTTP API's Idempotency-Key store.
-- Each starts with "-- name: NAME" and a one-line description (api/queries.py loads them).

-- name: begin_idempotent
-- Claim a key for a request; the answer recorded before, if any.
select * from vera.begin_idempotent(%(key)s, %(request_hash)s);

-- name: finish_idempotent
-- Record the answer of the request that claimed a key.
select vera.finish_idempotent(%(key)s, %(status)s, %(response)s);

-- name: forget_idempotent
-- Forget a running key whose request failed before anything committed.
select vera.forget_idempotent(%(key)s);
