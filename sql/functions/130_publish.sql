-- Publishing claims: grading by trust tier, the contamination guard, entity
-- resolution, supersession and the outbox, for a whole batch at once.
set role vera_owner;

-- Authority of a source's trust tier. (Pure; no search_path pinned so that
-- it inlines, see 090_normalize.sql. Not strict either: the planner inlines
-- a strict function only when its body is strict, which a CASE is not, and
-- search's stage 2 called it once per passage candidate; a null tier gives
-- null all the same.)
create or replace function vera.tier_authority(tier integer)
returns real
language sql immutable parallel safe
as $$
    select case tier when 1 then 1.00 when 2 then 0.85 when 3 then 0.70 when 4 then 0.40 end::real
$$;
comment on function vera.tier_authority(integer) is 'Authority of a trust tier: 1.00, 0.85, 0.70, 0.40';
grant execute on function vera.tier_authority(integer) to vera_app, vera_worker, vera_gateway;

-- Version of the grading rules below (publish_claims, store_chunks, review):
-- which tier publishes, waits for review or becomes a proposal, and what the
-- contamination guard lets into a shared scope. Snapshots pin it with the
-- tier authorities (vera.live_pins): bump it when a rule changes, so a
-- snapshot taken under the old rules fails closed (VS004).
create or replace function vera.grading_version()
returns text
language sql immutable parallel safe
set search_path = vera, pg_temp
as $$ select 'vera-grading/1' $$;
comment on function vera.grading_version() is 'Internal: version of the grading rules by trust tier; snapshots pin it';

-- Contract: the text a claim's fact is stored, searched and embedded as: its
-- fact_text when it has one, else "subject predicate object" with the
-- predicate's normalised form in lower case words (RUNS_ON -> "runs on").
-- predicate is the normalised form (vera.normalize_predicate). Pure (no
-- search_path pinned so that it inlines, as vera.tier_authority).
create or replace function vera.claim_fact_text(subject text, predicate text, object text, fact_text text)
returns text
language sql immutable parallel safe
as $$
    select coalesce(nullif(pg_catalog.btrim(fact_text), ''),
                    pg_catalog.btrim(subject) || ' ' || pg_catalog.lower(pg_catalog.replace(predicate, '_', ' '))
                    || ' ' || pg_catalog.btrim(object))
$$;
comment on function vera.claim_fact_text(text, text, text, text) is
    'The text of a claim''s fact: its fact_text, else "subject predicate object" (pure)';
grant execute on function vera.claim_fact_text(text, text, text, text) to vera_app, vera_worker, vera_gateway;

-- Contract: the fact texts of a batch of claims in vera.publish_claims' shape,
-- in order, as publish_claims will store them (vera.claim_fact_text): what a
-- client with an embedder embeds so that the facts it writes carry vectors at
-- once, exactly as the embed job would have embedded them. null for an element
-- that is no valid claim (publish_claims refuses the batch with the reason);
-- empty for anything but an array. Pure: reads no table.
create or replace function vera.claim_fact_texts(claims jsonb)
returns text[]
language sql immutable parallel safe
as $$
    select coalesce(pg_catalog.array_agg(vera.claim_fact_text(
               c ->> 'subject', vera.normalize_predicate(c ->> 'predicate'), c ->> 'object', c ->> 'fact_text')
               order by i), '{}')
      from pg_catalog.jsonb_array_elements(
               case when pg_catalog.jsonb_typeof(claims) = 'array' then claims else '[]' end)
           with ordinality as a(c, i)
$$;
comment on function vera.claim_fact_texts(jsonb) is
    'The fact texts of a claim batch, in order, as vera.publish_claims stores them (pure)';
grant execute on function vera.claim_fact_texts(jsonb) to vera_app, vera_worker, vera_gateway;

