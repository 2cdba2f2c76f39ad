-- The language-model workers' side of the SQL API: extraction of claims from
-- passages (the extract job) and the two judges (equivalence of a provisional
-- entity, contradiction between values of a multi-valued predicate).
--
-- A model never writes: the worker validates what it said and calls these
-- functions (and vera.publish_claims) as the principal whose request started
-- the work, so a tenant's rights, the contamination guard and the audit apply
-- to a model's conclusions exactly as to a person's.
set role vera_owner;

-- Contract: asks the worker to extract claims from the group's passages. With
-- redo false, only passages no model version has been through; with redo true
-- (vera reprocess), every passage the configured model version has not been
-- through. Members; returns the job id. The job carries the caller's principal.
create or replace function vera.request_extraction(group_id text, redo boolean default false)
returns bigint
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(request_extraction.group_id, 'member');
    return vera.enqueue_job('vera.extract', jsonb_build_object(
        'group_id', request_extraction.group_id, 'redo', coalesce(request_extraction.redo, false)));
end
$$;
comment on function vera.request_extraction(text, boolean) is
    'Defers an extract job over the group''s passages, on behalf of the caller; members';
-- anyone who may ingest may ask for extraction (vera reprocess); the worker runs the
-- rest of this file as the principal who asked, each function checking that principal's role
grant execute on function vera.request_extraction(text, boolean) to vera_app, vera_worker, vera_gateway;

-- Internal: whether a passage is still to extract with model_version: no
-- model version has been through it, or (redo) not this one, or this one failed.
create or replace function vera.passage_pending(target_group text, target_chunk uuid, model_version text, redo boolean)
returns boolean
language sql stable
set search_path = vera, pg_temp
as $$
    select not exists (
        select from vera.chunk_extractions x
         where x.group_id = target_group and x.chunk_id = target_chunk
           and (not redo
                or (x.model_version = passage_pending.model_version
                    and not exists (select from vera.extraction_runs r
                                     where r.group_id = x.group_id and r.content_sha256 = x.content_sha256
                                       and r.model_version = x.model_version and r.outcome = 'failed'))))
$$;
comment on function vera.passage_pending(text, uuid, text, boolean) is
    'Internal: whether a passage is still to extract with a model version (redo: also when it failed)';

-- Internal: whether a model may be sent a passage at all: not of a retracted
-- episode, not rejected, and not another principal's proposal (the caller's own
-- proposed text is its to extract). The one place of that rule: passages_to_extract,
-- episode_passages_to_extract and extraction_backlog all read it.
create or replace function vera.passage_sendable(episode_status vera.episode_status, lifecycle vera.fact_lifecycle,
                                                 proposed_by uuid)
returns boolean
language sql stable
set search_path = vera, pg_temp
as $$
    select episode_status <> 'retracted' and lifecycle <> 'rejected'
           and (lifecycle <> 'proposal' or proposed_by = vera.current_principal())
$$;
comment on function vera.passage_sendable(vera.episode_status, vera.fact_lifecycle, uuid) is
    'Internal: whether a passage may go to a model at all (its episode live, not rejected, no one else''s proposal)';

-- Contract: up to max_rows passages of group_id still to extract with
-- model_version (see request_extraction for redo; redo also takes those
-- whose extraction with model_version failed), oldest first, with the
-- SHA-256 of their text. Passages of retracted episodes, rejected passages and
-- other principals' proposed passages are left out. Members.
create or replace function vera.passages_to_extract(
    group_id text, model_version text, redo boolean, max_rows integer
)
returns table (chunk_id uuid, episode_id uuid, ordinal integer, text text, content_sha256 bytea)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(passages_to_extract.group_id, 'member');
    if passages_to_extract.max_rows is null or passages_to_extract.max_rows not between 1 and 1000 then
        raise exception 'max_rows must be from 1 to 1000' using errcode = '22023';
    end if;
    return query
    select c.chunk_id, c.episode_id, c.ordinal, c.text, sha256(convert_to(c.text, 'UTF8'))
      from vera.chunks c
      join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
     where c.group_id = passages_to_extract.group_id
       and vera.passage_sendable(e.status, c.lifecycle, c.proposed_by)
       and vera.passage_pending(c.group_id, c.chunk_id, passages_to_extract.model_version, passages_to_extract.redo)
     order by c.created_at, c.chunk_id
     limit passages_to_extract.max_rows;
