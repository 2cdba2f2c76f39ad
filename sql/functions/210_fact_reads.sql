-- Reading one fact: the fact itself (vera.get_fact), its evidence
-- (vera.get_evidence) and its timeline (vera.explain_fact). As every read
-- of the SQL API they answer as the authenticated caller, through
-- row-level security: a fact of another tenant gives exactly the answer of
-- a fact that does not exist (VN001).
set role vera_owner;

-- Internal: facts by id as search shows them (subject and object names,
-- grading, validity and the citation of vera.hit_details), in the order of
-- the ids given. Only rows row-level security lets the caller read. A
-- proposal read by an admin of the scope it was made for (whose entities
-- and evidence live in the proposer's u: scope, which the admin cannot
-- read) shows the names its origin carries and a citation without source.
create or replace function vera.fact_details(ids uuid[])
returns setof vera.fact_row
language sql stable
set search_path = vera, pg_temp
as $$
    with wanted as (
        select f.group_id, f.fact_id, min(i.position) as position
          from unnest(ids) with ordinality as i(id, position)
          join vera.facts f on f.fact_id = i.id
         group by f.group_id, f.fact_id
    )
    select f.fact_id, f.group_id, coalesce(d.subject, f.origin ->> 'subject', subj.canonical_name), f.predicate,
           coalesce(d.object, f.object_value), f.fact_text, f.lifecycle, f.tier, f.authority,
           f.verification, f.confidence, f.valid_from, f.valid_to, f.recorded_at, f.proposed_for,
           coalesce(d.citation, jsonb_build_object(
               'group_id', f.group_id, 'source', null, 'episode', null, 'chunk', null, 'evidence', null,
               'valid_from', f.valid_from, 'valid_to', f.valid_to, 'tier', f.tier, 'verification', f.verification,
               'lifecycle', f.lifecycle, 'recorded_at', f.recorded_at, 'proposed_for', f.proposed_for))
      from wanted w
      join vera.facts f on f.group_id = w.group_id and f.fact_id = w.fact_id
      left join vera.entities subj on subj.group_id = f.group_id and subj.entity_id = f.subject_entity_id
      left join vera.hit_details((select array_agg('fact'::vera.item_kind) from wanted),
                                 (select array_agg(x.fact_id) from wanted x),
                                 (select array_agg(x.group_id) from wanted x)) d on d.item_id = f.fact_id
     order by w.position
$$;
comment on function vera.fact_details(uuid[]) is 'Internal: facts by id with names, grading and citation';

-- Internal: the one fact the caller may read by this id in the groups (every
-- readable group when null; a proposal counts in the scope it was made for
-- too), or VN001. Another tenant's id and an id that exists nowhere give the
-- same error.
create or replace function vera.readable_fact(target_fact uuid, groups text[])
returns vera.facts
language plpgsql stable
set search_path = vera, pg_temp
as $$
declare
    targets constant text[] := vera.search_targets(groups);
    found_fact vera.facts;
begin
    if target_fact is null then
        raise exception 'fact_id is required' using errcode = '22023';
    end if;
    select * into found_fact from vera.facts f
     where f.fact_id = target_fact and (f.group_id = any (targets) or f.proposed_for = any (targets))
     limit 1;
    if not found then
        raise exception 'no fact % that you can read', target_fact using errcode = 'VN001';
    end if;
    return found_fact;
end
$$;
comment on function vera.readable_fact(uuid, text[]) is 'Internal: a fact the caller reads, or VN001';

-- Contract: one fact as read_facts and search show it: subject, predicate,
-- object, text, lifecycle, validity, tier, authority, verification,
-- confidence and the citation (group, source, episode, chunk, evidence
-- span and text). Any lifecycle the caller may read (a superseded or
-- retracted fact says so). groups: optional, each readable (42501).
-- Errors: VN001 (no such fact for the caller), 22023, VA005.
create or replace function vera.get_fact(of_fact uuid, groups text[] default null)
returns setof vera.fact_row
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    wanted vera.facts;
begin
    perform vera.require_principal();
    wanted := vera.readable_fact(get_fact.of_fact, get_fact.groups);
    return query select * from vera.fact_details(array[wanted.fact_id]);
end
$$;
comment on function vera.get_fact(uuid, text[]) is 'One fact the caller may read, with its citation';
grant execute on function vera.get_fact(uuid, text[]) to vera_app, vera_gateway;

