-- Feedback votes with the signal vector a hit had, and the ranking weight
-- sets that calibration derives from them.
set role vera_owner;

create table vera.feedback (
    group_id     text not null references vera.groups (group_id),
    feedback_id  uuid not null default gen_random_uuid(),
    principal_id uuid not null references vera.principals (principal_id),
    item_kind    vera.item_kind not null,
    item_id      uuid not null,
    query_text   text not null constraint feedback_query_length check (char_length(query_text) between 1 and 4000),
    query_sha256 bytea not null constraint feedback_query_hash_length check (octet_length(query_sha256) = 32),
    vote         smallint not null constraint feedback_vote_sign check (vote in (-1, 1)),
    -- relevance, authority, verification, recency, feedback, confidence, period, in that order
    -- (period null: the search asked about no period)
    signals      real[] not null constraint feedback_signals_seven check (cardinality(signals) = 7),
    created_at   timestamptz not null default now(),
    primary key (group_id, feedback_id),
    constraint feedback_one_vote unique (group_id, principal_id, item_kind, item_id, query_sha256)
);
create index feedback_item_idx on vera.feedback (group_id, item_kind, item_id);
comment on table vera.feedback is 'Votes on hits, with the query and the hit''s seven signals';

create table vera.ranking_weights (
    group_id      text not null references vera.groups (group_id),
    weight_set_id uuid not null default gen_random_uuid(),
    relevance     real not null constraint ranking_weights_relevance_range check (relevance between 0 and 1),
    authority     real not null constraint ranking_weights_authority_range check (authority between 0 and 1),
    verification  real not null constraint ranking_weights_verification_range check (verification between 0 and 1),
    recency       real not null constraint ranking_weights_recency_range check (recency between 0 and 1),
    feedback      real not null constraint ranking_weights_feedback_range check (feedback between 0 and 1),
    confidence    real not null constraint ranking_weights_confidence_range check (confidence between 0 and 1),
    half_life     interval not null default '30 days'
                  constraint ranking_weights_half_life_positive check (half_life > interval '0'),
    sample_count  integer not null default 0,
    separation    jsonb,
    active        boolean not null default false,
    created_at    timestamptz not null default now(),
    created_by    uuid references vera.principals (principal_id),
    primary key (group_id, weight_set_id),
    -- the seventh signal, period (0002_time_scopes): an item's time against the period asked about
    period        real not null default 0 constraint ranking_weights_period_range check (period between 0 and 1),
    constraint ranking_weights_sum_to_one check (
        abs(relevance + authority + verification + recency + feedback + confidence + period - 1) < 0.001)
);
create unique index ranking_weights_one_active_idx on vera.ranking_weights (group_id) where active;
comment on table vera.ranking_weights is 'Weight sets of the seven-signal blend; at most one active per group';

reset role;