end
$$;
comment on function vera.passages_to_extract(text, text, boolean, integer) is
    'The group''s passages still to extract with a model version, with their text''s hash (members)';
grant execute on function vera.passages_to_extract(text, text, boolean, integer) to vera_worker;

-- Contract: takes a passage of group_id for the rest of the transaction, so
-- that two extract jobs running at once (two workers, or one with
-- concurrency) never publish its claims twice: true when the caller holds it
-- and it is still to extract with model_version (see passages_to_extract for
-- redo), false when another job has done it meanwhile. Members.
create or replace function vera.take_passage(group_id text, chunk_id uuid, model_version text, redo boolean)
returns boolean
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(take_passage.group_id, 'member');
    -- waits for a job that holds it; under READ COMMITTED the check below then sees its record
    perform vera.require_read_committed();
    perform pg_advisory_xact_lock(hashtextextended('extract/' || take_passage.group_id || '/' || take_passage.chunk_id, 0));
    return vera.passage_pending(take_passage.group_id, take_passage.chunk_id, take_passage.model_version,
                                take_passage.redo);
end
$$;
comment on function vera.take_passage(text, uuid, text, boolean) is
    'Takes a passage for this transaction; false when another extract job has done it meanwhile (members)';
grant execute on function vera.take_passage(text, uuid, text, boolean) to vera_worker;

-- Contract: the stored extraction of a passage text (by hash) in group_id: the
-- run of wanted_version, else (any_model) the latest run of any version.
-- Nothing when the text was never extracted. Members.
create or replace function vera.extraction_run(
    group_id text, content_sha256 bytea, wanted_version text, any_model boolean
)
returns table (model_version text, outcome text, claims jsonb)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(extraction_run.group_id, 'member');
    return query
    select r.model_version, r.outcome, r.claims
      from vera.extraction_runs r
     where r.group_id = extraction_run.group_id and r.content_sha256 = extraction_run.content_sha256
       and (r.model_version = extraction_run.wanted_version or extraction_run.any_model)
     order by r.model_version = extraction_run.wanted_version desc, r.created_at desc
     limit 1;
end
$$;
comment on function vera.extraction_run(text, bytea, text, boolean) is
    'The stored extraction of a passage text by hash, for reuse without a model call (members)';
grant execute on function vera.extraction_run(text, bytea, text, boolean) to vera_worker;

-- Contract: records that a passage of group_id went through model_version:
-- the validated claims of its text (kept once per text and version) and how
-- many facts they became. Replays change nothing but the fact count. The
-- claims are the worker's validated ones (at most 1,000), never a raw answer;
-- only the worker's role may call it, so no application can plant claims for a
-- text that a later ingestion would publish with its source's tier. Members;
-- VN001 for a passage the caller cannot see, 22023 for a hash not of its text.
create or replace function vera.record_extraction(
    group_id text, chunk_id uuid, content_sha256 bytea, model_version text, outcome text, claims jsonb,
    dropped integer, detail text, facts integer
)
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    passage_sha256 bytea;
begin
    perform vera.require_role(record_extraction.group_id, 'member');
    select sha256(convert_to(c.text, 'UTF8')) into passage_sha256 from vera.chunks c
     where c.group_id = record_extraction.group_id and c.chunk_id = record_extraction.chunk_id;
    if not found then
        raise exception 'unknown passage % in group %', record_extraction.chunk_id, vera.shown(record_extraction.group_id)
            using errcode = 'VN001';
    end if;
    -- claims are kept per text for reuse: they must be the claims of this passage's text
    if passage_sha256 is distinct from record_extraction.content_sha256 then
        raise exception 'content_sha256 is not the SHA-256 of passage %''s text', record_extraction.chunk_id
            using errcode = '22023';
    end if;
    insert into vera.extraction_runs (group_id, content_sha256, model_version, outcome, claims, dropped, detail)
    values (record_extraction.group_id, record_extraction.content_sha256, record_extraction.model_version,
            record_extraction.outcome, coalesce(record_extraction.claims, '[]'), coalesce(record_extraction.dropped, 0),
            left(record_extraction.detail, 1000))
    -- the first extraction of a text stays; a failed one gives way to a later try
    on conflict on constraint extraction_runs_pkey do update
        set outcome = excluded.outcome, claims = excluded.claims, dropped = excluded.dropped,
            detail = excluded.detail, created_at = now()
      where vera.extraction_runs.outcome = 'failed';
    insert into vera.chunk_extractions (group_id, chunk_id, model_version, content_sha256, facts)
    values (record_extraction.group_id, record_extraction.chunk_id, record_extraction.model_version,
            record_extraction.content_sha256, coalesce(record_extraction.facts, 0))
    on conflict on constraint chunk_extractions_pkey
    do update set facts = excluded.facts, extracted_at = now();