-- Internal: the first problem of a claim batch, as 'claim N: ...', or nothing.
-- Each claim object is parsed once into typed fields (jsonb_to_recordset).
create or replace function vera.claim_problem(claims jsonb)
returns table (problem text, sqlstate text)
language plpgsql stable
set search_path = vera, pg_temp
as $$
begin
    return query
    with parsed as materialized (
    select x.*
      -- every typed field is listed, so a value of the wrong type is caught here
      from rows from (jsonb_to_recordset(claims) as (
               subject text, predicate text, object text, fact_text text, confidence numeric, verification text,
               functional boolean, object_is_entity boolean, valid_from timestamptz, valid_to timestamptz,
               chunk integer, evidence_start integer, evidence_end integer))
           with ordinality as x(subject, predicate, object, fact_text, confidence, verification, functional,
                                object_is_entity, valid_from, valid_to, chunk, evidence_start, evidence_end, i)
    ), predicates as (
        -- a batch uses few predicates: normalise each once
        select distinct parsed.predicate as raw, vera.normalize_predicate(parsed.predicate) as normalized from parsed
    )
    select format('claim %s: %s', x.i - 1, checks.reason), checks.code
      from parsed x
      left join predicates pr on pr.raw = x.predicate
     cross join lateral (select case
            when coalesce(btrim(x.subject), '') = '' then 'subject is empty'
            when coalesce(btrim(x.predicate), '') = '' then 'predicate is empty'
            when pr.normalized is null
                then format('predicate "%s" has no UPPER_SNAKE form (letters, digits, separators; at most 100)', vera.shown(x.predicate))
            when coalesce(btrim(x.object), '') = '' then 'object is empty'
            when char_length(x.subject) > 500 then 'subject is over 500 characters'
            when char_length(x.object) > 2000 then 'object is over 2000 characters'
            -- an object that is an entity becomes an entity's name, as long as a subject may be
            when x.object_is_entity and char_length(btrim(x.object)) > 500
                then 'object is over 500 characters (it names an entity, as a subject does)'
            when char_length(x.fact_text) > 4000 then 'fact_text is over 4000 characters'
            when x.confidence not between 0 and 1 then 'confidence must be a number from 0 to 1'
            when x.verification not in ('human_verified', 'auto', 'pending')
                then 'verification must be human_verified, auto or pending'
            when not vera.is_world_time(x.valid_from) or not vera.is_world_time(x.valid_to)
                then 'valid_from and valid_to must be finite times before the year 10000 (from 4714 BC; null: open)'
            when x.evidence_end < x.evidence_start then 'evidence_end is before evidence_start'
        end as reason,
        case when char_length(x.subject) > 500 or char_length(x.object) > 2000 or char_length(x.fact_text) > 4000
                  or (x.object_is_entity and char_length(btrim(x.object)) > 500)
             then '22001' else '22023' end as code) checks
     where checks.reason is not null
     order by x.i
     limit 1;
exception when data_exception then
    -- a non-object element, or a field of the wrong type (any data exception of the typed parse:
    -- 22P02, 22007, 22008, 22003, and 22009 for a valid_from such as -16.0, read as a time zone)
    return query select format('claims must be JSON objects with fields of the right types: %s', vera.shown(sqlerrm, 200)), '22023'::text;
end
$$;
comment on function vera.claim_problem(jsonb) is 'Internal: the first invalid claim of a batch, or nothing';

-- Internal: the claims of a batch (0-based positions) that cite a span of a
-- passage of the episode (chunk, evidence_start, evidence_end) without
-- quoting both their subject and their object there. A span quotes a name
-- when, normalised as names are (vera.normalize_name), it holds as whole
-- words the name's own normalised form or that of another alias of an entity
-- of target_group known by the name. Alone, a span naming neither (a model
-- talked into a claim by the text it reads) is no evidence: see
-- publish_claims. Set-based: a few index lookups per distinct name.
create or replace function vera.unquoted_claims(
    target_group text, episode_group text, target_episode uuid, claims jsonb)
