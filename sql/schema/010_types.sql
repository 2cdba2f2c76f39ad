-- Enumerated types shared by the tables and the SQL API.
set role vera_owner;

-- o: organisation, w: workspace, p: project, u: personal (one per principal)
create type vera.group_kind as enum ('organisation', 'workspace', 'project', 'personal');

-- Declared in ascending order on purpose: enum comparison gives the total
-- order viewer < member < admin < owner that permission checks rely on.
create type vera.member_role as enum ('viewer', 'member', 'admin', 'owner');

create type vera.principal_kind as enum ('user', 'service');

create type vera.episode_status as enum ('received', 'extracted', 'failed', 'retracted');

create type vera.verification as enum ('human_verified', 'auto', 'pending');

-- published: current knowledge; pending_review: tier-3 claim awaiting an admin;
-- proposal: unverified claim kept in the proposer's u: scope; superseded: an
-- older value of a functional predicate; retracted: its source was withdrawn;
-- rejected: a reviewer said no.
create type vera.fact_lifecycle as enum (
    'published', 'pending_review', 'proposal', 'superseded', 'retracted', 'rejected'
);

create type vera.predicate_cardinality as enum ('functional', 'multi');

create type vera.item_kind as enum ('fact', 'passage');

reset role;