end
$$;
comment on function vera.record_extraction(text, uuid, bytea, text, text, jsonb, integer, text, integer) is
    'Records a passage''s extraction by a model version, keeping the validated claims per text (members)';
grant execute on function vera.record_extraction(text, uuid, bytea, text, text, jsonb, integer, text, integer)
    to vera_worker;

-- Internal: erasure of episodes (vera.withdraw_episodes) leaves no claims
-- extracted from their passages: the stored runs of their texts go (a passage
-- elsewhere with the same text is extracted again when next asked).
create or replace function vera.forget_extractions(target_group text, episode_ids uuid[])
returns void
language sql volatile
set search_path = vera, pg_temp
as $$
    delete from vera.extraction_runs r
     where r.group_id = target_group
       and r.content_sha256 in (select sha256(convert_to(c.text, 'UTF8')) from vera.chunks c
                                 where c.group_id = target_group and c.episode_id = any (episode_ids))
$$;
comment on function vera.forget_extractions(text, uuid[]) is
    'Internal: deletes the stored extractions of the erased episodes'' passage texts';

-- Contract: what the extraction prompt offers the model about group_id: its
-- ontology (predicates with their cardinality, at most 200) and up to
-- max_entities known entity names, those whose names best match the passage's
-- words first. Members.
create or replace function vera.extraction_context(group_id text, passage text, max_entities integer)
returns table (predicates jsonb, entities jsonb)
language plpgsql stable security definer
set search_path = vera, public, pg_temp
as $$
declare
    passage_norm text := vera.normalize_name(left(extraction_context.passage, 20000));
begin
    perform vera.require_role(extraction_context.group_id, 'member');
    if extraction_context.max_entities is null or extraction_context.max_entities not between 0 and 200 then
        raise exception 'max_entities must be from 0 to 200' using errcode = '22023';
    end if;
    return query
    select (select coalesce(jsonb_agg(jsonb_build_object('name', p.name, 'cardinality', p.cardinality)
                                      order by p.name), '[]')
              from (select pr.name, pr.cardinality from vera.predicates pr
                     where pr.group_id = extraction_context.group_id order by pr.name limit 200) p),
           (select coalesce(jsonb_agg(n.canonical_name order by n.score desc, n.canonical_name), '[]')
              from (select e.canonical_name,
                           word_similarity(vera.normalize_name(e.canonical_name), passage_norm) as score
                      from vera.entities e
                     where e.group_id = extraction_context.group_id and e.status <> 'merged'
                     order by 2 desc, e.created_at
                     limit extraction_context.max_entities) n);
end
$$;
comment on function vera.extraction_context(text, text, integer) is
    'The ontology and the most relevant known entity names offered to the extraction model (members)';
grant execute on function vera.extraction_context(text, text, integer) to vera_worker;

-- Contract: the verdict a judge gave on inputs_sha256 with model and
-- prompt_version in group_id, or null. Members.
create or replace function vera.judge_verdict(
    group_id text, judge text, inputs_sha256 bytea, model text, prompt_version text
)
returns jsonb
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(judge_verdict.group_id, 'member');
    return (select v.verdict from vera.judge_verdicts v
             where v.group_id = judge_verdict.group_id and v.judge = judge_verdict.judge
               and v.inputs_sha256 = judge_verdict.inputs_sha256 and v.model = judge_verdict.model
               and v.prompt_version = judge_verdict.prompt_version);
