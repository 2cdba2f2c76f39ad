-- Named queries of the PostgreSQL adapter. Each starts with "-- name: NAME"
-- and a one-line description; queries.py loads them once.

-- name: create_tenant
-- Operator: a new organisation, its owner and the owner's first API key.
select group_id, principal_id, api_key
from vera.create_tenant(%(organisation)s, %(owner)s, %(email)s);

-- name: find_tenant_owner
-- Operator (bypasses RLS as a superuser): the oldest organisation of that name and its first owner.
select g.group_id, m.principal_id
from vera.groups g
join vera.memberships m on m.group_id = g.group_id and m.role = 'owner'
where g.kind = 'organisation' and g.name = %(organisation)s
order by g.created_at, m.granted_at
limit 1;

-- name: revoke_all_keys
-- Operator: revokes every live key of a principal.
update vera.api_keys set revoked_at = now()
where principal_id = %(principal)s and revoked_at is null;

-- name: issue_key
-- Operator: a new key for a principal, returned once.
select api_key from vera.issue_api_key(%(principal)s, %(name)s, null);

-- name: read_path_installed
-- Whether vera.missing_vector_indexes exists (not before the first migrate).
select to_regprocedure('vera.missing_vector_indexes(integer)') is not null;

-- name: missing_vector_indexes
-- Per-group HNSW indexes that are due, with the statements that build them.
select group_id, table_name, dim, vector_rows, index_name, statements
from vera.missing_vector_indexes(%(min_rows)s);

-- name: authenticate
-- Authenticates an API key for the current transaction; returns the principal.
select vera.authenticate(%(key)s);

-- name: pinned_models
-- The embedding models (and dimensions) pinned by the groups searched (default: all the caller reads).
select embedding_model, embedding_dim from vera.pinned_models(%(groups)s::text[]);

-- name: calibrate_weights
-- Weights derived from a group's votes; kept as the active set above the minimum sample count.
select weight_set_id, persisted, sample_count, helpful, unhelpful, weights, separation
from vera.calibrate_weights(%(group)s, %(min_samples)s);

-- name: authenticate_principal
-- A trusted process (the worker) vouches for a principal for this transaction.
select vera.authenticate_principal(%(principal)s);

-- name: list_sources
-- The sources of a group (or of every readable group), by name.
select group_id, source_id, kind, name, uri, trust_tier, config, created_at, retracted_at, tracked_records
from vera.list_sources(%(group)s);

-- name: source_cursor
-- A source's incremental cursor ({} before the first run).
select vera.source_cursor(%(group)s, %(source)s);

-- name: advance_source_cursor
-- Merges per-record cursor entries (null removes one); returns how many records are tracked.
select vera.advance_source_cursor(%(group)s, %(source)s, %(changes)s);

-- name: request_ingest
-- Defers an ingestion run of a source for the worker, on behalf of the caller.
select vera.request_ingest(%(group)s, %(source)s, %(path)s);

-- ---------------------------------------------------------------------------
-- The typed client's calls (vera_client.client): one per SQL API function,
-- columns named as the result dataclasses' fields.

-- name: search_version
-- The version of the ranking code (snapshots pin it); needs no caller.
select vera.search_version();

-- name: whoami
select principal_id, display_name, kind::text as kind, group_id, group_kind::text as group_kind, group_name,
       parent_group_id, role::text as role
from vera.whoami();

-- name: create_group
select vera.create_group(%(parent)s, %(kind)s::vera.group_kind, %(name)s);

-- name: create_principal
select vera.create_principal(%(group)s, %(kind)s::vera.principal_kind, %(name)s, %(role)s::vera.member_role,
                             %(email)s);

-- name: set_member_role
select vera.set_member_role(%(group)s, %(principal)s, %(role)s::vera.member_role);

-- name: remove_member
select vera.remove_member(%(group)s, %(principal)s);

-- name: create_api_key
select key_id, prefix, api_key from vera.create_api_key(%(name)s, %(expires_at)s, %(principal)s);

-- name: revoke_api_key
select vera.revoke_api_key(%(key)s);

-- name: list_api_keys
select key_id, prefix, name, created_at, expires_at, revoked_at, last_used_at from vera.list_api_keys();

-- name: setting
select vera.setting(%(group)s, %(name)s);

-- name: set_setting
select vera.set_setting(%(group)s, %(name)s, %(value)s);

-- name: register_source
select vera.register_source(%(group)s, %(kind)s, %(name)s, %(tier)s, %(token_env)s, %(config)s, %(uri)s);

-- name: record_episode
-- One version of a source record; created is false when the content is unchanged.
select episode_id, version, created
from vera.record_episode(%(group)s, %(source)s, %(external_id)s, %(sha256)s, %(object_key)s, %(mime)s,
                         %(observed_at)s, %(title)s, %(uri)s);

-- name: store_chunks
select ordinal, chunk_id from vera.store_chunks(%(group)s, %(episode)s, %(chunks)s, %(embedding_model)s);

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

-- name: search
select rank, kind::text, item_id, group_id, text, subject, predicate, object, score,
       relevance, authority, verification, recency, feedback, confidence, period, citation
