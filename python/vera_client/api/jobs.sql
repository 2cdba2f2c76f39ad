-- Named queries of vera_client.api.jobs: the worker's calls, as the principal a job acts for (or as the operator).
-- Each starts with "-- name: NAME" and a one-line description (api/queries.py loads them).

-- name: facts_to_embed
-- The facts among the ids that still have no vector, with the text to embed (the embed job).
select * from vera.facts_to_embed(%(group)s, %(fact_ids)s::uuid[]);

-- name: set_fact_embeddings
-- Stores the vectors of facts that had none, pinning the group's model.
select vera.set_fact_embeddings(%(group)s, %(fact_ids)s::uuid[], %(embeddings)s::vector[], %(embedding_model)s);

-- name: queue_depth
-- The worker (role vera_worker): per queue, jobs due and waiting (todo), waiting for a later time (scheduled), running (doing).
select queue_name as queue,
       count(*) filter (where status = 'todo' and (scheduled_at is null or scheduled_at <= now())) as todo,
       count(*) filter (where status = 'todo' and scheduled_at > now()) as scheduled,
       count(*) filter (where status = 'doing') as doing
from procrastinate.procrastinate_jobs
where status in ('todo', 'doing')
group by queue_name
order by queue_name;

-- ---------------------------------------------------------------------------
-- External (OIDC) identities (identities.py): the gateway's calls, on its own
-- connection with no caller authenticated.

-- name: graph_facts
-- The named facts of a group as the graph needs them, and whether each belongs there.
-- Vectors both as pgvector's binary (floats without parsing) and its text (a Cypher list literal
-- for FalkorDB): python/vera_client/domain/vectors.py says why.
select fact_id, group_id, episode_id, source_id, subject_id, subject_name, object_id, object_name, predicate,
       fact_text, lifecycle, valid_from, valid_to, recorded_at, retired_at,
       public.vector_send(fact_embedding) as fact_embedding, fact_embedding::text as fact_embedding_text,
       public.vector_send(subject_embedding) as subject_embedding, subject_embedding::text as subject_embedding_text,
       public.vector_send(object_embedding) as object_embedding, object_embedding::text as object_embedding_text,
       belongs
from vera.graph_facts(%(group)s, %(fact_ids)s::uuid[]);

-- name: graph_group_facts
-- One keyset page of the facts that belong in a group's graph (a rebuild).
-- Vectors both as pgvector's binary (floats without parsing) and its text (a Cypher list literal
-- for FalkorDB): python/vera_client/domain/vectors.py says why.
select fact_id, group_id, episode_id, source_id, subject_id, subject_name, object_id, object_name, predicate,
       fact_text, lifecycle, valid_from, valid_to, recorded_at, retired_at,
       public.vector_send(fact_embedding) as fact_embedding, fact_embedding::text as fact_embedding_text,
       public.vector_send(subject_embedding) as subject_embedding, subject_embedding::text as subject_embedding_text,
       public.vector_send(object_embedding) as object_embedding, object_embedding::text as object_embedding_text,
       belongs
from vera.graph_group_facts(%(group)s, %(after)s, %(max_rows)s);

-- name: graph_edge_states
-- The edges a group's graph should hold, with their four times.
select * from vera.graph_edge_states(%(group)s);

-- name: graph_expected_nodes
-- How many nodes a group's graph should hold.
select vera.graph_expected_nodes(%(group)s);

-- name: graph_groups
-- The groups a graph rebuild or check covers (every group with facts, or the one named).
select group_id from vera.graph_groups(%(group)s);

-- name: record_graph_check
-- Records the last graph check of a group.
select vera.record_graph_check(%(group)s, %(backend)s, %(sql_edges)s, %(graph_edges)s, %(sql_nodes)s,
                               %(graph_nodes)s, %(sql_digest)s, %(graph_digest)s, %(drift)s);

-- name: record_graph_behind
-- A worker without a graph left facts of a group unprojected: its graph is behind.
select vera.record_graph_behind(%(group)s, %(facts)s);

-- name: record_model_usage
-- Adds what one job's model calls for a group used to its totals for today (the worker only).
select vera.record_model_usage(%(group)s, %(usage)s);

-- name: graph_check_results
-- The last graph check of every group, drift first.
select *
from vera.graph_check_results();

-- name: queue_lag
-- Per queue (and overall, queue null): jobs due, when the oldest fell due, its age in seconds.
select * from vera.queue_lag();

-- name: passages_to_extract
-- The group's passages still to extract with a model version, with their text's hash.
select *
from vera.passages_to_extract(%(group)s, %(model_version)s, %(redo)s, %(max_rows)s);

-- name: episode_passages_to_extract
-- The passages of some episodes that no model version has been through.
select *
from vera.episode_passages_to_extract(%(group)s, %(model_version)s, %(episodes)s, %(max_rows)s);

-- name: take_passage
-- Takes a passage for this transaction; false when another extract job did it meanwhile.
select vera.take_passage(%(group)s, %(chunk)s, %(model_version)s, %(redo)s);

-- name: extraction_run
-- The stored extraction of a passage text, for reuse without a model call.
select * from vera.extraction_run(%(group)s, %(sha256)s, %(model_version)s, %(any_model)s);

-- name: record_extraction
-- Records a passage's extraction by a model version.
select vera.record_extraction(%(group)s, %(chunk)s, %(sha256)s, %(model_version)s, %(outcome)s, %(claims)s,
                              %(dropped)s, %(detail)s, %(facts)s);

-- name: extraction_context
-- The group's ontology and most relevant entity names, for the extraction prompt.
select * from vera.extraction_context(%(group)s, %(passage)s, %(max_entities)s);

-- name: judge_verdict
-- A stored verdict for the same inputs, model and prompt version, or null.
select vera.judge_verdict(%(group)s, %(judge)s, %(sha256)s, %(model)s, %(prompt_version)s);

-- name: store_verdict
-- Stores a verdict once; the stored one.
select vera.store_verdict(%(group)s, %(judge)s, %(sha256)s, %(model)s, %(prompt_version)s, %(verdict)s);

-- name: equivalence_case
-- A provisional entity and its candidates for the equivalence judge, or null.
select vera.equivalence_case(%(group)s, %(entity)s);

-- name: settle_entity
-- Activates a provisional entity or merges it into same_as: activated, merged or unchanged.
select vera.settle_entity(%(group)s, %(entity)s, %(same_as)s, %(reason)s, %(model)s, %(prompt_version)s);

-- name: contradiction_case
-- A new value of a multi-valued predicate and the current values, or null.
select vera.contradiction_case(%(group)s, %(fact)s);

-- name: replace_values
-- Supersedes the values the contradiction judge said a new value replaces; how many.
select vera.replace_values(%(group)s, %(fact)s, %(replaced)s::uuid[], %(reason)s, %(model)s, %(prompt_version)s);

-- ===== time scopes of passages (issue 16: sql/functions/107_time_scopes.sql) =====

-- name: passages_to_time_scope
-- The group's passages whose time scope was not read, or read by an older reader, after a chunk id.
select *
from vera.passages_to_time_scope(%(group)s, %(reader_version)s, %(after)s, %(max_rows)s);

-- name: set_time_scopes
-- Records time scopes read again; how many passages were updated.
select vera.set_time_scopes(%(group)s, %(scopes)s);
