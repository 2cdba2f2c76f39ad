-- 0013_model_usage: what the worker's model calls for a group used and cost
-- (estimated), per day, provider, model and purpose (sql/functions/266_model_usage.sql).
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.
set role vera_owner;

create table vera.model_usage (
    group_id      text not null references vera.groups (group_id) on delete cascade,
    day           date not null,
    provider      text not null constraint model_usage_provider_length check (char_length(provider) between 1 and 100),
    model         text not null constraint model_usage_model_length check (char_length(model) between 1 and 200),
    purpose       text not null constraint model_usage_purpose_length check (char_length(purpose) between 1 and 100),
    calls         bigint not null default 0 constraint model_usage_calls_range check (calls >= 0),
    failed_calls  bigint not null default 0 constraint model_usage_failed_range check (failed_calls >= 0),
    input_tokens  bigint not null default 0 constraint model_usage_input_range check (input_tokens >= 0),
    output_tokens bigint not null default 0 constraint model_usage_output_range check (output_tokens >= 0),
    cost_usd      numeric(18, 8) not null default 0 constraint model_usage_cost_range check (cost_usd >= 0),
    unpriced_calls bigint not null default 0 constraint model_usage_unpriced_range check (unpriced_calls >= 0),
    primary key (group_id, day, provider, model, purpose)
);
comment on table vera.model_usage is
    'Model calls the worker made for a group, per UTC day, provider, model and purpose, with an estimated cost';

reset role;
