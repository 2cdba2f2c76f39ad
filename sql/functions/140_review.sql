-- Review: admins of a scope approve or reject claims waiting for it
-- (tier-3 claims pending review in the scope, and proposals made for it from
-- someone's u: scope). Every decision is audited and reaches the outbox.
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

reset role;
