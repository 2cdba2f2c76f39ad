-- 0005_passage_guard: two rules of the design brought back (search version
-- vera-search/3, so snapshots taken with /2 fail closed).
--
-- The contamination guard covers passages as it covers claims: text of a
-- tier 1-2 source is published, of a tier-3 source waits for review, of a
-- tier-4 source is a proposal that only its proposer searches (and only its
-- proposer and the scope's admins read) until approved; admins decide with
-- vera.pending_passages / vera.review_passage. Existing passages are graded
-- by their source's tier below; an existing tier-4 passage has no known
-- proposer, so until approved only the scope's admins see it (in the review
-- queue).
--
-- The verification signal is human_verified 1.0, auto 0.8, pending 0.5 (was
-- 1.0 / 0.6 / 0.2), and equal scores are ordered by keys the data decides
-- (stage-1 ranks, kind, source/record/position or fact text, group), never
-- by random ids, so that the same data ranks the same in every database.
--
-- Apply with:  psql -v ON_ERROR_STOP=1 -1 -f 0005_passage_guard.sql
-- Frozen once released: changes go into a new numbered migration.
set role vera_owner;

alter table vera.chunks
    add column lifecycle vera.fact_lifecycle not null default 'published'
        constraint chunks_lifecycle_kind
        check (lifecycle in ('published', 'pending_review', 'proposal', 'rejected')),
    add column verification vera.verification not null default 'auto',
    add column proposed_by uuid,
    add column proposed boolean not null default false,
    add column reviewed_by uuid references vera.principals (principal_id),
    add column reviewed_at timestamptz,
    add constraint chunks_proposal_is_proposed check (lifecycle <> 'proposal' or proposed);
create index chunks_waiting_idx on vera.chunks (group_id) where lifecycle in ('pending_review', 'proposal');

-- the backfill reads every tenant's rows: as the migrating superuser, past row-level security
reset role;
update vera.chunks c
   set lifecycle = case when g.kind = 'personal' then 'published'
                        when s.trust_tier = 3 then 'pending_review'
                        else 'proposal' end::vera.fact_lifecycle,
       verification = 'pending',
       proposed = g.kind <> 'personal' and s.trust_tier = 4
  from vera.episodes e
  join vera.sources s on s.group_id = e.group_id and s.source_id = e.source_id
  join vera.groups g on g.group_id = e.group_id
 where e.group_id = c.group_id and e.episode_id = c.episode_id and s.trust_tier >= 3;
set role vera_owner;

-- stage-1 ranks and the order key travel with the blend's inputs and with snapshot copies
alter type vera.search_item
    add attribute lexical_rank integer,
    add attribute vector_rank integer,
    add attribute order_key bytea;
alter table vera.snapshot_items add column order_key bytea;

-- takes the stage-1 ranks now
drop function vera.candidate_signals(vera.item_kind[], uuid[], text[], double precision[]);

reset role;

-- idempotent copies below: removed when the runner re-applies sql/functions

-- sql/functions/110_sources.sql
-- Ingestion: sources, episodes (versions of a source record) and chunks.
set role vera_owner;

-- Contract: registers (or updates, by name) a source in a group the caller
-- administers: its trust tier decides how its claims are published, so only
-- admins set it. Returns the source id.
create or replace function vera.register_source(
    group_id text, kind text, name text, trust_tier integer,
    token_env text default null, config jsonb default '{}', uri text default null
)
returns uuid
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    registered uuid;
begin
    perform vera.require_role(register_source.group_id, 'admin');
    if register_source.trust_tier is null or register_source.trust_tier not between 1 and 4 then
        raise exception 'trust_tier must be 1 (authoritative), 2 (curated), 3 (informational) or 4 (unverified), not %',
            coalesce(register_source.trust_tier::text, 'null') using errcode = '22023';
    end if;
    if register_source.kind is null or register_source.kind !~ '^[a-z][a-z0-9_]{0,39}$' then
        raise exception 'source kind must be a lower-case identifier (markdown, jira, ...), not %',
            coalesce(register_source.kind, 'null') using errcode = '22023';
    end if;
    if coalesce(btrim(register_source.name), '') = '' or char_length(register_source.name) > 200 then
        raise exception 'source name must be 1 to 200 characters' using errcode = '22023';
    end if;
    if register_source.token_env is not null and register_source.token_env !~ '^[A-Z_][A-Z0-9_]{0,127}$' then
        raise exception 'token_env names an environment variable (A-Z, 0-9, _), it never holds the secret'
            using errcode = '22023';
    end if;
    if jsonb_typeof(coalesce(register_source.config, '{}')) <> 'object' then
        raise exception 'config must be a JSON object' using errcode = '22023';
    end if;
    insert into vera.sources as s (group_id, kind, name, trust_tier, token_env, config, uri, created_by)
    values (register_source.group_id, register_source.kind, btrim(register_source.name), register_source.trust_tier,
            register_source.token_env, coalesce(register_source.config, '{}'), register_source.uri,
            vera.current_principal())
    on conflict on constraint sources_name_unique do update
        set kind = excluded.kind, trust_tier = excluded.trust_tier, token_env = excluded.token_env,
            config = excluded.config, uri = excluded.uri, retracted_at = null
    returning s.source_id into registered;
    perform vera.audit(register_source.group_id, 'source.register', 'source', registered::text,
                       jsonb_build_object('name', btrim(register_source.name), 'kind', register_source.kind,
                                          'trust_tier', register_source.trust_tier));
    return registered;
end
$$;
comment on function vera.register_source(text, text, text, integer, text, jsonb, text) is
    'Registers or updates (by name) a source and its trust tier; admins only';

-- Internal: a source of the group that the caller can see, or VN001.
create or replace function vera.visible_source(target_group text, target_source uuid)
returns vera.sources
language plpgsql stable
set search_path = vera, pg_temp
as $$
declare
    found_source vera.sources;
begin
    select * into found_source from vera.sources s
     where s.group_id = target_group and s.source_id = target_source;
    if not found then
        raise exception 'unknown source % in group %', target_source, target_group using errcode = 'VN001';
    end if;
    return found_source;
end
$$;
comment on function vera.visible_source(text, uuid) is 'Internal: a visible source or VN001';

-- Contract: records one version of a source record. Unchanged content (same
-- SHA-256 as the latest version, unless that version was retracted) is a
-- no-op that returns the existing episode; changed content becomes the next
-- version. Members and above.
create or replace function vera.record_episode(
    group_id text, source_id uuid, external_id text, content_sha256 bytea,
    object_key text default null, mime text default null, observed_at timestamptz default now(),
    title text default null, uri text default null
)
returns table (episode_id uuid, version integer, created boolean)
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    src vera.sources;
    latest record;
begin
    perform vera.require_role(record_episode.group_id, 'member');
    src := vera.visible_source(record_episode.group_id, record_episode.source_id);
    if src.retracted_at is not null then
        raise exception 'source % was retracted at %; register it again to ingest from it', src.name, src.retracted_at
            using errcode = '22023';
    end if;
    if coalesce(record_episode.external_id, '') = '' or char_length(record_episode.external_id) > 2000 then
        raise exception 'external_id must be 1 to 2000 characters' using errcode = '22023';
    end if;
    if record_episode.content_sha256 is null or octet_length(record_episode.content_sha256) <> 32 then
        raise exception 'content_sha256 must be the 32-byte SHA-256 of the record''s content' using errcode = '22023';
    end if;
    -- one writer per record at a time, so two ingesters cannot both create version n+1
    perform pg_advisory_xact_lock(hashtextextended(
        record_episode.group_id || '/' || record_episode.source_id || '/' || record_episode.external_id, 0));
    select e.episode_id, e.version, e.content_sha256, e.status into latest from vera.episodes e
     where e.group_id = record_episode.group_id and e.source_id = record_episode.source_id
       and e.external_id = record_episode.external_id
     order by e.version desc limit 1;
    -- a retracted record that comes back (a deleted file restored) is a new version, even unchanged
    if found and latest.content_sha256 = record_episode.content_sha256 and latest.status <> 'retracted' then
        return query select latest.episode_id, latest.version, false;
        return;
    end if;
    return query
    insert into vera.episodes as e (group_id, source_id, external_id, version, content_sha256, object_key, mime,
                                    observed_at, title, uri)
    values (record_episode.group_id, record_episode.source_id, record_episode.external_id,
            coalesce(latest.version, 0) + 1, record_episode.content_sha256, record_episode.object_key,
            record_episode.mime, coalesce(record_episode.observed_at, now()), record_episode.title, record_episode.uri)
    returning e.episode_id, e.version, true;
end
$$;
comment on function vera.record_episode(text, uuid, text, bytea, text, text, timestamptz, text, text) is
    'Records a version of a source record; unchanged content returns the existing episode';

-- Internal: an episode of the group that the caller can see, or VN001.
create or replace function vera.visible_episode(target_group text, target_episode uuid)
returns vera.episodes
language plpgsql stable
set search_path = vera, pg_temp
as $$
declare
    found_episode vera.episodes;
begin
    select * into found_episode from vera.episodes e
     where e.group_id = target_group and e.episode_id = target_episode;
    if not found then
        raise exception 'unknown episode % in group %', target_episode, target_group using errcode = 'VN001';
    end if;
    if found_episode.status = 'retracted' then
        raise exception 'episode % was retracted', target_episode using errcode = '22023';
    end if;
    return found_episode;
end
$$;
comment on function vera.visible_episode(text, uuid) is 'Internal: a visible, live episode or VN001';

-- Contract: stores an episode's chunks, in order: a JSON array of
-- {"text", "heading"?, "char_start"?, "char_end"?, "embedding"?: [numbers]}.
-- Ordinals are array positions from 0; storing again updates in place (the
-- same text and heading keep their grading and review; new text is graded
-- afresh). Vectors need embedding_model and must match the group's pin.
-- Grading, the contamination guard as for claims: text of a tier 1-2 source
-- is published (verification auto); of a tier-3 source it waits for review
-- (pending_review); of a tier-4 source it is a proposal of the caller,
-- which only the caller searches until an admin approves it
-- (vera.pending_passages, vera.review_passage). In a u: scope everything
-- is published; tier 3-4 text is verification pending wherever it lands.
-- Limits: 20,000 characters of text per chunk, 10,000 chunks per call.
create or replace function vera.store_chunks(
    group_id text, episode_id uuid, chunks jsonb, embedding_model text default null
)
returns table (ordinal integer, chunk_id uuid)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    vectors record;
    problem text;
    episode vera.episodes;
    tier integer;
    graded vera.fact_lifecycle;
