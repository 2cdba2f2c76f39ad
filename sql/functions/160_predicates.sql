-- The ontology: declaring predicates ahead of the claims that use them.
set role vera_owner;

-- Contract: declares (or re-declares) a predicate in a group the caller
-- administers; the name is normalised to UPPER_SNAKE and returned.
-- Turning a multi-valued predicate functional rebuilds its histories.
create or replace function vera.declare_predicate(
    group_id text, name text, cardinality vera.predicate_cardinality default 'multi', description text default null
)
returns text
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    normalized text := vera.normalize_predicate(declare_predicate.name);
    affected record;
begin
    perform vera.require_role(declare_predicate.group_id, 'admin');
    perform vera.check_length(declare_predicate.description, 'description', 2000);
    if normalized is null then
        raise exception 'predicate % has no UPPER_SNAKE form', coalesce(vera.shown(declare_predicate.name), 'null')
            using errcode = '22023';
    end if;
    insert into vera.predicates as p (group_id, name, cardinality, description)
    values (declare_predicate.group_id, normalized, coalesce(declare_predicate.cardinality, 'multi'),
            declare_predicate.description)
    on conflict on constraint predicates_pkey do update
        set cardinality = excluded.cardinality, description = coalesce(excluded.description, p.description);
    select array_agg(f.group_id) as g, array_agg(f.subject_entity_id) as s, array_agg(f.predicate) as p
      into affected
      from vera.facts f
     where f.group_id = declare_predicate.group_id and f.predicate = normalized and f.lifecycle = 'published';
    perform vera.rebuild_timelines(affected.g, affected.s, affected.p);
    perform vera.audit(declare_predicate.group_id, 'predicate.declare', 'predicate', normalized,
                       jsonb_build_object('cardinality', declare_predicate.cardinality));
    return normalized;
end
$$;
comment on function vera.declare_predicate(text, text, vera.predicate_cardinality, text) is
    'Declares a predicate (functional or multi-valued) in a group''s ontology; admins only';
grant execute on function vera.declare_predicate(text, text, vera.predicate_cardinality, text)
    to vera_app, vera_worker, vera_gateway;

reset role;
