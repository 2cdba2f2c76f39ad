-- Snapshot pins: what a snapshot's answers depend on besides its copies,
-- recorded when it is taken and compared with the live values whenever it
-- is read. A snapshot whose pins no longer hold fails closed, with a code
-- that names which one changed:
--   VS001  the search version, the embedding model or dimension, or a
--          snapshot taken before pins were recorded (nothing to compare)
--   VS003  the ontology: a predicate it knew is now of another cardinality
--          (or gone); predicates declared since do not matter
--   VS004  the policy: the grading rules, a tier's authority, or a setting
--          that decides what a write stores (vera.policy_settings)
--   VS005  the context assembler's version
-- The weights are not a pin that can go stale: the snapshot carries its own
-- (vera.snapshots.weights) and ranks with them.
set role vera_owner;

-- Internal: the group's ontology, policy and assembler version as they are
-- now: what vera.snapshots.pins keeps.
create or replace function vera.group_rules(group_id text)
returns jsonb
language plpgsql stable
set search_path = vera, pg_temp
as $$
begin
    return jsonb_build_object(
        'ontology', coalesce((select jsonb_object_agg(p.name, p.cardinality order by p.name) from vera.predicates p
                               where p.group_id = group_rules.group_id), '{}'),
        'policy', jsonb_build_object(
            'grading', vera.grading_version(),
            'tier_authority', (select jsonb_object_agg(t, vera.tier_authority(t) order by t)
                                 from generate_series(1, 4) t),
            'settings', (select jsonb_object_agg(s.name, vera.setting(group_rules.group_id, s.name) order by s.name)
                           from unnest(vera.policy_settings()) s(name))),
        'assembler', vera.assembler_version());
end
$$;
comment on function vera.group_rules(text) is
    'Internal: a group''s ontology, policy and assembler version now (what a snapshot pins besides the search)';

-- Internal: the search's part of the pins (version, embedding model and dimension).
create or replace function vera.search_pins(search_version text, embedding_model text, embedding_dim integer)
returns jsonb
language sql immutable parallel safe
set search_path = vera, pg_temp
as $$
    select jsonb_build_object('search_version', search_version,
                              'embedding', jsonb_build_object('model', embedding_model, 'dim', embedding_dim))
$$;
comment on function vera.search_pins(text, text, integer) is 'Internal: the search version and embedding pins as JSON';

-- Internal: every pin of a snapshot, in the shape of vera.live_pins.
create or replace function vera.snapshot_pins(frozen vera.snapshots)
returns jsonb
language sql stable
set search_path = vera, pg_temp
as $$
    select coalesce(frozen.pins, '{}')
           || vera.search_pins(frozen.search_version, frozen.embedding_model, frozen.embedding_dim)
$$;
comment on function vera.snapshot_pins(vera.snapshots) is 'Internal: a snapshot''s pins, in the shape of live_pins';

-- Contract: what a snapshot of the group taken now would pin: search_version,
-- embedding {model, dim}, ontology {PREDICATE: cardinality}, policy {grading,
-- tier_authority {tier: authority}, settings {name: value}} and assembler.
-- Viewers of the group.
create or replace function vera.live_pins(group_id text)
returns jsonb
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    pinned record;
begin
    perform vera.require_role(live_pins.group_id, 'viewer');
    select g.embedding_model, g.embedding_dim into pinned from vera.groups g where g.group_id = live_pins.group_id;
    return vera.group_rules(live_pins.group_id)
           || vera.search_pins(vera.search_version(), pinned.embedding_model, pinned.embedding_dim);
end
$$;
comment on function vera.live_pins(text) is 'What a snapshot of the group taken now would pin; viewers';
grant execute on function vera.live_pins(text) to vera_app, vera_worker, vera_gateway;