begin
    perform vera.require_role(store_chunks.group_id, 'member');
    episode := vera.visible_episode(store_chunks.group_id, store_chunks.episode_id);
    select s.trust_tier into tier from vera.sources s
     where s.group_id = episode.group_id and s.source_id = episode.source_id;
    graded := case
        when (select g.kind from vera.groups g where g.group_id = store_chunks.group_id) = 'personal' then 'published'
        when tier <= 2 then 'published'
        when tier = 3 then 'pending_review'
        else 'proposal' end;
    if jsonb_typeof(store_chunks.chunks) is distinct from 'array' then
        raise exception 'chunks must be a JSON array of objects' using errcode = '22023';
    end if;
    if jsonb_array_length(store_chunks.chunks) > 10000 then
        raise exception 'at most 10000 chunks per call, got %', jsonb_array_length(store_chunks.chunks)
            using errcode = '54000';
    end if;
    select format('chunk %s: %s', i - 1, reason)
      into problem
      from jsonb_array_elements(store_chunks.chunks) with ordinality as a(c, i)
     cross join lateral (select case
               when jsonb_typeof(c) <> 'object' then 'not a JSON object'
               when coalesce(btrim(c ->> 'text'), '') = '' then 'text is empty'
               when char_length(c ->> 'text') > 20000 then 'text is over 20000 characters'
               when coalesce(jsonb_typeof(c -> 'char_start'), 'number') not in ('number', 'null')
                    or coalesce(jsonb_typeof(c -> 'char_end'), 'number') not in ('number', 'null')
                    or (c ->> 'char_start') !~ '^[0-9]{1,9}$' or (c ->> 'char_end') !~ '^[0-9]{1,9}$'
                   then 'char_start and char_end must be whole numbers'
           end as reason) checks
     where reason is not null
     order by i limit 1;
    if problem is not null then
        raise exception '%', problem
            using errcode = case when problem like '%over 20000%' then '22001' else '22023' end;
    end if;
    select * into vectors from vera.parse_vectors(
        (select jsonb_agg(coalesce(c -> 'embedding', 'null') order by i)
           from jsonb_array_elements(store_chunks.chunks) with ordinality as a(c, i)), 'chunk');
    if vectors.dim is not null then
        perform vera.pin_embedding(store_chunks.group_id, store_chunks.embedding_model, vectors.dim);
    end if;
    return query
    insert into vera.chunks as ch (group_id, episode_id, ordinal, heading, text, char_start, char_end, embedding,
                                   lifecycle, verification, proposed_by, proposed)
    select store_chunks.group_id, store_chunks.episode_id, (a.i - 1)::integer, a.c ->> 'heading', a.c ->> 'text',
           (a.c ->> 'char_start')::integer, (a.c ->> 'char_end')::integer, v.vector,
           graded, case when tier <= 2 then 'auto' else 'pending' end::vera.verification,
           vera.current_principal(), graded = 'proposal'
      from jsonb_array_elements(store_chunks.chunks) with ordinality as a(c, i)
      -- joined by position: subscripting the array once per row would be quadratic
      left join unnest(vectors.parsed) with ordinality as v(vector, i) on v.i = a.i
    on conflict on constraint chunks_ordinal_unique do update
        set heading = excluded.heading, text = excluded.text, char_start = excluded.char_start,
            char_end = excluded.char_end, embedding = excluded.embedding,
            -- what a reviewer decided holds for the text they read, not for another
            (lifecycle, verification, proposed_by, proposed, reviewed_by, reviewed_at) = (
                select case when unchanged then ch.lifecycle else excluded.lifecycle end,
                       case when unchanged then ch.verification else excluded.verification end,
                       case when unchanged then ch.proposed_by else excluded.proposed_by end,
                       case when unchanged then ch.proposed else excluded.proposed end,
                       case when unchanged then ch.reviewed_by end,
                       case when unchanged then ch.reviewed_at end
                  from (select ch.text = excluded.text
                               and ch.heading is not distinct from excluded.heading as unchanged) same)
    returning ch.ordinal, ch.chunk_id;
end
$$;
comment on function vera.store_chunks(text, uuid, jsonb, text) is
    'Stores an episode''s ordered chunks (text, heading, span, optional embedding)';

reset role;

-- sql/functions/140_review.sql
-- Review: admins of a scope approve or reject claims waiting for it
-- (tier-3 claims pending review in the scope, and proposals made for it from
-- someone's u: scope), and passages waiting for it (tier-3 text pending
-- review and tier-4 text proposed, both beside their episode in the scope).
-- Every decision is audited; claims' decisions reach the outbox.
set role vera_owner;

-- Contract: what waits for review in a group the caller administers.
create or replace function vera.pending_reviews(group_id text)
returns table (fact_id uuid, fact_group_id text, lifecycle vera.fact_lifecycle, subject text, predicate text,
               object text, fact_text text, tier smallint, verification vera.verification, confidence real,
               proposed_by uuid, recorded_at timestamptz, origin jsonb)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(pending_reviews.group_id, 'admin');
    return query
    select f.fact_id, f.group_id, f.lifecycle, coalesce(f.origin ->> 'subject', e.canonical_name), f.predicate,
           f.object_value, f.fact_text, f.tier, f.verification, f.confidence, f.proposed_by, f.recorded_at, f.origin
      from vera.facts f
      -- a proposal's entities live in its proposer's u: scope; its origin names them
      left join vera.entities e on e.group_id = f.group_id and e.entity_id = f.subject_entity_id
     where (f.group_id = pending_reviews.group_id and f.lifecycle = 'pending_review')
        or (f.proposed_for = pending_reviews.group_id and f.lifecycle = 'proposal')
     order by f.recorded_at, f.fact_id;
end
$$;
comment on function vera.pending_reviews(text) is 'Claims pending review in, or proposed for, a group the caller administers';

-- Contract: decides on one claim waiting for group_id: 'approve' publishes it
-- there as human_verified (a proposal is copied from its u: scope into the
-- shared scope and marked accepted); 'reject' marks it rejected. Admins only.
-- Returns the published fact (on approval) or the rejected one.
create or replace function vera.review_claim(group_id text, fact_id uuid, decision text, note text default null)
returns table (result_fact_id uuid, result_group_id text, result_lifecycle vera.fact_lifecycle)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    claim vera.facts;
    subject_name text;
    object_name text;
    resolved_subject uuid;
    resolved_object uuid;
    published uuid;
    same_scope boolean;
begin
    perform vera.require_role(review_claim.group_id, 'admin');
    if review_claim.decision is null or review_claim.decision not in ('approve', 'reject') then
        raise exception 'decision must be approve or reject, not %', coalesce(review_claim.decision, 'null')
            using errcode = '22023';
    end if;
    select * into claim from vera.facts f
     where f.fact_id = review_claim.fact_id
       and ((f.group_id = review_claim.group_id and f.lifecycle = 'pending_review')
            or (f.proposed_for = review_claim.group_id and f.lifecycle = 'proposal'))
     for update;
    if not found then
        raise exception 'no claim % is waiting for review in %', review_claim.fact_id, review_claim.group_id
            using errcode = 'VN001';
    end if;

    if review_claim.decision = 'reject' then
        update vera.facts f set lifecycle = 'rejected', retired_at = now(), reviewed_by = vera.current_principal(),
                                reviewed_at = now()
         where f.group_id = claim.group_id and f.fact_id = claim.fact_id;
        perform vera.audit(review_claim.group_id, 'claim.reject', 'fact', claim.fact_id::text,
                           jsonb_build_object('note', review_claim.note, 'fact_group_id', claim.group_id));
        return query select claim.fact_id, claim.group_id, 'rejected'::vera.fact_lifecycle;
        return;
    end if;

    same_scope := claim.group_id = review_claim.group_id;
    if same_scope then
        update vera.facts f set lifecycle = 'published', verification = 'human_verified',
                                reviewed_by = vera.current_principal(), reviewed_at = now()
         where f.group_id = claim.group_id and f.fact_id = claim.fact_id;
        published := claim.fact_id;
        resolved_subject := claim.subject_entity_id;
    else
        -- a proposal: resolve its entities in the shared scope and publish a copy there
        subject_name := claim.origin ->> 'subject';
        object_name := claim.origin ->> 'object_entity';
        select r.entity_id into resolved_subject
          from vera.resolve_entities(array[review_claim.group_id], array[subject_name], array[null::public.vector],
                                     array[claim.origin ->> 'subject_type']) r;
        if object_name is not null then
            select r.entity_id into resolved_object
              from vera.resolve_entities(array[review_claim.group_id], array[object_name],
                                         array[null::public.vector], array[claim.origin ->> 'object_type']) r;
        end if;
        insert into vera.predicates (group_id, name) values (review_claim.group_id, claim.predicate)
        on conflict do nothing;
        published := gen_random_uuid();
        insert into vera.facts (group_id, fact_id, subject_entity_id, predicate, object_entity_id, object_value,
                                fact_text, embedding, tier, authority, verification, confidence, lifecycle,
                                valid_from, valid_to, stated_valid_to, source_id, episode_id, chunk_id,
                                evidence_start, evidence_end, proposed_by, reviewed_by, reviewed_at)
        select review_claim.group_id, published, resolved_subject, claim.predicate, resolved_object,
               claim.object_value, claim.fact_text, claim.embedding, claim.tier, claim.authority, 'human_verified',
               claim.confidence, 'published', claim.valid_from, claim.stated_valid_to, claim.stated_valid_to,
               ep.source_id, ep.episode_id, ch.chunk_id, claim.evidence_start, claim.evidence_end,
               claim.proposed_by, vera.current_principal(), now()
          from (select 1) one
          left join vera.episodes ep on ep.group_id = review_claim.group_id
                                    and ep.episode_id = (claim.origin ->> 'episode_id')::uuid
          left join vera.chunks ch on ch.group_id = review_claim.group_id
                                  and ch.chunk_id = (claim.origin ->> 'chunk_id')::uuid;
        update vera.facts f set lifecycle = 'accepted', retired_at = now(), reviewed_by = vera.current_principal(),
                                reviewed_at = now()
         where f.group_id = claim.group_id and f.fact_id = claim.fact_id;
    end if;

    perform vera.rebuild_timelines(array[review_claim.group_id], array[resolved_subject], array[claim.predicate]);
    perform vera.enqueue_job('vera.project_to_graph', jsonb_build_object(
        'group_id', review_claim.group_id,
        'fact_ids', (select jsonb_agg(f.fact_id) from vera.facts f
                      where f.group_id = review_claim.group_id and f.subject_entity_id = resolved_subject
                        and f.predicate = claim.predicate and f.lifecycle in ('published', 'superseded'))));
    perform vera.audit(review_claim.group_id, 'claim.approve', 'fact', published::text,
                       jsonb_build_object('note', review_claim.note, 'reviewed_fact_id', claim.fact_id,
                                          'reviewed_group_id', claim.group_id));
    return query select f.fact_id, f.group_id, f.lifecycle from vera.facts f
                  where f.group_id = review_claim.group_id and f.fact_id = published;
end
$$;
comment on function vera.review_claim(text, uuid, text, text) is
    'Approves (publishes, human_verified) or rejects a claim waiting for review in a group; admins only';

-- Internal: the passage chunk_id of group_id if it waits for review there:
-- tier-3 text pending review or tier-4 text proposed, of an episode that was
-- not retracted and is the latest version of its record (a passage of a
-- replaced version no longer answers now, so there is nothing to decide).
create or replace function vera.passage_waiting(target_group text, target_chunk uuid)
returns boolean
language sql stable
set search_path = vera, pg_temp
as $$
    select exists (
        select from vera.chunks c
          join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
         where c.group_id = target_group and c.chunk_id = target_chunk
           and c.lifecycle in ('pending_review', 'proposal') and e.status <> 'retracted'
           and not exists (select from vera.episodes newer
                            where newer.group_id = e.group_id and newer.source_id = e.source_id
                              and newer.external_id = e.external_id and newer.version > e.version
                              and newer.status <> 'retracted'))
$$;
comment on function vera.passage_waiting(text, uuid) is 'Internal: whether a passage waits for review in its group';

-- Contract: the passages waiting for review in a group the caller
-- administers (tier-3 text pending review, tier-4 text proposed), of live
-- episodes at their latest version, by source, record and position.
create or replace function vera.pending_passages(group_id text)
returns table (chunk_id uuid, lifecycle vera.fact_lifecycle, heading text, text text, ordinal integer,
               tier smallint, verification vera.verification, source_id uuid, source_name text,
               episode_id uuid, external_id text, version integer, title text, proposed_by uuid,
               stored_at timestamptz)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(pending_passages.group_id, 'admin');
    return query
    select c.chunk_id, c.lifecycle, c.heading, c.text, c.ordinal, s.trust_tier, c.verification, s.source_id,
           s.name, e.episode_id, e.external_id, e.version, e.title, c.proposed_by, c.created_at
      from vera.chunks c
      join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
      join vera.sources s on s.group_id = e.group_id and s.source_id = e.source_id
     where c.group_id = pending_passages.group_id and c.lifecycle in ('pending_review', 'proposal')
       and vera.passage_waiting(c.group_id, c.chunk_id)
     order by s.name, e.external_id, e.version, c.ordinal;
