-- Named queries of vera_client.api.curation: publishing claims, review, retraction and erasure, proposals.
-- Each starts with "-- name: NAME" and a one-line description (api/queries.py loads them).

-- name: publish_claims
select *
from vera.publish_claims(%(group)s, %(episode)s, %(claims)s, %(embedding_model)s);

-- name: claim_fact_texts
-- The fact text of each claim of a batch, in order, as publish_claims stores it.
select vera.claim_fact_texts(%(claims)s);

-- name: declare_predicate
select vera.declare_predicate(%(group)s, %(name)s, %(cardinality)s::vera.predicate_cardinality, %(description)s);

-- name: pending_reviews
select *
from vera.pending_reviews(%(group)s);

-- name: review_claim
select result_fact_id as fact_id, result_group_id as group_id, result_lifecycle::text as lifecycle
from vera.review_claim(%(group)s, %(fact)s, %(decision)s, %(note)s);

-- name: pending_passages
select *
from vera.pending_passages(%(group)s);

-- name: review_passage
select result_chunk_id as chunk_id, result_group_id as group_id, result_lifecycle::text as lifecycle
from vera.review_passage(%(group)s, %(chunk)s, %(decision)s, %(note)s);

-- name: retract_episode
select vera.retract_episode(%(group)s, %(id)s, %(reason)s);

-- name: erase_episode
select vera.erase_episode(%(group)s, %(id)s, %(reason)s);

-- name: retract_source
select vera.retract_source(%(group)s, %(id)s, %(reason)s);

-- name: erase_source
select vera.erase_source(%(group)s, %(id)s, %(reason)s);

-- name: complete_cleanup
select vera.complete_cleanup(%(job)s);

-- name: cleanup_work
select vera.cleanup_work(%(job)s);

-- name: settle_cleanup
select vera.settle_cleanup(%(job)s, %(edge_ids_left)s, %(object_keys_left)s);

-- name: propose
-- The caller's claim with its evidence, as a proposal for a shared scope.
select *
from vera.propose(%(subject)s, %(predicate)s, %(object)s, %(evidence)s, %(for_group)s);

-- name: retract_proposal
-- Withdraws one of the caller's own live proposals.
select * from vera.retract_proposal(%(fact)s);

-- name: list_proposals
-- The caller's own proposals, newest first.
select *
from vera.list_proposals(%(max_rows)s);
