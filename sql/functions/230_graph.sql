-- The graph projection's SQL side (docs/graph.md). PostgreSQL is the truth;
-- a worker projects facts into a graph server (Neo4j or FalkorDB) and can
-- rebuild it exactly. These functions hand the worker what a group's graph
-- must hold (vera.graph_facts for a job, vera.graph_group_facts for a
-- rebuild, vera.graph_edge_states and vera.graph_expected_nodes for a
-- check), record the check's result, tell how far the queues lag, and turn
-- the facts a graph walk reached back into vera.explore's answer.
--
-- Which facts belong in a group's graph (python/vera_client/domain/graph.py):
-- lifecycle published, superseded or proposal, retired_at null, and not of a
-- retracted episode. Everything else that a job names is removed.
--
-- Who may call them: the projection's readers run as vera_searcher (past
-- row-level security, every query filtered by the one group named) and are
-- granted only to the worker and operators; a worker acting for a principal
-- must be a member of the group (42501 otherwise, as everywhere). No
-- application role may execute them (42501 from PostgreSQL itself).
set role vera_owner;

-- Internal: whether a fact of this lifecycle and retirement belongs in its group's graph.
-- (Pure; no search_path pinned so that it inlines.)
create or replace function vera.graph_belongs(lifecycle vera.fact_lifecycle, retired_at timestamptz)
returns boolean
language sql immutable parallel safe
as $$
    select retired_at is null and lifecycle in ('published', 'superseded', 'proposal')
$$;
comment on function vera.graph_belongs(vera.fact_lifecycle, timestamptz) is
    'Internal: whether a fact belongs in its group''s graph (published, superseded or proposal; not retired)';
-- the graph's readers, which run as vera_searcher, call it
grant execute on function vera.graph_belongs(vera.fact_lifecycle, timestamptz) to vera_searcher;

-- Internal: refuses a caller who may not read a group's projection. A
-- transaction acting for a principal (the worker running that principal's
-- job) needs a member's role in the group (42501); one without a principal
-- is the worker's or an operator's own connection, the only roles these
-- functions are granted to. A definer (vera_owner): the readers that call it
-- run as vera_searcher, which may not call the authentication helpers.
create or replace function vera.require_graph_access(target_group text)
returns void
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    if target_group is null then
        raise exception 'group_id is required' using errcode = '22023';
    end if;
    if vera.current_principal() is not null then
        perform vera.require_role(target_group, 'member');
    end if;
end
$$;
comment on function vera.require_graph_access(text) is
    'Internal: 42501 unless the caller may read a group''s projection (a member, or the worker/operator itself)';
-- the graph's readers, which run as vera_searcher, call it
grant execute on function vera.require_graph_access(text) to vera_searcher;

-- Internal: the graph's view of some facts of one group, with whether each belongs.
create or replace function vera.graph_rows(target_group text, fact_ids uuid[], after_fact uuid, max_rows integer,
                                           only_belonging boolean)
returns setof vera.graph_fact
language sql stable
set search_path = vera, public, pg_temp
as $$
    select f.fact_id, f.group_id, f.episode_id, f.source_id, f.subject_entity_id, s.canonical_name,
           f.object_entity_id, coalesce(o.canonical_name, f.object_value), f.predicate, f.fact_text,
           f.lifecycle::text, f.valid_from, f.valid_to, f.recorded_at, f.retired_at,
           f.embedding, s.name_embedding, o.name_embedding,
           vera.graph_belongs(f.lifecycle, f.retired_at) and e.status is distinct from 'retracted' as belongs
      from vera.facts f
      join vera.entities s on s.group_id = f.group_id and s.entity_id = f.subject_entity_id
      left join vera.entities o on o.group_id = f.group_id and o.entity_id = f.object_entity_id
      left join vera.episodes e on e.group_id = f.group_id and e.episode_id = f.episode_id
     where f.group_id = target_group
       and (graph_rows.fact_ids is null or f.fact_id = any (graph_rows.fact_ids))
       and (graph_rows.after_fact is null or f.fact_id > graph_rows.after_fact)
       and (not graph_rows.only_belonging
            or (vera.graph_belongs(f.lifecycle, f.retired_at) and e.status is distinct from 'retracted'))
     order by f.fact_id
     limit graph_rows.max_rows