end
$$;
comment on function vera.judge_verdict(text, text, bytea, text, text) is
    'A stored judge verdict for the same inputs, model and prompt version, or null (members)';
grant execute on function vera.judge_verdict(text, text, bytea, text, text) to vera_worker;

-- Contract: stores a judge's verdict (a JSON object) and returns the stored
-- one: the first verdict for the same inputs, model and prompt version wins,
-- so two workers replaying a job act on the same verdict. Members.
create or replace function vera.store_verdict(
    group_id text, judge text, inputs_sha256 bytea, model text, prompt_version text, verdict jsonb
)
returns jsonb
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(store_verdict.group_id, 'member');
    if jsonb_typeof(store_verdict.verdict) is distinct from 'object' or octet_length(store_verdict.verdict::text) > 20000 then
        raise exception 'verdict must be a JSON object of at most 20000 bytes' using errcode = '22023';
    end if;
    insert into vera.judge_verdicts (group_id, judge, inputs_sha256, model, prompt_version, verdict, decided_by)
    values (store_verdict.group_id, store_verdict.judge, store_verdict.inputs_sha256, store_verdict.model,
            store_verdict.prompt_version, store_verdict.verdict, vera.current_principal())
    on conflict do nothing;
    return vera.judge_verdict(store_verdict.group_id, store_verdict.judge, store_verdict.inputs_sha256,
                              store_verdict.model, store_verdict.prompt_version);
end
$$;
comment on function vera.store_verdict(text, text, bytea, text, text, jsonb) is
    'Stores a judge verdict once per inputs, model and prompt version; returns the stored one (members)';
grant execute on function vera.store_verdict(text, text, bytea, text, text, jsonb) to vera_worker;

-- Internal: an entity as a judge sees it: id, name, type, aliases (20) and published facts (10).
create or replace function vera.entity_for_judge(target_group text, target_entity uuid)
returns jsonb
language sql stable
set search_path = vera, pg_temp
as $$
    select jsonb_build_object(
               'entity_id', e.entity_id, 'name', e.canonical_name, 'type', e.entity_type,
               'aliases', (select coalesce(jsonb_agg(a.alias order by a.alias), '[]')
                             from (select a.alias from vera.entity_aliases a
                                    where a.group_id = e.group_id and a.entity_id = e.entity_id
                                    order by a.created_at limit 20) a),
               'facts', (select coalesce(jsonb_agg(f.fact_text order by f.valid_from desc), '[]')
                           from (select f.fact_text, f.valid_from from vera.facts f
                                  where f.group_id = e.group_id
                                    and (f.subject_entity_id = e.entity_id or f.object_entity_id = e.entity_id)
                                    and f.lifecycle = 'published'
                                  order by f.valid_from desc limit 10) f))
      from vera.entities e
     where e.group_id = target_group and e.entity_id = target_entity
$$;
comment on function vera.entity_for_judge(text, uuid) is 'Internal: an entity with aliases and facts, for a judge';

