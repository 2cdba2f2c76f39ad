-- Settings: documented defaults, overridable per group by its admins.
set role vera_owner;

-- The defaults, and the only setting names there are.
create or replace function vera.setting_default(name text)
returns jsonb
language sql immutable
set search_path = vera, pg_temp
as $$
    select case name
        -- entity resolution ladder: pg_trgm similarity that links a name to an alias
        when 'er.trigram_link' then '0.85'::jsonb
        -- cosine similarity of name embeddings that links at once
        when 'er.semantic_link' then '0.86'::jsonb
        -- cosine similarity from which candidates go to the equivalence judge
        when 'er.semantic_candidate' then '0.55'::jsonb
        -- how many candidates the judge sees
        when 'er.candidate_limit' then '5'::jsonb
        -- enqueue a contradiction-judge job for new values of multi-valued predicates
        when 'judge.contradiction' then 'false'::jsonb
        -- how long a retract_cleanup job waits for the caller to clean up in-process
        when 'retract.cleanup_delay_seconds' then '60'::jsonb
        -- votes a calibration needs before its weights become the active set
        when 'ranking.calibration_min_samples' then '50'::jsonb
        -- the least weight a calibration may give a signal (sql/functions/195_weights.sql)
        when 'ranking.calibration_floor' then '0.02'::jsonb
        -- the most one calibration may move a signal's weight
        when 'ranking.calibration_max_step' then '0.1'::jsonb
        -- whether the worker's schedule calibrates the group
        when 'ranking.calibration_schedule' then 'true'::jsonb
        -- votes cast since the last calibrated set that a scheduled run needs (fewer: skipped)
        when 'ranking.calibration_min_new_votes' then '20'::jsonb
    end
$$;
comment on function vera.setting_default(text) is 'Default value of a setting; null for an unknown name';
grant execute on function vera.setting_default(text) to vera_app, vera_worker, vera_gateway;

-- Internal: the settings that are policy: they decide what a write stores
-- (how a name resolves to an entity, which new values a judge weighs), so
-- the same sources give other facts under other values. Snapshots pin their
-- values (vera.live_pins); a setting added above that changes what is
-- stored belongs here too.
create or replace function vera.policy_settings()
returns text[]
language sql immutable parallel safe
set search_path = vera, pg_temp
as $$
    select array['er.trigram_link', 'er.semantic_link', 'er.semantic_candidate', 'er.candidate_limit',
                 'judge.contradiction']
$$;
comment on function vera.policy_settings() is
    'Internal: the settings that decide what a write stores (entity resolution, the judge); snapshots pin them';

-- Contract: a setting's value in a group (its override, else the default).
create or replace function vera.setting(group_id text, name text)
returns jsonb
language sql stable security definer
set search_path = vera, pg_temp
as $$
    select coalesce(
        (select s.value from vera.group_settings s where s.group_id = setting.group_id and s.name = setting.name),
        vera.setting_default(setting.name))
$$;
comment on function vera.setting(text, text) is 'A setting''s value in a group: its override, else the default';
grant execute on function vera.setting(text, text) to vera_app, vera_worker, vera_gateway;

-- Contract: overrides a setting in a group the caller administers (null resets
-- it to the default). Unknown names and values of the wrong type are refused.
create or replace function vera.set_setting(group_id text, name text, value jsonb)
returns jsonb
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    fallback jsonb := vera.setting_default(set_setting.name);
    number float8;
begin
    perform vera.require_role(set_setting.group_id, 'admin');
    if fallback is null then
        raise exception 'unknown setting %', vera.shown(set_setting.name) using errcode = '22023';
    end if;
    if value is null then
        delete from vera.group_settings s where s.group_id = set_setting.group_id and s.name = set_setting.name;
    else
        -- the readers cast a number to float8: one outside its range (1e400, 1e-400) is refused here
        begin
            number := case when jsonb_typeof(value) = 'number' then value::float8 end;
        exception when numeric_value_out_of_range then
            raise exception 'invalid value % for setting % (default %)', vera.shown(value::text), set_setting.name, fallback
                using errcode = '22023';
        end;
        if jsonb_typeof(value) <> jsonb_typeof(fallback)
           or (jsonb_typeof(value) = 'number' and set_setting.name like 'er.%'
               and set_setting.name <> 'er.candidate_limit' and (number < 0 or number > 1))
           or (jsonb_typeof(value) = 'number' and (set_setting.name = 'er.candidate_limit'
               or set_setting.name like 'retract.%') and (number < 0 or number > 86400))
           or (set_setting.name in ('ranking.calibration_min_samples', 'ranking.calibration_min_new_votes')
               and (number < 1 or number > 1000000 or number <> trunc(number)))
           -- a floor above 1/7 cannot hold for the seven signals at once
           or (set_setting.name = 'ranking.calibration_floor' and (number < 0 or number > 0.14))
           or (set_setting.name = 'ranking.calibration_max_step' and (number <= 0 or number > 1)) then
            raise exception 'invalid value % for setting % (default %)', vera.shown(value::text), set_setting.name, fallback
                using errcode = '22023';
        end if;
        insert into vera.group_settings as s (group_id, name, value, updated_by)
        values (set_setting.group_id, set_setting.name, value, vera.current_principal())
        on conflict on constraint group_settings_pkey do update
            set value = excluded.value, updated_at = now(), updated_by = excluded.updated_by;
    end if;
    perform vera.audit(set_setting.group_id, 'setting.set', 'setting', set_setting.name,
                       jsonb_build_object('value', value));
    return vera.setting(set_setting.group_id, set_setting.name);
end
$$;
comment on function vera.set_setting(text, text, jsonb) is
    'Overrides (or with null resets) a setting in a group the caller administers';
grant execute on function vera.set_setting(text, text, jsonb) to vera_app, vera_worker, vera_gateway;

reset role;