$$;
comment on function vera.graph_rows(text, uuid[], uuid, integer, boolean) is
    'Internal: facts of one group as the graph holds them, and whether each belongs there';
-- the graph's readers, which run as vera_searcher, call it
grant execute on function vera.graph_rows(text, uuid[], uuid, integer, boolean) to vera_searcher;

-- Contract: for a project_to_graph job, the current row of each named fact
-- of group of_group as the graph needs it: ids (fact, episode, source, subject and
-- object entity), names (the object's canonical name, or the literal value
-- when object_id is null), predicate, text, lifecycle, the four times, the
-- fact's vector and the names' vectors when known, and whether it belongs in
-- the graph (the worker upserts those that do and removes the others). Ids
-- of other groups, of other tenants or of facts that no longer exist are
-- simply not returned. At most 10,000 ids (54000).
-- Callers: vera_worker (a member of the group when acting for a principal), vera_operator.
-- Errors: 42501, 22023, 54000.
create or replace function vera.graph_facts(of_group text, fact_ids uuid[])
returns setof vera.graph_fact
language plpgsql stable security definer
set search_path = vera, public, pg_temp
as $$
begin
    perform vera.require_graph_access(graph_facts.of_group);
    if graph_facts.fact_ids is null then
        raise exception 'fact_ids is required' using errcode = '22023';
    end if;
    if cardinality(graph_facts.fact_ids) > 10000 then
        raise exception 'at most 10000 facts per call' using errcode = '54000';
    end if;
    return query select * from vera.graph_rows(graph_facts.of_group, graph_facts.fact_ids, null, 10000, false);
end
$$;
comment on function vera.graph_facts(text, uuid[]) is
    'The named facts of a group as the graph needs them, and whether each belongs there (worker, operator)';
alter function vera.graph_facts(text, uuid[]) owner to vera_searcher;
grant execute on function vera.graph_facts(text, uuid[]) to vera_worker, vera_operator;

-- Contract: one page of every fact that belongs in of_group's graph (a
-- rebuild), in fact_id order after after_fact (null: from the start), at
-- most max_rows (1..10000, 22023). Facts of retracted episodes are skipped.
-- Callers and errors as vera.graph_facts.
create or replace function vera.graph_group_facts(of_group text, after_fact uuid default null,
                                                  max_rows integer default 1000)
returns setof vera.graph_fact
language plpgsql stable security definer
set search_path = vera, public, pg_temp
as $$
begin
    perform vera.require_graph_access(graph_group_facts.of_group);
    if graph_group_facts.max_rows is null or graph_group_facts.max_rows not between 1 and 10000 then
        raise exception 'max_rows must be between 1 and 10000, got %', coalesce(graph_group_facts.max_rows::text, 'null')
            using errcode = '22023';
    end if;
    return query select * from vera.graph_rows(graph_group_facts.of_group, null, graph_group_facts.after_fact,
                                               graph_group_facts.max_rows, true);
end
$$;
comment on function vera.graph_group_facts(text, uuid, integer) is
    'One keyset page of the facts that belong in a group''s graph, for a rebuild (worker, operator)';
alter function vera.graph_group_facts(text, uuid, integer) owner to vera_searcher;
grant execute on function vera.graph_group_facts(text, uuid, integer) to vera_worker, vera_operator;