-- Contract: the evidence of one fact: its source (name, kind, tier), the
-- episode it was drawn from (record, version, observed and recorded time),
-- the chunk (ordinal, heading, whole text) and the span the claim cited
-- with the span's text. One row; null columns where the fact has no such
-- provenance (an agent's claim without an episode, or an erased one). A
-- proposal's provenance is in the scope it was proposed for.
-- Errors: VN001, 22023, 42501, VA005.
create or replace function vera.get_evidence(of_fact uuid, groups text[] default null)
returns table (fact_id uuid, group_id text, source_id uuid, source_name text, source_kind text, tier smallint,
               episode_id uuid, external_id text, version integer, title text, uri text,
               observed_at timestamptz, recorded_at timestamptz, chunk_id uuid, ordinal integer, heading text,
               chunk_text text, evidence_start integer, evidence_end integer, evidence_text text)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    wanted vera.facts;
begin
    perform vera.require_principal();
    wanted := vera.readable_fact(get_evidence.of_fact, get_evidence.groups);
    return query
        with provenance as (
            select coalesce(wanted.source_id, (wanted.origin ->> 'source_id')::uuid) as source_id,
                   coalesce(wanted.episode_id, (wanted.origin ->> 'episode_id')::uuid) as episode_id,
                   coalesce(wanted.chunk_id, (wanted.origin ->> 'chunk_id')::uuid) as chunk_id,
                   case when wanted.source_id is not null or wanted.episode_id is not null then wanted.group_id
                        else coalesce(wanted.origin ->> 'group_id', wanted.group_id) end as home
        )
        select wanted.fact_id, wanted.group_id, s.source_id, s.name, s.kind, wanted.tier,
               e.episode_id, e.external_id, e.version, e.title, e.uri, e.observed_at, e.recorded_at,
               c.chunk_id, c.ordinal, c.heading, c.text, wanted.evidence_start, wanted.evidence_end,
               case when c.text is not null and wanted.evidence_start is not null and wanted.evidence_end is not null
                    then substr(c.text, wanted.evidence_start + 1, wanted.evidence_end - wanted.evidence_start) end
          from provenance p
          left join vera.sources s on s.group_id = p.home and s.source_id = p.source_id
          left join vera.episodes e on e.group_id = p.home and e.episode_id = p.episode_id
          left join vera.chunks c on c.group_id = p.home and c.chunk_id = p.chunk_id;
end
$$;
comment on function vera.get_evidence(uuid, text[]) is 'The evidence of one fact: source, episode, chunk text and span';
grant execute on function vera.get_evidence(uuid, text[]) to vera_app, vera_gateway;

-- Contract: the timeline of one fact. Rows, each a fact with its citation
-- (evidence span and text included) and its relation to the fact asked about:
--   'fact'        the fact itself;
--   'supporting'  another published or superseded fact in the groups searched
--                 with the same subject (by name), predicate and object (by
--                 normalised name), from any source or episode;
--   'superseded'  an earlier value of the same subject and predicate in the
--                 fact's group that the fact (or a value between them)
--                 replaced: for a functional predicate every earlier value,
--                 otherwise a value a contradiction judge marked replaced;
--   'superseding' a later value that replaced it, by the same rule.
-- Order: relation as listed, then valid_from, recorded_at and fact_id.
-- At most 1,000 rows. Errors: VN001, 22023, 42501, VA005.
create or replace function vera.explain_fact(of_fact uuid, groups text[] default null)
returns table (relation text, fact_id uuid, group_id text, subject text, predicate text, object text,
               fact_text text, lifecycle vera.fact_lifecycle, tier smallint, authority real,
               verification vera.verification, confidence real, valid_from timestamptz, valid_to timestamptz,
               recorded_at timestamptz, proposed_for text, citation jsonb)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    targets constant text[] := vera.search_targets(explain_fact.groups);
    wanted vera.facts;
    functional boolean;
    subject_norm text;
    related record;
begin
    perform vera.require_principal();
    wanted := vera.readable_fact(explain_fact.of_fact, explain_fact.groups);
    select p.cardinality = 'functional' into functional from vera.predicates p
     where p.group_id = wanted.group_id and p.name = wanted.predicate;
    select vera.normalize_name(e.canonical_name) into subject_norm from vera.entities e
     where e.group_id = wanted.group_id and e.entity_id = wanted.subject_entity_id;
    with linked as (
        select 1 as relation_order, 'fact' as relation, wanted.fact_id as id
        union all
        select 2, 'supporting', f.fact_id
          from vera.facts f
         where f.group_id = any (targets) and f.fact_id <> wanted.fact_id
           and f.predicate = wanted.predicate
           and f.lifecycle in ('published', 'superseded')
           and vera.normalize_name(f.object_value) = vera.normalize_name(wanted.object_value)
           and exists (select from vera.entity_aliases a
                        where a.group_id = f.group_id and a.entity_id = f.subject_entity_id
                          and a.alias_norm = subject_norm)
        union all
        select case when f.valid_from < wanted.valid_from then 3 else 4 end,
               case when f.valid_from < wanted.valid_from then 'superseded' else 'superseding' end, f.fact_id
          from vera.facts f
         where f.group_id = wanted.group_id and f.subject_entity_id = wanted.subject_entity_id
           and f.predicate = wanted.predicate and f.fact_id <> wanted.fact_id
           and f.lifecycle in ('published', 'superseded')
           and vera.normalize_name(f.object_value) <> vera.normalize_name(wanted.object_value)
           and (coalesce(functional, false) or f.superseded_by = wanted.fact_id or wanted.superseded_by = f.fact_id)
    )
    select array_agg(l.id order by l.relation_order) as ids, array_agg(l.relation order by l.relation_order) as relations
      into related from linked l;
    return query
        select r.relation, d.*
          from vera.fact_details(related.ids) d
          join unnest(related.ids, related.relations) as r(id, relation) on r.id = d.fact_id
         order by array_position(array['fact', 'supporting', 'superseded', 'superseding'], r.relation),
                  d.valid_from, d.recorded_at, d.fact_id
         limit 1000;
end
$$;
comment on function vera.explain_fact(uuid, text[]) is
    'A fact''s timeline: supporting statements and the values it superseded or was superseded by';
grant execute on function vera.explain_fact(uuid, text[]) to vera_app, vera_gateway;

reset role;
