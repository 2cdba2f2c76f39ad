-- Publishing claims: grading by trust tier, the contamination guard, entity
-- resolution, supersession and the outbox, for a whole batch at once.
set role vera_owner;

-- Authority of a source's trust tier.
create or replace function vera.tier_authority(tier integer)
returns real
language sql immutable strict parallel safe
set search_path = vera, pg_temp
as $$
    select case tier when 1 then 1.00 when 2 then 0.85 when 3 then 0.70 when 4 then 0.40 end::real
$$;
comment on function vera.tier_authority(integer) is 'Authority of a trust tier: 1.00, 0.85, 0.70, 0.40';

-- Internal: the first problem of a claim batch, as 'claim N: ...', or null.
create or replace function vera.claim_problem(claims jsonb)
returns table (problem text, sqlstate text)
language sql immutable
set search_path = vera, pg_temp
as $$
    select format('claim %s: %s', i - 1, reason), code
      from jsonb_array_elements(claims) with ordinality as a(c, i)
     cross join lateral (select case
            when jsonb_typeof(c) <> 'object' then 'not a JSON object'
            when jsonb_typeof(c -> 'subject') is distinct from 'string' or btrim(c ->> 'subject') = '' then 'subject is empty'
            when jsonb_typeof(c -> 'predicate') is distinct from 'string' or btrim(c ->> 'predicate') = '' then 'predicate is empty'
            when vera.normalize_predicate(c ->> 'predicate') is null
                then format('predicate %s has no UPPER_SNAKE form (letters, digits, separators; at most 100)', c -> 'predicate')
            when jsonb_typeof(c -> 'object') is distinct from 'string' or btrim(c ->> 'object') = '' then 'object is empty'
            when char_length(c ->> 'subject') > 500 then 'subject is over 500 characters'
            when char_length(c ->> 'object') > 2000 then 'object is over 2000 characters'
            when char_length(c ->> 'fact_text') > 4000 then 'fact_text is over 4000 characters'
            when c ? 'confidence' and (jsonb_typeof(c -> 'confidence') <> 'number'
                 or (c ->> 'confidence')::numeric not between 0 and 1) then 'confidence must be a number from 0 to 1'
            when c ? 'verification' and coalesce(c ->> 'verification', '') not in ('human_verified', 'auto', 'pending')
                then 'verification must be human_verified, auto or pending'
            when c ? 'chunk' and jsonb_typeof(c -> 'chunk') <> 'number' then 'chunk must be the chunk''s ordinal'
        end as reason,
        case when c ->> 'subject' is not null and char_length(c ->> 'subject') > 500
                  or char_length(c ->> 'object') > 2000 or char_length(c ->> 'fact_text') > 4000
             then '22001' else '22023' end as code) checks
     where reason is not null
     order by i
     limit 1
$$;
comment on function vera.claim_problem(jsonb) is 'Internal: the first invalid claim of a batch, or nothing';