-- Contract: what of_group's graph should hold, edge by edge: the fact and
-- its four times (vera graph check digests them as the graph's side does,
-- python/vera_client/domain/graph.py's edge_digest). Callers and errors as
-- vera.graph_facts.
create or replace function vera.graph_edge_states(of_group text)
returns table (fact_id uuid, valid_from timestamptz, valid_to timestamptz, recorded_at timestamptz,
               retired_at timestamptz)
language plpgsql stable security definer
set search_path = vera, public, pg_temp
as $$
begin
    perform vera.require_graph_access(graph_edge_states.of_group);
    return query
        select r.fact_id, r.valid_from, r.valid_to, r.recorded_at, r.retired_at
          from vera.graph_rows(graph_edge_states.of_group, null, null, null, true) r;
end
$$;
comment on function vera.graph_edge_states(text) is
    'The edges a group''s graph should hold, with their times, for vera graph check (worker, operator)';
alter function vera.graph_edge_states(text) owner to vera_searcher;
grant execute on function vera.graph_edge_states(text) to vera_worker, vera_operator;

-- Contract: how many nodes of_group's graph should hold: the distinct
-- subject and object entities of its facts that belong, plus one node per
-- distinct literal object value. Callers and errors as vera.graph_facts.
create or replace function vera.graph_expected_nodes(of_group text)
returns bigint
language plpgsql stable security definer
set search_path = vera, public, pg_temp
as $$
declare
    nodes bigint;
begin
    perform vera.require_graph_access(graph_expected_nodes.of_group);
    with belonging as (
        select r.subject_id, r.object_id, r.object_name
          from vera.graph_rows(graph_expected_nodes.of_group, null, null, null, true) r
    )
    select count(*) into nodes from (
        select 'entity' as kind, b.subject_id::text as node from belonging b
        union
        select case when b.object_id is null then 'literal' else 'entity' end, coalesce(b.object_id::text, b.object_name)
          from belonging b) n;
    return nodes;
end
$$;
comment on function vera.graph_expected_nodes(text) is
    'How many nodes a group''s graph should hold (entities and literal values) (worker, operator)';
alter function vera.graph_expected_nodes(text) owner to vera_searcher;
grant execute on function vera.graph_expected_nodes(text) to vera_worker, vera_operator;

-- Contract: the groups a graph check covers: every group with facts, or the
-- one named (VN001 when it does not exist). Operators and the worker.
create or replace function vera.graph_groups(only_group text default null)
returns table (group_id text)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    if only_group is not null then
        if not exists (select from vera.groups g where g.group_id = only_group) then
            raise exception 'unknown group %', vera.shown(only_group) using errcode = 'VN001';
        end if;
        perform vera.require_graph_access(only_group);
        return query select only_group;
        return;
    end if;
    if vera.current_principal() is not null then
        raise exception 'a principal checks its groups one by one: name the group' using errcode = '42501';
    end if;
    return query select g.group_id from vera.groups g
                  where exists (select from vera.facts f where f.group_id = g.group_id)
                  order by g.group_id;
end
$$;
comment on function vera.graph_groups(text) is 'The groups a graph rebuild or check covers (worker, operator)';
alter function vera.graph_groups(text) owner to vera_searcher;
grant execute on function vera.graph_groups(text) to vera_worker, vera_operator;

-- Contract: records the result of checking one group's graph (replacing
-- the previous one). drift: what disagrees, or null. Worker and operators.
create or replace function vera.record_graph_check(
    group_id text, backend text, sql_edges bigint, graph_edges bigint, sql_nodes bigint, graph_nodes bigint,
    sql_digest text, graph_digest text, drift text)
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_graph_access(record_graph_check.group_id);
    insert into vera.graph_checks as c (group_id, backend, checked_at, sql_edges, graph_edges, sql_nodes,
                                        graph_nodes, sql_digest, graph_digest, drift)
    values (record_graph_check.group_id, record_graph_check.backend, now(), record_graph_check.sql_edges,
            record_graph_check.graph_edges, record_graph_check.sql_nodes, record_graph_check.graph_nodes,
            record_graph_check.sql_digest, record_graph_check.graph_digest,
            vera.shown(record_graph_check.drift, 500))
    on conflict on constraint graph_checks_pkey do update
       set backend = excluded.backend, checked_at = excluded.checked_at, sql_edges = excluded.sql_edges,
           graph_edges = excluded.graph_edges, sql_nodes = excluded.sql_nodes, graph_nodes = excluded.graph_nodes,
           sql_digest = excluded.sql_digest, graph_digest = excluded.graph_digest, drift = excluded.drift;
end
$$;
comment on function vera.record_graph_check(text, text, bigint, bigint, bigint, bigint, text, text, text) is
    'Records the last graph check of a group (worker, operator)';
