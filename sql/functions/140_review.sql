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
grant execute on function vera.pending_reviews(text) to vera_app, vera_worker, vera_gateway;

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
    perform vera.check_length(review_claim.note, 'note', 2000);
    if review_claim.decision is null or review_claim.decision not in ('approve', 'reject') then
        raise exception 'decision must be approve or reject, not %', coalesce(vera.shown(review_claim.decision), 'null')
            using errcode = '22023';
    end if;
    select * into claim from vera.facts f
     where f.fact_id = review_claim.fact_id
       and ((f.group_id = review_claim.group_id and f.lifecycle = 'pending_review')
            or (f.proposed_for = review_claim.group_id and f.lifecycle = 'proposal'));
    if not found then
        raise exception 'no claim % is waiting for review in %', review_claim.fact_id, review_claim.group_id
            using errcode = 'VN001';
    end if;

    -- lock order (as publishing): the predicate, entity names, then the histories
    -- (the claim's own and the one it joins), and only then the claim's row
    same_scope := claim.group_id = review_claim.group_id;
    resolved_subject := claim.subject_entity_id;
    if review_claim.decision = 'approve' and not same_scope then
        -- a proposal: its entities are resolved in the shared scope
        insert into vera.predicates (group_id, name) values (review_claim.group_id, claim.predicate)
        on conflict do nothing;
        subject_name := claim.origin ->> 'subject';
        object_name := claim.origin ->> 'object_entity';
        -- both names in one call: its name locks are taken together, in order
        select max(r.entity_id::text) filter (where r.ordinal = 1)::uuid,
               max(r.entity_id::text) filter (where r.ordinal = 2)::uuid
          into resolved_subject, resolved_object
          from vera.resolve_entities(
                   array_fill(review_claim.group_id, array[case when object_name is null then 1 else 2 end]),
                   (array[subject_name, object_name])[1:case when object_name is null then 1 else 2 end],
                   array_fill(null::public.vector, array[case when object_name is null then 1 else 2 end]),
                   (array[claim.origin ->> 'subject_type', claim.origin ->> 'object_type'])
                       [1:case when object_name is null then 1 else 2 end]) r;
    end if;
    perform vera.lock_histories(array[claim.group_id, review_claim.group_id],
                                array[claim.subject_entity_id, resolved_subject],
                                array[claim.predicate, claim.predicate]);
    -- still waiting now that no one else writes its history (a retraction may have taken it)
    select * into claim from vera.facts f
     where f.group_id = claim.group_id and f.fact_id = claim.fact_id
       and ((f.group_id = review_claim.group_id and f.lifecycle = 'pending_review')
            or (f.proposed_for = review_claim.group_id and f.lifecycle = 'proposal'))
     for update;
    if not found then
        raise exception 'no claim % is waiting for review in %', review_claim.fact_id, vera.shown(review_claim.group_id)
            using errcode = 'VN001';
    end if;

    if claim.lifecycle = 'proposal' then
        -- decided either way, the proposal leaves its proposer's u: graph; that graph is
        -- updated for the proposer (the reviewer is no member of that scope)
        perform vera.enqueue_job('vera.project_to_graph', jsonb_build_object(
            'principal_id', claim.proposed_by, 'group_id', claim.group_id,
            'fact_ids', jsonb_build_array(claim.fact_id)));
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

    if same_scope then
        update vera.facts f set lifecycle = 'published', verification = 'human_verified',
                                reviewed_by = vera.current_principal(), reviewed_at = now()
         where f.group_id = claim.group_id and f.fact_id = claim.fact_id;
        published := claim.fact_id;
    else
        -- a proposal: publish a copy in the shared scope, with the entities resolved there above
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
grant execute on function vera.review_claim(text, uuid, text, text) to vera_app, vera_worker, vera_gateway;

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
       -- vera.passage_waiting's test as a join, once per episode: called in a filter, it ran
       -- again for every row a nested loop paired (6 s for 21 passages after a first ingest,
       -- when the planner had no statistics yet; benchmarks/load_mix.py)
       and e.status <> 'retracted'
       and not exists (select from vera.episodes newer
                        where newer.group_id = e.group_id and newer.source_id = e.source_id
                          and newer.external_id = e.external_id and newer.version > e.version
                          and newer.status <> 'retracted')
     order by s.name, e.external_id, e.version, c.ordinal;
end
$$;
comment on function vera.pending_passages(text) is 'Passages pending review in, or proposed for, a group the caller administers';
grant execute on function vera.pending_passages(text) to vera_app, vera_worker, vera_gateway;

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
    perform vera.check_length(review_passage.note, 'note', 2000);
    if review_passage.decision is null or review_passage.decision not in ('approve', 'reject') then
        raise exception 'decision must be approve or reject, not %', coalesce(vera.shown(review_passage.decision), 'null')
            using errcode = '22023';
    end if;
    select * into passage from vera.chunks c
     where c.group_id = review_passage.group_id and c.chunk_id = review_passage.chunk_id
       and vera.passage_waiting(c.group_id, c.chunk_id)
     for update;
    if not found then
        raise exception 'no passage % is waiting for review in %', review_passage.chunk_id, vera.shown(review_passage.group_id)
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
grant execute on function vera.review_passage(text, uuid, text, text) to vera_app, vera_worker, vera_gateway;

reset role;
