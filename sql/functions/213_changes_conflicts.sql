-- What changed lately (vera.changes) and which values compete
-- (vera.conflicts), as the authenticated caller.
set role vera_owner;

-- Contract: the facts of the groups searched that were published,
-- superseded or retracted after `since`, newest first. One row per event:
--   'published'   a fact recorded (or approved by a reviewer) after since
--                 that is published or has been superseded since;
--   'superseded'  a value replaced after since: when its successor was
--                 recorded (or its record's next version retired it);
--   'retracted'   a fact whose source or episode was retracted after since.
-- at: when it happened. Order: at descending, then change, subject,
-- predicate, object and fact_id; at most max_rows (1..1000). since is
-- required and finite. Errors: 22023, 42501, VA005.
create or replace function vera.changes(
    since timestamptz, max_rows integer default 100, groups text[] default null)
returns table (change text, at timestamptz, fact_id uuid, group_id text, subject text, predicate text,
               object text, fact_text text, lifecycle vera.fact_lifecycle, tier smallint, authority real,
               verification vera.verification, confidence real, valid_from timestamptz, valid_to timestamptz,
               recorded_at timestamptz, proposed_for text, citation jsonb)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    targets constant text[] := vera.search_targets(changes.groups);
    events record;
begin
    perform vera.require_principal();
    if changes.since is null or not isfinite(changes.since) then
        raise exception 'since must be a finite time' using errcode = '22023';
    end if;
    perform vera.check_max_rows(changes.max_rows);
    with happened as (
        select 'published' as kind, coalesce(f.reviewed_at, f.recorded_at) as happened_at, f.fact_id as id
          from vera.facts f
         where f.group_id = any (targets) and f.lifecycle in ('published', 'superseded')
           and coalesce(f.reviewed_at, f.recorded_at) > changes.since
        union all
        select 'superseded', coalesce(f.retired_at, successor.recorded_at, f.valid_to), f.fact_id
          from vera.facts f
          left join vera.facts successor on successor.group_id = f.group_id and successor.fact_id = f.superseded_by
         where f.group_id = any (targets) and f.lifecycle = 'superseded'
           and coalesce(f.retired_at, successor.recorded_at, f.valid_to) > changes.since
        union all
        select 'retracted', f.retired_at, f.fact_id
          from vera.facts f
         where f.group_id = any (targets) and f.lifecycle = 'retracted' and f.retired_at > changes.since
    )
    select array_agg(h.kind) as kinds, array_agg(h.happened_at) as ats, array_agg(h.id) as ids
      into events from happened h;
    return query
        select e.kind, e.happened_at, d.*
          from unnest(events.kinds, events.ats, events.ids) as e(kind, happened_at, id)
          join vera.fact_details(events.ids) d on d.fact_id = e.id
         order by e.happened_at desc, e.kind, d.subject, d.predicate, d.object, d.fact_id
         limit changes.max_rows;
end
$$;
comment on function vera.changes(timestamptz, integer, text[]) is
    'Facts published, superseded or retracted after an instant, newest first';
grant execute on function vera.changes(timestamptz, integer, text[]) to vera_app, vera_gateway;

-- Contract: the subjects and predicates that have competing values now,
-- over the groups searched. A value is a fact that is published and valid
-- now, pending review, or a live proposal made for one of the groups (the
-- caller's own, or any proposal for a group it administers). Values are
-- compared by subject (name, normalised) and predicate across the groups
-- searched, so an organisation and its project that disagree conflict too;
-- a key conflicts when the predicate is functional (one value at a time) in
-- a group holding one of its values and the values hold two or more
-- different objects (normalised). One row per value, side by side:
-- conflict numbers the keys from 1 in order of subject and predicate; within
-- a key, published before pending_review before proposal, then authority
-- (highest first), object and fact_id. At most max_rows (1..1000) keys.
-- Errors: 22023, 42501, VA005.
create or replace function vera.conflicts(max_rows integer default 100, groups text[] default null)
returns table (conflict integer, subject text, predicate text, fact_id uuid, group_id text, object text,
               lifecycle vera.fact_lifecycle, tier smallint, authority real, verification vera.verification,
               source_id uuid, source_name text, valid_from timestamptz, recorded_at timestamptz,
               proposed_for text)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    targets constant text[] := vera.search_targets(conflicts.groups);
begin
    perform vera.require_principal();
    perform vera.check_max_rows(conflicts.max_rows);
    return query
        with candidate as (
            select f.*, coalesce(f.origin ->> 'subject', e.canonical_name) as subject_name,
                   coalesce(f.proposed_for, f.group_id) as scope,
                   coalesce(f.source_id, (f.origin ->> 'source_id')::uuid) as provenance_source,
                   case when f.source_id is not null then f.group_id
                        else coalesce(f.origin ->> 'group_id', f.group_id) end as provenance_group
              from vera.facts f
              left join vera.entities e on e.group_id = f.group_id and e.entity_id = f.subject_entity_id
             where f.retired_at is null
               and ((f.group_id = any (targets) and f.lifecycle = 'published'
                     and f.valid_from <= now() and (f.valid_to is null or f.valid_to > now()))
                    or (f.group_id = any (targets) and f.lifecycle = 'pending_review')
                    or (f.proposed_for = any (targets) and f.lifecycle = 'proposal'))
        ), keyed as (
            select c.*, vera.normalize_name(c.subject_name) as subject_norm,
                   vera.normalize_name(c.object_value) as object_norm
              from candidate c
        ), contested as (
            select k.subject_norm, k.predicate,
                   row_number() over (order by k.subject_norm, k.predicate)::integer as number
              from keyed k
             group by k.subject_norm, k.predicate
            having count(distinct k.object_norm) > 1
               and bool_or(exists (select from vera.predicates p
                                    where p.group_id = k.scope and p.name = k.predicate
                                      and p.cardinality = 'functional'))
             order by k.subject_norm, k.predicate
             limit conflicts.max_rows
        )
        select ct.number, k.subject_name, k.predicate, k.fact_id, k.group_id, k.object_value, k.lifecycle,
               k.tier, k.authority, k.verification, s.source_id, s.name, k.valid_from, k.recorded_at,
               k.proposed_for
          from contested ct
          join keyed k on k.subject_norm = ct.subject_norm and k.predicate = ct.predicate
          left join vera.sources s on s.group_id = k.provenance_group and s.source_id = k.provenance_source
         order by ct.number,
                  array_position(array['published', 'pending_review', 'proposal']::vera.fact_lifecycle[], k.lifecycle),
                  k.authority desc, k.object_value, k.fact_id;
end
$$;
comment on function vera.conflicts(integer, text[]) is
    'Subjects and predicates with competing values (published, pending review, proposed), side by side';
grant execute on function vera.conflicts(integer, text[]) to vera_app, vera_gateway;

reset role;
