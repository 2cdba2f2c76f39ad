-- Grants: what each role may touch. Idempotent (grant is a no-op when held).
--
-- vera_app     the SQL API only: no table at all. Reads and writes go through
--              definer functions, so curation rules (tiers, contamination guard)
--              cannot be skipped, and a plan never shows another tenant's rows
--              (see below).
-- vera_worker  reads and updates rows in place (embeddings, statuses) through RLS;
--              a trusted server process, never a tenant's login.
-- vera_gateway an HTTP/MCP server: the SQL API plus authenticate_principal.
-- vera_operator provisions tenants.
set role vera_owner;

-- Why the application roles may not select tables even under row-level
-- security: RLS filters rows after the planner chose how to find them, so
-- EXPLAIN ANALYZE ("Rows Removed by Filter") and even plain EXPLAIN (row
-- estimates from a leakproof "group_id = '...'" against the column
-- statistics) count other tenants' rows, and an index probe on a shared
-- index (entity-name HNSW) visits them. A definer function's plan is not
-- shown to its caller. Revoked explicitly, since an older database granted it.
revoke all on all tables in schema vera from vera_app, vera_gateway;
revoke all on all sequences in schema vera from vera_app, vera_gateway;

grant select on vera.sources, vera.episodes, vera.chunks, vera.entities, vera.entity_aliases,
    vera.predicates, vera.facts, vera.feedback, vera.ranking_weights, vera.snapshots,
    vera.snapshot_items, vera.groups, vera.memberships, vera.principals, vera.audit_log, vera.group_settings
    to vera_worker;

grant insert, update, delete on vera.sources, vera.episodes, vera.chunks, vera.entities,
    vera.entity_aliases, vera.predicates, vera.facts, vera.snapshot_items
    to vera_worker;

-- helpers that policies call must be executable by whoever the policy applies to
grant execute on function vera.current_principal(), vera.readable_groups(), vera.writable_groups(),
    vera.administrable_groups()
    to public;

-- a helper that vera.lexical_query (public, runs as its caller) calls
grant execute on function vera.any_of(text[]) to vera_app, vera_worker, vera_gateway, vera_searcher;

-- the public SQL API
grant execute on function
    vera.authenticate(text),
    vera.require_principal(),
    vera.require_role(text, vera.member_role),
    vera.role_in(text),
    vera.whoami(),
    vera.create_group(text, vera.group_kind, text),
    vera.create_principal(text, vera.principal_kind, text, vera.member_role, text),
    vera.set_member_role(text, uuid, vera.member_role),
    vera.remove_member(text, uuid),
    vera.create_api_key(text, timestamptz, uuid),
    vera.revoke_api_key(text),
    vera.list_api_keys(),
    vera.normalize_name(text),
    vera.normalize_predicate(text),
    vera.tier_authority(integer),
    vera.setting_default(text),
    vera.setting(text, text),
    vera.set_setting(text, text, jsonb),
    vera.register_source(text, text, text, integer, text, jsonb, text),
    vera.record_episode(text, uuid, text, bytea, text, text, timestamptz, text, text),
    vera.store_chunks(text, uuid, jsonb, text),
    vera.list_sources(text),
    vera.source_cursor(text, uuid),
    vera.advance_source_cursor(text, uuid, jsonb),
    vera.request_ingest(text, uuid, text),
    vera.declare_predicate(text, text, vera.predicate_cardinality, text),
    vera.publish_claims(text, uuid, jsonb, text),
    vera.facts_to_embed(text, uuid[]),
    vera.set_fact_embeddings(text, uuid[], public.vector[], text),
    vera.pinned_models(text[]),
    vera.pending_reviews(text),
    vera.review_claim(text, uuid, text, text),
    vera.pending_passages(text),
    vera.review_passage(text, uuid, text, text),
    vera.retract_episode(text, uuid, text),
    vera.erase_episode(text, uuid, text),
    vera.retract_source(text, uuid, text),
    vera.erase_source(text, uuid, text),
    vera.complete_cleanup(bigint),
    vera.search_version(),
    vera.default_weights(),
    vera.active_weights(text),
    vera.query_terms(text),
    vera.lexical_query(text),
    vera.read_facts(text, text, text[], timestamptz, integer),
    vera.search(text, public.vector, integer, timestamptz, text[], jsonb, integer, integer, text, double precision,
                double precision, integer, tstzrange),
    vera.record_feedback(vera.item_kind, uuid, text, text, public.vector, timestamptz, text[], text, tstzrange),
    vera.calibrate_weights(text, integer),
    vera.reset_weights(text),
    vera.create_snapshot(text, text),
    vera.list_snapshots(text),
    vera.drop_snapshot(text, text),
    vera.search_snapshot(text, text, text, public.vector, integer, integer, integer, text, double precision,
                         double precision, tstzrange)
    to vera_app, vera_worker, vera_gateway;