end
$$;
comment on function vera.pending_passages(text) is 'Passages pending review in, or proposed for, a group the caller administers';

-- Contract: decides on one passage waiting for review in group_id:
-- 'approve' publishes it there as human_verified (a proposal then answers
-- every reader of the scope, as an approved claim does); 'reject' marks it
-- rejected, which no search returns and only its proposer and the scope's
-- admins read. Admins only; audited (the note, never the text). VN001 when
-- the passage does not wait for review there.
create or replace function vera.review_passage(group_id text, chunk_id uuid, decision text, note text default null)
returns table (result_chunk_id uuid, result_group_id text, result_lifecycle vera.fact_lifecycle)
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    passage vera.chunks;
begin
    perform vera.require_role(review_passage.group_id, 'admin');
    if review_passage.decision is null or review_passage.decision not in ('approve', 'reject') then
        raise exception 'decision must be approve or reject, not %', coalesce(review_passage.decision, 'null')
            using errcode = '22023';
    end if;
    select * into passage from vera.chunks c
     where c.group_id = review_passage.group_id and c.chunk_id = review_passage.chunk_id
       and vera.passage_waiting(c.group_id, c.chunk_id)
     for update;
    if not found then
        raise exception 'no passage % is waiting for review in %', review_passage.chunk_id, review_passage.group_id
            using errcode = 'VN001';
    end if;
    update vera.chunks c
       set lifecycle = case when review_passage.decision = 'approve' then 'published'
                            else 'rejected' end::vera.fact_lifecycle,
           verification = case when review_passage.decision = 'approve' then 'human_verified'
                               else c.verification end::vera.verification,
           reviewed_by = vera.current_principal(), reviewed_at = now()
     where c.group_id = passage.group_id and c.chunk_id = passage.chunk_id;
    perform vera.audit(review_passage.group_id, 'passage.' || review_passage.decision, 'passage',
                       passage.chunk_id::text,
                       jsonb_build_object('note', review_passage.note, 'episode_id', passage.episode_id,
                                          'ordinal', passage.ordinal, 'was', passage.lifecycle));
    return query select c.chunk_id, c.group_id, c.lifecycle from vera.chunks c
                  where c.group_id = passage.group_id and c.chunk_id = passage.chunk_id;
end
$$;
comment on function vera.review_passage(text, uuid, text, text) is
    'Approves (publishes, human_verified) or rejects a passage waiting for review in a group; admins only';

reset role;

-- sql/functions/170_ranking.sql
-- Ranking building blocks: the search version snapshots pin, the six signals
-- of the blend, the weight sets, and the lexical query.
set role vera_owner;

-- Contract: the version of the ranking code. A snapshot records it and refuses
-- to answer once it differs; bump it whenever stage 1 or stage 2 changes what
-- a search returns.
create or replace function vera.search_version()
returns text
language sql immutable
set search_path = vera, pg_temp
as $$ select 'vera-search/3' $$;
comment on function vera.search_version() is 'Version of the ranking code; snapshots pin it';

-- Contract: the blend's default weights and recency half-life.
create or replace function vera.default_weights()
returns jsonb
language sql immutable
set search_path = vera, pg_temp
as $$
    select '{"relevance": 0.40, "authority": 0.18, "verification": 0.12, "recency": 0.12,
             "feedback": 0.08, "confidence": 0.10, "half_life": "30 days"}'::jsonb
$$;
comment on function vera.default_weights() is 'Default weights of the six signals and the recency half-life';

-- Internal: checks weights a caller passes in and completes them: the six
-- signals, each a non-negative number (absent ones count 0), scaled to sum 1;
-- half_life an interval of at least one second (default 30 days).
create or replace function vera.checked_weights(weights jsonb)
returns jsonb
language plpgsql immutable
set search_path = vera, pg_temp
as $$
declare
    signal_names constant text[] := array['relevance', 'authority', 'verification', 'recency', 'feedback', 'confidence'];
    unknown text;
    total float8 := 0;
    half_life interval;
    result jsonb := '{}';
    signal text;
begin
    if jsonb_typeof(weights) is distinct from 'object' then
        raise exception 'weights must be a JSON object of the six signals (%)', array_to_string(signal_names, ', ')
            using errcode = '22023';
    end if;
    select k into unknown from jsonb_object_keys(weights) k where not k = any (signal_names || 'half_life'::text) limit 1;
    if unknown is not null then
        raise exception 'unknown weight "%": the signals are %, plus half_life', unknown, array_to_string(signal_names, ', ')
            using errcode = '22023';
    end if;
    foreach signal in array signal_names loop
        if weights ? signal and (jsonb_typeof(weights -> signal) <> 'number' or (weights ->> signal)::float8 < 0) then
            raise exception 'weight % must be a non-negative number, got %', signal, weights -> signal using errcode = '22023';
        end if;
        total := total + coalesce((weights ->> signal)::float8, 0);
    end loop;
    if total <= 0 then
        raise exception 'at least one weight must be positive' using errcode = '22023';
    end if;
    foreach signal in array signal_names loop
        result := result || jsonb_build_object(signal, coalesce((weights ->> signal)::float8, 0) / total);
    end loop;
    begin
        half_life := coalesce(weights ->> 'half_life', '30 days')::interval;
    exception when others then
        raise exception 'half_life must be an interval such as "30 days", got %', weights -> 'half_life'
            using errcode = '22023';
    end;
    if half_life < interval '1 second' then
        raise exception 'half_life must be at least one second, got %', half_life using errcode = '22023';
    end if;
    return result || jsonb_build_object('half_life', half_life::text);
end
$$;
comment on function vera.checked_weights(jsonb) is
    'Internal: validates weights (six non-negative numbers, optional half_life) and scales them to sum 1';

-- Contract: the weights a group's searches use now: its active weight set,
-- else the defaults. Search reads it on every call, so a calibration takes
-- effect at once.
create or replace function vera.active_weights(group_id text)
returns jsonb
language sql stable
set search_path = vera, pg_temp
as $$
    select coalesce(
        (select jsonb_build_object(
                    'relevance', w.relevance, 'authority', w.authority, 'verification', w.verification,
                    'recency', w.recency, 'feedback', w.feedback, 'confidence', w.confidence,
                    'half_life', w.half_life::text, 'weight_set_id', w.weight_set_id)
           from vera.ranking_weights w
          where w.group_id = active_weights.group_id and w.active),
        vera.default_weights())
$$;
comment on function vera.active_weights(text) is 'The active weight set of a group (RLS applies), else the defaults';

-- Signals, each in [0, 1]. Inlined into the blend (plain SQL, immutable).

-- human-verified 1.0, verified automatically 0.8, awaiting verification 0.5.
-- A passage is graded when it is stored (vera.store_chunks): text of a tier
-- 1-2 source counts as verified automatically, of a tier 3-4 source as
-- awaiting verification, and a reviewer's approval makes it human-verified.
create or replace function vera.verification_signal(verification vera.verification)
returns real
language sql immutable
as $$
    select case verification when 'human_verified' then 1.0 when 'pending' then 0.5 else 0.8 end::real
$$;
comment on function vera.verification_signal(vera.verification) is
    'Verification signal: human_verified 1.0, auto (and passages of tier 1-2 sources) 0.8, pending 0.5';

-- exp(-ln 2 * age / half_life), age from since (the blend passes the later
-- of the start of validity and the last confirmation by the source) to the
-- reference instant; 0 once the validity has ended at that instant
create or replace function vera.recency_signal(valid_from timestamptz, valid_to timestamptz,
                                                reference timestamptz, half_life interval)
returns real
language sql immutable
as $$
    select case
        when valid_to is not null and valid_to <= reference then 0
        -- past 100 half-lives the value is below 1e-30 (and exp would underflow)
        when extract(epoch from reference - valid_from) > 100 * extract(epoch from half_life) then 0
        else exp(-ln(2) * greatest(extract(epoch from reference - valid_from), 0)
                 / extract(epoch from half_life))
    end::real
$$;
comment on function vera.recency_signal(timestamptz, timestamptz, timestamptz, interval) is
    'Recency signal: exponential decay with the half-life; 0 when invalidated at the reference instant';

-- (up + 1) / (up + down + 2): 0.5 without votes
create or replace function vera.feedback_signal(up_votes integer, down_votes integer)
returns real
language sql immutable
as $$ select ((coalesce(up_votes, 0) + 1)::float8 / (coalesce(up_votes, 0) + coalesce(down_votes, 0) + 2))::real $$;
comment on function vera.feedback_signal(integer, integer) is 'Feedback signal: (up + 1) / (up + down + 2)';

-- The order of equal scores. Every place that orders candidates (each half
-- of stage 1 where scores tie, the blend, snapshot search) breaks ties by
-- keys that the data decides, never by a random id, so that the same data
-- gives the same order in any database. A key is bytes compared bytewise
-- (no collation can change it): its parts in UTF-8, each ended by a zero
-- byte, which UTF-8 text never contains, so comparing two keys compares
-- their parts in turn. Numbers are zero-padded, instants written in UTC.

-- a fact: its text, then its predicate, object and the start of its validity
create or replace function vera.fact_order_key(fact_text text, predicate text, object_value text,
                                               valid_from timestamptz)
