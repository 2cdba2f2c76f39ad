-- 0002_passage_guard: two rules of the design brought back (search version
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
-- Apply with:  psql -v ON_ERROR_STOP=1 -1 -f 0002_passage_guard.sql
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
drop function if exists vera.candidate_signals(vera.item_kind[], uuid[], text[], double precision[]);

reset role;

