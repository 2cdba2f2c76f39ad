-- Supersession: the valid-time history of functional predicates.
set role vera_owner;

-- Internal: refuses a transaction that is not READ COMMITTED (VT001). The
-- write functions serialise on locks and then rely on each statement seeing
-- what the transactions they waited for committed; a REPEATABLE READ or
-- SERIALIZABLE snapshot, taken before the wait, would not see it (two
-- writers would both create the same entity, both keep a current value).
-- READ UNCOMMITTED is READ COMMITTED in PostgreSQL.
create or replace function vera.require_read_committed()
returns void
language plpgsql stable
set search_path = vera, pg_temp
as $$
begin
    if current_setting('transaction_isolation') not in ('read committed', 'read uncommitted') then
        raise exception 'VERA''s write functions need a READ COMMITTED transaction, not %',
            upper(current_setting('transaction_isolation'))
            using errcode = 'VT001',
                  hint = 'run the write in its own READ COMMITTED transaction (PostgreSQL''s default)';
    end if;
end
$$;
comment on function vera.require_read_committed() is
    'Internal: raises VT001 unless the transaction is READ COMMITTED';

-- Internal: takes the per-history locks of the (group, subject, predicate)
-- given: 1024 transaction-scoped advisory buckets in their own key space
-- (class 1 of the two-key form, apart from entity names' buckets), all at
-- once and in bucket order. The lock order of every write is: entity names
-- (resolve_entities), then histories (here), then fact rows: a fact row is
-- updated or deleted only by a transaction that already holds its history's
-- lock, so no two writers can wait on each other (see docs/sql-api.md).
create or replace function vera.lock_histories(groups text[], subjects uuid[], predicates text[])
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_read_committed();
    perform pg_advisory_xact_lock(1, b)
       from (select distinct (hashtextextended(k.g || '/' || k.s::text || '/' || k.p, 1) & 1023)::integer as b
               from unnest(groups, subjects, predicates) as k(g, s, p)
              where k.g is not null and k.s is not null and k.p is not null
              order by 1) buckets;
end
$$;
comment on function vera.lock_histories(text[], uuid[], text[]) is
    'Internal: locks the histories of (group, subject, predicate) keys, in bucket order';

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
    -- one writer per history (callers took these locks before touching fact rows;
    -- taking them again is free). Under READ COMMITTED the statements below then
    -- see every committed value.
    perform vera.lock_histories(groups, subjects, predicates);

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
