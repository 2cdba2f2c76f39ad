-- Reading facts directly. Application roles cannot select the tables (their
-- plans would show how many rows of other tenants row-level security
-- filtered out, see docs/sql-api.md "Security model"), so this is how a SQL
-- application lists what VERA holds about a subject, as of an instant.
set role vera_owner;

-- Contract: the facts that hold at as_of (default now) in the named groups
-- (default: every group the caller reads), as search would answer them:
-- published and superseded revisions valid then, and the caller's own
-- proposals. Optionally narrowed to one subject (any of its names) and one
-- predicate. At most max_rows rows, ordered by group, subject, predicate
-- and validity. Viewers and above; 42501 for a group the caller cannot read.
create or replace function vera.read_facts(
    of_subject text default null,
    of_predicate text default null,
    groups text[] default null,
    as_of timestamptz default null,
    max_rows integer default 100)
returns table (fact_id uuid, group_id text, subject text, predicate text, object text, fact_text text,
               lifecycle vera.fact_lifecycle, tier smallint, verification vera.verification,
               valid_from timestamptz, valid_to timestamptz, recorded_at timestamptz,
               source_id uuid, episode_id uuid)
language plpgsql stable security definer
set search_path = vera, public, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
    targets constant text[] := vera.search_targets(groups);
    reference constant timestamptz := coalesce(as_of, now());
    subject_norm text;
    predicate_name text;
begin
    if as_of is not null and not isfinite(as_of) then
        raise exception 'as_of must be a finite time (null means now)' using errcode = '22023';
    end if;
    if max_rows is null or max_rows not between 1 and 1000 then
        raise exception 'max_rows must be between 1 and 1000, got %', coalesce(max_rows::text, 'null')
            using errcode = '22023';
    end if;
    perform vera.check_length(of_subject, 'of_subject', 500);
    perform vera.check_length(of_predicate, 'of_predicate', 100);
    if of_subject is not null then
        subject_norm := vera.normalize_name(of_subject);
    end if;
    if of_predicate is not null then
        predicate_name := vera.normalize_predicate(of_predicate);
        if predicate_name is null then
            raise exception 'not a predicate name: %', vera.shown(of_predicate) using errcode = '22023';
        end if;
    end if;
    return query
        select f.fact_id, f.group_id, e.canonical_name, f.predicate, f.object_value, f.fact_text,
               f.lifecycle, f.tier, f.verification, f.valid_from, f.valid_to, f.recorded_at,
               f.source_id, f.episode_id
          from vera.facts f
          join vera.entities e on e.group_id = f.group_id and e.entity_id = f.subject_entity_id
          join vera.groups g on g.group_id = f.group_id
         where f.group_id = any (targets)
           and vera.fact_visible(f.lifecycle, f.group_id, f.retired_at, f.valid_from, f.valid_to, reference,
                                 (select p.personal_group_id from vera.principals p where p.principal_id = caller))
           and (predicate_name is null or f.predicate = predicate_name)
           and (subject_norm is null or exists (
                   select from vera.entity_aliases a
                    where a.group_id = f.group_id and a.entity_id = f.subject_entity_id
                      and a.alias_norm = subject_norm))
         order by vera.group_order_key(g.kind, g.name), f.group_id, e.canonical_name, f.predicate, f.valid_from, f.fact_id
         limit max_rows;
end
$$;
comment on function vera.read_facts(text, text, text[], timestamptz, integer) is
    'The facts that hold at an instant in the caller''s groups, optionally about one subject and predicate';
grant execute on function vera.read_facts(text, text, text[], timestamptz, integer)
    to vera_app, vera_worker, vera_gateway;

reset role;
