-- An agent's own claims: proposals with their evidence. They go through
-- the write path (record_episode, store_chunks, publish_claims), so the
-- contamination guard applies exactly as there: the claim lands as a
-- proposal in the caller's own u: scope, named for the shared scope it is
-- meant for, and waits in that scope's review queue (vera.pending_reviews).
-- Its evidence is recorded as an episode of the caller's own "proposals"
-- source (tier 4) in the u: scope, one episode per proposal, and copied
-- into the proposal's origin so that the reviewers, who cannot read the u:
-- scope, see it.
set role vera_owner;

-- Contract: proposes subject-predicate-object for a shared scope (o:, w:,
-- p:) where the caller is a member, with the evidence text it rests on
-- (1 to 20,000 characters). Returns the proposal (in the caller's u: scope)
-- and where its evidence was recorded. Limits as publish_claims: subject
-- 500, object 2,000 characters, a predicate with an UPPER_SNAKE form.
-- Errors: 22023 (blank or malformed argument, a personal scope), 22001 (too
-- long), 42501 (not a member of for_group), VA005.
create or replace function vera.propose(
    subject text, predicate text, object text, evidence text, for_group text)
returns table (fact_id uuid, group_id text, proposed_for text, lifecycle vera.fact_lifecycle,
               source_id uuid, episode_id uuid, chunk_id uuid)
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
    personal text;
    proposals_source uuid;
    recorded record;
    stored_chunk uuid;
    published record;
begin
    if coalesce(btrim(propose.subject), '') = '' or coalesce(btrim(propose.predicate), '') = ''
       or coalesce(btrim(propose.object), '') = '' then
        raise exception 'subject, predicate and object are required' using errcode = '22023';
    end if;
    if coalesce(btrim(propose.evidence), '') = '' then
        raise exception 'a proposal needs the evidence it rests on' using errcode = '22023';
    end if;
    perform vera.check_length(propose.subject, 'subject', 500);
    perform vera.check_length(propose.predicate, 'predicate', 100);
    perform vera.check_length(propose.object, 'object', 2000);
    perform vera.check_length(propose.evidence, 'evidence', 20000);
    if vera.normalize_predicate(propose.predicate) is null then
        raise exception 'not a predicate name: %', vera.shown(propose.predicate) using errcode = '22023';
    end if;
    if propose.for_group is null then
        raise exception 'for_group names the shared scope the proposal is meant for' using errcode = '22023';
    end if;
    perform vera.require_role(propose.for_group, 'member');
    if (select g.kind from vera.groups g where g.group_id = propose.for_group) = 'personal' then
        raise exception 'proposals are made for a shared scope (o:, w:, p:); in your own u: scope, publish'
            using errcode = '22023';
    end if;
    select p.personal_group_id into personal from vera.principals p where p.principal_id = caller;

    -- the caller's proposals source, registered on first use
    select s.source_id into proposals_source from vera.sources s
     where s.group_id = personal and s.name = 'proposals';
    if not found or (select s.retracted_at from vera.sources s
                      where s.group_id = personal and s.source_id = proposals_source) is not null then
        proposals_source := vera.register_source(personal, 'proposals', 'proposals', 4);
    end if;
    select * into recorded from vera.record_episode(
        personal, proposals_source, 'proposal/' || gen_random_uuid(),
        sha256(convert_to(propose.evidence, 'UTF8')),
        title => left(format('%s %s %s', btrim(propose.subject), btrim(propose.predicate), btrim(propose.object)), 2000));
    select c.chunk_id into stored_chunk
      from vera.store_chunks(personal, recorded.episode_id, jsonb_build_array(jsonb_build_object('text', propose.evidence))) c;
    select * into published from vera.publish_claims(
        propose.for_group, null,
        jsonb_build_array(jsonb_build_object('subject', propose.subject, 'predicate', propose.predicate,
                                             'object', propose.object, 'verification', 'pending'))) p;
    -- the proposal cites its evidence: the episode and chunk beside it in the u: scope
    update vera.facts f
       set source_id = proposals_source, episode_id = recorded.episode_id, chunk_id = stored_chunk,
           -- its provenance is here in the u: scope now, not in the scope origin named
           origin = (coalesce(f.origin, '{}') - 'group_id') || jsonb_build_object('evidence', propose.evidence)
     where f.group_id = published.fact_group_id and f.fact_id = published.fact_id;
    return query select published.fact_id, published.fact_group_id, propose.for_group, published.lifecycle,
                        proposals_source, recorded.episode_id, stored_chunk;
end
$$;
comment on function vera.propose(text, text, text, text, text) is
    'Proposes a claim with its evidence for a shared scope: a proposal in the caller''s u: scope, for review';
grant execute on function vera.propose(text, text, text, text, text) to vera_app, vera_gateway;

-- Contract: withdraws one of the caller's own live proposals. Its evidence
-- episode is retracted through the write path (vera.retract_episode, which
-- retracts the proposal with it); a proposal without one is marked
-- retracted. Returns the proposal's new lifecycle. Errors: VN001 (not a
-- proposal of the caller: another principal's, another tenant's or none),
-- 22023 (already decided or retracted), VA005.
create or replace function vera.retract_proposal(of_fact uuid)
returns table (fact_id uuid, lifecycle vera.fact_lifecycle)
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
    personal text;
    proposal vera.facts;
