-- Named queries of vera_client.api.reads: facts, their evidence and history, entities, sources, explore, changes and conflicts.
-- Each starts with "-- name: NAME" and a one-line description (api/queries.py loads them).

-- name: get_fact
-- One fact the caller may read, with its citation (issue 13).
select fact_id, group_id, subject, predicate, object, fact_text, lifecycle::text, tier, authority,
       verification::text, confidence, valid_from, valid_to, recorded_at, proposed_for, citation
from vera.get_fact(%(fact)s, %(groups)s::text[]);

-- name: get_evidence
-- The evidence of one fact: source, episode, chunk text and span.
select fact_id, group_id, source_id, source_name, source_kind, tier, episode_id, external_id, version, title, uri,
       observed_at, recorded_at, chunk_id, ordinal, heading, chunk_text, evidence_start, evidence_end, evidence_text
from vera.get_evidence(%(fact)s, %(groups)s::text[]);

-- name: explain_fact
-- A fact's timeline: the fact, supporting statements, the values it superseded and that superseded it.
select relation, fact_id, group_id, subject, predicate, object, fact_text, lifecycle::text, tier, authority,
       verification::text, confidence, valid_from, valid_to, recorded_at, proposed_for, citation
from vera.explain_fact(%(fact)s, %(groups)s::text[]);

-- name: get_entity
-- An entity by name or id, its aliases and its facts as subject or object (one row per entity and fact).
select entity_id, entity_group_id, canonical_name, entity_type, aliases, role, fact_id, group_id, subject,
       predicate, object, fact_text, lifecycle::text, tier, authority, verification::text, confidence, valid_from,
       valid_to, recorded_at, proposed_for, citation
from vera.get_entity(%(entity)s, %(groups)s::text[], %(as_of)s, %(max_rows)s);

-- name: get_source
-- A source with its freshness and its versions, newest first.
select source_id, group_id, kind, name, uri, trust_tier, created_at, retracted_at, episode_count,
       last_recorded_at, last_observed_at, age_seconds, episodes
from vera.get_source(%(source)s, %(max_episodes)s);

-- name: explore
-- Breadth-first, 1-5 hops over facts that share entities.
select hop, fact_id, group_id, subject, predicate, object, fact_text, lifecycle::text, tier, authority,
       verification::text, confidence, valid_from, valid_to, recorded_at, proposed_for, citation
from vera.explore(%(entity)s, %(depth)s, %(as_of)s, %(groups)s::text[], %(max_rows)s);

-- name: changes
-- Facts published, superseded or retracted after an instant, newest first.
select change, at, fact_id, group_id, subject, predicate, object, fact_text, lifecycle::text, tier, authority,
       verification::text, confidence, valid_from, valid_to, recorded_at, proposed_for, citation
from vera.changes(%(since)s, %(max_rows)s, %(groups)s::text[]);

-- name: conflicts
-- Subjects and predicates with competing values, side by side.
select conflict, subject, predicate, fact_id, group_id, object, lifecycle::text, tier, authority,
       verification::text, source_id, source_name, valid_from, recorded_at, proposed_for
from vera.conflicts(%(max_rows)s, %(groups)s::text[]);

-- name: explore_starts
-- The entities an explore starts from, one per group searched.
select group_id, entity_id from vera.explore_starts(%(entity)s, %(groups)s::text[]);

-- name: explore_facts
-- vera.explore's rows for the facts a graph walk reached, re-checked for the caller.
select hop, fact_id, group_id, subject, predicate, object, fact_text, lifecycle::text, tier, authority,
       verification::text, confidence, valid_from, valid_to, recorded_at, proposed_for, citation
from vera.explore_facts(%(fact_ids)s::uuid[], %(hops)s::integer[], %(as_of)s, %(groups)s::text[], %(max_rows)s);

-- ===== extraction and the judges (issue 15: sql/functions/240_extraction.sql) =====
