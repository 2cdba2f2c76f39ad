-- Reading an entity (vera.get_entity) and a source (vera.get_source) as the
-- authenticated caller. Another tenant's id or name answers as one that
-- exists nowhere (VN001).
set role vera_owner;

-- Internal: the entities the caller may read by a name (any alias,
-- normalised) or an id, in the groups (every readable group when null),
-- as (group_id, entity_id) pairs in the order of their groups' kinds and
-- names; VN001 when there are none. Merged entities stand for the entity
-- they were merged into.
create or replace function vera.readable_entities(name_or_id text, groups text[])
returns setof vera.entity_ref
language plpgsql stable
set search_path = vera, pg_temp
as $$
declare
    targets constant text[] := vera.search_targets(groups);
    as_id uuid;
    norm text;
    found_entity vera.entity_ref;
    found_any boolean := false;
begin
    if coalesce(btrim(name_or_id), '') = '' then
        raise exception 'an entity name or id is required' using errcode = '22023';
    end if;
    perform vera.check_length(name_or_id, 'entity', 500);
    if name_or_id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then
        as_id := name_or_id::uuid;
    end if;
    norm := vera.normalize_name(name_or_id);
    for found_entity in
        select distinct on (g.group_id, coalesce(e.merged_into, e.entity_id)) e.group_id,
               coalesce(e.merged_into, e.entity_id)
          from vera.entities e
          join vera.groups g on g.group_id = e.group_id
         where e.group_id = any (targets)
           and (e.entity_id = as_id
                or (as_id is null and exists (select from vera.entity_aliases a
                                               where a.group_id = e.group_id and a.entity_id = e.entity_id
                                                 and a.alias_norm = norm)))
         order by g.group_id, coalesce(e.merged_into, e.entity_id)
    loop
        found_any := true;
        return next found_entity;
    end loop;
    if not found_any then
        raise exception 'no entity % that you can read', vera.shown(name_or_id) using errcode = 'VN001';
    end if;
end
$$;
comment on function vera.readable_entities(text, text[]) is 'Internal: entities the caller reads by name or id, or VN001';

-- Contract: the entity known by a name (any of its aliases, compared
-- normalised) or an id, in every group the caller searches (one entity per
-- group: the same name in an organisation and its project are two
-- entities), with its aliases and the facts that hold at as_of (default
-- now, as search answers them) with it as subject or as object. One row per
-- (entity, fact): role 'subject' or 'object', then the fact; an entity
-- without facts has one row whose fact columns are null. Order: the
-- groups' kinds and names, the entity, role (subject first), predicate,
-- object, valid_from, fact_id; at most max_rows (1..1000) rows.
-- Errors: VN001 (no such entity for the caller), 22023, 22001, 42501, VA005.
create or replace function vera.get_entity(
    name_or_id text, groups text[] default null, as_of timestamptz default null, max_rows integer default 200)
returns table (entity_id uuid, entity_group_id text, canonical_name text, entity_type text, aliases text[],
               role text, fact_id uuid, group_id text, subject text, predicate text, object text, fact_text text,
               lifecycle vera.fact_lifecycle, tier smallint, authority real, verification vera.verification,
               confidence real, valid_from timestamptz, valid_to timestamptz, recorded_at timestamptz,
               proposed_for text, citation jsonb)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
    reference constant timestamptz := coalesce(get_entity.as_of, now());
    personal text;
    entity_groups text[];
    entity_ids uuid[];
    fact_ids uuid[];
