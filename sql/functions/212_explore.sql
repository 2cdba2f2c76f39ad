-- Multi-hop exploration over the facts that share entities, as the
-- authenticated caller. The graph projection (a later issue) must return
-- exactly this answer; the definition below is the contract both meet.
set role vera_owner;

-- Internal: explore's rows for facts reached at hops (same length), in
-- explore's order: hop, then the fact's group (kind and name), subject name,
-- predicate, object, valid_from and fact_id; at most max_rows. Also the
-- answer of an explore walked on the graph (vera.explore_facts).
create or replace function vera.explored_rows(ids uuid[], hops integer[], max_rows integer)
returns setof vera.explored_fact
language sql stable
set search_path = vera, pg_temp
as $$
    select h.hop, d.*
      from vera.fact_details(coalesce(ids, '{}')) d
      join unnest(ids, hops) as h(id, hop) on h.id = d.fact_id
      join vera.groups g on g.group_id = d.group_id
     order by h.hop, vera.group_order_key(g.kind, g.name), d.group_id, d.subject, d.predicate, d.object,
              d.valid_from, d.fact_id
     limit max_rows
$$;
comment on function vera.explored_rows(uuid[], integer[], integer) is
    'Internal: explore''s rows for facts reached at hops, in explore''s order';

-- Contract: breadth-first from an entity (a name, any alias compared
-- normalised, or an id: every matching entity of the groups searched, one
-- per group; VN001 when there is none).
--   hop 0 reaches the starting entities;
--   hop h (1..depth) returns every fact that answers at as_of (default now,
--   as search answers: published and superseded revisions valid then, and
--   the caller's own proposals) in the groups searched, not returned at an
--   earlier hop, whose subject or object is an entity reached at a hop
--   before h; its subject and object entities are reached at hop h.
-- Entities belong to one group: a hop never crosses from one group to
-- another (the same name in two groups, or in two tenants, is two
-- entities), and a literal object (not an entity) reaches nothing.
-- Order: hop, then the fact's group (kind and name), subject name,
-- predicate, object, valid_from and fact_id; at most max_rows (1..1000)
-- rows, cut in that order. depth: 1..5 (22023 otherwise).
-- Errors: VN001, 22023, 22001, 42501, VA005.
create or replace function vera.explore(
    entity text, depth integer default 2, as_of timestamptz default null, groups text[] default null,
    max_rows integer default 100)
returns setof vera.explored_fact
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
    targets constant text[] := vera.search_targets(explore.groups);
    reference constant timestamptz := coalesce(explore.as_of, now());
    personal text;
    reached_groups text[];
    reached_ids uuid[];
    found_ids uuid[] := '{}';
    found_hops integer[] := '{}';
    step_ids uuid[];
    step integer;
begin
    if explore.depth is null or explore.depth not between 1 and 5 then
        raise exception 'depth must be between 1 and 5, got %', coalesce(explore.depth::text, 'null')
            using errcode = '22023';
    end if;
    perform vera.check_as_of(explore.as_of);
    perform vera.check_max_rows(explore.max_rows);
    select array_agg(r.group_id), array_agg(r.entity_id) into reached_groups, reached_ids
      from vera.readable_entities(explore.entity, targets) r;
    select p.personal_group_id into personal from vera.principals p where p.principal_id = caller;

    for step in 1 .. explore.depth loop
        select array_agg(f.fact_id) into step_ids
          from vera.facts f
         where f.group_id = any (targets)
           and not f.fact_id = any (found_ids)
           and vera.fact_visible(f.lifecycle, f.group_id, f.retired_at, f.valid_from, f.valid_to, reference, personal)
           and exists (select from unnest(reached_groups, reached_ids) as r(g, id)
                        where r.g = f.group_id and (r.id = f.subject_entity_id or r.id = f.object_entity_id));
        exit when step_ids is null;
        found_ids := found_ids || step_ids;
        found_hops := found_hops || array_fill(step, array[cardinality(step_ids)]);
        -- the entities these facts reach, each once
        select array_agg(x.g), array_agg(x.id) into reached_groups, reached_ids
          from (select r.g, r.id from unnest(reached_groups, reached_ids) as r(g, id)
                union
                select f.group_id, f.subject_entity_id from vera.facts f
                 where f.fact_id = any (step_ids) and f.group_id = any (targets)
                union
                select f.group_id, f.object_entity_id from vera.facts f
                 where f.fact_id = any (step_ids) and f.group_id = any (targets) and f.object_entity_id is not null) x;
    end loop;

    return query select * from vera.explored_rows(found_ids, found_hops, explore.max_rows);
end
$$;
comment on function vera.explore(text, integer, timestamptz, text[], integer) is
    'Breadth-first multi-hop exploration (1-5 hops) over facts that share entities, with citations';
grant execute on function vera.explore(text, integer, timestamptz, text[], integer) to vera_app, vera_gateway;

reset role;