returns bytea
language sql stable parallel safe
as $$
    select pg_catalog.convert_to(fact_text, 'UTF8') || '\x00'::bytea
           || pg_catalog.convert_to(predicate, 'UTF8') || '\x00'::bytea
           || pg_catalog.convert_to(object_value, 'UTF8') || '\x00'::bytea
           || pg_catalog.convert_to(pg_catalog.to_char(valid_from at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'),
                                    'UTF8') || '\x00'::bytea
$$;
comment on function vera.fact_order_key(text, text, text, timestamptz) is
    'Order key of a fact among equal scores: text, predicate, object, valid_from (bytes)';

-- a passage: the name of its source, its record (external id), the version
-- and its position in it
create or replace function vera.passage_order_key(source_name text, external_id text, version integer,
                                                  ordinal integer)
returns bytea
language sql stable parallel safe
as $$
    select pg_catalog.convert_to(source_name, 'UTF8') || '\x00'::bytea
           || pg_catalog.convert_to(external_id, 'UTF8') || '\x00'::bytea
           || pg_catalog.convert_to(pg_catalog.lpad(version::text, 10, '0'), 'UTF8') || '\x00'::bytea
           || pg_catalog.convert_to(pg_catalog.lpad(ordinal::text, 10, '0'), 'UTF8') || '\x00'::bytea
$$;
comment on function vera.passage_order_key(text, text, integer, integer) is
    'Order key of a passage among equal scores: source name, record, version, ordinal (bytes)';

-- a group, after the item's own key: items identical but for their group
-- (the same text in a workspace and its project) follow the groups' kinds
-- and names
create or replace function vera.group_order_key(kind vera.group_kind, name text)
returns bytea
language sql stable parallel safe
as $$
    select pg_catalog.convert_to(kind::text, 'UTF8') || '\x00'::bytea
           || pg_catalog.convert_to(name, 'UTF8') || '\x00'::bytea
$$;
comment on function vera.group_order_key(vera.group_kind, text) is
    'Order key of a group among equal items: kind, name (bytes)';

-- Words that carry no meaning on their own in English and Vietnamese. The
-- index keeps them ('simple' configuration); only the query drops them, since
-- with OR semantics a "the" would match most of the corpus. Question words
-- (where, who, đâu, ai) stay: they are what a question is about.
create or replace function vera.search_stopwords()
returns text[]
language sql immutable
as $$
    select array[
        'a', 'an', 'and', 'are', 'as', 'at', 'be', 'been', 'but', 'by', 'can', 'did', 'do', 'does', 'for',
        'from', 'had', 'has', 'have', 'i', 'if', 'in', 'into', 'is', 'it', 'its', 'of', 'on', 'or', 's',
        'so', 'such', 't', 'than', 'that', 'the', 'their', 'then', 'there', 'these', 'they', 'this',
        'those', 'to', 'was', 'were', 'will', 'with', 'would', 'you', 'your', 'we', 'our', 'me', 'my',
        'về', 'của', 'là', 'và', 'các', 'những', 'được', 'cho', 'với', 'này', 'đó', 'thì', 'mà', 'một',
        'đã', 'đang', 'sẽ', 'bị', 'bởi', 'tại', 'từ', 'theo', 'như', 'nhưng', 'hay', 'hoặc', 'rằng'
    ]
$$;
comment on function vera.search_stopwords() is 'Function words the lexical query leaves out (English, Vietnamese)';

-- Contract: the lexical half's query: the words of the text, lower-cased with
-- diacritics kept ('simple'), stopwords left out, any of them (OR). Null
-- when nothing searchable remains (only punctuation or stopwords).
create or replace function vera.lexical_query(query text)
returns tsquery
language sql immutable
set search_path = vera, pg_temp
as $$
    select nullif(string_agg(quote_literal(t.lexeme), ' | ' order by t.lexeme), '')::tsquery
      from unnest(to_tsvector('simple'::regconfig, coalesce(query, ''))) t
     where not t.lexeme = any (vera.search_stopwords())
$$;
comment on function vera.lexical_query(text) is
    'The lexical half''s tsquery: the query''s words (simple configuration) minus stopwords, OR-ed; null if none';

-- Internal: whether a fact is an answer at an instant (valid time, current
-- knowledge): a published or superseded revision whose validity covers it
-- and that no newer version of its source took back; a proposal only in
-- its proposer's own personal scope. Pending, rejected, retracted and
-- accepted (copied elsewhere) rows never are. Plain SQL so that it inlines.
create or replace function vera.fact_visible(lifecycle vera.fact_lifecycle, group_id text, retired_at timestamptz,
                                             valid_from timestamptz, valid_to timestamptz,
                                             reference timestamptz, personal_group text)
returns boolean
language sql immutable
as $$
    select retired_at is null
       and valid_from <= reference and (valid_to is null or valid_to > reference)
       and (lifecycle in ('published', 'superseded')
            or (lifecycle = 'proposal' and group_id = personal_group))
$$;
comment on function vera.fact_visible(vera.fact_lifecycle, text, timestamptz, timestamptz, timestamptz,
                                      timestamptz, text) is
    'Internal: whether a fact answers at an instant (published/superseded revision valid then; own proposals)';

reset role;

-- sql/functions/180_search.sql
-- The read path: vera.search, one call. Stage 1 finds candidates with a
-- lexical half (GIN full text) and a vector half (HNSW, cosine) and fuses
-- their ranks (RRF); stage 2 blends six signals into the score. Snapshot
-- search (200_snapshots.sql) reuses stage 2 as it is.
set role vera_owner;

-- pgvector defines its settings (hnsw.*) when its library loads; load it now
-- so that the SET clauses below are checked as those settings rather than as
-- unknown placeholders, which only a superuser may set.
do $load$ begin perform '[1]'::public.vector; end $load$;

-- Internal: stage 1 over the live tables. Returns each candidate with its
-- rank in the lexical and in the vector list (null when absent from one).
--
-- It belongs to vera_searcher, which bypasses row-level security, and makes
-- the group check RLS would make (the caller's readable groups) itself: the
-- full-text @@ operator and pgvector's distance operators are not leakproof,
-- so under RLS the planner may not use the GIN index for @@ at all, and
-- would check every matching row against the policy before the index's own
-- quals. vera.search then reads the candidates' details under RLS again.
-- For the same reason it applies the contamination guard to passages
-- itself: a proposed passage answers only its proposer.
--
-- HNSW returns the nearest rows first and filters afterwards: with a tenant
-- filter a scan of one index shared by all tenants runs dry before n rows
-- pass, and pgvector's iterative scan, which keeps going, costs 5-15 ms
-- (docs/benchmarks.md). So each group is searched on its own: through its
-- own HNSW index when it is large, exactly when it is small; the iterative
-- scan (relaxed order, re-sorted here) only covers the rows that the
-- valid-time filter drops.
--
-- Where scores tie at the cut of a list, the order keys decide which
-- candidates make it (kind, then vera.fact_order_key or
-- vera.passage_order_key, then the group's kind and name), so the same data
-- gives the same candidates in any database. (A group searched through its
-- HNSW index returns its n nearest rows in the index's order: of two rows at
-- exactly the same distance, the index picks; searched exactly, the key does.)
create or replace function vera.search_candidates(
    lexical_groups text[], lexical tsquery,
    vector_groups text[], query_embedding public.vector,
    reference timestamptz, personal_group text, n integer, ef_search integer)
returns table (kind vera.item_kind, group_id text, item_id uuid, lexical_rank integer, vector_rank integer)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
set hnsw.iterative_scan = relaxed_order
set hnsw.ef_search = 40
as $$
declare
    readable constant text[] := vera.readable_groups();
    caller constant uuid := vera.current_principal();
    -- a passage answers at the reference instant when its episode is the
    -- latest version of its record observed by then and was not taken back,
    -- and it is published (or proposed by the caller: the contamination guard)
    passage_visible constant text := $p$
        (c.lifecycle = 'published' or (c.lifecycle = 'proposal' and c.proposed_by = $6))
        and e.status <> 'retracted' and e.observed_at <= $3
        and not exists (select from vera.episodes newer
                         where newer.group_id = e.group_id and newer.source_id = e.source_id
                           and newer.external_id = e.external_id and newer.version > e.version
                           and newer.observed_at <= $3 and newer.status <> 'retracted')$p$;
    fact_visible constant text := $f$
        vera.fact_visible(f.lifecycle, f.group_id, f.retired_at, f.valid_from, f.valid_to, $3, $4)$f$;
    fact_key constant text := 'vera.fact_order_key(f.fact_text, f.predicate, f.object_value, f.valid_from)';
    passage_key constant text := 'vera.passage_order_key(s.name, e.external_id, e.version, c.ordinal)';
    -- the searched groups in order of their kind and name ($7)
    group_order text[];
    lexical_kinds vera.item_kind[];
    lexical_ids uuid[];
    lexical_owners text[];
    lexical_scores float8[];
    vector_kinds vera.item_kind[];
    vector_ids uuid[];
    vector_owners text[];
    vector_distances float8[];
    per_group text;
    dim integer := public.vector_dims(query_embedding);
begin
    lexical_groups := array(select g from unnest(lexical_groups) g where g = any (readable));
    vector_groups := array(select g from unnest(vector_groups) g where g = any (readable));
    group_order := array(select g.group_id from vera.groups g
                          where g.group_id = any (lexical_groups || vector_groups)
                          order by vera.group_order_key(g.kind, g.name), g.group_id);
    perform set_config('hnsw.ef_search', greatest(ef_search, 1)::text, true);

    if lexical is not null and cardinality(lexical_groups) > 0 then
        execute format($q$
            select array_agg(h.kind), array_agg(h.item_id), array_agg(h.group_id), array_agg(h.score)
              from (select * from (
                      (select 'fact'::vera.item_kind as kind, f.group_id, f.fact_id as item_id,
                              ts_rank(f.tsv, $1) as score, %3$s as order_key
                         from vera.facts f
                        where f.tsv @@ $1 and f.group_id = any ($2) and %1$s
                        order by 4 desc, 5, array_position($7, f.group_id), 3 limit $5)
                      union all
                      (select 'passage'::vera.item_kind, c.group_id, c.chunk_id, ts_rank(c.tsv, $1), %4$s
                         from vera.chunks c
                         join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
                         join vera.sources s on s.group_id = e.group_id and s.source_id = e.source_id
                        where c.tsv @@ $1 and c.group_id = any ($2) and %2$s
                        order by 4 desc, 5, array_position($7, c.group_id), 3 limit $5)) both_kinds
                     order by score desc, kind, order_key, array_position($7, group_id), item_id
                     limit $5) h$q$, fact_visible, passage_visible, fact_key, passage_key)
          into lexical_kinds, lexical_ids, lexical_owners, lexical_scores
          using lexical, lexical_groups, reference, personal_group, n, caller, group_order;
    end if;

    if query_embedding is not null and cardinality(vector_groups) > 0 then
        -- One nearest-neighbour query per group and table, all in one
        -- statement. A group with an HNSW index of its own (a large one, see
        -- vera.missing_vector_indexes) is searched through it: the group
        -- filter is the index's predicate, so the scan returns the group's
        -- neighbours and nothing is filtered away but the few rows outside
        -- valid time (the iterative scan covers those). A small group is
        -- searched exactly: "+ 0" keeps the shared HNSW index out (its
        -- nearest rows would mostly belong to other tenants), the primary
        -- key finds the group's rows and they are sorted by distance, then
        -- by order key.
        select string_agg(format($q$
                   (select 'fact'::vera.item_kind as kind, f.group_id, f.fact_id as item_id,
                           f.embedding::public.vector(%1$s) operator(public.<=>) $1 as distance,
                           %7$s as order_key
                      from vera.facts f
                     where f.group_id = %2$L and public.vector_dims(f.embedding) = %1$s and %3$s
                     order by (f.embedding::public.vector(%1$s) operator(public.<=>) $1) %4$s limit $5)
                   union all
                   (select 'passage'::vera.item_kind, c.group_id, c.chunk_id,
                           c.embedding::public.vector(%1$s) operator(public.<=>) $1, %8$s
                      from vera.chunks c
                      join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
                      join vera.sources s on s.group_id = e.group_id and s.source_id = e.source_id
                     where c.group_id = %2$L and public.vector_dims(c.embedding) = %1$s and %5$s
                     order by (c.embedding::public.vector(%1$s) operator(public.<=>) $1) %6$s limit $5)$q$,
                   dim, g, fact_visible,
                   case when vera.group_vector_index_ready('facts', g, dim) then '' else '+ 0, 5' end,
                   passage_visible,
                   case when vera.group_vector_index_ready('chunks', g, dim) then '' else '+ 0, 5' end,
                   fact_key, passage_key),
               ' union all ')
          into per_group
          from unnest(vector_groups) g;
        execute format($q$
            select array_agg(h.kind), array_agg(h.item_id), array_agg(h.group_id), array_agg(h.distance)
              from (select * from (%s) every_group
                     -- the iterative scan returns rows in relaxed order: sort them exactly
                     order by distance, kind, order_key, array_position($7, group_id), item_id
                     limit $5) h$q$, per_group)
          into vector_kinds, vector_ids, vector_owners, vector_distances
          using query_embedding, vector_groups, reference, personal_group, n, caller, group_order;
    end if;

    -- Ranks from 1; equal scores share a rank (1, 1, 3): two facts that match
    -- the same words equally are equally relevant, and the blend's other
    -- signals (authority, verification, ...) decide between them, then the
    -- order of equal scores (vera.blend).
    return query
        with lexical_list as (
            select u.kind, u.group_id, u.item_id, (rank() over (order by u.score desc))::integer as position
              from unnest(lexical_kinds, lexical_owners, lexical_ids, lexical_scores) as u(kind, group_id, item_id, score)),
        vector_list as (
            select u.kind, u.group_id, u.item_id, (rank() over (order by u.distance))::integer as position
              from unnest(vector_kinds, vector_owners, vector_ids, vector_distances) as u(kind, group_id, item_id, distance))
        select coalesce(l.kind, v.kind), coalesce(l.group_id, v.group_id), coalesce(l.item_id, v.item_id),
               l.position, v.position
          from lexical_list l
          full join vector_list v on v.kind = l.kind and v.item_id = l.item_id;
end
$$;
comment on function vera.search_candidates(text[], tsquery, text[], public.vector, timestamptz, text, integer, integer) is
    'Internal: stage 1, lexical and vector candidates with their ranks (reads past RLS, checks the groups itself)';
alter function vera.search_candidates(text[], tsquery, text[], public.vector, timestamptz, text, integer, integer)
    owner to vera_searcher;

-- Internal: stage 2, the blend. Relevance is the fused stage-1 score
-- min-max normalised over the batch (1 when the batch has one score); the
-- other five signals come from each item (a fact's recency counts from the
-- later of its valid_from and its last confirmation, as of the reference);
-- weights per group (key "*" for all).
--
-- Equal scores are ordered by what the data decides, the same in any
-- database: the fused score; the better of the item's two stage-1 ranks
-- (an item first in one half before one third in both); its other rank (an
-- item in both halves before one in a single half); facts before passages;
-- the item's order key (a fact's text, predicate, object and valid_from; a
-- passage's source name, record, version and ordinal; then the group's kind
-- and name). Only copies identical in all of these (the same text stated
-- twice in one group) fall to their group and item ids.
create or replace function vera.blend(items vera.search_item[], weights_by_group jsonb,
                                      reference timestamptz, k integer)
returns table (
    rank integer, kind vera.item_kind, item_id uuid, group_id text, text text,
    subject text, predicate text, object text, score real,
    relevance real, authority real, verification real, recency real, feedback real, confidence real,
    citation jsonb)
language sql stable
set search_path = vera, pg_temp
as $$
    with batch as (
        select i.*, min(i.fused) over () as lowest, max(i.fused) over () as highest,
               coalesce(weights_by_group -> i.group_id, weights_by_group -> '*') as weights
          from unnest(items) i
    ), signals as (
        select b.*,
               (case when b.highest > b.lowest then (b.fused - b.lowest) / (b.highest - b.lowest) else 1 end)::real
                   as relevance_signal,
               vera.verification_signal(b.verification) as verification_score,
               vera.recency_signal(
                   case when b.confirmed_at is null then b.valid_from
                        else greatest(b.valid_from, least(b.confirmed_at, reference)) end,
                   b.valid_to, reference, (b.weights ->> 'half_life')::interval) as recency_signal,
               vera.feedback_signal(b.up_votes, b.down_votes) as feedback_score,
               -- least and greatest skip nulls: an item in one half has no other rank
               least(b.lexical_rank, b.vector_rank) as better_rank,
               case when b.lexical_rank is not null and b.vector_rank is not null
                    then greatest(b.lexical_rank, b.vector_rank) end as other_rank
          from batch b
    ), scored as (
        select s.*,
               (s.relevance_signal * (s.weights ->> 'relevance')::float8
                + s.authority * (s.weights ->> 'authority')::float8
                + s.verification_score * (s.weights ->> 'verification')::float8
                + s.recency_signal * (s.weights ->> 'recency')::float8
                + s.feedback_score * (s.weights ->> 'feedback')::float8
                + s.confidence * (s.weights ->> 'confidence')::float8)::real as total
          from signals s
    )
    select (row_number() over (order by s.total desc, s.fused desc, s.better_rank nulls last,
                                        s.other_rank nulls last, s.kind, s.order_key, s.group_id,
                                        s.item_id))::integer,
           s.kind, s.item_id, s.group_id, s.text, s.subject, s.predicate, s.object, s.total,
           s.relevance_signal, s.authority, s.verification_score, s.recency_signal, s.feedback_score, s.confidence,
           s.citation
      from scored s
     order by 1
     limit k
$$;
comment on function vera.blend(vera.search_item[], jsonb, timestamptz, integer) is
    'Internal: stage 2, the six-signal blend over a batch of candidates, equal scores in a documented order';

-- Internal: when the next version of a record was observed (null while this
-- one is the latest): the end of its passages' validity.
create or replace function vera.next_version_observed(group_id text, source_id uuid, external_id text, version integer)
returns timestamptz
language sql stable
set search_path = vera, pg_temp
as $$
    select min(newer.observed_at) from vera.episodes newer
     where newer.group_id = next_version_observed.group_id and newer.source_id = next_version_observed.source_id
       and newer.external_id = next_version_observed.external_id and newer.version > next_version_observed.version
       and newer.status <> 'retracted'
$$;
comment on function vera.next_version_observed(text, uuid, text, integer) is
    'Internal: when the next (not retracted) version of a record was observed';

-- Internal: what the blend reads of each live stage-1 candidate (grading,
-- validity, last confirmation, votes, its ranks and order key). Text and
-- citation are left out: only the k hits that survive the blend need them
-- (vera.hit_details). Runs under RLS.
create or replace function vera.candidate_signals(
    kinds vera.item_kind[], ids uuid[], owners text[], fused double precision[],
    lexical_ranks integer[], vector_ranks integer[])
returns setof vera.search_item
language sql stable
set search_path = vera, pg_temp
as $$
    with candidate as (
        select * from unnest(kinds, ids, owners, fused, lexical_ranks, vector_ranks)
                      as u(kind, item_id, group_id, fused, lexical_rank, vector_rank)
    ), votes as (
        select fb.item_kind, fb.item_id, count(*) filter (where fb.vote > 0)::integer as up_votes,
               count(*) filter (where fb.vote < 0)::integer as down_votes
          from vera.feedback fb
          join candidate c on fb.group_id = c.group_id and fb.item_kind = c.kind and fb.item_id = c.item_id
         group by 1, 2
    )
    select row('fact'::vera.item_kind, f.fact_id, f.group_id, c.fused, null, null, null, null, f.authority,
               f.verification, f.confidence, f.valid_from, f.valid_to, coalesce(v.up_votes, 0),
               coalesce(v.down_votes, 0), null, stated.observed_at, c.lexical_rank, c.vector_rank,
               vera.fact_order_key(f.fact_text, f.predicate, f.object_value, f.valid_from)
               || vera.group_order_key(g.kind, g.name))::vera.search_item
      from candidate c
      join vera.facts f on f.group_id = c.group_id and f.fact_id = c.item_id
      join vera.groups g on g.group_id = f.group_id
      left join vera.episodes stated on stated.group_id = f.group_id and stated.episode_id = f.episode_id
      left join votes v on v.item_kind = 'fact' and v.item_id = f.fact_id
     where c.kind = 'fact'
    union all
    select row('passage'::vera.item_kind, ch.chunk_id, ch.group_id, c.fused, null, null, null, null,
               vera.tier_authority(src.trust_tier), ch.verification, 1.0, ep.observed_at, next_version.observed_at,
               coalesce(v.up_votes, 0), coalesce(v.down_votes, 0), null, null, c.lexical_rank, c.vector_rank,
               vera.passage_order_key(src.name, ep.external_id, ep.version, ch.ordinal)
               || vera.group_order_key(g.kind, g.name))::vera.search_item
      from candidate c
      join vera.chunks ch on ch.group_id = c.group_id and ch.chunk_id = c.item_id
      join vera.episodes ep on ep.group_id = ch.group_id and ep.episode_id = ch.episode_id
      join vera.sources src on src.group_id = ep.group_id and src.source_id = ep.source_id
      join vera.groups g on g.group_id = ch.group_id
      left join votes v on v.item_kind = 'passage' and v.item_id = ch.chunk_id
      left join lateral vera.next_version_observed(ep.group_id, ep.source_id, ep.external_id, ep.version)
           next_version(observed_at) on true
     where c.kind = 'passage'
$$;
comment on function vera.candidate_signals(vera.item_kind[], uuid[], text[], double precision[], integer[],
                                           integer[]) is
    'Internal: blend inputs (grading, validity, votes, ranks, order key) of live candidates';

-- Internal: what a hit shows: its text, the triple of a fact (names of
-- subject and object), and its citation (source, episode, chunk or
-- evidence span, validity, tier, verification, recorded time). A proposal's
-- provenance lives in origin, since its own row sits in a u: scope. Runs
-- under RLS.
create or replace function vera.hit_details(kinds vera.item_kind[], ids uuid[], owners text[])
returns table (kind vera.item_kind, item_id uuid, text text, subject text, predicate text, object text,
               citation jsonb)
language sql stable
set search_path = vera, pg_temp
as $$
    with hit as (
        select * from unnest(kinds, ids, owners) as u(kind, item_id, group_id)
    ), fact as (
        select f.*, coalesce(f.origin ->> 'group_id', f.group_id) as provenance_group,
               coalesce(f.source_id, (f.origin ->> 'source_id')::uuid) as provenance_source,
               coalesce(f.episode_id, (f.origin ->> 'episode_id')::uuid) as provenance_episode,
               coalesce(f.chunk_id, (f.origin ->> 'chunk_id')::uuid) as provenance_chunk
          from hit h
          join vera.facts f on f.group_id = h.group_id and f.fact_id = h.item_id
         where h.kind = 'fact'
    )
    select 'fact'::vera.item_kind, f.fact_id, f.fact_text, subj.canonical_name, f.predicate,
           coalesce(obj.canonical_name, f.object_value),
           jsonb_build_object(
               'group_id', f.group_id,
               'source', case when src.source_id is not null then jsonb_build_object(
                   'source_id', src.source_id, 'name', src.name, 'kind', src.kind, 'uri', src.uri) end,
               'episode', case when ep.episode_id is not null then jsonb_build_object(
                   'episode_id', ep.episode_id, 'external_id', ep.external_id, 'version', ep.version,
                   'title', ep.title, 'uri', ep.uri) end,
               'chunk', case when ch.chunk_id is not null then jsonb_build_object(
                   'chunk_id', ch.chunk_id, 'ordinal', ch.ordinal, 'heading', ch.heading) end,
               'evidence', case when f.evidence_start is not null or f.evidence_end is not null then
                   jsonb_build_object('start', f.evidence_start, 'end', f.evidence_end,
                                      'text', substr(ch.text, f.evidence_start + 1,
                                                     f.evidence_end - f.evidence_start)) end,
               'valid_from', f.valid_from, 'valid_to', f.valid_to, 'tier', f.tier,
               'verification', f.verification, 'lifecycle', f.lifecycle, 'recorded_at', f.recorded_at,
               'proposed_for', f.proposed_for)
      from fact f
      join vera.entities subj on subj.group_id = f.group_id and subj.entity_id = f.subject_entity_id
      left join vera.entities obj on obj.group_id = f.group_id and obj.entity_id = f.object_entity_id
      left join vera.sources src on src.group_id = f.provenance_group and src.source_id = f.provenance_source
      left join vera.episodes ep on ep.group_id = f.provenance_group and ep.episode_id = f.provenance_episode
      left join vera.chunks ch on ch.group_id = f.provenance_group and ch.chunk_id = f.provenance_chunk
    union all
    select 'passage'::vera.item_kind, ch.chunk_id, ch.text, null, null, null,
           jsonb_build_object(
               'group_id', ch.group_id,
               'source', jsonb_build_object('source_id', src.source_id, 'name', src.name, 'kind', src.kind,
                                            'uri', src.uri),
               'episode', jsonb_build_object('episode_id', ep.episode_id, 'external_id', ep.external_id,
                                             'version', ep.version, 'title', ep.title, 'uri', ep.uri),
               'chunk', jsonb_build_object('chunk_id', ch.chunk_id, 'ordinal', ch.ordinal, 'heading', ch.heading),
               'evidence', case when ch.char_start is not null then
                   jsonb_build_object('start', ch.char_start, 'end', ch.char_end) end,
               'valid_from', ep.observed_at,
               'valid_to', vera.next_version_observed(ep.group_id, ep.source_id, ep.external_id, ep.version),
               'tier', src.trust_tier, 'verification', ch.verification, 'lifecycle', ch.lifecycle,
               'recorded_at', ch.created_at,
               'proposed_for', case when ch.lifecycle = 'proposal' then ch.group_id end)
      from hit h
      join vera.chunks ch on ch.group_id = h.group_id and ch.chunk_id = h.item_id
      join vera.episodes ep on ep.group_id = ch.group_id and ep.episode_id = ch.episode_id
      join vera.sources src on src.group_id = ep.group_id and src.source_id = ep.source_id
     where h.kind = 'passage'
$$;
comment on function vera.hit_details(vera.item_kind[], uuid[], text[]) is
    'Internal: text, triple and citation of hits';

-- Contract: hybrid search over the caller's readable groups (or the subset
-- named in groups), one call. Stage 1: the lexical half (the query's words,
-- OR-ed, stopwords left out) and the vector half (the query embedding
-- against the groups pinned to its dimension and, when given, model) each
-- return their top `candidates` (default 4 * k) facts and passages valid at
-- as_of (default now); reciprocal rank fusion adds lexical_weight / (k_rrf +
-- rank) and vector_weight / (k_rrf + rank), ranks from 1. Stage 2 blends
-- six signals with each group's active weights (or the weights given).
-- Returns at most k hits, best first; an empty result when nothing matches,
-- including a query of only stopwords or punctuation. Errors: 22023 (bad
-- arguments), 42501 (a group the caller cannot read), VE001 (an embedding no
-- searched group is pinned to), VA005 (not authenticated).
create or replace function vera.search(
    query text default null,
    query_embedding public.vector default null,
    k integer default 10,
    as_of timestamptz default null,
    groups text[] default null,
    weights jsonb default null,
    k_rrf integer default 1,
    candidates integer default null,
    embedding_model text default null,
    lexical_weight double precision default 1,
    vector_weight double precision default 1,
    ef_search integer default null)
returns table (
    rank integer, kind vera.item_kind, item_id uuid, group_id text, text text,
    subject text, predicate text, object text, score real,
    relevance real, authority real, verification real, recency real, feedback real, confidence real,
    citation jsonb)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
    reference constant timestamptz := coalesce(as_of, now());
    lexical tsquery;
    targets text[];
    vector_targets text[];
    n integer;
    weight_map jsonb;
    stage_one record;
    items vera.search_item[];
begin
    targets := vera.search_targets(groups);
    n := vera.check_search_arguments(query, query_embedding, k, as_of, k_rrf, candidates,
                                     lexical_weight, vector_weight, ef_search);
    lexical := vera.lexical_query(query);
    vector_targets := vera.vector_targets(targets, query_embedding, embedding_model);
    if weights is not null then
        weight_map := jsonb_build_object('*', vera.checked_weights(weights));
    end if;
    if lexical is null and cardinality(vector_targets) = 0 then
        return;
    end if;

    select array_agg(c.kind) as kinds, array_agg(c.item_id) as ids, array_agg(c.group_id) as owners,
           array_agg(coalesce(lexical_weight / (k_rrf + c.lexical_rank)::float8, 0)
                     + coalesce(vector_weight / (k_rrf + c.vector_rank)::float8, 0)) as fused,
           array_agg(c.lexical_rank) as lexical_ranks, array_agg(c.vector_rank) as vector_ranks
      into stage_one
      from vera.search_candidates(targets, lexical, vector_targets, query_embedding, reference,
                                  (select p.personal_group_id from vera.principals p where p.principal_id = caller),
                                  n, coalesce(ef_search, least(greatest(100, n), 1000))) c;
    if stage_one.kinds is null then
        return;
    end if;
    items := array(select i from vera.candidate_signals(stage_one.kinds, stage_one.ids, stage_one.owners,
                                                         stage_one.fused, stage_one.lexical_ranks,
                                                         stage_one.vector_ranks) i);
    if weight_map is null then
        select jsonb_object_agg(g, vera.active_weights(g)) into weight_map
          from (select distinct i.group_id as g from unnest(items) i) owners;
    end if;
    -- the blend ranks every candidate; only the k hits get their text and citation
    return query
        with ranked as (select * from vera.blend(items, weight_map, reference, k)),
             details as (select * from vera.hit_details((select array_agg(r.kind) from ranked r),
                                                        (select array_agg(r.item_id) from ranked r),
                                                        (select array_agg(r.group_id) from ranked r)))
        select r.rank, r.kind, r.item_id, r.group_id, d.text, d.subject, d.predicate, d.object, r.score,
               r.relevance, r.authority, r.verification, r.recency, r.feedback, r.confidence, d.citation
          from ranked r
          join details d on d.kind = r.kind and d.item_id = r.item_id
         order by r.rank;
end
$$;
comment on function vera.search(text, public.vector, integer, timestamptz, text[], jsonb, integer, integer, text,
                                 double precision, double precision, integer) is
    'Hybrid search (lexical + vector, RRF, six-signal blend) over the caller''s readable groups, as of an instant';

-- Internal: the groups a search covers: all the caller reads, or the ones
-- named, each of which it must be able to read (42501).
create or replace function vera.search_targets(groups text[])
returns text[]
language plpgsql stable
set search_path = vera, pg_temp
as $$
declare
    readable constant text[] := vera.readable_groups();
    unreadable text;
begin
    if groups is null then
        return readable;
    end if;
    if cardinality(groups) = 0 then
        raise exception 'groups must name at least one group (or be null for every readable group)'
            using errcode = '22023';
    end if;
    select g into unreadable from unnest(groups) g where g is null or not g = any (readable) limit 1;
    if found then
        raise exception 'permission denied: cannot read group %', coalesce(unreadable, '(null)') using errcode = '42501';
    end if;
    return array(select distinct g from unnest(groups) g);
end
$$;
comment on function vera.search_targets(text[]) is 'Internal: the groups a search covers (42501 for unreadable ones)';

-- Internal: refuses bad search arguments with 22023; returns the number of
-- candidates each half retrieves.
create or replace function vera.check_search_arguments(
    query text, query_embedding public.vector, k integer, as_of timestamptz, k_rrf integer, candidates integer,
    lexical_weight double precision, vector_weight double precision, ef_search integer)
returns integer
language plpgsql immutable
set search_path = vera, public, pg_temp
as $$
begin
    if coalesce(btrim(query), '') = '' and query_embedding is null then
        raise exception 'search needs a query text or a query embedding' using errcode = '22023';
    end if;
    if char_length(query) > 4000 then
        raise exception 'query is % characters; at most 4000', char_length(query) using errcode = '22001';
    end if;
    if k is null or k < 1 or k > 1000 then
        raise exception 'k must be between 1 and 1000, got %', coalesce(k::text, 'null') using errcode = '22023';
    end if;
    if as_of is not null and not isfinite(as_of) then
        raise exception 'as_of must be a finite timestamp, got %', as_of using errcode = '22023';
    end if;
    if k_rrf is null or k_rrf < 0 or k_rrf > 10000 then
        raise exception 'k_rrf must be between 0 and 10000, got %', coalesce(k_rrf::text, 'null') using errcode = '22023';
    end if;
    if candidates is not null and (candidates < 1 or candidates > 10000) then
        raise exception 'candidates must be between 1 and 10000, got %', candidates using errcode = '22023';
    end if;
    -- "between" also refuses NaN, which PostgreSQL sorts above every number
    if not coalesce(lexical_weight between 0 and 1000000 and vector_weight between 0 and 1000000, false)
       or lexical_weight + vector_weight = 0 then
        raise exception 'lexical_weight and vector_weight must be finite, between 0 and 1000000, and not both 0'
            using errcode = '22023';
    end if;
    if ef_search is not null and (ef_search < 1 or ef_search > 1000) then
        raise exception 'ef_search must be between 1 and 1000, got %', ef_search using errcode = '22023';
    end if;
    return coalesce(candidates, 4 * k);
end
$$;
comment on function vera.check_search_arguments(text, public.vector, integer, timestamptz, integer, integer,
                                                 double precision, double precision, integer) is
    'Internal: checks search arguments (22023, 22001); returns the candidates per half';

-- Internal: the searched groups whose pinned embedding matches the query
-- embedding (dimension, and model when named). None when no embedding is
-- given or no searched group holds vectors; VE001 when some do, but none
-- in this dimension and model.
create or replace function vera.vector_targets(targets text[], query_embedding public.vector, embedding_model text)
returns text[]
language plpgsql stable
set search_path = vera, public, pg_temp
as $$
declare
    dim constant integer := public.vector_dims(query_embedding);
    matching text[];
    pins text;
begin
    if query_embedding is null then
        return '{}';
    end if;
    select array_agg(g.group_id) filter (where g.embedding_dim = dim
                                           and (vector_targets.embedding_model is null
                                                or g.embedding_model = vector_targets.embedding_model)),
           string_agg(distinct format('%s (%s dimensions)', g.embedding_model, g.embedding_dim), ', ')
      into matching, pins
      from vera.groups g
     where g.group_id = any (targets) and g.embedding_dim is not null;
    if pins is not null and matching is null then
        raise exception 'query embedding is % (% dimensions), but the groups searched are pinned to %',
            coalesce(vector_targets.embedding_model, 'of no named model'), dim, pins using errcode = 'VE001';
    end if;
    return coalesce(matching, '{}');
end
$$;
comment on function vera.vector_targets(text[], public.vector, text) is
    'Internal: searched groups pinned to the query embedding''s dimension (and model); VE001 when none is';

reset role;

-- sql/functions/200_snapshots.sql
-- Snapshots: a group's retrieval inputs frozen at one instant, searchable
-- later with the same answers, and refused once their pins no longer hold.
set role vera_owner;

-- Contract: copies everything a search of the group could return now
-- (facts and passages, with their text, full-text vector, embedding,
-- grading, validity, votes, citation and order key) and pins the embedding model and
-- dimension, the search version and the weights. Must run in a REPEATABLE
-- READ (or SERIALIZABLE) transaction, so that the pins and every copied row
-- come from one view of the data (25000 otherwise). The snapshot is sealed
-- as the last step; readers refuse one that is not. Members of the group.
create or replace function vera.create_snapshot(group_id text, name text)
returns table (snapshot_id uuid, item_count integer, created_at timestamptz)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
    reference constant timestamptz := now();
    personal text;
    pinned record;
    weights jsonb;
    snapshot uuid;
    copied integer;
begin
    perform vera.require_role(create_snapshot.group_id, 'member');
    if current_setting('transaction_isolation') not in ('repeatable read', 'serializable') then
        raise exception 'create_snapshot needs a REPEATABLE READ transaction (begin isolation level repeatable read)'
            using errcode = '25000';
    end if;
    if coalesce(btrim(name), '') = '' or char_length(btrim(name)) > 200 then
        raise exception 'snapshot name must be 1 to 200 characters' using errcode = '22023';
    end if;
    if exists (select from vera.snapshots s where s.group_id = create_snapshot.group_id and s.name = btrim(create_snapshot.name)) then
        raise exception 'group % already has a snapshot named %', create_snapshot.group_id, btrim(name)
            using errcode = '23505';
    end if;
    select p.personal_group_id into personal from vera.principals p where p.principal_id = caller;
    select g.embedding_model, g.embedding_dim into pinned from vera.groups g where g.group_id = create_snapshot.group_id;
    weights := vera.active_weights(create_snapshot.group_id);

    insert into vera.snapshots as s (group_id, name, embedding_model, embedding_dim, search_version, weight_set_id,
                                     weights, created_at, created_by)
    values (create_snapshot.group_id, btrim(name), pinned.embedding_model, pinned.embedding_dim, vera.search_version(),
            (weights ->> 'weight_set_id')::uuid, weights - 'weight_set_id', reference, caller)
    returning s.snapshot_id into snapshot;

    -- the same visibility rules and the same blend inputs as a live search
    with visible as (
        select 'fact'::vera.item_kind as kind, f.fact_id as item_id
          from vera.facts f
         where f.group_id = create_snapshot.group_id
           and vera.fact_visible(f.lifecycle, f.group_id, f.retired_at, f.valid_from, f.valid_to, reference, personal)
        union all
        -- published passages only: a proposed one answers its proposer alone, never the group
        select 'passage', c.chunk_id
          from vera.chunks c
          join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
         where c.group_id = create_snapshot.group_id and c.lifecycle = 'published'
           and e.status <> 'retracted' and e.observed_at <= reference
           and not exists (select from vera.episodes newer
                            where newer.group_id = e.group_id and newer.source_id = e.source_id
                              and newer.external_id = e.external_id and newer.version > e.version
                              and newer.observed_at <= reference and newer.status <> 'retracted')
    ), signals as (
        select i.*
          from vera.candidate_signals(
                   (select array_agg(v.kind) from visible v), (select array_agg(v.item_id) from visible v),
                   (select array_agg(create_snapshot.group_id) from visible v),
                   (select array_agg(0::float8) from visible v), (select array_agg(null::integer) from visible v),
                   (select array_agg(null::integer) from visible v)) i
    ), details as (
        select d.*
          from vera.hit_details((select array_agg(v.kind) from visible v), (select array_agg(v.item_id) from visible v),
                                (select array_agg(create_snapshot.group_id) from visible v)) d
    ), inputs as (
        select s.kind, s.item_id, s.group_id, d.text, d.subject, d.predicate, d.object, s.authority,
               s.verification, s.confidence, s.valid_from, s.valid_to, s.up_votes, s.down_votes, d.citation,
               s.confirmed_at, s.order_key
          from signals s join details d on d.kind = s.kind and d.item_id = s.item_id
    )
    insert into vera.snapshot_items (group_id, snapshot_id, item_kind, item_id, text, tsv, embedding, subject, predicate,
                                     object, tier, authority, verification, confidence, valid_from, valid_to,
                                     recorded_at, source_id, episode_id, chunk_id, up_votes, down_votes, citation,
                                     confirmed_at, order_key)
    select create_snapshot.group_id, snapshot, i.kind, i.item_id, i.text, coalesce(f.tsv, c.tsv),
           coalesce(f.embedding, c.embedding), i.subject, i.predicate, i.object, (i.citation ->> 'tier')::smallint,
           i.authority, i.verification, i.confidence, i.valid_from, i.valid_to,
           coalesce(f.recorded_at, c.created_at),
           (i.citation -> 'source' ->> 'source_id')::uuid, (i.citation -> 'episode' ->> 'episode_id')::uuid,
           (i.citation -> 'chunk' ->> 'chunk_id')::uuid, i.up_votes, i.down_votes, i.citation, i.confirmed_at,
           i.order_key
      from inputs i
      left join vera.facts f on i.kind = 'fact' and f.group_id = i.group_id and f.fact_id = i.item_id
      left join vera.chunks c on i.kind = 'passage' and c.group_id = i.group_id and c.chunk_id = i.item_id;
    get diagnostics copied = row_count;

    update vera.snapshots s set sealed_at = clock_timestamp()
     where s.group_id = create_snapshot.group_id and s.snapshot_id = snapshot;
    perform vera.audit(create_snapshot.group_id, 'snapshot.create', 'snapshot', snapshot::text,
                       jsonb_build_object('name', btrim(name), 'items', copied));
    snapshot_id := snapshot;
    item_count := copied;
    created_at := reference;
    return next;
end
$$;
comment on function vera.create_snapshot(text, text) is
    'Freezes a group''s retrieval inputs with their pins (model, dimension, search version, weights)';

-- Contract: a group's snapshots, newest first.
create or replace function vera.list_snapshots(group_id text)
returns table (snapshot_id uuid, name text, created_at timestamptz, sealed boolean, item_count integer,
               embedding_model text, embedding_dim integer, search_version text, weights jsonb)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(list_snapshots.group_id, 'viewer');
    return query
        select s.snapshot_id, s.name, s.created_at, s.sealed_at is not null,
               (select count(*)::integer from vera.snapshot_items i
                 where i.group_id = s.group_id and i.snapshot_id = s.snapshot_id),
               s.embedding_model, s.embedding_dim, s.search_version, s.weights
          from vera.snapshots s
         where s.group_id = list_snapshots.group_id
         order by s.created_at desc, s.name;
end
$$;
comment on function vera.list_snapshots(text) is 'A group''s snapshots with their pins, newest first';

-- Contract: deletes a snapshot and its copies (members of the group).
create or replace function vera.drop_snapshot(group_id text, name text)
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    dropped uuid;
begin
    perform vera.require_role(drop_snapshot.group_id, 'member');
    delete from vera.snapshots s where s.group_id = drop_snapshot.group_id and s.name = btrim(drop_snapshot.name)
    returning s.snapshot_id into dropped;
    if dropped is null then
        raise exception 'group % has no snapshot named %', drop_snapshot.group_id, name using errcode = 'VN001';
    end if;
    perform vera.audit(drop_snapshot.group_id, 'snapshot.drop', 'snapshot', dropped::text,
                       jsonb_build_object('name', btrim(name)));
end
$$;
comment on function vera.drop_snapshot(text, text) is 'Deletes a snapshot and its copied items';

-- Internal: stage 1 over a snapshot's copies: the lexical half through the
-- copies' GIN index, the vector half by exact cosine distance (snapshots
-- are read rarely and carry no HNSW index). Like vera.search_candidates it
-- belongs to vera_searcher and checks the group itself, and cuts through
-- equal scores by kind and the copied order key, as live search does.
create or replace function vera.snapshot_candidates(
    group_id text, snapshot_id uuid, lexical tsquery, query_embedding public.vector, n integer)