-- Contract: what the equivalence judge decides on for a provisional entity of
-- group_id: {"entity": {...}, "candidates": [{...}, ...]}, the candidates being
-- the nearest entities by name embedding at or above er.semantic_candidate
-- (at most er.candidate_limit) and the trigram neighbours of its name (at most
-- 5), each with aliases and facts. Null when the entity is no longer
-- provisional (a replayed job, another worker's verdict). Members.
create or replace function vera.equivalence_case(group_id text, entity_id uuid)
returns jsonb
language plpgsql stable security definer
set search_path = vera, public, pg_temp
as $$
declare
    wanted vera.entities;
    candidate_ids uuid[];
begin
    perform vera.require_role(equivalence_case.group_id, 'member');
    select * into wanted from vera.entities e
     where e.group_id = equivalence_case.group_id and e.entity_id = equivalence_case.entity_id;
    if not found or wanted.status <> 'provisional' then
        return null;
    end if;
    select array_agg(c.id order by c.position) into candidate_ids from (
        select distinct on (x.id) x.id, x.position from (
            select s.entity_id as id, s.position from (
                select e.entity_id, row_number() over (order by e.name_embedding <=> wanted.name_embedding) as position
                  from vera.entities e
                 where wanted.name_embedding is not null
                   and e.group_id = wanted.group_id and e.entity_id <> wanted.entity_id and e.status <> 'merged'
                   and vector_dims(e.name_embedding) = vector_dims(wanted.name_embedding)
                   and 1 - (e.name_embedding <=> wanted.name_embedding)
                       >= (vera.setting(wanted.group_id, 'er.semantic_candidate'))::float8
                 order by e.name_embedding <=> wanted.name_embedding
                 limit greatest((vera.setting(wanted.group_id, 'er.candidate_limit'))::integer, 0)) s
            union all
            select t.entity_id, 100 + t.position from (
                select a.entity_id,
                       row_number() over (order by max(similarity(a.alias_norm, vera.normalize_name(wanted.canonical_name))) desc)
                           as position
                  from vera.entity_aliases a
                  join vera.entities e on e.group_id = a.group_id and e.entity_id = a.entity_id
                 where a.group_id = wanted.group_id and a.entity_id <> wanted.entity_id and e.status <> 'merged'
                   and similarity(a.alias_norm, vera.normalize_name(wanted.canonical_name)) >= 0.3
                 group by a.entity_id
                 order by max(similarity(a.alias_norm, vera.normalize_name(wanted.canonical_name))) desc
                 limit 5) t) x
         order by x.id, x.position) c;
    return jsonb_build_object(
        'entity', vera.entity_for_judge(wanted.group_id, wanted.entity_id),
        'candidates', (select coalesce(jsonb_agg(vera.entity_for_judge(wanted.group_id, c.id) order by c.i), '[]')
                         from unnest(candidate_ids) with ordinality as c(id, i)));
end
$$;
comment on function vera.equivalence_case(text, uuid) is
    'A provisional entity and its candidates (semantic and trigram), with aliases and facts, for the judge (members)';
grant execute on function vera.equivalence_case(text, uuid) to vera_worker;

-- Contract: settles a provisional entity of group_id after the equivalence
-- judge: same_as null activates it (a separate entity); otherwise it is merged
-- into same_as: its facts (as subject and as object) and aliases move to
-- same_as, whose functional histories are rebuilt, and it is marked merged.
-- Audited with the reason, model and prompt version. Returns 'activated',
-- 'merged', or 'unchanged' when it was no longer provisional (a replay).
-- Members. Errors: VN001 unknown entity or target, 22023 merging into itself
-- or into a merged entity.
create or replace function vera.settle_entity(
    group_id text, entity_id uuid, same_as uuid, reason text, model text, prompt_version text
)
returns text
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    wanted vera.entities;
    target vera.entities;
    moved uuid[];
    keys record;
begin
    perform vera.require_role(settle_entity.group_id, 'member');
    perform vera.require_read_committed();
    select * into wanted from vera.entities e
     where e.group_id = settle_entity.group_id and e.entity_id = settle_entity.entity_id for update;
    if not found then
        raise exception 'unknown entity % in group %', settle_entity.entity_id, vera.shown(settle_entity.group_id)
            using errcode = 'VN001';
    end if;
    if wanted.status <> 'provisional' then
        return 'unchanged';
    end if;
    if settle_entity.same_as is null then
        update vera.entities e set status = 'active'
         where e.group_id = wanted.group_id and e.entity_id = wanted.entity_id;
        perform vera.audit(wanted.group_id, 'entity.activate', 'entity', wanted.entity_id::text,
                           jsonb_build_object('reason', left(settle_entity.reason, 1000), 'model', settle_entity.model,
                                              'prompt_version', settle_entity.prompt_version));
        return 'activated';
    end if;
    select * into target from vera.entities e
     where e.group_id = settle_entity.group_id and e.entity_id = settle_entity.same_as;
    if not found then
        raise exception 'unknown entity % in group %', settle_entity.same_as, vera.shown(settle_entity.group_id)
            using errcode = 'VN001';
    end if;
    if target.entity_id = wanted.entity_id or target.status = 'merged' then
        raise exception 'cannot merge entity % into %: %', wanted.entity_id, target.entity_id,
            case when target.status = 'merged' then 'the target was merged itself' else 'it is the same entity' end
            using errcode = '22023';
    end if;
    -- the histories both entities' facts belong to, locked before any fact row is touched
    select array_agg(f.group_id) as g, array_agg(f.subject_entity_id) as s, array_agg(f.predicate) as p
      into keys
      from (select distinct f.group_id, s.id as subject_entity_id, f.predicate
              from vera.facts f
             cross join unnest(array[wanted.entity_id, target.entity_id]) as s(id)
             where f.group_id = wanted.group_id and f.subject_entity_id = wanted.entity_id) f;
    if keys.g is not null then
        perform vera.lock_histories(keys.g, keys.s, keys.p);
    end if;
    with changed as (
        update vera.facts f
           set subject_entity_id = case when f.subject_entity_id = wanted.entity_id then target.entity_id
                                        else f.subject_entity_id end,
               object_entity_id = case when f.object_entity_id = wanted.entity_id then target.entity_id
                                       else f.object_entity_id end
         where f.group_id = wanted.group_id
           and (f.subject_entity_id = wanted.entity_id or f.object_entity_id = wanted.entity_id)
        returning f.fact_id)
    select coalesce(array_agg(changed.fact_id), '{}') into moved from changed;
    insert into vera.entity_aliases (group_id, entity_id, alias, alias_norm)
    select a.group_id, target.entity_id, a.alias, a.alias_norm
      from vera.entity_aliases a
     where a.group_id = wanted.group_id and a.entity_id = wanted.entity_id
    on conflict do nothing;
    delete from vera.entity_aliases a where a.group_id = wanted.group_id and a.entity_id = wanted.entity_id;
    update vera.entities e set status = 'merged', merged_into = target.entity_id
     where e.group_id = wanted.group_id and e.entity_id = wanted.entity_id;
    if keys.g is not null then
        perform vera.rebuild_timelines(keys.g, array_fill(target.entity_id, array[cardinality(keys.g)]), keys.p);
    end if;
    perform vera.audit(wanted.group_id, 'entity.merge', 'entity', wanted.entity_id::text,
                       jsonb_build_object('into', target.entity_id, 'facts', cardinality(moved),
                                          'reason', left(settle_entity.reason, 1000), 'model', settle_entity.model,
                                          'prompt_version', settle_entity.prompt_version));
    if cardinality(moved) > 0 then
        perform vera.enqueue_job('vera.project_to_graph',
                                 jsonb_build_object('group_id', wanted.group_id, 'fact_ids', to_jsonb(moved)));
    end if;
    return 'merged';
end
$$;
comment on function vera.settle_entity(text, uuid, uuid, text, text, text) is
    'Activates a provisional entity or merges it into another after the equivalence judge, audited (members)';
grant execute on function vera.settle_entity(text, uuid, uuid, text, text, text) to vera_worker;

-- Contract: what the contradiction judge decides on for a new value fact_id
-- of a multi-valued predicate in group_id: {"fact": {...}, "current": [...]},
-- the other published values of the same subject and predicate (at most 20,
-- latest first), each with fact_id, object, valid_from and fact_text. Null when
-- the fact is not a published value of a multi-valued predicate any more, or
-- has no other value. Members.
create or replace function vera.contradiction_case(group_id text, fact_id uuid)
returns jsonb
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    wanted vera.facts;
    others jsonb;
begin
    perform vera.require_role(contradiction_case.group_id, 'member');
    select f.* into wanted from vera.facts f
      join vera.predicates pr on pr.group_id = f.group_id and pr.name = f.predicate and pr.cardinality = 'multi'
     where f.group_id = contradiction_case.group_id and f.fact_id = contradiction_case.fact_id
       and f.lifecycle = 'published' and f.retired_at is null;
    if not found then
        return null;
    end if;
    select jsonb_agg(jsonb_build_object('fact_id', o.fact_id, 'object', o.object_value, 'valid_from', o.valid_from,
                                        'fact_text', o.fact_text) order by o.valid_from desc)
      into others
      from (select f.fact_id, f.object_value, f.valid_from, f.fact_text from vera.facts f
             where f.group_id = wanted.group_id and f.subject_entity_id = wanted.subject_entity_id
               and f.predicate = wanted.predicate and f.fact_id <> wanted.fact_id
               and f.object_value <> wanted.object_value
               and f.lifecycle = 'published' and f.retired_at is null
             order by f.valid_from desc limit 20) o;
    if others is null then
        return null;
    end if;
    return jsonb_build_object(
        'fact', jsonb_build_object('fact_id', wanted.fact_id, 'subject', (select e.canonical_name from vera.entities e
                                    where e.group_id = wanted.group_id and e.entity_id = wanted.subject_entity_id),
                                   'predicate', wanted.predicate, 'object', wanted.object_value,
                                   'valid_from', wanted.valid_from, 'fact_text', wanted.fact_text),
        'current', others);
end
$$;
comment on function vera.contradiction_case(text, uuid) is
    'A new value of a multi-valued predicate and the values it may contradict, for the judge (members)';
grant execute on function vera.contradiction_case(text, uuid) to vera_worker;

-- Contract: the contradiction judge said fact_id replaces the values replaced
-- (of the same subject and predicate in group_id): each that is still
-- published and began no later than fact_id is superseded by it, as a newer
-- value of a functional predicate supersedes the older (superseded_by, valid_to
-- at the new value's valid_from), under the same history lock. Audited with the
-- reason, model and prompt version. Returns how many values were superseded (0
-- on a replay). Members; VN001 when fact_id is not a published fact of the group.
create or replace function vera.replace_values(
    group_id text, fact_id uuid, replaced uuid[], reason text, model text, prompt_version text
)
returns integer
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    wanted vera.facts;
    superseded uuid[];
begin
    perform vera.require_role(replace_values.group_id, 'member');
    perform vera.require_read_committed();
    if cardinality(replace_values.replaced) > 20 then
        raise exception 'at most 20 replaced values' using errcode = '54000';
    end if;
    select * into wanted from vera.facts f
     where f.group_id = replace_values.group_id and f.fact_id = replace_values.fact_id
       and f.lifecycle = 'published' and f.retired_at is null;
    if not found then
        raise exception 'fact % is not a published fact of group %', replace_values.fact_id,
            vera.shown(replace_values.group_id) using errcode = 'VN001';
    end if;
    perform vera.lock_histories(array[wanted.group_id], array[wanted.subject_entity_id], array[wanted.predicate]);
    with gone as (
        update vera.facts f
           set lifecycle = 'superseded', superseded_by = wanted.fact_id,
               valid_to = least(coalesce(f.stated_valid_to, wanted.valid_from), wanted.valid_from)
         where f.group_id = wanted.group_id and f.fact_id = any (replace_values.replaced)
           and f.subject_entity_id = wanted.subject_entity_id and f.predicate = wanted.predicate
           and f.fact_id <> wanted.fact_id and f.lifecycle = 'published' and f.retired_at is null
           and f.valid_from <= wanted.valid_from
        returning f.fact_id)
    select coalesce(array_agg(gone.fact_id), '{}') into superseded from gone;
    if cardinality(superseded) > 0 then
        perform vera.audit(wanted.group_id, 'fact.replace', 'fact', wanted.fact_id::text,
                           jsonb_build_object('replaced', to_jsonb(superseded), 'reason', left(replace_values.reason, 1000),
                                              'model', replace_values.model,
                                              'prompt_version', replace_values.prompt_version));
        perform vera.enqueue_job('vera.project_to_graph', jsonb_build_object(
            'group_id', wanted.group_id, 'fact_ids', to_jsonb(superseded || wanted.fact_id)));
    end if;
    return cardinality(superseded);
end
$$;
comment on function vera.replace_values(text, uuid, uuid[], text, text, text) is
    'Supersedes values of a multi-valued predicate the contradiction judge said a new value replaces (members)';
grant execute on function vera.replace_values(text, uuid, uuid[], text, text, text) to vera_worker;

reset role;