returns integer[]
language sql stable
set search_path = vera, pg_temp
as $$
    with cited as materialized (
        select (x.i - 1)::integer as claim, vera.normalize_name(x.subject) as subject,
               vera.normalize_name(x.object) as object,
               -- a span outside any passage (20,000 characters at most) quotes nothing
               ' ' || coalesce(vera.normalize_name(case
                   when x.evidence_start between 0 and 20000 and x.evidence_end between 0 and 20000
                   then substr(ch.text, x.evidence_start + 1, x.evidence_end - x.evidence_start) end), '')
               || ' ' as padded
          from rows from (jsonb_to_recordset(claims) as (
                   subject text, object text, chunk integer, evidence_start integer, evidence_end integer))
               with ordinality as x(subject, object, chunk, evidence_start, evidence_end, i)
          left join vera.chunks ch on ch.group_id = episode_group and ch.episode_id = target_episode
                                  and ch.ordinal = x.chunk
         where x.chunk is not null and x.evidence_start is not null and x.evidence_end is not null
    ), names as (
        select cited.subject as norm from cited union select cited.object from cited
    ), forms as materialized (
        select names.norm, names.norm as form from names
        union
        select names.norm, known.alias_norm
          from names
         -- name by name, each step its own subquery (offset 0: not pulled up) so that each lookup
         -- stays an index condition: as one join, the stale estimates of tables just written to
         -- turned the plan into nested loops over the group's every alias and entity (quadratic)
         cross join lateral (select a.entity_id from vera.entity_aliases a
                              where a.group_id = target_group and a.alias_norm = names.norm offset 0) hit
         cross join lateral (select from vera.entities e
                              where e.group_id = target_group and e.entity_id = hit.entity_id
                                and e.status <> 'merged' offset 0) live
         cross join lateral (select other.alias_norm from vera.entity_aliases other
                              where other.group_id = target_group and other.entity_id = hit.entity_id
                             offset 0) known
    ), quoted as (
        -- (claim, role) pairs whose name, or another alias of it, the span holds (hash joins)
        select cited.claim, count(distinct named.role) as roles
          from cited
         cross join lateral (values ('subject', cited.subject), ('object', cited.object)) as named(role, norm)
          join forms f on f.norm = named.norm
         where f.form <> '' and strpos(cited.padded, ' ' || f.form || ' ') > 0
         group by cited.claim
    )
    select coalesce(array_agg(cited.claim order by cited.claim), '{}')
      from cited
      left join quoted on quoted.claim = cited.claim
     where coalesce(quoted.roles, 0) < 2
