-- Facts: subject-predicate-object claims with trust, verification,
-- lifecycle, bitemporal validity and provenance.
set role vera_owner;

create table vera.facts (
    group_id          text not null,
    fact_id           uuid not null default gen_random_uuid(),
    subject_entity_id uuid not null,
    predicate         text not null,
    object_entity_id  uuid,
    object_value      text not null
                      constraint facts_object_length check (char_length(object_value) between 1 and 2000),
    fact_text         text not null
                      constraint facts_text_length check (char_length(fact_text) between 1 and 4000),
    -- vera.lexical_tsvector(fact_text), set by the trigger facts_set_tsv (173_lexical_terms.sql)
    tsv               tsvector,
    embedding         vector,
    -- grading: tier of the source, authority derived from it, verification, model confidence
    tier              smallint not null constraint facts_tier_range check (tier between 1 and 4),
    authority         real not null constraint facts_authority_range check (authority between 0 and 1),
    verification      vera.verification not null,
    confidence        real not null default 1 constraint facts_confidence_range check (confidence between 0 and 1),
    lifecycle         vera.fact_lifecycle not null,
    -- valid time: when the fact holds in the world
    valid_from        timestamptz not null default now(),
    valid_to          timestamptz,
    -- transaction time: when VERA learnt it and when it stopped being current knowledge
    recorded_at       timestamptz not null default now(),
    retired_at        timestamptz,
    -- the next value of a functional predicate: derived data that only
    -- vera.rebuild_timelines writes. Deliberately not a foreign key: its check
    -- would lock every successor row (FOR KEY SHARE) on each supersession.
    superseded_by     uuid,
    -- provenance
    source_id         uuid,
    episode_id        uuid,
    chunk_id          uuid,
    evidence_start    integer,
    evidence_end      integer,
    -- who published or proposed it; no foreign key: principals are never
    -- deleted, and the check cost every published claim a lookup
    proposed_by       uuid,
    reviewed_by       uuid references vera.principals (principal_id),
    reviewed_at       timestamptz,
    -- validity end as the claim stated it; valid_to is derived from it and
    -- from the next value of a functional predicate
    stated_valid_to   timestamptz,
    -- a proposal lives in its proposer's u: scope and names the shared scope it
    -- is meant for; its provenance there (group, source, episode, chunk) sits in
    -- origin, since foreign keys cannot leave the row's group
    proposed_for      text references vera.groups (group_id),
    origin            jsonb,
    primary key (group_id, fact_id),
    foreign key (group_id, subject_entity_id) references vera.entities (group_id, entity_id),
    foreign key (group_id, object_entity_id) references vera.entities (group_id, entity_id),
    foreign key (group_id, predicate) references vera.predicates (group_id, name),
    foreign key (group_id, source_id) references vera.sources (group_id, source_id),
    -- erasure deletes episodes and chunks; the retracted fact keeps its group
    foreign key (group_id, episode_id) references vera.episodes (group_id, episode_id)
        on delete set null (episode_id),
    foreign key (group_id, chunk_id) references vera.chunks (group_id, chunk_id)
        on delete set null (chunk_id),
    constraint facts_validity_order check (valid_to is null or valid_to >= valid_from),
    constraint facts_evidence_order check (
        evidence_end is null or evidence_start is null or evidence_end >= evidence_start),
    -- superseded in valid time (a successor, a closed validity) or in
    -- transaction time (a new version of its episode no longer says it)
    constraint facts_superseded_has_successor check (
        lifecycle <> 'superseded' or superseded_by is not null or valid_to is not null
        or retired_at is not null),
    constraint facts_proposal_has_target check (lifecycle <> 'proposal' or proposed_for is not null),
    constraint facts_stated_validity_order check (stated_valid_to is null or stated_valid_to >= valid_from)
) with (fillfactor = 85);
-- The valid-time history of a subject's predicate: supersession rebuilds it.
-- No index mentions lifecycle, superseded_by, valid_to or retired_at (not even
-- in a predicate), and pages keep 15% free: supersession and retraction then
-- update rows in place (HOT) without touching any index.
create index facts_timeline_idx on vera.facts (group_id, subject_entity_id, predicate, valid_from);
-- proposals awaiting the admins of the scope they are meant for
create index facts_proposed_for_idx on vera.facts (proposed_for) where proposed_for is not null;
-- erasure finds proposals that cite an erased episode
create index facts_origin_episode_idx on vera.facts ((origin ->> 'episode_id')) where origin is not null;
-- the lexical half of search, one tenant at a time: one posting list per
-- group and word ("<group_id> <lexeme>") and one per group, word and part of
-- the group's facts ("<group_id> <lexeme> <part>", the last hex digit of the
-- fact id); vera.group_lexemes in sql/functions/170_ranking.sql, which the
-- planner inlines into this expression. A query reads only its groups'
-- postings of its words, neither every tenant's matches nor the whole
-- group's list, and a round cut at a budget of rows reads a part of a
-- frequent word's list (migrations 0004, 0005; each word cut to its first 500 characters, 0021)
create index facts_group_lexemes_idx on vera.facts using gin ((
    case when tsv = ''::tsvector then tsv
         else ('''' || group_id || ' ' || substr(replace(regexp_replace(strip(tsv)::text, '((?:[^'' ]{250}){2})[^'' ]+', '\1', 'g'), ''' ''', ''' ''' || group_id || ' '), 2)
               || ' ''' || group_id || ' '
               || replace(left(substr(regexp_replace(strip(tsv)::text, '((?:[^'' ]{250}){2})[^'' ]+', '\1', 'g'), 2), -1), ''' ''',
                          ' ' || right(fact_id::text, 1) || ''' ''' || group_id || ' ')
               || ' ' || right(fact_id::text, 1) || '''')::tsvector
    end));
create index facts_episode_idx on vera.facts (group_id, episode_id) where episode_id is not null;
create index facts_source_idx on vera.facts (group_id, source_id) where source_id is not null;
create index facts_object_entity_idx on vera.facts (group_id, object_entity_id) where object_entity_id is not null;
comment on table vera.facts is 'Claims with trust tier, verification, lifecycle, validity and provenance';

reset role;
