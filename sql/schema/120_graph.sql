-- The graph projection's last check per group (vera graph check, and the
-- periodic job that runs it): counts and digests on both sides. Written and
-- read only through the definer functions of sql/functions/230_graph.sql
-- (the worker and operators); no application role may touch it.
set role vera_owner;

create table vera.graph_checks (
    group_id     text not null references vera.groups (group_id) on delete cascade,
    -- 'none': a worker without a graph left the group's facts unprojected (record_graph_behind)
    backend      text not null constraint graph_checks_backend_known check (backend in ('neo4j', 'falkordb', 'none')),
    checked_at   timestamptz not null default now(),
    sql_edges    bigint not null,
    graph_edges  bigint not null,
    sql_nodes    bigint not null,
    graph_nodes  bigint not null,
    sql_digest   text not null,
    graph_digest text not null,
    -- what disagrees, in a few words (null: nothing)
    drift        text,
    primary key (group_id)
);
comment on table vera.graph_checks is
    'The last comparison of each group''s graph with PostgreSQL: counts, digests and drift';

reset role;