begin
    perform vera.check_as_of(get_entity.as_of);
    perform vera.check_max_rows(get_entity.max_rows);
    select array_agg(r.group_id), array_agg(r.entity_id) into entity_groups, entity_ids
      from vera.readable_entities(get_entity.name_or_id, get_entity.groups) r;
    select p.personal_group_id into personal from vera.principals p where p.principal_id = caller;
    select array_agg(f.fact_id) into fact_ids
      from vera.facts f
      join unnest(entity_groups, entity_ids) as x(g, id)
        on f.group_id = x.g and (f.subject_entity_id = x.id or f.object_entity_id = x.id)
     where vera.fact_visible(f.lifecycle, f.group_id, f.retired_at, f.valid_from, f.valid_to, reference, personal);
    return query
        with chosen as (
            select x.g, x.id from unnest(entity_groups, entity_ids) as x(g, id)
        ), details as (
            select * from vera.fact_details(coalesce(fact_ids, '{}'))
        ), related as (
            select c.g, c.id, r.role, d.*
              from chosen c
              join vera.facts f on f.group_id = c.g and f.fact_id = any (coalesce(fact_ids, '{}'))
              cross join lateral (select 'subject' as role where f.subject_entity_id = c.id
                                  union all
                                  select 'object' where f.object_entity_id = c.id) r
              join details d on d.fact_id = f.fact_id
        )
        select e.entity_id, e.group_id, e.canonical_name, e.entity_type,
               (select array_agg(a.alias order by a.alias_norm, a.alias) from vera.entity_aliases a
                 where a.group_id = e.group_id and a.entity_id = e.entity_id),
               rel.role, rel.fact_id, rel.group_id, rel.subject, rel.predicate, rel.object, rel.fact_text,
               rel.lifecycle, rel.tier, rel.authority, rel.verification, rel.confidence, rel.valid_from,
               rel.valid_to, rel.recorded_at, rel.proposed_for, rel.citation
          from chosen c
          join vera.entities e on e.group_id = c.g and e.entity_id = c.id
          join vera.groups g on g.group_id = e.group_id
          left join related rel on rel.g = c.g and rel.id = c.id
         order by vera.group_order_key(g.kind, g.name), e.group_id, e.canonical_name, e.entity_id,
                  rel.role desc nulls last, rel.predicate, rel.object, rel.valid_from, rel.fact_id
         limit get_entity.max_rows;
end
$$;
comment on function vera.get_entity(text, text[], timestamptz, integer) is
    'An entity by name or id: its aliases and the facts that hold with it as subject or object';
grant execute on function vera.get_entity(text, text[], timestamptz, integer) to vera_app, vera_gateway;

-- Contract: one source the caller may read: kind, name, uri, tier, when it
-- was registered and retracted; its freshness (when its last episode was
-- recorded and observed, and the age in seconds since it was last
-- ingested); and its versions, newest first (at most max_episodes, 1..1000):
-- episodes as jsonb objects {episode_id, external_id, version, title,
-- observed_at, recorded_at, status, retracted}. No secret (token_env names a
-- variable) and no connector config. Errors: VN001 (no such source for the
-- caller), 22023, VA005.
create or replace function vera.get_source(of_source uuid, max_episodes integer default 100)
returns table (source_id uuid, group_id text, kind text, name text, uri text, trust_tier smallint,
               created_at timestamptz, retracted_at timestamptz, episode_count bigint,
               last_recorded_at timestamptz, last_observed_at timestamptz, age_seconds double precision,
               episodes jsonb)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    src vera.sources;
begin
    perform vera.require_principal();
    if of_source is null then
        raise exception 'source_id is required' using errcode = '22023';
    end if;
    if max_episodes is null or max_episodes not between 1 and 1000 then
        raise exception 'max_episodes must be between 1 and 1000, got %', coalesce(max_episodes::text, 'null')
            using errcode = '22023';
    end if;
    select * into src from vera.sources s
     where s.source_id = of_source and s.group_id = any (vera.readable_groups());
    if not found then
        raise exception 'no source % that you can read', of_source using errcode = 'VN001';
    end if;
    return query
        select src.source_id, src.group_id, src.kind, src.name, src.uri, src.trust_tier, src.created_at,
               src.retracted_at, stats.n, stats.last_recorded, stats.last_observed,
               extract(epoch from now() - stats.last_recorded)::double precision,
               coalesce((select jsonb_agg(jsonb_build_object(
                                    'episode_id', e.episode_id, 'external_id', e.external_id,
                                    'version', e.version, 'title', e.title, 'observed_at', e.observed_at,
                                    'recorded_at', e.recorded_at, 'status', e.status,
                                    'retracted', e.status = 'retracted')
                                 order by e.recorded_at desc, e.external_id, e.version desc)
                           from (select * from vera.episodes e2
                                  where e2.group_id = src.group_id and e2.source_id = src.source_id
                                  order by e2.recorded_at desc, e2.external_id, e2.version desc
                                  limit max_episodes) e), '[]'::jsonb)
          from (select count(*) as n, max(e.recorded_at) as last_recorded, max(e.observed_at) as last_observed
                  from vera.episodes e
                 where e.group_id = src.group_id and e.source_id = src.source_id) stats;
end
$$;
comment on function vera.get_source(uuid, integer) is
    'A source with its freshness and its versions (episodes), newest first';
grant execute on function vera.get_source(uuid, integer) to vera_app, vera_gateway;

reset role;
