-- Grants on tables and sequences: what each role may touch. Idempotent
-- (grant is a no-op when held). A function's `grant execute` stands in its
-- own file of sql/functions, right after its definition (and its owner, when
-- another role owns it), so adding a function touches one file; nothing
-- vera_owner creates is executable by PUBLIC unless granted there
-- (000_bootstrap.sql revokes it by default).
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

-- the trigram probe's owner reads aliases past RLS (and checks the group itself)
grant select on vera.entity_aliases, vera.entities to vera_resolver;

-- the candidate stage's owner reads past RLS (and checks the groups itself)
grant select on vera.facts, vera.chunks, vera.episodes, vera.sources, vera.groups, vera.snapshot_items,
    vera.term_stats, vera.term_stat_changes, vera.snapshot_term_stats
    to vera_searcher;

-- External (OIDC) identities, sql/functions/220_identities.sql: the table is
-- granted to nobody (see the top); only the gateway and operators may call
-- its functions.

-- The graph projection (sql/functions/230_graph.sql, docs/graph.md): its
-- readers belong to vera_searcher (past RLS, one group at a time) and only
-- the worker and operators may call them; no application role, so no tenant
-- reads another group's projection through them. The check's table is
-- reached only through its functions.
grant select on vera.entities, vera.groups, vera.principals to vera_searcher;
grant select, insert, update on vera.graph_checks to vera_searcher;

-- The calibration (sql/functions/195_weights.sql) belongs to vera_searcher: the
-- worker's schedule runs it with no caller, past RLS, one group at a time.
grant select on vera.feedback, vera.group_settings to vera_searcher;
grant select, insert, update on vera.ranking_weights to vera_searcher;

reset role;

-- The connectors' schedule (sql/functions/117_source_runs.sql) belongs to
-- vera_searcher: the worker's periodic task finds due sources past RLS.
grant select on vera.source_runs to vera_searcher;
grant update (scheduled_at) on vera.sources to vera_searcher;

-- Model usage (sql/functions/266_model_usage.sql): the worker adds to it only
-- through vera.record_model_usage, which belongs to vera_searcher; admins read
-- it through vera.group_model_usage (under RLS). No role writes the table itself.
grant select, insert, update on vera.model_usage to vera_searcher;