alter function vera.record_graph_check(text, text, bigint, bigint, bigint, bigint, text, text, text) owner to vera_searcher;
grant execute on function vera.record_graph_check(text, text, bigint, bigint, bigint, bigint, text, text, text)
    to vera_worker, vera_operator;

-- Contract: records that a worker without a graph left facts of a group
-- unprojected (a project_to_graph job it ran): the group's last check becomes
-- backend 'none' with the drift saying so, until a real check replaces it, so
-- `vera graph check` and `vera db status` show the group's graph as behind.
-- Worker and operators.
create or replace function vera.record_graph_behind(group_id text, facts integer)
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_graph_access(record_graph_behind.group_id);
    if facts is null or facts < 0 then
        raise exception 'facts must be 0 or more' using errcode = '22023';
    end if;
    insert into vera.graph_checks as c (group_id, backend, checked_at, sql_edges, graph_edges, sql_nodes,
                                        graph_nodes, sql_digest, graph_digest, drift)
    values (record_graph_behind.group_id, 'none', now(), 0, 0, 0, 0, '', '',
            format('not projected: a worker without a graph ran %s facts'' job; '
                   'configure a graph, then vera graph rebuild --group %s',
                   record_graph_behind.facts, record_graph_behind.group_id))
    on conflict on constraint graph_checks_pkey do update
       set backend = excluded.backend, checked_at = excluded.checked_at, sql_edges = excluded.sql_edges,
           graph_edges = excluded.graph_edges, sql_nodes = excluded.sql_nodes, graph_nodes = excluded.graph_nodes,
           sql_digest = excluded.sql_digest, graph_digest = excluded.graph_digest, drift = excluded.drift;
end
$$;
comment on function vera.record_graph_behind(text, integer) is
    'Records that a worker without a graph left a group''s facts unprojected (worker, operator)';
alter function vera.record_graph_behind(text, integer) owner to vera_searcher;
grant execute on function vera.record_graph_behind(text, integer) to vera_worker, vera_operator;

