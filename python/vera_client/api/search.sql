-- Named queries of vera_client.api.search: search, feedback, ranking weights, snapshots.
-- Each starts with "-- name: NAME" and a one-line description (api/queries.py loads them).

-- name: pinned_models
-- The embedding models (and dimensions) pinned by the groups searched (default: all the caller reads).
select * from vera.pinned_models(%(groups)s::text[]);

-- name: calibrate_weights
-- Weights derived from a group's votes; kept as the active set above the minimum sample count.
select *
from vera.calibrate_weights(%(group)s, %(min_samples)s);

-- name: search_version
-- The version of the ranking code (snapshots pin it); needs no caller.
select vera.search_version();

-- name: search
select *
from vera.search(query => %(query)s, query_embedding => %(embedding)s::vector, k => %(k)s,
                 as_of => %(as_of)s, groups => %(groups)s, weights => %(weights)s,
                 k_rrf => %(k_rrf)s::integer, candidates => %(candidates)s::integer,
                 embedding_model => %(embedding_model)s, lexical_weight => %(lexical_weight)s,
                 vector_weight => %(vector_weight)s, ef_search => %(ef_search)s::integer,
                 during => %(during)s::tstzrange);

-- name: record_feedback
select *
from vera.record_feedback(%(kind)s::vera.item_kind, %(item_id)s, %(query)s, %(vote)s,
                          %(embedding)s::vector, %(as_of)s, %(groups)s, %(embedding_model)s,
                          %(during)s::tstzrange);

-- name: active_weights
select vera.active_weights(%(group)s);

-- name: reset_weights
select vera.reset_weights(%(group)s);