returns table (kind vera.item_kind, item_id uuid, lexical_rank integer, vector_rank integer)
language plpgsql stable security definer
set search_path = vera, public, pg_temp
as $$
begin
    if not snapshot_candidates.group_id = any (vera.readable_groups()) then
        raise exception 'permission denied: cannot read group %', snapshot_candidates.group_id using errcode = '42501';
    end if;
    return query
        with lexical_list as (
            select i.item_kind, i.item_id,
                   (rank() over (order by ts_rank(i.tsv, lexical) desc))::integer as position
              from vera.snapshot_items i
             where lexical is not null and i.tsv @@ lexical
               and i.group_id = snapshot_candidates.group_id and i.snapshot_id = snapshot_candidates.snapshot_id
             order by ts_rank(i.tsv, lexical) desc, i.item_kind, i.order_key, i.item_id
             limit n),
        vector_list as (
            select i.item_kind, i.item_id,
                   (rank() over (order by i.embedding <=> query_embedding))::integer as position
              from vera.snapshot_items i
             where query_embedding is not null and public.vector_dims(i.embedding) = public.vector_dims(query_embedding)
               and i.group_id = snapshot_candidates.group_id and i.snapshot_id = snapshot_candidates.snapshot_id
             order by i.embedding <=> query_embedding, i.item_kind, i.order_key, i.item_id
             limit n)
        select coalesce(l.item_kind, v.item_kind), coalesce(l.item_id, v.item_id), l.position, v.position
          from lexical_list l
          full join vector_list v on v.item_kind = l.item_kind and v.item_id = l.item_id;