grant execute on function vera.authenticate_principal(uuid) to vera_gateway, vera_worker;

-- the trigram probe's owner reads aliases past RLS (and checks the group itself)
grant select on vera.entity_aliases, vera.entities to vera_resolver;
grant execute on function vera.similar_aliases(integer[], text[], text[], float8[]) to vera_owner;

-- the candidate stage's owner reads past RLS (and checks the groups itself)
grant select on vera.facts, vera.chunks, vera.episodes, vera.sources, vera.groups, vera.snapshot_items,
    vera.term_stats, vera.term_stat_changes, vera.snapshot_term_stats
    to vera_searcher;
grant execute on function vera.fact_visible(vera.fact_lifecycle, text, timestamptz, timestamptz, timestamptz,
                                            timestamptz, text),
    vera.fact_order_key(text, text, text, timestamptz),
    vera.passage_order_key(text, text, integer, integer),
    vera.group_order_key(vera.group_kind, text),
    vera.group_lexemes(text, uuid, tsvector),
    vera.lexeme_parts(),
    vera.group_lexeme_query(text[], text[], text[], text[])
    to vera_searcher;
grant execute on function vera.group_vector_index_name(text, text, integer),
    vera.group_vector_index_ready(text, text, integer)
    to vera_searcher;
-- the passage statistics' triggers (sql/functions/165_term_stats.sql) read past RLS as vera_searcher
grant execute on function vera.passage_counted(vera.fact_lifecycle),
    vera.count_terms(vera.item_kind, text[], tsvector[], integer[])
    to vera_searcher;
grant execute on function vera.term_statistics(text[], vera.item_kind, text[]),
    vera.bm25_parameters(vera.item_kind),
    vera.lexical_budget(vera.item_kind),
    vera.bm25_idf(bigint, bigint),
    vera.bm25_weights(vera.item_kind[], text[], bigint[], bigint[]),
    vera.bm25_score(vera.item_kind, tsvector, text[], double precision[], double precision),
    vera.bm25_document_score(vera.item_kind, tsvector, text[], double precision[], double precision)
    to vera_searcher;
grant execute on function
    vera.search_candidates(text[], text[], text[], public.vector, timestamptz, text, integer, integer),
    vera.snapshot_candidates(text, uuid, text[], public.vector, integer)
    to vera_owner;

grant execute on function vera.create_tenant(text, text, text) to vera_operator;
grant execute on function vera.missing_vector_indexes(integer) to vera_operator;

-- External (OIDC) identities, sql/functions/220_identities.sql: only the
-- gateway, which verified the token itself, and operators map an identity to
-- a principal or provision one; no application role (vera_app and its logins),
-- nor the worker, may. The table itself is granted to nobody (see the top).
grant execute on function vera.principal_for_identity(text, text),
    vera.provision_identity(text, text, text, text, text, vera.member_role)
    to vera_gateway, vera_operator;

reset role;