begin
    if of_fact is null then
        raise exception 'fact_id is required' using errcode = '22023';
    end if;
    select p.personal_group_id into personal from vera.principals p where p.principal_id = caller;
    select * into proposal from vera.facts f
     where f.group_id = personal and f.fact_id = of_fact and f.proposed_by = caller and f.proposed_for is not null;
    if not found then
        raise exception 'no proposal % of yours', of_fact using errcode = 'VN001';
    end if;
    if proposal.lifecycle <> 'proposal' then
        raise exception 'proposal % is % already', of_fact, proposal.lifecycle using errcode = '22023';
    end if;
    if proposal.episode_id is not null and exists (
            select from vera.sources s
             where s.group_id = personal and s.source_id = proposal.source_id and s.name = 'proposals') then
        perform vera.retract_episode(personal, proposal.episode_id, 'proposal withdrawn by its proposer');
    end if;
    update vera.facts f set lifecycle = 'retracted', retired_at = coalesce(f.retired_at, now())
     where f.group_id = personal and f.fact_id = of_fact and f.lifecycle <> 'retracted';
    -- out of the proposer's graph (a proposal without its evidence episode has no cleanup job)
    perform vera.enqueue_job('vera.project_to_graph', jsonb_build_object(
        'group_id', personal, 'fact_ids', jsonb_build_array(of_fact)));
    return query select f.fact_id, f.lifecycle from vera.facts f where f.group_id = personal and f.fact_id = of_fact;
end
$$;
comment on function vera.retract_proposal(uuid) is 'Withdraws one of the caller''s own live proposals';
grant execute on function vera.retract_proposal(uuid) to vera_app, vera_gateway;

-- Contract: the caller's own proposals, newest first, with their state
-- (proposal: waiting; accepted: a reviewer published a copy in the scope;
-- rejected; retracted) and evidence. At most max_rows (1..1000).
-- Errors: 22023, VA005.
create or replace function vera.list_proposals(max_rows integer default 100)
returns table (fact_id uuid, proposed_for text, subject text, predicate text, object text, fact_text text,
               lifecycle vera.fact_lifecycle, evidence text, recorded_at timestamptz, reviewed_at timestamptz)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
    personal text;
begin
    perform vera.check_max_rows(list_proposals.max_rows);
    select p.personal_group_id into personal from vera.principals p where p.principal_id = caller;
    return query
        select f.fact_id, f.proposed_for, coalesce(f.origin ->> 'subject', e.canonical_name), f.predicate,
               f.object_value, f.fact_text, f.lifecycle, coalesce(f.origin ->> 'evidence', c.text),
               f.recorded_at, f.reviewed_at
          from vera.facts f
          left join vera.entities e on e.group_id = f.group_id and e.entity_id = f.subject_entity_id
          left join vera.chunks c on c.group_id = f.group_id and c.chunk_id = f.chunk_id
         where f.group_id = personal and f.proposed_by = caller and f.proposed_for is not null
         order by f.recorded_at desc, f.fact_id
         limit list_proposals.max_rows;
end
$$;
comment on function vera.list_proposals(integer) is 'The caller''s own proposals, newest first, with their state';
grant execute on function vera.list_proposals(integer) to vera_app, vera_gateway;

reset role;
