-- Named queries of vera_client.api.reads: facts, their evidence and history, entities, sources, explore, changes and conflicts.
-- Each starts with "-- name: NAME" and a one-line description (api/queries.py loads them).

-- name: get_fact
-- One fact the caller may read, with its citation (issue 13).
select *
from vera.get_fact(%(fact)s, %(groups)s::text[]);

-- name: get_evidence
-- The evidence of one fact: source, episode, chunk text and span.
select *
from vera.get_evidence(%(fact)s, %(groups)s::text[]);

-- name: explain_fact
-- A fact's timeline: the fact, supporting statements, the values it superseded and that superseded it.
select *
from vera.explain_fact(%(fact)s, %(groups)s::text[]);

-- name: get_entity
-- An entity by name or id, its aliases and its facts as subject or object (one row per entity and fact).
select *
from vera.get_entity(%(entity)s, %(groups)s::text[], %(as_of)s, %(max_rows)s);

-- name: get_source
-- A source with its freshness and its versions, newest first.
select *
from vera.get_source(%(source)s, %(max_episodes)s);

-- name: explore
-- Breadth-first, 1-5 hops over facts that share entities.
select *
from vera.explore(%(entity)s, %(depth)s, %(as_of)s, %(groups)s::text[], %(max_rows)s);

-- name: changes
-- Facts published, superseded or retracted after an instant, newest first.
select *
from vera.changes(%(since)s, %(max_rows)s, %(groups)s::text[]);

-- name: conflicts
-- Subjects and predicates with competing values, side by side.
select *
from vera.conflicts(%(max_rows)s, %(groups)s::text[]);

-- name: explore_starts
-- The entities an explore starts from, one per group searched.
select * from vera.explore_starts(%(entity)s, %(groups)s::text[]);

-- name: explore_facts
-- vera.explore's rows for the facts a graph walk reached, re-checked for the caller.
select *
from vera.explore_facts(%(fact_ids)s::uuid[], %(hops)s::integer[], %(as_of)s, %(groups)s::text[], %(max_rows)s);

-- ===== extraction and the judges (issue 15: sql/functions/240_extraction.sql) =====