-- ===== the MCP server's reads, proposals and context packs (issue 13) =====
set role vera_owner;
grant execute on function
    vera.get_fact(uuid, text[]),
    vera.get_evidence(uuid, text[]),
    vera.explain_fact(uuid, text[]),
    vera.get_entity(text, text[], timestamptz, integer),
    vera.get_source(uuid, integer),
    vera.explore(text, integer, timestamptz, text[], integer),
    vera.changes(timestamptz, integer, text[]),
    vera.conflicts(integer, text[]),
    vera.propose(text, text, text, text, text),
    vera.retract_proposal(uuid),
    vera.list_proposals(integer),
    vera.store_context_pack(text, integer, jsonb, timestamptz, text[], double precision, integer, jsonb, text, jsonb,
                            jsonb, jsonb, jsonb),
    vera.get_context_pack(uuid),
    vera.record_pack_feedback(uuid, integer, text, public.vector, text)
    to vera_app, vera_gateway;
reset role;

-- ===== remember in one call (issue 17), sql/functions/216_remember.sql =====
set role vera_owner;
grant execute on function
    vera.remember(text, jsonb, text, timestamptz, text, jsonb, jsonb, text, jsonb),
    vera.remember_passages(text, jsonb, text),
    vera.remember_default_tier()
    to vera_app, vera_gateway;

-- ===== the graph projection (sql/functions/230_graph.sql, docs/graph.md) =====
-- The projection's readers belong to vera_searcher (past RLS, one group at a
-- time) and only the worker and operators may call them; no application
-- role, so no tenant reads another group's projection through them. The
-- check's table is reached only through its functions.
set role vera_owner;
grant select on vera.entities, vera.groups, vera.principals to vera_searcher;
grant select, insert, update on vera.graph_checks to vera_searcher;
grant execute on function vera.graph_belongs(vera.fact_lifecycle, timestamptz),
    vera.graph_rows(text, uuid[], uuid, integer, boolean),
    vera.require_graph_access(text),
    vera.shown(text, integer)
    to vera_searcher;
grant execute on function
    vera.graph_facts(text, uuid[]),
    vera.graph_group_facts(text, uuid, integer),
    vera.graph_edge_states(text),
    vera.graph_expected_nodes(text),
    vera.graph_groups(text),
    vera.record_graph_check(text, text, bigint, bigint, bigint, bigint, text, text, text),
    vera.graph_check_results(),
    vera.queue_lag()
    to vera_worker, vera_operator;
-- explore through the graph: its two SQL ends, as the caller (like vera.explore)
grant execute on function
    vera.explore_starts(text, text[]),
    vera.explore_facts(uuid[], integer[], timestamptz, text[], integer)
    to vera_app, vera_gateway, vera_worker;

-- ===== extraction and the judges (issue 15: sql/functions/240_extraction.sql) =====
-- Anyone who may ingest may ask for extraction (vera reprocess); the worker runs
-- the rest as the principal who asked, each function checking that principal's role.
set role vera_owner;
grant execute on function vera.request_extraction(text, boolean) to vera_app, vera_worker, vera_gateway;
grant execute on function
    vera.passages_to_extract(text, text, boolean, integer),
    vera.take_passage(text, uuid, text, boolean),
    vera.extraction_run(text, bytea, text, boolean),
    vera.record_extraction(text, uuid, bytea, text, text, jsonb, integer, text, integer),
    vera.extraction_context(text, text, integer),
    vera.judge_verdict(text, text, bytea, text, text),
    vera.store_verdict(text, text, bytea, text, text, jsonb),
    vera.equivalence_case(text, uuid),
    vera.settle_entity(text, uuid, uuid, text, text, text),
    vera.contradiction_case(text, uuid),
    vera.replace_values(text, uuid, uuid[], text, text, text)
    to vera_worker;
reset role;

-- ===== time scopes of passages (issue 16: sql/functions/107_time_scopes.sql) =====
-- Reading a group's time scopes again (vera reprocess --time-scopes) is an
-- admin's operation, done by the caller's own client: no model, no worker.
set role vera_owner;
grant execute on function
    vera.passages_to_time_scope(text, integer, uuid, integer),
    vera.set_time_scopes(text, jsonb)
    to vera_app, vera_gateway;
reset role;