end
$$;
comment on function vera.snapshot_candidates(text, uuid, tsquery, public.vector, integer) is
    'Internal: stage 1 over a snapshot''s copies (reads past RLS, checks the group itself)';
alter function vera.snapshot_candidates(text, uuid, tsquery, public.vector, integer) owner to vera_searcher;

-- Contract: searches a snapshot: the same stages as vera.search, over the
-- copies, with the snapshot's weights and its creation instant as "now", so
-- it answers what search answered when the snapshot was taken. Fails
-- closed: VS002 for a snapshot that was never sealed, VS001 when the
-- search version or the group's embedding pin has changed since.
create or replace function vera.search_snapshot(
    snapshot_group text,
    snapshot text,
    query text default null,
    query_embedding public.vector default null,
    k integer default 10,
    k_rrf integer default 1,
    candidates integer default null,
    embedding_model text default null,
    lexical_weight double precision default 1,
    vector_weight double precision default 1)
returns table (
    rank integer, kind vera.item_kind, item_id uuid, group_id text, text text,
    subject text, predicate text, object text, score real,
    relevance real, authority real, verification real, recency real, feedback real, confidence real,
    citation jsonb)
language plpgsql stable security definer
set search_path = vera, public, pg_temp
as $$
declare
    frozen vera.snapshots;
    current_pin record;
    n integer;
    lexical tsquery;
    items vera.search_item[];
