-- What the worker's model calls for a group used and cost (estimated): the
-- chat calls of its extractions and the embeddings of its passages and facts,
-- per UTC day, provider, model and purpose (the meter's operation: 'extract',
-- 'embed', ...). The worker adds one job's (or one batch's) totals at a time,
-- never one call at a time; the group's admins read them (the console's
-- Health page, GET /v1/health). The cost is the worker's estimate from its
-- configured prices (VERA_LLM__PRICES over the built-in list prices): not an
-- invoice. A model without a price counts in unpriced_calls and adds no cost.
set role vera_owner;

-- Contract: adds usage to a group's totals for today (UTC). usage: a JSON
-- array of at most 100 objects {provider, model, purpose, calls,
-- failed_calls, input_tokens, output_tokens, cost_usd, unpriced_calls}
-- (counts whole numbers of 0 or more, cost_usd a number of 0 or more; a
-- missing count is 0); provider, model and purpose 1 to 100, 200 and 100
-- characters. The worker only (its jobs run with no caller, or as the
-- principal whose request started them: then a member of the group).
-- Errors: 22023, 42501, VN001.
create or replace function vera.record_model_usage(group_id text, usage jsonb)
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    entry jsonb;
begin
    perform vera.require_graph_access(record_model_usage.group_id);
    if not exists (select from vera.groups g where g.group_id = record_model_usage.group_id) then
        raise exception 'unknown group %', vera.shown(record_model_usage.group_id) using errcode = 'VN001';
    end if;
    if usage is null or jsonb_typeof(usage) <> 'array' then
        raise exception 'usage must be a JSON array of objects' using errcode = '22023';
    end if;
    if jsonb_array_length(usage) > 100 then
        raise exception 'usage holds at most 100 entries per call' using errcode = '22023';
    end if;
    for entry in select value from jsonb_array_elements(usage) loop
        if jsonb_typeof(entry) <> 'object'
           or jsonb_typeof(entry -> 'provider') is distinct from 'string'
           or jsonb_typeof(entry -> 'model') is distinct from 'string'
           or jsonb_typeof(entry -> 'purpose') is distinct from 'string' then
            raise exception 'each usage entry needs provider, model and purpose as strings' using errcode = '22023';
        end if;
        if char_length(entry ->> 'provider') not between 1 and 100
           or char_length(entry ->> 'purpose') not between 1 and 100 then
            raise exception 'a usage entry''s provider and purpose must be 1 to 100 characters' using errcode = '22023';
        end if;
        if char_length(entry ->> 'model') not between 1 and 200 then
            raise exception 'a usage entry''s model must be 1 to 200 characters' using errcode = '22023';
        end if;
        if exists (select from jsonb_each(entry) e
                    where e.key in ('calls', 'failed_calls', 'input_tokens', 'output_tokens', 'unpriced_calls',
                                    'cost_usd')
                      and (jsonb_typeof(e.value) <> 'number' or (e.value #>> '{}')::numeric < 0
                           or (e.key <> 'cost_usd' and (e.value #>> '{}')::numeric <> trunc((e.value #>> '{}')::numeric)))) then
            raise exception 'a usage entry''s counts must be whole numbers of 0 or more, its cost_usd 0 or more'
                using errcode = '22023';
        end if;
    end loop;
    insert into vera.model_usage as u (group_id, day, provider, model, purpose, calls, failed_calls, input_tokens,
                                       output_tokens, cost_usd, unpriced_calls)
    select record_model_usage.group_id, (now() at time zone 'utc')::date, e ->> 'provider', e ->> 'model',
           e ->> 'purpose', coalesce((e ->> 'calls')::bigint, 0), coalesce((e ->> 'failed_calls')::bigint, 0),
           coalesce((e ->> 'input_tokens')::bigint, 0), coalesce((e ->> 'output_tokens')::bigint, 0),
           coalesce((e ->> 'cost_usd')::numeric, 0), coalesce((e ->> 'unpriced_calls')::bigint, 0)
      from jsonb_array_elements(usage) e
    on conflict on constraint model_usage_pkey do update
       set calls = u.calls + excluded.calls, failed_calls = u.failed_calls + excluded.failed_calls,
           input_tokens = u.input_tokens + excluded.input_tokens,
           output_tokens = u.output_tokens + excluded.output_tokens,
           cost_usd = u.cost_usd + excluded.cost_usd, unpriced_calls = u.unpriced_calls + excluded.unpriced_calls;
end
$$;
comment on function vera.record_model_usage(text, jsonb) is
    'Adds what the worker''s model calls for a group used to its totals for today (worker)';
alter function vera.record_model_usage(text, jsonb) owner to vera_searcher;
grant execute on function vera.record_model_usage(text, jsonb) to vera_worker;

-- Contract: the model usage of the groups the caller administers (or of the
-- one named) over the last `days` days (today, UTC, and the days before it):
-- per group, provider, model and purpose, summed over the days, the largest
-- cost first. days: 1 to 366 (22023). Admins of each group (health_groups:
-- 42501 for another tenant's group and one that exists nowhere alike).
-- Errors: VA005, 42501, 22023.
create or replace function vera.group_model_usage(of_group text default null, days integer default 30)
returns table (group_id text, provider text, model text, purpose text, calls bigint, failed_calls bigint,
               input_tokens bigint, output_tokens bigint, cost_usd double precision, unpriced_calls bigint,
               first_day date, last_day date)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    targets text[];
begin
    if group_model_usage.days is null or not group_model_usage.days between 1 and 366 then
        raise exception 'days must be from 1 to 366' using errcode = '22023';
    end if;
    targets := vera.health_groups(group_model_usage.of_group);
    return query
        select u.group_id, u.provider, u.model, u.purpose, sum(u.calls)::bigint, sum(u.failed_calls)::bigint,
               sum(u.input_tokens)::bigint, sum(u.output_tokens)::bigint, sum(u.cost_usd)::double precision,
               sum(u.unpriced_calls)::bigint, min(u.day), max(u.day)
          from vera.model_usage u
         where u.group_id = any (targets)
           and u.day > (now() at time zone 'utc')::date - group_model_usage.days
         group by u.group_id, u.provider, u.model, u.purpose
         order by sum(u.cost_usd) desc, u.group_id, u.provider, u.model, u.purpose;
end
$$;
comment on function vera.group_model_usage(text, integer) is
    'Model calls, tokens and estimated cost of the groups the caller administers over the last days';
grant execute on function vera.group_model_usage(text, integer) to vera_app, vera_worker, vera_gateway;

reset role;