from vera.search(query => %(query)s, query_embedding => %(embedding)s::vector, k => %(k)s,
                 as_of => %(as_of)s, groups => %(groups)s, weights => %(weights)s,
                 k_rrf => %(k_rrf)s::integer, candidates => %(candidates)s::integer,
                 embedding_model => %(embedding_model)s, lexical_weight => %(lexical_weight)s,
                 vector_weight => %(vector_weight)s, ef_search => %(ef_search)s::integer,
                 during => %(during)s::tstzrange);

-- name: record_feedback
select feedback_id, group_id, signals, created
from vera.record_feedback(%(kind)s::vera.item_kind, %(item_id)s, %(query)s, %(vote)s,
                          %(embedding)s::vector, %(as_of)s, %(groups)s, %(embedding_model)s,
                          %(during)s::tstzrange);

-- name: active_weights
select vera.active_weights(%(group)s);

-- name: reset_weights
select vera.reset_weights(%(group)s);

-- name: create_snapshot
select snapshot_id, item_count, created_at from vera.create_snapshot(%(group)s, %(name)s);

-- name: list_snapshots
select snapshot_id, name, created_at, sealed, item_count, embedding_model, embedding_dim, search_version, weights
from vera.list_snapshots(%(group)s);

-- name: drop_snapshot
select vera.drop_snapshot(%(group)s, %(name)s);

-- name: search_snapshot
select rank, kind::text, item_id, group_id, text, subject, predicate, object, score,
       relevance, authority, verification, recency, feedback, confidence, period, citation
from vera.search_snapshot(%(group)s, %(name)s, %(query)s, %(embedding)s::vector, %(k)s,
                          k_rrf => %(k_rrf)s::integer, candidates => %(candidates)s::integer,
                          embedding_model => %(embedding_model)s, during => %(during)s::tstzrange);

-- name: snapshot_pin
-- The embedding model a snapshot was taken with (its query must use it).
select embedding_model, embedding_dim from vera.list_snapshots(%(group)s) where name = btrim(%(name)s);

-- name: facts_to_embed
-- The facts among the ids that still have no vector, with the text to embed (the embed job).
select fact_id, fact_text from vera.facts_to_embed(%(group)s, %(fact_ids)s::uuid[]);

-- name: set_fact_embeddings
-- Stores the vectors of facts that had none, pinning the group's model.
select vera.set_fact_embeddings(%(group)s, %(fact_ids)s::uuid[], %(embeddings)s::vector[], %(embedding_model)s);

-- name: app_login_exists
-- Operator: one row when a role of that name exists, saying whether it is an application login (a member of vera_app).
select exists (select from pg_catalog.pg_auth_members m
                where m.member = r.oid and m.roleid = 'vera_app'::regrole) as app_login
from pg_catalog.pg_roles r
where r.rolname = %(role)s;

-- name: app_logins
-- Operator: every application login (a direct member of vera_app), its limits and its sessions now.
select r.rolname, r.rolcanlogin, r.rolconnlimit,
       (select s.setting from pg_catalog.pg_db_role_setting d, unnest(d.setconfig) s(setting)
         where d.setrole = r.oid and d.setdatabase = 0 and s.setting like 'statement\_timeout=%%') as statement_timeout,
       (select s.setting from pg_catalog.pg_db_role_setting d, unnest(d.setconfig) s(setting)
         where d.setrole = r.oid and d.setdatabase = 0
           and s.setting like 'idle\_in\_transaction\_session\_timeout=%%') as idle_timeout,
       (select count(*) from pg_catalog.pg_stat_activity a where a.usesysid = r.oid) as sessions
from pg_catalog.pg_roles r
join pg_catalog.pg_auth_members m on m.member = r.oid and m.roleid = 'vera_app'::regrole
order by r.rolname;

-- name: end_app_login_sessions
-- Operator: ends every session of an application login, waiting up to 5 s for each; how many were ended.
select count(*) filter (where pg_catalog.pg_terminate_backend(a.pid, 5000))
from pg_catalog.pg_stat_activity a
where a.usename = %(role)s and a.pid <> pg_catalog.pg_backend_pid();

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

-- name: principal_for_identity
-- Gateway: the principal an external identity was provisioned as, or null.
select vera.principal_for_identity(%(issuer)s, %(subject)s);

-- name: provision_identity
-- Gateway: provisions a first-seen external identity as a user with a role in a group, exactly once.
select vera.provision_identity(%(issuer)s, %(subject)s, %(display_name)s, %(email)s, %(group)s,
                               %(role)s::vera.member_role);

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

-- name: store_context_pack
-- Stores a context pack the caller assembled; its id.
select vera.store_context_pack(%(query)s, %(token_budget)s, %(items)s, %(as_of)s, %(groups)s::text[],
                               %(min_authority)s::float8, %(max_tier)s, %(weights)s, %(assembler_version)s,
                               %(omitted)s, %(conflicts)s, %(warnings)s, %(during)s);