begin
    perform vera.require_role(search_snapshot.snapshot_group, 'viewer');
    n := vera.check_search_arguments(query, query_embedding, k, null, k_rrf, candidates,
                                     lexical_weight, vector_weight, null);
    select * into frozen from vera.snapshots s
     where s.group_id = search_snapshot.snapshot_group and s.name = btrim(search_snapshot.snapshot);
    if not found then
        raise exception 'group % has no snapshot named %', search_snapshot.snapshot_group, snapshot using errcode = 'VN001';
    end if;
    if frozen.sealed_at is null then
        raise exception 'snapshot % is not sealed: its copy never completed; create it again', frozen.name
            using errcode = 'VS002';
    end if;
    if frozen.search_version <> vera.search_version() then
        raise exception 'snapshot % was taken with search version %, this database runs %: its answers cannot be reproduced',
            frozen.name, frozen.search_version, vera.search_version() using errcode = 'VS001';
    end if;
    select g.embedding_model, g.embedding_dim into current_pin from vera.groups g where g.group_id = frozen.group_id;
    if frozen.embedding_model is not null
       and (current_pin.embedding_model is distinct from frozen.embedding_model
            or current_pin.embedding_dim is distinct from frozen.embedding_dim) then
        raise exception 'snapshot % was taken with embedding model % (% dimensions); the group now uses % (% dimensions)',
            frozen.name, frozen.embedding_model, frozen.embedding_dim,
            coalesce(current_pin.embedding_model, 'none'), coalesce(current_pin.embedding_dim::text, '-')
            using errcode = 'VS001';
    end if;
    if query_embedding is not null and frozen.embedding_dim is not null
       and (public.vector_dims(query_embedding) <> frozen.embedding_dim
            or (embedding_model is not null and embedding_model <> frozen.embedding_model)) then
        raise exception 'query embedding is % (% dimensions), but snapshot % is pinned to % (% dimensions)',
            coalesce(embedding_model, 'of no named model'), public.vector_dims(query_embedding), frozen.name,
            frozen.embedding_model, frozen.embedding_dim using errcode = 'VE001';
    end if;
    lexical := vera.lexical_query(query);

    items := array(
        select row(i.item_kind, i.item_id, i.group_id,
                   coalesce(lexical_weight / (k_rrf + c.lexical_rank)::float8, 0)
                   + coalesce(vector_weight / (k_rrf + c.vector_rank)::float8, 0),
                   i.text, i.subject, i.predicate, i.object, i.authority, i.verification, i.confidence,
                   i.valid_from, i.valid_to, i.up_votes, i.down_votes, i.citation, i.confirmed_at,
                   c.lexical_rank, c.vector_rank, i.order_key)::vera.search_item
          from vera.snapshot_candidates(frozen.group_id, frozen.snapshot_id, lexical,
                                        case when frozen.embedding_dim is not null then query_embedding end, n) c
          join vera.snapshot_items i
            on i.group_id = frozen.group_id and i.snapshot_id = frozen.snapshot_id
           and i.item_kind = c.kind and i.item_id = c.item_id);
    return query select * from vera.blend(items, jsonb_build_object('*', frozen.weights), frozen.created_at, k);