-- Internal: the pins that no longer hold, one row each, in the order
-- search_snapshot checks them (the first one's code is the one it raises):
-- pin, its SQLSTATE, and what changed in words.
create or replace function vera.pin_changes(pinned jsonb, live jsonb)
returns table (pin text, code text, change text)
language sql immutable parallel safe
set search_path = vera, pg_temp
as $$
    select c.pin, c.code, c.change
      from (
        select 1 as position, 'search_version' as pin, 'VS001' as code,
               format('taken with search version %s, this database runs %s',
                      pinned ->> 'search_version', live ->> 'search_version') as change
         where pinned ->> 'search_version' is distinct from live ->> 'search_version'
        union all
        -- a snapshot without vectors answers lexically whatever the group embeds with later
        select 2, 'embedding', 'VS001',
               format('taken with embedding model %s (%s dimensions); the group now uses %s (%s dimensions)',
                      pinned #>> '{embedding,model}', pinned #>> '{embedding,dim}',
                      coalesce(live #>> '{embedding,model}', 'none'), coalesce(live #>> '{embedding,dim}', '-'))
         where pinned #>> '{embedding,model}' is not null
           and (pinned -> 'embedding') is distinct from (live -> 'embedding')
        union all
        select 3, 'pins', 'VS001',
               'taken before snapshots pinned their ontology, policy and assembler version'
         where not (pinned ?& array['ontology', 'policy', 'assembler'])
        union all
        select 4, 'ontology', 'VS003', string_agg(
                   format('predicate %s was %s, is now %s', o.key, o.value #>> '{}',
                          coalesce(live -> 'ontology' ->> o.key, 'undeclared')), '; ' order by o.key)
          from jsonb_each(case when jsonb_typeof(pinned -> 'ontology') = 'object' then pinned -> 'ontology' end) o
         where o.value is distinct from live -> 'ontology' -> o.key
        having count(*) > 0
        union all
        select 5, 'policy', 'VS004', string_agg(
                   format('%s was %s, is now %s', d.what, d.was, coalesce(d.now::text, 'unset')), '; ' order by d.what)
          from (select 'grading' as what, pinned #> '{policy,grading}' as was, live #> '{policy,grading}' as now
                 where pinned ? 'policy'
                union all
                select 'tier ' || t.key || ' authority', t.value, live #> array['policy', 'tier_authority', t.key]
                  from jsonb_each(case when jsonb_typeof(pinned #> '{policy,tier_authority}') = 'object'
                                       then pinned #> '{policy,tier_authority}' end) t
                union all
                select 'setting ' || s.key, s.value, live #> array['policy', 'settings', s.key]
                  from jsonb_each(case when jsonb_typeof(pinned #> '{policy,settings}') = 'object'
                                       then pinned #> '{policy,settings}' end) s) d
         where d.was is distinct from d.now
        having count(*) > 0
        union all
        select 6, 'assembler', 'VS005',
               format('taken with context assembler %s, this database runs %s',
                      pinned ->> 'assembler', live ->> 'assembler')
         where pinned ? 'assembler' and pinned ->> 'assembler' is distinct from live ->> 'assembler'
      ) c
     order by c.position
$$;
comment on function vera.pin_changes(jsonb, jsonb) is
    'Internal: the pins that differ between a snapshot and now (pin, SQLSTATE, what changed)';

-- Contract: the pins of the group's snapshot `name` that no longer hold, one
-- row per pin (search_version, embedding, pins, ontology, policy, assembler)
-- with the code search_snapshot answers for it and what changed; no rows
-- when the snapshot can still answer. VN001 for an unknown name. Viewers.
create or replace function vera.snapshot_pin_changes(group_id text, name text)
returns table (pin text, code text, change text)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    frozen vera.snapshots;
begin
    perform vera.require_role(snapshot_pin_changes.group_id, 'viewer');
    select * into frozen from vera.snapshots s
     where s.group_id = snapshot_pin_changes.group_id and s.name = btrim(snapshot_pin_changes.name);
    if not found then
        raise exception 'group % has no snapshot named %', vera.shown(snapshot_pin_changes.group_id),
            vera.shown(snapshot_pin_changes.name) using errcode = 'VN001';
    end if;
    return query select * from vera.pin_changes(vera.snapshot_pins(frozen), vera.live_pins(frozen.group_id));
end
$$;
comment on function vera.snapshot_pin_changes(text, text) is
    'The pins of a snapshot that no longer hold (pin, SQLSTATE, change); none when it can answer; viewers';
grant execute on function vera.snapshot_pin_changes(text, text) to vera_app, vera_worker, vera_gateway;

reset role;