$$;
comment on function vera.unquoted_claims(text, text, uuid, jsonb) is
    'Internal: the claims whose cited span quotes not both their subject and object (or aliases of them)';

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
-- A claim that cites a span of a passage (chunk, evidence_start and
-- evidence_end: what the extract job sends for a model's claim) must quote
-- its subject and its object there, or a known alias of either (in group_id,
-- compared as vera.normalize_name compares names, as whole words); one that
-- does not is demoted, whatever it says: verification 'pending', so a proposal
-- (tier 3: review; a personal scope publishes all) whose origin says
-- "unquoted". A claim without a span (structure: CSV, front matter) is not checked.
-- Limits: 10,000 claims per call; subject 500, object 2,000 (an entity: 500), fact_text 4,000 characters.
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
    unquoted integer[] := '{}';
    first_problem record;
    has_vectors boolean;
    fact_dim integer;
    fact_parsed public.vector[];
    subject_dim integer;
    subject_parsed public.vector[];
    work vera.claim_work[];
    retired record;
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

    -- vectors, only when some claim carries one
    has_vectors := publish_claims.claims @? '$[*] ? (exists (@.embedding) || exists (@.subject_embedding))';
    if has_vectors then
        select v.dim, v.parsed into fact_dim, fact_parsed from vera.parse_vectors(
            (select jsonb_agg(coalesce(c -> 'embedding', 'null') order by i)
               from jsonb_array_elements(publish_claims.claims) with ordinality as a(c, i)), 'fact') v;
        select v.dim, v.parsed into subject_dim, subject_parsed from vera.parse_vectors(
            (select jsonb_agg(coalesce(c -> 'subject_embedding', 'null') order by i)
               from jsonb_array_elements(publish_claims.claims) with ordinality as a(c, i)), 'subject') v;
        if fact_dim <> subject_dim then
            raise exception 'fact embeddings have % dimensions, subject embeddings %', fact_dim, subject_dim
                using errcode = 'VE001';
        end if;
    end if;

    -- a claim citing a span of a passage needs a quote: its span must name its subject and its
    -- object (or known aliases), else it is demoted to a proposal (below, and docs/extraction.md)
    if publish_claims.episode_id is not null
       and publish_claims.claims @? '$[*] ? (exists (@.chunk) && exists (@.evidence_start) && exists (@.evidence_end))' then
        unquoted := vera.unquoted_claims(publish_claims.group_id, episode.group_id, episode.episode_id,
                                         publish_claims.claims);
    end if;

    -- parse and grade: one typed pass over the claims
    select array_agg(row(
               (x.i - 1)::integer,
               -- where the claim lands: the contamination guard
               case when graded.state = 'proposal' then personal else publish_claims.group_id end,
               graded.state,
               btrim(x.subject), x.subject_type, sv.v,
               pr.normalized, coalesce(x.functional, false),
               btrim(x.object), coalesce(x.object_is_entity, false), x.object_type,
               -- read as numeric and rounded: a confidence below real's range (1e-50) is 0, not an underflow
               round(coalesce(x.confidence, 1), 10)::real, v.verification, x.valid_from, x.valid_to,
               null, x.evidence_start, x.evidence_end,
               vera.claim_fact_text(x.subject, pr.normalized, x.object, x.fact_text),
               fv.v, null, null, null, gen_random_uuid(), null)::vera.claim_work order by x.i)
      into work
      from rows from (jsonb_to_recordset(publish_claims.claims) as (
               subject text, subject_type text, predicate text, functional boolean, object text,
               object_is_entity boolean, object_type text, confidence numeric, verification text,
               valid_from timestamptz, valid_to timestamptz, evidence_start integer, evidence_end integer,
               fact_text text))
           with ordinality as x(subject, subject_type, predicate, functional, object, object_is_entity, object_type,
                                confidence, verification, valid_from, valid_to, evidence_start, evidence_end,
                                fact_text, i)
      -- a batch uses few predicates: normalise each once
      join (select distinct p.predicate as raw, vera.normalize_predicate(p.predicate) as normalized
              from jsonb_to_recordset(publish_claims.claims) as p(predicate text)) pr on pr.raw = x.predicate
      -- joined by position (a subscript per row would be quadratic)
      left join unnest(fact_parsed) with ordinality as fv(v, fi) on has_vectors and fv.fi = x.i
      left join unnest(subject_parsed) with ordinality as sv(v, si) on has_vectors and sv.si = x.i
     cross join lateral (select case when (x.i - 1)::integer = any (unquoted) then 'pending'
                                     else coalesce(x.verification, case when tier <= 2 then 'auto' else 'pending' end)
                                end::vera.verification as verification) v
     cross join lateral (select case
                             when scope.kind = 'personal' then 'published'
                             when tier = 3 then 'pending_review'
                             when tier = 4 or v.verification = 'pending' then 'proposal'
                             else 'published' end::vera.fact_lifecycle as state) graded;

    if exists (select from unnest(work) w where w.stated_valid_to < w.valid_from) then
        raise exception 'claim %: valid_to is before valid_from',
            (select min(w.claim) from unnest(work) w where w.stated_valid_to < w.valid_from) using errcode = '22023';
    end if;

    -- the evidence chunk must belong to the episode
    if publish_claims.claims @? '$[*].chunk' then
        if publish_claims.episode_id is null then
            raise exception 'claims cite chunks but no episode was given' using errcode = '22023';
        end if;
        select array_agg(case when cited.ordinal is null then w
                              else row(w.claim, w.target_group, w.lifecycle, w.subject, w.subject_type, w.subject_embedding,
                                       w.predicate, w.functional, w.object, w.object_is_entity, w.object_type,
                                       w.confidence, w.verification, w.valid_from, w.stated_valid_to,
                                       coalesce(ch.chunk_id, '00000000-0000-0000-0000-000000000000'),
                                       w.evidence_start, w.evidence_end, w.fact_text, w.embedding,
                                       null, null, null, w.fact_id, null)::vera.claim_work end order by w.claim)
          into work
          from unnest(work) w
          left join lateral (select (publish_claims.claims -> w.claim ->> 'chunk')::integer as ordinal) cited on true
          left join vera.chunks ch on ch.group_id = episode.group_id and ch.episode_id = episode.episode_id
                                  and ch.ordinal = cited.ordinal;
        select w.claim, publish_claims.claims -> w.claim ->> 'chunk' as chunk into first_problem
          from unnest(work) w where w.chunk_id = '00000000-0000-0000-0000-000000000000' order by w.claim limit 1;
        if found then
            raise exception 'claim %: chunk % is not a chunk of episode %', first_problem.claim, vera.shown(first_problem.chunk),
                publish_claims.episode_id using errcode = '22023';
        end if;
    end if;

    -- pin the embedding model on every group that receives vectors
    if coalesce(fact_dim, subject_dim) is not null then
        perform vera.pin_embedding(g, publish_claims.embedding_model, coalesce(fact_dim, subject_dim))
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

    -- a stated valid_to must not precede the valid_from it got (stated, carried, or the observation time)
    if exists (select from unnest(work) w where w.stated_valid_to < w.valid_from) then
        raise exception 'claim %: valid_to is before valid_from (when not stated: the episode''s observation time, else now)',
            (select min(w.claim) from unnest(work) w where w.stated_valid_to < w.valid_from) using errcode = '22023';
    end if;

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

    -- lock order: the histories this batch writes to, and those of the earlier versions'
    -- facts it retires, all at once before any fact row is touched (as retraction does)
    perform vera.lock_histories(array_agg(keys.g), array_agg(keys.s), array_agg(keys.p))
       from (select w.target_group as g, w.subject_entity_id as s, w.predicate as p from unnest(work) w
             union
             select f.group_id, f.subject_entity_id, f.predicate from vera.facts f
              where cardinality(earlier_versions) > 0
                and ((f.group_id = episode.group_id and f.episode_id = any (earlier_versions))
                     or (f.origin ->> 'episode_id')::uuid = any (earlier_versions))
                and f.lifecycle in ('published', 'superseded', 'pending_review', 'proposal')
                and f.retired_at is null) keys;

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
               'object_entity', case when w.object_is_entity then w.object end, 'object_type', w.object_type,
               -- demoted: its evidence span names neither its subject nor its object (or not both)
               'unquoted', case when w.claim = any (unquoted) then true end)) end
      from unnest(work) w
     order by w.fact_id, w.claim;

    -- a new version of a record supersedes what the earlier versions said
    with gone as (
        update vera.facts f set lifecycle = 'superseded', retired_at = now()
         where cardinality(earlier_versions) > 0
           and ((f.group_id = episode.group_id and f.episode_id = any (earlier_versions))
                or (f.origin ->> 'episode_id')::uuid = any (earlier_versions))
           and f.lifecycle in ('published', 'superseded', 'pending_review', 'proposal') and f.retired_at is null
        returning f.group_id, f.fact_id, f.subject_entity_id, f.predicate
    )
    select array_agg(gone.group_id) as g, array_agg(gone.fact_id) as ids, array_agg(gone.subject_entity_id) as s,
           array_agg(gone.predicate) as p
      into retired from gone;

    -- supersession of functional predicates, over the histories this batch touched
    with keys as (
        select w.target_group as g, w.subject_entity_id as s, w.predicate as p
          from unnest(work) w where w.lifecycle = 'published'
        union all
        select * from unnest(retired.g, retired.s, retired.p)
    ), rebuilt as (
        select t.group_id, t.fact_id, t.lifecycle
          from vera.rebuild_timelines((select array_agg(keys.g) from keys), (select array_agg(keys.s) from keys),
                                      (select array_agg(keys.p) from keys)) t
    )
    select coalesce(array_agg(rebuilt.group_id), '{}') as g, coalesce(array_agg(rebuilt.fact_id), '{}') as ids,
           coalesce(array_agg(rebuilt.lifecycle), '{}') as lifecycles
      into changed from rebuilt;

    -- the outbox: one job of each kind per group
    for job_group in
        select distinct x.g from (
            -- proposals too: the proposer's u: graph holds them (python/vera_client/domain/graph.py)
            select w.target_group as g from unnest(work) w where w.lifecycle in ('published', 'proposal')
            union all select unnest(changed.g) union all select unnest(retired.g)) x
    loop
        perform vera.enqueue_job('vera.project_to_graph', jsonb_build_object(
            'group_id', job_group,
            'fact_ids', (select jsonb_agg(distinct ids.id) from (
                             select w.fact_id as id from unnest(work) w
                              where w.target_group = job_group and w.lifecycle in ('published', 'proposal')
                             union all
                             select c.id from unnest(changed.g, changed.ids) as c(g, id) where c.g = job_group
                             union all
                             select r.id from unnest(retired.g, retired.ids) as r(g, id) where r.g = job_group) ids)));
    end loop;
    for job_group in select distinct w.target_group from unnest(work) w where w.embedding is null loop
        perform vera.enqueue_job('vera.embed', jsonb_build_object(
            'group_id', job_group,
            'fact_ids', (select jsonb_agg(distinct w.fact_id) from unnest(work) w
                          where w.target_group = job_group and w.embedding is null)));
    end loop;
    for judged in
        select w.target_group as g,
               jsonb_agg(distinct jsonb_build_object('entity_id', w.subject_entity_id, 'name', w.subject,
                                                     'candidates', w.candidates)) as entities
          from unnest(work) w
         where w.resolution = 'provisional'
         group by w.target_group
    loop
        perform vera.enqueue_job('vera.judge_equivalence',
                                 jsonb_build_object('group_id', judged.g, 'entities', judged.entities));
    end loop;
    for job_group in
        select distinct w.target_group from unnest(work) w where w.lifecycle = 'published'
    loop
        continue when not (vera.setting(job_group, 'judge.contradiction'))::boolean;
        select jsonb_agg(distinct w.fact_id) as fact_ids into judged
          from unnest(work) w
          join vera.predicates pr on pr.group_id = w.target_group and pr.name = w.predicate and pr.cardinality = 'multi'
         where w.target_group = job_group and w.lifecycle = 'published'
           and exists (select from vera.facts f
                        where f.group_id = w.target_group and f.subject_entity_id = w.subject_entity_id
                          and f.predicate = w.predicate and f.lifecycle = 'published' and f.object_value <> w.object);
        if judged.fact_ids is not null then
            perform vera.enqueue_job('vera.judge_contradiction',
                                     jsonb_build_object('group_id', job_group, 'fact_ids', judged.fact_ids));
        end if;
    end loop;

    -- a new fact's lifecycle is what supersession left it
    return query
    select w.claim, w.fact_id, w.target_group, coalesce(c.lifecycle, w.lifecycle), w.subject_entity_id, w.resolution
      from unnest(work) w
      left join unnest(changed.ids, changed.lifecycles) as c(id, lifecycle) on c.id = w.fact_id
     order by w.claim;
end
$$;
comment on function vera.publish_claims(text, uuid, jsonb, text) is
    'Publishes a batch of claims with grading, the contamination guard, resolution and supersession';
grant execute on function vera.publish_claims(text, uuid, jsonb, text) to vera_app, vera_worker, vera_gateway;

reset role;
