-- Named queries of vera_client.api.context: context packs and remember.
-- Each starts with "-- name: NAME" and a one-line description (api/queries.py loads them).

-- name: store_context_pack
-- Stores a context pack the caller assembled; its id.
select vera.store_context_pack(%(query)s, %(token_budget)s, %(items)s, %(as_of)s, %(groups)s::text[],
                               %(min_authority)s::float8, %(max_tier)s, %(weights)s, %(assembler_version)s,
                               %(omitted)s, %(conflicts)s, %(warnings)s, %(during)s);

-- name: get_context_pack
-- One of the caller's context packs.
select *
from vera.get_context_pack(%(pack)s);

-- name: record_pack_feedback
-- A vote on the item at a position of one of the caller's packs, as on a hit.
select *
from vera.record_pack_feedback(%(pack)s, %(position)s, %(vote)s, %(embedding)s::vector, %(embedding_model)s);

-- name: remember
-- A text or chat transcript (and structured claims) as one episode, idempotent by content.
select *
from vera.remember(%(content)s, %(messages)s, %(source)s, %(at)s, %(group)s, %(claims)s, %(embeddings)s,
                   %(embedding_model)s, %(time_scopes)s);

-- name: remember_passages
-- What vera.remember would store: the group, its embedding pin and the passages.
select *
from vera.remember_passages(%(content)s, %(messages)s, %(group)s);

-- ---------------------------------------------------------------------------
-- The graph projection (sql/functions/230_graph.sql): the worker's and the
-- operators' calls, and the two SQL ends of an explore through the graph.
