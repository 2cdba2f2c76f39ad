-- Named queries of vera_client.api.snapshots: named, sealed copies of what searches see.
-- Each starts with "-- name: NAME" and a one-line description (api/queries.py loads them).

-- name: create_snapshot
select * from vera.create_snapshot(%(group)s, %(name)s);

-- name: list_snapshots
select *
from vera.list_snapshots(%(group)s);

-- name: drop_snapshot
select vera.drop_snapshot(%(group)s, %(name)s);

-- name: search_snapshot
select *
from vera.search_snapshot(%(group)s, %(name)s, %(query)s, %(embedding)s::vector, %(k)s,
                          k_rrf => %(k_rrf)s::integer, candidates => %(candidates)s::integer,
                          embedding_model => %(embedding_model)s, during => %(during)s::tstzrange);

-- name: snapshot_pin
-- The embedding model a snapshot was taken with (its query must use it).
select embedding_model, embedding_dim from vera.list_snapshots(%(group)s) where name = btrim(%(name)s);
