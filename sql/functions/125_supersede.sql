-- Supersession: the valid-time history of functional predicates.
set role vera_owner;

-- Internal: rebuilds the history of each (group, subject, predicate) given,
-- for functional predicates. The live values (published or superseded, not
-- retired) are ordered by valid_from; each is closed at the next one's
-- valid_from (or earlier, where the claim itself stated an end) and points
-- to it; the last is the current value. Out-of-order arrivals therefore slot
-- into history, and retracting the current value brings back the previous.
-- Returns the facts whose lifecycle, successor or validity changed.
create or replace function vera.rebuild_timelines(groups text[], subjects uuid[], predicates text[])
returns table (group_id text, fact_id uuid, lifecycle vera.fact_lifecycle)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
begin
    -- one writer per history (1024 buckets, taken in order: no deadlock). Under
    -- READ COMMITTED the statements below then see every committed value.
    perform pg_advisory_xact_lock(b)
       from (select distinct (hashtextextended(k.g || '/' || k.s::text || '/' || k.p, 1) & 1023) as b
               from unnest(groups, subjects, predicates) as k(g, s, p)
              order by 1) buckets;

    return query
    with keys as (
        select distinct k.g, k.s, k.p
          from unnest(groups, subjects, predicates) as k(g, s, p)
          join vera.predicates pr on pr.group_id = k.g and pr.name = k.p and pr.cardinality = 'functional'
    ), history as (
        select f.group_id as g, f.fact_id as id, f.stated_valid_to,
               lead(f.fact_id) over w as next_id,
               lead(f.valid_from) over w as next_from
          from keys
          join vera.facts f on f.group_id = keys.g and f.subject_entity_id = keys.s and f.predicate = keys.p
         where f.lifecycle in ('published', 'superseded') and f.retired_at is null
        window w as (partition by f.group_id, f.subject_entity_id, f.predicate
                     order by f.valid_from, f.recorded_at, f.fact_id)
    ), wanted as (
        select h.g, h.id, h.next_id,
               case when h.next_id is null then 'published' else 'superseded' end::vera.fact_lifecycle as state,
               least(h.stated_valid_to, h.next_from) as valid_to
          from history h
    )
    update vera.facts f
       set lifecycle = wanted.state, superseded_by = wanted.next_id, valid_to = wanted.valid_to
      from wanted
     where f.group_id = wanted.g and f.fact_id = wanted.id
       and (f.lifecycle, f.superseded_by, f.valid_to)
           is distinct from (wanted.state, wanted.next_id, wanted.valid_to)
    returning f.group_id, f.fact_id, f.lifecycle;
end
$$;
comment on function vera.rebuild_timelines(text[], uuid[], text[]) is
    'Internal: re-derives supersession (successor, validity end, current value) of functional predicates';

reset role;