end
$$;
comment on function vera.search_snapshot(text, text, text, public.vector, integer, integer, integer, text,
                                         double precision, double precision) is
    'Searches a sealed snapshot with its pinned weights and instant; fails closed on changed pins (VS001/VS002)';

reset role;

-- sql/rls/010_policies.sql
-- Row-level security. Enabled and FORCED on every table, so the owner
-- (vera_owner, which the definer functions run as) is bound by it too.
--
-- Knowledge tables: the caller's groups decide, nothing else. A definer
-- function with a bug still cannot read or write another tenant's rows.
-- Identity tables (groups, principals, memberships, api_keys, auth_context)
-- and the audit log additionally let vera_owner through, because
-- authentication must read them before any caller context exists.
--
-- Idempotent: every policy is dropped and created again.
set role vera_owner;
set client_min_messages = warning;

do $policies$
declare
    knowledge_table text;
begin
    foreach knowledge_table in array array[
        'sources', 'episodes', 'chunks', 'entities', 'entity_aliases', 'predicates',
        'facts', 'feedback', 'ranking_weights', 'snapshots', 'snapshot_items', 'group_settings']
    loop
        execute format('alter table vera.%I enable row level security', knowledge_table);
        execute format('alter table vera.%I force row level security', knowledge_table);
        execute format('drop policy if exists read_own_groups on vera.%I', knowledge_table);
        execute format('drop policy if exists insert_own_groups on vera.%I', knowledge_table);
        execute format('drop policy if exists update_own_groups on vera.%I', knowledge_table);
        execute format('drop policy if exists delete_own_groups on vera.%I', knowledge_table);
        -- the scalar subqueries make each function run once per statement
        execute format($p$create policy read_own_groups on vera.%I for select
            using (group_id = any ((select vera.readable_groups())::text[]))$p$, knowledge_table);
        execute format($p$create policy insert_own_groups on vera.%I for insert
            with check (group_id = any ((select vera.writable_groups())::text[]))$p$, knowledge_table);
        execute format($p$create policy update_own_groups on vera.%I for update
            using (group_id = any ((select vera.writable_groups())::text[]))
            with check (group_id = any ((select vera.writable_groups())::text[]))$p$, knowledge_table);
        execute format($p$create policy delete_own_groups on vera.%I for delete
            using (group_id = any ((select vera.writable_groups())::text[]))$p$, knowledge_table);
    end loop;
end
$policies$;

-- Readers vote too: a feedback row needs only read access to its hit's
-- group, and each principal writes only its own votes.
drop policy if exists insert_own_groups on vera.feedback;
drop policy if exists update_own_groups on vera.feedback;
drop policy if exists insert_own_votes on vera.feedback;
drop policy if exists update_own_votes on vera.feedback;
create policy insert_own_votes on vera.feedback for insert
    with check (group_id = any ((select vera.readable_groups())::text[])
                and principal_id = (select vera.current_principal()));
create policy update_own_votes on vera.feedback for update
    using (group_id = any ((select vera.readable_groups())::text[])
           and principal_id = (select vera.current_principal()))
    with check (group_id = any ((select vera.readable_groups())::text[])
                and principal_id = (select vera.current_principal()));

-- Proposals live in their proposer's u: scope; the admins of the scope they
-- are proposed for may see them, decide on them and erase them.
drop policy if exists read_proposals_for_administered_groups on vera.facts;
drop policy if exists update_proposals_for_administered_groups on vera.facts;
drop policy if exists delete_proposals_for_administered_groups on vera.facts;
create policy read_proposals_for_administered_groups on vera.facts for select
    using (proposed_for = any ((select vera.administrable_groups())::text[]));
create policy update_proposals_for_administered_groups on vera.facts for update
    using (proposed_for = any ((select vera.administrable_groups())::text[]))
    with check (proposed_for = any ((select vera.administrable_groups())::text[]));
create policy delete_proposals_for_administered_groups on vera.facts for delete
    using (proposed_for = any ((select vera.administrable_groups())::text[]));

-- A passage proposed from a tier-4 source stays in the shared scope beside
-- its episode (see vera.chunks), where the group's policy alone would let
-- every reader read it: until a reviewer approves it (and after a
-- rejection) only its proposer and the scope's admins may. Restrictive, so
-- it narrows read_own_groups rather than widening it.
drop policy if exists read_proposed_passages on vera.chunks;
create policy read_proposed_passages on vera.chunks as restrictive for select
    using (not proposed or lifecycle = 'published'
           or proposed_by = (select vera.current_principal())
           or group_id = any ((select vera.administrable_groups())::text[]));

alter table vera.groups enable row level security;
alter table vera.groups force row level security;
drop policy if exists read_own_groups on vera.groups;
drop policy if exists owner_manages on vera.groups;
create policy read_own_groups on vera.groups for select
    using (group_id = any ((select vera.readable_groups())::text[]));
create policy owner_manages on vera.groups to vera_owner using (true) with check (true);

alter table vera.memberships enable row level security;
alter table vera.memberships force row level security;
drop policy if exists read_own_groups on vera.memberships;
drop policy if exists owner_manages on vera.memberships;
create policy read_own_groups on vera.memberships for select
    using (group_id = any ((select vera.readable_groups())::text[]));
create policy owner_manages on vera.memberships to vera_owner using (true) with check (true);

-- a principal is visible to itself and to callers who share a readable group
alter table vera.principals enable row level security;
alter table vera.principals force row level security;
drop policy if exists read_self_and_members on vera.principals;
drop policy if exists owner_manages on vera.principals;
create policy read_self_and_members on vera.principals for select
    using (principal_id = (select vera.current_principal())
           or exists (select from vera.memberships m
                       where m.principal_id = principals.principal_id
                         and m.group_id = any ((select vera.readable_groups())::text[])));
create policy owner_manages on vera.principals to vera_owner using (true) with check (true);

-- keys and the context table are reached only through definer functions
alter table vera.api_keys enable row level security;
alter table vera.api_keys force row level security;
drop policy if exists owner_manages on vera.api_keys;
create policy owner_manages on vera.api_keys to vera_owner using (true) with check (true);

alter table vera.auth_context enable row level security;
alter table vera.auth_context force row level security;
drop policy if exists owner_manages on vera.auth_context;
create policy owner_manages on vera.auth_context to vera_owner using (true) with check (true);

-- the audit log is appended by definer functions and read by group admins
alter table vera.audit_log enable row level security;
alter table vera.audit_log force row level security;
drop policy if exists read_administered_groups on vera.audit_log;
drop policy if exists owner_appends on vera.audit_log;
drop policy if exists owner_reads on vera.audit_log;
create policy read_administered_groups on vera.audit_log for select
    using (group_id = any ((select vera.administrable_groups())::text[]));
create policy owner_appends on vera.audit_log for insert to vera_owner with check (true);

reset role;

-- sql/rls/020_grants.sql
-- Grants: what each role may touch. Idempotent (grant is a no-op when held).
--
-- vera_app     reads knowledge through RLS; writes only through the SQL API,
--              so curation rules (tiers, contamination guard) cannot be skipped.
-- vera_worker  also updates rows in place (embeddings, statuses) through RLS.
-- vera_gateway an HTTP/MCP server: the SQL API plus authenticate_principal.
-- vera_operator provisions tenants.
set role vera_owner;

grant select on vera.sources, vera.episodes, vera.chunks, vera.entities, vera.entity_aliases,
    vera.predicates, vera.facts, vera.feedback, vera.ranking_weights, vera.snapshots,
    vera.snapshot_items, vera.groups, vera.memberships, vera.principals, vera.audit_log, vera.group_settings
    to vera_app, vera_worker, vera_gateway;

grant insert, update, delete on vera.sources, vera.episodes, vera.chunks, vera.entities,
    vera.entity_aliases, vera.predicates, vera.facts, vera.snapshot_items
    to vera_worker;

-- helpers that policies call must be executable by whoever the policy applies to
grant execute on function vera.current_principal(), vera.readable_groups(), vera.writable_groups(),
    vera.administrable_groups()
    to public;

-- the public SQL API
grant execute on function
    vera.authenticate(text),
    vera.require_principal(),
    vera.require_role(text, vera.member_role),
    vera.role_in(text),
    vera.whoami(),
    vera.create_group(text, vera.group_kind, text),
    vera.create_principal(text, vera.principal_kind, text, vera.member_role, text),
    vera.set_member_role(text, uuid, vera.member_role),
    vera.remove_member(text, uuid),
    vera.create_api_key(text, timestamptz, uuid),
    vera.revoke_api_key(text),
    vera.list_api_keys(),
    vera.normalize_name(text),
    vera.normalize_predicate(text),
    vera.tier_authority(integer),
    vera.setting_default(text),
    vera.setting(text, text),
    vera.set_setting(text, text, jsonb),
    vera.register_source(text, text, text, integer, text, jsonb, text),
    vera.record_episode(text, uuid, text, bytea, text, text, timestamptz, text, text),
    vera.store_chunks(text, uuid, jsonb, text),
    vera.list_sources(text),
    vera.source_cursor(text, uuid),
    vera.advance_source_cursor(text, uuid, jsonb),
    vera.request_ingest(text, uuid, text),
    vera.declare_predicate(text, text, vera.predicate_cardinality, text),
    vera.publish_claims(text, uuid, jsonb, text),
    vera.pending_reviews(text),
    vera.review_claim(text, uuid, text, text),
    vera.pending_passages(text),
    vera.review_passage(text, uuid, text, text),
    vera.retract_episode(text, uuid, text),
    vera.erase_episode(text, uuid, text),
    vera.retract_source(text, uuid, text),
    vera.erase_source(text, uuid, text),
    vera.complete_cleanup(bigint),
    vera.search_version(),
    vera.default_weights(),
    vera.active_weights(text),
    vera.lexical_query(text),
    vera.search(text, public.vector, integer, timestamptz, text[], jsonb, integer, integer, text, double precision,
                double precision, integer),
    vera.record_feedback(vera.item_kind, uuid, text, text, public.vector, timestamptz, text[], text),
    vera.calibrate_weights(text, integer),
    vera.reset_weights(text),
    vera.create_snapshot(text, text),
    vera.list_snapshots(text),
    vera.drop_snapshot(text, text),
    vera.search_snapshot(text, text, text, public.vector, integer, integer, integer, text, double precision,
                         double precision)
    to vera_app, vera_worker, vera_gateway;

grant execute on function vera.authenticate_principal(uuid) to vera_gateway, vera_worker;

-- the trigram probe's owner reads aliases past RLS (and checks the group itself)
grant select on vera.entity_aliases, vera.entities to vera_resolver;
grant execute on function vera.similar_aliases(integer[], text[], text[], float8[]) to vera_owner;

-- the candidate stage's owner reads past RLS (and checks the groups itself)
grant select on vera.facts, vera.chunks, vera.episodes, vera.sources, vera.groups, vera.snapshot_items
    to vera_searcher;
grant execute on function vera.fact_visible(vera.fact_lifecycle, text, timestamptz, timestamptz, timestamptz,
                                            timestamptz, text),
    vera.fact_order_key(text, text, text, timestamptz),
    vera.passage_order_key(text, text, integer, integer),
    vera.group_order_key(vera.group_kind, text)
    to vera_searcher;
grant execute on function vera.group_vector_index_name(text, text, integer),
    vera.group_vector_index_ready(text, text, integer)
    to vera_searcher;
grant execute on function
    vera.search_candidates(text[], tsquery, text[], public.vector, timestamptz, text, integer, integer),
    vera.snapshot_candidates(text, uuid, tsquery, public.vector, integer)
    to vera_owner;

grant execute on function vera.create_tenant(text, text, text) to vera_operator;
grant execute on function vera.missing_vector_indexes(integer) to vera_operator;

reset role;
