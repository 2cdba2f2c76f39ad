-- Context packs: what vera_client's assembler handed an agent for a
-- request (the best hits that fit a token budget, what was left out and why,
-- conflicting values, freshness warnings), kept so that the agent can cite
-- and vote on it later. A pack lives in its principal's own u: scope: only
-- that principal reads it.
set role vera_owner;

create table vera.context_packs (
    -- the principal's personal scope
    group_id          text not null references vera.groups (group_id),
    pack_id           uuid not null default gen_random_uuid(),
    -- no foreign keys but the group's: group_id leads every key (distribution by group)
    principal_id      uuid not null,
    -- the groups the search covered (erasure in one of them scrubs the pack)
    searched_groups   text[] not null,
    -- query, token_budget, as_of, scopes, min_authority, max_tier
    request           jsonb not null constraint context_packs_request_object check (jsonb_typeof(request) = 'object'),
    weights           jsonb,
    assembler_version text not null
                      constraint context_packs_assembler_length check (char_length(assembler_version) between 1 and 100),
    -- [{kind, item_id, reason, tokens}], [{subject, predicate, values: [...]}], [{kind, item_id, reason, detail}]
    omitted           jsonb not null default '[]' constraint context_packs_omitted_array check (jsonb_typeof(omitted) = 'array'),
    conflicts         jsonb not null default '[]' constraint context_packs_conflicts_array check (jsonb_typeof(conflicts) = 'array'),
    warnings          jsonb not null default '[]' constraint context_packs_warnings_array check (jsonb_typeof(warnings) = 'array'),
    created_at        timestamptz not null default now(),
    primary key (group_id, pack_id),
    constraint context_packs_personal_scope check (group_id ~ '^u:')
);
comment on table vera.context_packs is 'Context packs assembled for a principal: request, weights, omissions, conflicts, warnings';

create table vera.context_pack_items (
    group_id      text not null,
    pack_id       uuid not null,
    position      integer not null constraint context_pack_items_position_positive check (position >= 1),
    item_kind     vera.item_kind not null,
    item_id       uuid not null,
    -- where the fact or passage lives, and the episode and source it came from:
    -- erasing them empties the item (vera.erase_pack_items)
    item_group_id text not null,
    episode_id    uuid,
    source_id     uuid,
    text          text not null,
    tokens        integer not null constraint context_pack_items_tokens_nonnegative check (tokens >= 0),
    citation      jsonb not null,
    -- relevance, authority, verification, recency, feedback, confidence, in that order
    -- the seven signals of the blend, in vera.signal_names() order (period null: no period asked)
    signals       real[] not null constraint context_pack_items_signals_seven check (cardinality(signals) = 7),
    erased        boolean not null default false,
    primary key (group_id, pack_id, position),
    foreign key (group_id, pack_id) references vera.context_packs (group_id, pack_id) on delete cascade,
    constraint context_pack_items_erased_empty check (not erased or text = '')
);
-- erasure finds the items citing what it erases
create index context_pack_items_provenance_idx on vera.context_pack_items (item_group_id, episode_id);
create index context_pack_items_item_idx on vera.context_pack_items (item_group_id, item_id);
comment on table vera.context_pack_items is 'The items of a context pack, in order, with their text, tokens, citation and signals';

reset role;