-- Contract: the last graph check of every group, groups with drift first.
-- Worker and operators (vera db status, the worker's metrics).
create or replace function vera.graph_check_results()
returns table (group_id text, backend text, checked_at timestamptz, sql_edges bigint, graph_edges bigint,
               sql_nodes bigint, graph_nodes bigint, drift text)
language sql stable security definer
set search_path = vera, pg_temp
as $$
    select c.group_id, c.backend, c.checked_at, c.sql_edges, c.graph_edges, c.sql_nodes, c.graph_nodes, c.drift
      from vera.graph_checks c
     order by c.drift is null, c.group_id
$$;
comment on function vera.graph_check_results() is 'The last graph check of every group (worker, operator)';
alter function vera.graph_check_results() owner to vera_searcher;
grant execute on function vera.graph_check_results() to vera_worker, vera_operator;

-- Contract: how far behind each queue is: per queue with work due, the jobs
-- waiting or running, the moment the oldest of them fell due (its schedule,
-- else when it was deferred) and its age in seconds; a last row with queue
-- null covers every queue. The projection lag is the project_to_graph row's
-- (no row: nothing waits). Jobs scheduled for later do not lag yet. Worker
-- and operators. (PL/pgSQL: the queue's schema is installed after the functions.)
create or replace function vera.queue_lag()
returns table (queue text, waiting bigint, oldest_due timestamptz, lag_seconds double precision)
language plpgsql stable security definer
set search_path = vera, procrastinate, pg_temp
as $$
begin
    return query
        with due as (
            select j.queue_name::text as queue,
                   coalesce(j.scheduled_at,
                            (select min(ev.at) from procrastinate.procrastinate_events ev
                              where ev.job_id = j.id and ev.type = 'deferred')) as due_at
              from procrastinate.procrastinate_jobs j
             where j.status in ('todo', 'doing') and (j.scheduled_at is null or j.scheduled_at <= now())
        ), per_queue as (
            select d.queue, count(*) as waiting, min(d.due_at) as oldest_due from due d group by d.queue
        )
        select q.queue, q.waiting, q.oldest_due,
               greatest(extract(epoch from now() - q.oldest_due), 0)::double precision
          from (select p.queue, p.waiting, p.oldest_due, 0 as position from per_queue p
                union all
                select null, coalesce(sum(p.waiting), 0)::bigint, min(p.oldest_due), 1 from per_queue p) q
         order by q.position, q.queue;
end
$$;
comment on function vera.queue_lag() is
    'Per queue (and overall): jobs due, when the oldest fell due and how long ago (worker, operator)';
grant execute on function vera.queue_lag() to vera_worker, vera_operator;

-- Contract: the entities an explore through the graph starts from, as
-- vera.explore finds them (a name, any alias compared normalised, or an id;
-- one per group searched; VN001 when there is none). groups: optional, each
-- readable (42501). Errors: VN001, 22023, 22001, 42501, VA005.
create or replace function vera.explore_starts(entity text, groups text[] default null)
returns setof vera.entity_ref
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_principal();
    return query select r.group_id, r.entity_id
                   from vera.readable_entities(explore_starts.entity, vera.search_targets(explore_starts.groups)) r;
end
$$;
comment on function vera.explore_starts(text, text[]) is
    'The entities an explore starts from (by name, alias or id), one per group searched';
grant execute on function vera.explore_starts(text, text[]) to vera_app, vera_gateway, vera_worker;

-- Contract: vera.explore's answer from the facts a graph walk reached:
-- fact_ids with the hop each was first reached at (same length; 22023
-- otherwise), re-checked for the caller as vera.explore checks them (in the
-- groups searched, answering at as_of, default now: published and
-- superseded revisions valid then and the caller's own proposals), so a fact
-- the caller cannot read never comes back even if a graph returned it. Rows
-- and order exactly as vera.explore's, at most max_rows (1..1000).
-- Errors: 22023, 42501, VA005.
create or replace function vera.explore_facts(
    fact_ids uuid[], hops integer[], as_of timestamptz default null, groups text[] default null,
    max_rows integer default 100)
returns setof vera.explored_fact
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
    targets constant text[] := vera.search_targets(explore_facts.groups);
    reference constant timestamptz := coalesce(explore_facts.as_of, now());
    personal text;
    visible_ids uuid[];
    visible_hops integer[];
begin
    perform vera.check_as_of(explore_facts.as_of);
    perform vera.check_max_rows(explore_facts.max_rows);
    if explore_facts.fact_ids is null or explore_facts.hops is null
       or cardinality(explore_facts.fact_ids) <> cardinality(explore_facts.hops) then
        raise exception 'fact_ids and hops must be arrays of the same length' using errcode = '22023';
    end if;
    if cardinality(explore_facts.fact_ids) > 100000 then
        raise exception 'at most 100000 facts per call' using errcode = '54000';
    end if;
    if exists (select from unnest(explore_facts.hops) h where h is null or h not between 1 and 5) then
        raise exception 'every hop must be between 1 and 5' using errcode = '22023';
    end if;
    select p.personal_group_id into personal from vera.principals p where p.principal_id = caller;
    -- a fact named twice keeps its first (lowest) hop
    select array_agg(x.id order by x.hop, x.id), array_agg(x.hop order by x.hop, x.id)
      into visible_ids, visible_hops
      from (select i.id, min(i.hop) as hop
              from unnest(explore_facts.fact_ids, explore_facts.hops) as i(id, hop)
              join vera.facts f on f.fact_id = i.id
             where f.group_id = any (targets)
               and vera.fact_visible(f.lifecycle, f.group_id, f.retired_at, f.valid_from, f.valid_to, reference,
                                     personal)
             group by i.id) x;
    return query select * from vera.explored_rows(visible_ids, visible_hops, explore_facts.max_rows);
end
$$;
comment on function vera.explore_facts(uuid[], integer[], timestamptz, text[], integer) is
    'vera.explore''s rows for the facts a graph walk reached, re-checked for the caller';
grant execute on function vera.explore_facts(uuid[], integer[], timestamptz, text[], integer)
    to vera_app, vera_gateway, vera_worker;

reset role;