-- Contract: publishes a batch of claims, all or nothing. claims is a JSON array of
--   {"subject", "predicate", "object"                     required strings
--    "subject_type", "object_is_entity", "object_type"    optional
--    "functional": true                                   declares a new predicate functional
--    "confidence": 0..1, "verification": human_verified | auto | pending
--    "valid_from", "valid_to"                             timestamps (valid time)
--    "chunk": ordinal, "evidence_start", "evidence_end"   evidence in the episode
--    "fact_text", "embedding": [..], "subject_embedding": [..]}
-- for an episode of group_id (or no episode: an agent's own claim, tier 4).
-- Grading: tiers 1-2 publish (authority 1.00 / 0.85), tier 3 waits for
-- review (0.70), tier 4 is a proposal (0.40). Shared scopes (o:, w:, p:)
-- accept only verified knowledge: tier 4 or verification 'pending' becomes a
-- proposal in the caller's own u: scope, naming the scope it is meant for.
-- Limits: 10,000 claims per call; subject 500, object 2,000, fact_text 4,000 characters.
-- Returns one row per claim (duplicates within the batch share a fact).
create or replace function vera.publish_claims(
    group_id text, episode_id uuid, claims jsonb, embedding_model text default null
)
returns table (claim integer, fact_id uuid, fact_group_id text, lifecycle vera.fact_lifecycle,
               subject_entity_id uuid, resolution text)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    caller uuid := vera.require_principal();
    scope vera.groups;
    episode vera.episodes;
    tier integer := 4;
    personal text;
    earlier_versions uuid[] := '{}';
    first_problem record;
    fact_vectors record;
    subject_vectors record;
    work vera.claim_work[];
    changed record;
    judged record;
    job_group text;
begin
    perform vera.require_role(publish_claims.group_id, 'member');
    select * into scope from vera.groups g where g.group_id = publish_claims.group_id;
    if publish_claims.episode_id is not null then
        episode := vera.visible_episode(publish_claims.group_id, publish_claims.episode_id);
        select s.trust_tier into tier from vera.sources s
         where s.group_id = episode.group_id and s.source_id = episode.source_id;
        select coalesce(array_agg(e.episode_id), '{}') into earlier_versions from vera.episodes e
         where e.group_id = episode.group_id and e.source_id = episode.source_id
           and e.external_id = episode.external_id and e.version < episode.version;
    end if;
    if jsonb_typeof(publish_claims.claims) is distinct from 'array' then
        raise exception 'claims must be a JSON array of objects' using errcode = '22023';
    end if;
    if jsonb_array_length(publish_claims.claims) > 10000 then
        raise exception 'at most 10000 claims per call, got %', jsonb_array_length(publish_claims.claims)
            using errcode = '54000';
    end if;
    select * into first_problem from vera.claim_problem(publish_claims.claims);
    if first_problem.problem is not null then
        raise exception '%', first_problem.problem using errcode = first_problem.sqlstate;
    end if;
    select p.personal_group_id into personal from vera.principals p where p.principal_id = caller;

    select * into fact_vectors from vera.parse_vectors(
        (select jsonb_agg(coalesce(c -> 'embedding', 'null') order by i)
           from jsonb_array_elements(publish_claims.claims) with ordinality as a(c, i)), 'fact');
    select * into subject_vectors from vera.parse_vectors(
        (select jsonb_agg(coalesce(c -> 'subject_embedding', 'null') order by i)
           from jsonb_array_elements(publish_claims.claims) with ordinality as a(c, i)), 'subject');
    if fact_vectors.dim is not null and subject_vectors.dim is not null and fact_vectors.dim <> subject_vectors.dim then
        raise exception 'fact embeddings have % dimensions, subject embeddings %', fact_vectors.dim, subject_vectors.dim
            using errcode = 'VE001';
    end if;

    -- parse and grade
    begin
        select array_agg(row(
                   (i - 1)::integer,
                   -- where the claim lands: the contamination guard
                   case when graded.state = 'proposal' then personal else publish_claims.group_id end,
                   graded.state,
                   btrim(c ->> 'subject'), c ->> 'subject_type', subject_vectors.parsed[i],
                   vera.normalize_predicate(c ->> 'predicate'), coalesce((c ->> 'functional')::boolean, false),
                   btrim(c ->> 'object'), coalesce((c ->> 'object_is_entity')::boolean, false), c ->> 'object_type',
                   coalesce((c ->> 'confidence')::real, 1), v.verification,
                   (c ->> 'valid_from')::timestamptz, (c ->> 'valid_to')::timestamptz,
                   null, (c ->> 'evidence_start')::integer, (c ->> 'evidence_end')::integer,
                   coalesce(nullif(btrim(c ->> 'fact_text'), ''),
                            btrim(c ->> 'subject') || ' '
                            || lower(replace(vera.normalize_predicate(c ->> 'predicate'), '_', ' '))
                            || ' ' || btrim(c ->> 'object')),
                   fact_vectors.parsed[i], null, null, null, gen_random_uuid(), null)::vera.claim_work order by i)
          into work
          from jsonb_array_elements(publish_claims.claims) with ordinality as a(c, i)
         cross join lateral (select coalesce(c ->> 'verification',
                                    case when tier <= 2 then 'auto' else 'pending' end)::vera.verification
                                 as verification) v
         cross join lateral (select case
                                 when scope.kind = 'personal' then 'published'
                                 when tier = 3 then 'pending_review'
                                 when tier = 4 or v.verification = 'pending' then 'proposal'
                                 else 'published' end::vera.fact_lifecycle as state) graded;
    exception when invalid_text_representation or invalid_datetime_format or datetime_field_overflow
                   or numeric_value_out_of_range then
        raise exception 'a claim field has the wrong type: %', sqlerrm using errcode = '22023';
    end;

    if exists (select from unnest(work) w where w.stated_valid_to < coalesce(w.valid_from, w.stated_valid_to)) then
        raise exception 'claim %: valid_to is before valid_from',
            (select min(w.claim) from unnest(work) w where w.stated_valid_to < w.valid_from) using errcode = '22023';
    end if;

    -- the evidence chunk must belong to the episode
    if exists (select from jsonb_array_elements(publish_claims.claims) c where c ? 'chunk') then
        if publish_claims.episode_id is null then
            raise exception 'claims cite chunks but no episode was given' using errcode = '22023';
        end if;
        select array_agg(case when ch.chunk_id is null then w
                              else row(w.claim, w.target_group, w.lifecycle, w.subject, w.subject_type, w.subject_embedding,
                                       w.predicate, w.functional, w.object, w.object_is_entity, w.object_type,
                                       w.confidence, w.verification, w.valid_from, w.stated_valid_to, ch.chunk_id,
                                       w.evidence_start, w.evidence_end, w.fact_text, w.embedding,
                                       null, null, null, w.fact_id, null)::vera.claim_work end order by w.claim)
          into work
          from unnest(work) w
          left join lateral (select (publish_claims.claims -> w.claim ->> 'chunk')::integer as ordinal) cited on true
          left join vera.chunks ch on ch.group_id = episode.group_id and ch.episode_id = episode.episode_id
                                  and ch.ordinal = cited.ordinal;
        if exists (select from unnest(work) w where publish_claims.claims -> w.claim ? 'chunk' and w.chunk_id is null) then
            raise exception 'claim %: chunk % is not a chunk of episode %',
                (select min(w.claim) from unnest(work) w where publish_claims.claims -> w.claim ? 'chunk' and w.chunk_id is null),
                (select publish_claims.claims -> min(w.claim) ->> 'chunk' from unnest(work) w
                  where publish_claims.claims -> w.claim ? 'chunk' and w.chunk_id is null),
                publish_claims.episode_id using errcode = '22023';
        end if;
    end if;

    -- pin the embedding model on every group that receives vectors
    if coalesce(fact_vectors.dim, subject_vectors.dim) is not null then
        perform vera.pin_embedding(g, publish_claims.embedding_model, coalesce(fact_vectors.dim, subject_vectors.dim))
           from (select distinct w.target_group as g from unnest(work) w order by 1) targets;
    end if;

    -- the ontology: unknown predicates join it, multi-valued unless declared functional
    insert into vera.predicates (group_id, name, cardinality)
    select distinct on (w.target_group, w.predicate) w.target_group, w.predicate,
           case when w.functional then 'functional' else 'multi' end::vera.predicate_cardinality
      from unnest(work) w
     order by w.target_group, w.predicate, w.functional desc
    on conflict do nothing;

    -- entities: subjects, and objects that are entities, resolved in the landing group
    with names as (
        select w.claim, 'subject' as role, w.target_group as g, w.subject as n, w.subject_embedding as e,
               w.subject_type as t
          from unnest(work) w
        union all
        select w.claim, 'object', w.target_group, w.object, null, w.object_type
          from unnest(work) w where w.object_is_entity
    ), numbered as (
        select row_number() over (order by names.claim, names.role desc) as position, names.* from names
    ), resolved as (
        select numbered.claim, numbered.role, r.entity_id as resolved_id, r.method, r.candidates
          from vera.resolve_entities(
                   (select array_agg(numbered.g order by numbered.position) from numbered),
                   (select array_agg(numbered.n order by numbered.position) from numbered),
                   (select array_agg(numbered.e order by numbered.position) from numbered),
                   (select array_agg(numbered.t order by numbered.position) from numbered)) r
          join numbered on numbered.position = r.ordinal
    )
    select array_agg(row(w.claim, w.target_group, w.lifecycle, w.subject, w.subject_type, w.subject_embedding,
                         w.predicate, w.functional, w.object, w.object_is_entity, w.object_type,
                         w.confidence, w.verification,
                         -- no stated valid_from: an unchanged restatement keeps the earlier version's,
                         -- otherwise the episode's observation time
                         coalesce(w.valid_from, carried.valid_from, episode.observed_at, now()),
                         w.stated_valid_to, w.chunk_id, w.evidence_start, w.evidence_end, w.fact_text, w.embedding,
                         s.resolved_id, o.resolved_id, s.method, w.fact_id, s.candidates)::vera.claim_work
                     order by w.claim)
      into work
      from unnest(work) w
      join resolved s on s.claim = w.claim and s.role = 'subject'
      left join resolved o on o.claim = w.claim and o.role = 'object'
      left join lateral (
          select f.valid_from from vera.facts f
           where cardinality(earlier_versions) > 0 and w.valid_from is null
             and f.group_id = episode.group_id and f.episode_id = any (earlier_versions)
             and f.subject_entity_id = s.resolved_id and f.predicate = w.predicate and f.object_value = w.object
           order by f.valid_from limit 1) carried on true;

    -- duplicates within the batch become one fact
    select array_agg(deduplicated.w order by (deduplicated.w).claim) into work
      from (select row(w.claim, w.target_group, w.lifecycle, w.subject, w.subject_type, w.subject_embedding,
                       w.predicate, w.functional, w.object, w.object_is_entity, w.object_type,
                       w.confidence, w.verification, w.valid_from, w.stated_valid_to, w.chunk_id,
                       w.evidence_start, w.evidence_end, w.fact_text, w.embedding,
                       w.subject_entity_id, w.object_entity_id, w.resolution,
                       first_value(w.fact_id) over (partition by w.target_group, w.subject_entity_id, w.predicate,
                                                    w.object, w.valid_from order by w.claim),
                       w.candidates)::vera.claim_work as w
              from unnest(work) w) deduplicated;

    insert into vera.facts (group_id, fact_id, subject_entity_id, predicate, object_entity_id, object_value, fact_text,
                            embedding, tier, authority, verification, confidence, lifecycle, valid_from, valid_to,
                            stated_valid_to, source_id, episode_id, chunk_id, evidence_start, evidence_end,
                            proposed_by, proposed_for, origin)
    select distinct on (w.fact_id)
           w.target_group, w.fact_id, w.subject_entity_id, w.predicate, w.object_entity_id, w.object, w.fact_text,
           w.embedding, tier, vera.tier_authority(tier), w.verification, w.confidence, w.lifecycle, w.valid_from,
           w.stated_valid_to, w.stated_valid_to,
           case when w.target_group = publish_claims.group_id then episode.source_id end,
           case when w.target_group = publish_claims.group_id then episode.episode_id end,
           case when w.target_group = publish_claims.group_id then w.chunk_id end,
           w.evidence_start, w.evidence_end, caller,
           case when w.lifecycle = 'proposal' then publish_claims.group_id end,
           -- a proposal carries its provenance and names: its reviewers cannot read its u: scope
           case when w.target_group <> publish_claims.group_id then jsonb_strip_nulls(jsonb_build_object(
               'group_id', publish_claims.group_id, 'source_id', episode.source_id,
               'episode_id', episode.episode_id, 'chunk_id', w.chunk_id, 'subject', w.subject,
               'subject_type', w.subject_type,
               'object_entity', case when w.object_is_entity then w.object end, 'object_type', w.object_type)) end
      from unnest(work) w
     order by w.fact_id, w.claim;

    -- a new version of a record supersedes what the earlier versions said
    with retired as (
        update vera.facts f set lifecycle = 'superseded', retired_at = now()
         where cardinality(earlier_versions) > 0
           and ((f.group_id = episode.group_id and f.episode_id = any (earlier_versions))
                or (f.origin ->> 'episode_id')::uuid = any (earlier_versions))
           and f.lifecycle in ('published', 'superseded', 'pending_review', 'proposal') and f.retired_at is null
        returning f.group_id, f.subject_entity_id, f.predicate
    ), keys as (
        select w.target_group as g, w.subject_entity_id as s, w.predicate as p
          from unnest(work) w where w.lifecycle = 'published'
        union
        select r.group_id, r.subject_entity_id, r.predicate from retired r
    )
    select array_agg(keys.g) as g, array_agg(keys.s) as s, array_agg(keys.p) as p into changed from keys;

    -- supersession, then the outbox: one job of each kind per group
    for job_group in
        select distinct t.group_id
          from vera.rebuild_timelines(changed.g, changed.s, changed.p) t
        union
        select distinct w.target_group from unnest(work) w where w.lifecycle = 'published'
    loop
        perform vera.enqueue_job('vera.project_to_graph', jsonb_build_object(
            'group_id', job_group,
            'fact_ids', (select jsonb_agg(distinct f.fact_id) from vera.facts f
                          where f.group_id = job_group
                            and (f.fact_id in (select w.fact_id from unnest(work) w)
                                 or (f.group_id, f.subject_entity_id, f.predicate) in
                                    (select * from unnest(changed.g, changed.s, changed.p)))
                            and f.lifecycle in ('published', 'superseded', 'retracted'))));
    end loop;
    for job_group in select distinct w.target_group from unnest(work) w where w.embedding is null loop
        perform vera.enqueue_job('vera.embed', jsonb_build_object(
            'group_id', job_group,
            'fact_ids', (select jsonb_agg(distinct w.fact_id) from unnest(work) w
                          where w.target_group = job_group and w.embedding is null)));
    end loop;
    for judged in
        select w.target_group as g,
               jsonb_agg(distinct jsonb_build_object('entity_id', e.entity_id, 'name', e.canonical_name,
                                                     'candidates', w.candidates)) as entities
          from unnest(work) w
          join vera.entities e on e.group_id = w.target_group and e.entity_id = w.subject_entity_id
         where w.resolution = 'provisional'
         group by w.target_group
    loop
        perform vera.enqueue_job('vera.judge_equivalence',
                                 jsonb_build_object('group_id', judged.g, 'entities', judged.entities));
    end loop;
    for judged in
        select w.target_group as g, jsonb_agg(distinct w.fact_id) as fact_ids
          from unnest(work) w
          join vera.predicates pr on pr.group_id = w.target_group and pr.name = w.predicate and pr.cardinality = 'multi'
         where w.lifecycle = 'published' and (vera.setting(w.target_group, 'judge.contradiction'))::boolean
           and exists (select from vera.facts f
                        where f.group_id = w.target_group and f.subject_entity_id = w.subject_entity_id
                          and f.predicate = w.predicate and f.lifecycle = 'published' and f.object_value <> w.object)
         group by w.target_group
    loop
        perform vera.enqueue_job('vera.judge_contradiction',
                                 jsonb_build_object('group_id', judged.g, 'fact_ids', judged.fact_ids));
    end loop;

    return query
    select w.claim, w.fact_id, w.target_group, f.lifecycle, w.subject_entity_id, w.resolution
      from unnest(work) w
      join vera.facts f on f.group_id = w.target_group and f.fact_id = w.fact_id
     order by w.claim;
end
$$;
comment on function vera.publish_claims(text, uuid, jsonb, text) is
    'Publishes a batch of claims with grading, the contamination guard, resolution and supersession';

reset role;
