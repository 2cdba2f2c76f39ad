-- Named queries of vera_client.api.sources: sources, their episodes and passages, ingestion and extraction requests, cursors.
-- Each starts with "-- name: NAME" and a one-line description (api/queries.py loads them).

-- name: list_sources
-- The sources of a group (or of every readable group), by name.
select *
from vera.list_sources(%(group)s);

-- name: source_cursor
-- A source's incremental cursor ({} before the first run).
select vera.source_cursor(%(group)s, %(source)s);

-- name: source_roots
-- The worker: the folders a group's folder sources may lie in (its organisation's source roots).
select vera.source_roots(%(group)s);

-- name: advance_source_cursor
-- Merges per-record cursor entries (null removes one); returns how many records are tracked.
select vera.advance_source_cursor(%(group)s, %(source)s, %(changes)s);

-- name: source_status
-- The sources of a group (or every readable group) with cursor position, schedule and last run.
select *
from vera.source_status(%(group)s);

-- name: set_source_interval
-- How often the schedule reads a source (null: only when asked); admins.
select vera.set_source_interval(%(group)s, %(source)s, %(interval_s)s);

-- name: request_due_ingests
-- The schedule, with no caller: queues a run of every source whose interval has passed.
select *
from vera.request_due_ingests();

-- name: begin_source_run
-- The worker: records the start of a connector run.
select vera.begin_source_run(%(group)s, %(source)s);

-- name: end_source_run
-- The worker: records how a connector run ended.
select vera.end_source_run(%(group)s, %(run)s, %(status)s, %(counts)s, %(error)s, %(pruned)s);

-- name: source_run_settings
-- The worker: a source's token_env (the variable's name), last prune and interval.
select *
from vera.source_run_settings(%(group)s, %(source)s);

-- name: record_heads
-- The worker: the latest version held of each named record of a source.
select *
from vera.record_heads(%(group)s, %(source)s, %(ids)s);

-- name: note_record_signatures
-- The worker: the change signatures a connector saw of records it wrote or found unchanged.
select vera.note_record_signatures(%(group)s, %(source)s, %(signatures)s);

-- name: live_records
-- The worker: the records of a source whose latest version is live.
select *
from vera.live_records(%(group)s, %(source)s);

-- name: request_ingest
-- Defers an ingestion run of a source for the worker, on behalf of the caller.
select vera.request_ingest(%(group)s, %(source)s, %(path)s);

-- ---------------------------------------------------------------------------
-- The typed client's calls (vera_client.client): one per SQL API function,
-- columns named as the result dataclasses' fields.

-- name: register_source
select vera.register_source(%(group)s, %(kind)s, %(name)s, %(tier)s, %(token_env)s, %(config)s, %(uri)s);

-- name: record_episode
-- One version of a source record; created is false when the content is unchanged.
select *
from vera.record_episode(%(group)s, %(source)s, %(external_id)s, %(sha256)s, %(object_key)s, %(mime)s,
                         %(observed_at)s, %(title)s, %(uri)s);

-- name: store_chunks
select * from vera.store_chunks(%(group)s, %(episode)s, %(chunks)s, %(embedding_model)s);

-- name: request_extraction
-- Defers an extract job over the group's passages (redo: those the current model version has not seen).
select vera.request_extraction(%(group)s, %(redo)s);

-- name: request_episode_extraction
-- Defers an extract job over the passages of some episodes (what an ingestion run wrote).
select vera.request_episode_extraction(%(group)s, %(episodes)s);

-- name: extraction_backlog
-- How many passages (and characters) an extract job over the group would send to a model.
select * from vera.extraction_backlog(%(group)s, %(model_version)s, %(redo)s);
