-- Named queries of vera_client.api.curation: publishing claims, review, retraction and erasure, proposals.
-- Each starts with "-- name: NAME" and a one-line description (api/queries.py loads them).

-- name: publish_claims
select claim, fact_id, fact_group_id, lifecycle::text as lifecycle, subject_entity_id, resolution
from vera.publish_claims(%(group)s, %(episode)s, %(claims)s, %(embedding_model)s);

-- name: declare_predicate
select vera.declare_predicate(%(group)s, %(name)s, %(cardinality)s::vera.predicate_cardinality, %(description)s);

-- name: pending_reviews
select fact_id, fact_group_id, lifecycle::text as lifecycle, subject, predicate, object, fact_text, tier,
       verification::text as verification, confidence, proposed_by, recorded_at, origin
from vera.pending_reviews(%(group)s);

-- name: review_claim
select result_fact_id as fact_id, result_group_id as group_id, result_lifecycle::text as lifecycle
from vera.review_claim(%(group)s, %(fact)s, %(decision)s, %(note)s);

-- name: pending_passages
select chunk_id, lifecycle::text as lifecycle, heading, text, ordinal, tier, verification::text as verification,
       source_id, source_name, episode_id, external_id, version, title, proposed_by, stored_at
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

-- name: propose
-- The caller's claim with its evidence, as a proposal for a shared scope.
select fact_id, group_id, proposed_for, lifecycle::text, source_id, episode_id, chunk_id
from vera.propose(%(subject)s, %(predicate)s, %(object)s, %(evidence)s, %(for_group)s);

-- name: retract_proposal
-- Withdraws one of the caller's own live proposals.
select fact_id, lifecycle::text from vera.retract_proposal(%(fact)s);

-- name: list_proposals
-- The caller's own proposals, newest first.
select fact_id, proposed_for, subject, predicate, object, fact_text, lifecycle::text, evidence, recorded_at,
       reviewed_at
from vera.list_proposals(%(max_rows)s);