-- name: get_context_pack
-- One of the caller's context packs.
select pack_id, created_at, searched_groups, request, weights, assembler_version, items, omitted, conflicts,
       warnings
from vera.get_context_pack(%(pack)s);

-- name: record_pack_feedback
-- A vote on the item at a position of one of the caller's packs, as on a hit.
select feedback_id, group_id, signals, created
from vera.record_pack_feedback(%(pack)s, %(position)s, %(vote)s, %(embedding)s::vector, %(embedding_model)s);

-- name: remember
-- A text or chat transcript (and structured claims) as one episode, idempotent by content.
select group_id, source_id, episode_id, version, created, passages, claims_recorded, claims_published,
       lifecycle::text as lifecycle
from vera.remember(%(content)s, %(messages)s, %(source)s, %(at)s, %(group)s, %(claims)s, %(embeddings)s,
                   %(embedding_model)s, %(time_scopes)s);

-- name: remember_passages
-- What vera.remember would store: the group, its embedding pin and the passages.
select group_id, embedding_model, embedding_dim, passages
from vera.remember_passages(%(content)s, %(messages)s, %(group)s);

-- ---------------------------------------------------------------------------
-- The graph projection (sql/functions/230_graph.sql): the worker's and the
-- operators' calls, and the two SQL ends of an explore through the graph.

-- name: graph_facts
-- The named facts of a group as the graph needs them, and whether each belongs there.
-- Vectors both as pgvector's binary (floats without parsing) and its text (a Cypher list literal
-- for FalkorDB): python/vera_client/adapters/graph/vectors.py says why.
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
-- for FalkorDB): python/vera_client/adapters/graph/vectors.py says why.
select fact_id, group_id, episode_id, source_id, subject_id, subject_name, object_id, object_name, predicate,
       fact_text, lifecycle, valid_from, valid_to, recorded_at, retired_at,
       public.vector_send(fact_embedding) as fact_embedding, fact_embedding::text as fact_embedding_text,
       public.vector_send(subject_embedding) as subject_embedding, subject_embedding::text as subject_embedding_text,
       public.vector_send(object_embedding) as object_embedding, object_embedding::text as object_embedding_text,
       belongs
from vera.graph_group_facts(%(group)s, %(after)s, %(max_rows)s);

-- name: graph_edge_states
-- The edges a group's graph should hold, with their four times.
select fact_id, valid_from, valid_to, recorded_at, retired_at from vera.graph_edge_states(%(group)s);

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

-- name: graph_check_results
-- The last graph check of every group, drift first.
select group_id, backend, checked_at, sql_edges, graph_edges, sql_nodes, graph_nodes, drift
from vera.graph_check_results();

-- name: queue_lag
-- Per queue (and overall, queue null): jobs due, when the oldest fell due, its age in seconds.
select queue, waiting, oldest_due, lag_seconds from vera.queue_lag();

-- name: explore_starts
-- The entities an explore starts from, one per group searched.
select group_id, entity_id from vera.explore_starts(%(entity)s, %(groups)s::text[]);

-- name: explore_facts
-- vera.explore's rows for the facts a graph walk reached, re-checked for the caller.
select hop, fact_id, group_id, subject, predicate, object, fact_text, lifecycle::text, tier, authority,
       verification::text, confidence, valid_from, valid_to, recorded_at, proposed_for, citation
from vera.explore_facts(%(fact_ids)s::uuid[], %(hops)s::integer[], %(as_of)s, %(groups)s::text[], %(max_rows)s);

-- ===== extraction and the judges (issue 15: sql/functions/240_extraction.sql) =====

-- name: request_extraction
-- Defers an extract job over the group's passages (redo: those the current model version has not seen).
select vera.request_extraction(%(group)s, %(redo)s);

-- name: passages_to_extract
-- The group's passages still to extract with a model version, with their text's hash.
select chunk_id, episode_id, ordinal, text, content_sha256
from vera.passages_to_extract(%(group)s, %(model_version)s, %(redo)s, %(max_rows)s);

-- name: take_passage
-- Takes a passage for this transaction; false when another extract job did it meanwhile.
select vera.take_passage(%(group)s, %(chunk)s, %(model_version)s, %(redo)s);

-- name: extraction_run
-- The stored extraction of a passage text, for reuse without a model call.
select model_version, outcome, claims from vera.extraction_run(%(group)s, %(sha256)s, %(model_version)s, %(any_model)s);

-- name: record_extraction
-- Records a passage's extraction by a model version.
select vera.record_extraction(%(group)s, %(chunk)s, %(sha256)s, %(model_version)s, %(outcome)s, %(claims)s,
                              %(dropped)s, %(detail)s, %(facts)s);

-- name: extraction_context
-- The group's ontology and most relevant entity names, for the extraction prompt.
select predicates, entities from vera.extraction_context(%(group)s, %(passage)s, %(max_entities)s);

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
select chunk_id, heading, text
from vera.passages_to_time_scope(%(group)s, %(reader_version)s, %(after)s, %(max_rows)s);

-- name: set_time_scopes
-- Records time scopes read again; how many passages were updated.
select vera.set_time_scopes(%(group)s, %(scopes)s);
