-- 0008_graph_behind: a worker without a graph records that a group's graph is
-- behind (vera.record_graph_behind) instead of only logging it, so `vera graph
-- check` and `vera db status` say so: graph_checks.backend may be 'none'.
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.
set role vera_owner;

alter table vera.graph_checks drop constraint graph_checks_backend_known;
alter table vera.graph_checks add constraint graph_checks_backend_known
    check (backend in ('neo4j', 'falkordb', 'none'));

reset role;
