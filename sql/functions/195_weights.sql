-- The blend's weights learned from votes: the calibration (by hand, or on
-- the worker's schedule), the guards every calibrated set passes (one place:
-- vera.guarded_weights), its history and its rollback.
set role vera_owner;

-- what vera_searcher's calibration calls (it runs them as itself)
grant execute on function vera.signal_names() to vera_searcher;
grant execute on function vera.default_weights() to vera_searcher;
grant execute on function vera.setting_default(text) to vera_searcher;
grant execute on function vera.audit(text, text, text, text, jsonb) to vera_searcher;

-- Internal: the guards a calibrated weight set passes before it is kept,
-- the one place they live. From the group's current weights toward the
-- proposed ones (held: signals that keep their current share, as the
-- period does when no vote tells about it): (1) no other signal of the
-- target is below floor (those above it give up the difference in
-- proportion to what they hold above it);
-- (2) the set moves along the straight line from current to that target,
-- only as far as keeps every signal's change within max_step. Both ends
-- sum to 1, so every point of the line does; a weight at or above the floor
-- stays there. Rounded to 6 digits, what rounding leaves over goes to the largest.
create or replace function vera.guarded_weights(current jsonb, proposed jsonb, floor numeric, max_step numeric,
                                                held text[] default '{}')
returns jsonb
language plpgsql immutable
set search_path = vera, pg_temp
as $$
declare
    names constant text[] := vera.signal_names();
    c numeric[] := '{}';
    p numeric[] := '{}';
    w numeric[] := '{}';
    total numeric := 0;
    kept numeric := 0;
    deficit numeric := 0;
    room numeric := 0;
    reach numeric := 1;
    largest integer := 1;
    result jsonb := '{}';
    i integer;
begin
    if floor is null or floor < 0 or floor * cardinality(names) > 1 then
        raise exception 'the calibration floor must lie in [0, %], got %', round(1.0 / cardinality(names), 4), floor
            using errcode = '22023';
    end if;
    if max_step is null or max_step <= 0 or max_step > 1 then
        raise exception 'the calibration step must lie in (0, 1], got %', max_step using errcode = '22023';
    end if;
    for i in 1 .. cardinality(names) loop
        c := c || coalesce((current ->> names[i])::numeric, 0);
        p := p || case when names[i] = any (held) then c[i]
                       else greatest(coalesce((proposed ->> names[i])::numeric, 0), 0) end;
        if not names[i] = any (held) then
            total := total + p[i];
            kept := kept + c[i];
        end if;
    end loop;
    if total <= 0 then
        return current;
    end if;
    for i in 1 .. cardinality(names) loop
        if not names[i] = any (held) then
            -- the others share what the held ones leave, as the current set does
            p[i] := p[i] / total * kept;
            deficit := deficit + greatest(floor - p[i], 0);
            room := room + greatest(p[i] - floor, 0);
        end if;
    end loop;
    for i in 1 .. cardinality(names) loop
        if names[i] = any (held) then
            null;
        elsif p[i] <= floor then
            p[i] := floor;
        elsif room > 0 then
            p[i] := p[i] - deficit * (p[i] - floor) / room;
        end if;
        if abs(p[i] - c[i]) > max_step then
            reach := least(reach, max_step / abs(p[i] - c[i]));
        end if;
    end loop;
    for i in 1 .. cardinality(names) loop
        w := w || round(c[i] + reach * (p[i] - c[i]), 6);
        if w[i] > w[largest] then
            largest := i;
        end if;
    end loop;
    w[largest] := w[largest] + (1 - (select sum(x) from unnest(w) x));
    for i in 1 .. cardinality(names) loop
        result := result || jsonb_build_object(names[i], w[i]);
    end loop;
    return result;
end
$$;
comment on function vera.guarded_weights(jsonb, jsonb, numeric, numeric, text[]) is
    'Internal: a proposed weight set held above the floor and within the step of the current one';
-- vera.run_calibration (vera_searcher's) calls it
grant execute on function vera.guarded_weights(jsonb, jsonb, numeric, numeric, text[]) to vera_searcher;

-- Internal: a group's setting read past row-level security (the schedule runs with no caller).
create or replace function vera.group_setting(target_group text, name text)
returns jsonb
language sql stable
set search_path = vera, pg_temp
as $$
    select coalesce((select s.value from vera.group_settings s where s.group_id = target_group and s.name = group_setting.name),
                    vera.setting_default(group_setting.name))
$$;
comment on function vera.group_setting(text, text) is 'Internal: a group''s setting, read by vera_searcher''s functions';
grant execute on function vera.group_setting(text, text) to vera_searcher;

-- Internal: the weights a group ranks with now (its active set, else the
-- defaults), read past row-level security.
create or replace function vera.current_weights(target_group text)
returns jsonb
language sql stable
set search_path = vera, pg_temp
as $$
    select coalesce(
        (select jsonb_build_object(
                    'relevance', w.relevance, 'authority', w.authority, 'verification', w.verification,
                    'recency', w.recency, 'feedback', w.feedback, 'confidence', w.confidence,
                    'period', w.period, 'half_life', w.half_life::text, 'weight_set_id', w.weight_set_id)
           from vera.ranking_weights w
          where w.group_id = target_group and w.active),
        vera.default_weights())
$$;
comment on function vera.current_weights(text) is 'Internal: a group''s active weights (else the defaults), past RLS';
grant execute on function vera.current_weights(text) to vera_searcher;

-- Internal: the calibration itself (vera.calibrate_weights checks the
-- caller, vera.calibrate_due the schedule). By the mean-difference rule:
-- each signal's separation is its mean on helpful (up) hits minus its mean
-- on unhelpful (down) hits; a signal's proposed weight is in proportion to a
-- positive separation (the period, known only for votes on searches that
-- asked about one, keeps its share when it has no separation); the
-- proposal then passes vera.guarded_weights with the group's
-- ranking.calibration_floor and ranking.calibration_max_step. The set
-- becomes the active one only when the votes reach min_samples, both
-- kinds are present and some signal separates; the change is audited with
-- the weights before and after and the unguarded proposal.
create or replace function vera.run_calibration(target_group text, needed integer, trigger text)
returns table (weight_set_id uuid, persisted boolean, sample_count integer, helpful integer, unhelpful integer,
               weights jsonb, separation jsonb)
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    signal_names constant text[] := vera.signal_names();
    before constant jsonb := vera.current_weights(target_group);
    stats record;
    means record;
    gap numeric;
    kept_share numeric := 0;
    positive_total numeric := 0;
    proposed jsonb := '{}';
    gaps jsonb := '{}';
    i integer;
    kept uuid;
begin
    if needed is null or needed < 1 then
        raise exception 'min_samples must be at least 1, got %', needed using errcode = '22023';
    end if;
    select count(*)::integer as total, count(*) filter (where f.vote > 0)::integer as ups,
           count(*) filter (where f.vote < 0)::integer as downs
      into stats
      from vera.feedback f where f.group_id = target_group;
    -- each signal's mean on up and on down votes (avg skips the votes that lack it)
    select array_agg(m.up order by m.i) as up_means, array_agg(m.down order by m.i) as down_means
      into means
      from (select n.i, avg(f.signals[n.i]) filter (where f.vote > 0) as up,
                   avg(f.signals[n.i]) filter (where f.vote < 0) as down
              from generate_series(1, cardinality(signal_names)) n(i)
              left join vera.feedback f on f.group_id = target_group
             group by n.i) m;
    sample_count := stats.total;
    helpful := stats.ups;
    unhelpful := stats.downs;
    persisted := false;
    if stats.ups = 0 or stats.downs = 0 then
        return next;  -- no contrast to learn from
        return;
    end if;
    for i in 1 .. cardinality(signal_names) loop
        gap := round((means.up_means[i] - means.down_means[i])::numeric, 6);
        gaps := gaps || jsonb_build_object(signal_names[i], gap);
        if gap is null then  -- not known for these votes: it keeps its share
            kept_share := kept_share + coalesce((before ->> signal_names[i])::numeric, 0);
        end if;
        positive_total := positive_total + greatest(coalesce(gap, 0), 0);
    end loop;
    separation := gaps;
    if positive_total <= 0 then
        return next;
        return;
    end if;
    for i in 1 .. cardinality(signal_names) loop
        proposed := proposed || jsonb_build_object(signal_names[i], case
            when gaps ->> signal_names[i] is null then coalesce((before ->> signal_names[i])::numeric, 0)
            else greatest((gaps ->> signal_names[i])::numeric, 0) / positive_total * (1 - kept_share) end);
    end loop;
    weights := vera.guarded_weights(before, proposed,
                                    (vera.group_setting(target_group, 'ranking.calibration_floor'))::numeric,
                                    (vera.group_setting(target_group, 'ranking.calibration_max_step'))::numeric,
                                    array(select n from unnest(signal_names) n where gaps ->> n is null))
               || jsonb_build_object('half_life', before ->> 'half_life');
    if stats.total < needed then
        return next;
        return;
    end if;

    update vera.ranking_weights w set active = false where w.group_id = target_group and w.active;
    insert into vera.ranking_weights as w (group_id, relevance, authority, verification, recency, feedback, confidence,
                                           period, half_life, sample_count, separation, active, created_by,
                                           created_at)
    values (target_group, (weights ->> 'relevance')::real, (weights ->> 'authority')::real,
            (weights ->> 'verification')::real, (weights ->> 'recency')::real, (weights ->> 'feedback')::real,
            (weights ->> 'confidence')::real, (weights ->> 'period')::real, (weights ->> 'half_life')::interval,
            stats.total, gaps, true, vera.current_principal(), clock_timestamp())
    returning w.weight_set_id into kept;
    weight_set_id := kept;
    persisted := true;
    perform vera.audit(target_group, 'ranking.calibrate', 'ranking_weights', kept::text,
                       jsonb_build_object('before', before, 'after', weights, 'proposed', proposed,
                                          'separation', gaps, 'sample_count', stats.total, 'trigger', trigger));
    return next;
end
$$;
comment on function vera.run_calibration(text, integer, text) is
    'Internal: derives, guards and (above the minimum) activates a group''s weights from its votes';
alter function vera.run_calibration(text, integer, text) owner to vera_searcher;
-- vera.calibrate_weights (a definer: vera_owner) calls it; vera_searcher owns it
grant execute on function vera.run_calibration(text, integer, text) to vera_owner;

-- Contract: calibrates a group's weights from its votes (vera.run_calibration:
-- the mean-difference rule, then the floor and step guards). The set becomes
-- the group's active one (search uses it from the next call) only when the
-- votes reach the group's ranking.calibration_min_samples (or min_samples),
-- both kinds of vote are present and some signal separates; otherwise it
-- is returned, not kept. Admins only.
create or replace function vera.calibrate_weights(group_id text, min_samples integer default null)
returns table (weight_set_id uuid, persisted boolean, sample_count integer, helpful integer, unhelpful integer,
               weights jsonb, separation jsonb)
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(calibrate_weights.group_id, 'admin');
    return query select * from vera.run_calibration(
        calibrate_weights.group_id,
        coalesce(min_samples, (vera.setting(calibrate_weights.group_id, 'ranking.calibration_min_samples'))::integer),
        'manual');
end
$$;
comment on function vera.calibrate_weights(text, integer) is
    'Derives blend weights from feedback (mean-difference rule, floor and step guards); activates them above the minimum sample count';
grant execute on function vera.calibrate_weights(text, integer) to vera_app, vera_worker, vera_gateway;

-- Contract: the scheduled calibration (the worker's periodic task, with no
-- caller): every group whose ranking.calibration_schedule is on and that has
-- at least ranking.calibration_min_new_votes votes cast since its last
-- calibrated set is calibrated (as vera.calibrate_weights, with the
-- group's ranking.calibration_min_samples); the others are reported as
-- skipped. One row per group with votes. The worker and operators only; a
-- principal calibrates with vera.calibrate_weights (42501 here).
create or replace function vera.calibrate_due()
returns table (group_id text, new_votes integer, calibrated boolean, persisted boolean, weight_set_id uuid,
               sample_count integer)
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    due record;
    result record;
begin
    if vera.current_principal() is not null then
        raise exception 'the scheduled calibration runs as the worker: a principal calls vera.calibrate_weights'
            using errcode = '42501';
    end if;
    for due in
        select g.group_id,
               (select count(*)::integer from vera.feedback f
                 where f.group_id = g.group_id
                   and f.created_at > coalesce((select max(w.created_at) from vera.ranking_weights w
                                                 where w.group_id = g.group_id and w.sample_count > 0),
                                               '-infinity')) as fresh
          from vera.groups g
         where exists (select from vera.feedback f where f.group_id = g.group_id)
           and (vera.group_setting(g.group_id, 'ranking.calibration_schedule'))::boolean
         order by g.group_id
    loop
        group_id := due.group_id;
        new_votes := due.fresh;
        calibrated := due.fresh >= (vera.group_setting(due.group_id, 'ranking.calibration_min_new_votes'))::integer;
        persisted := false;
        weight_set_id := null;
        sample_count := null;
        if calibrated then
            select * into result from vera.run_calibration(
                due.group_id, (vera.group_setting(due.group_id, 'ranking.calibration_min_samples'))::integer,
                'schedule');
            persisted := result.persisted;
            weight_set_id := result.weight_set_id;
            sample_count := result.sample_count;
        end if;
        return next;
    end loop;
end
$$;
comment on function vera.calibrate_due() is
    'The scheduled calibration: every group with enough new votes (worker and operators)';
alter function vera.calibrate_due() owner to vera_searcher;
grant execute on function vera.calibrate_due() to vera_worker, vera_operator;

-- Contract: a group's weight sets, newest first: each calibrated set with
-- whether it is the active one, when and by whom (null: the schedule) it was
-- made, from how many votes, and its weights. Viewers of the group.
create or replace function vera.weight_history(group_id text)
returns table (weight_set_id uuid, active boolean, created_at timestamptz, created_by uuid, sample_count integer,
               weights jsonb)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(weight_history.group_id, 'viewer');
    return query
        select w.weight_set_id, w.active, w.created_at, w.created_by, w.sample_count,
               jsonb_build_object('relevance', w.relevance, 'authority', w.authority, 'verification', w.verification,
                                  'recency', w.recency, 'feedback', w.feedback, 'confidence', w.confidence,
                                  'period', w.period, 'half_life', w.half_life::text)
          from vera.ranking_weights w
         where w.group_id = weight_history.group_id
         order by w.created_at desc, w.weight_set_id;
end
$$;
comment on function vera.weight_history(text) is 'A group''s calibrated weight sets, newest first';
grant execute on function vera.weight_history(text) to vera_app, vera_worker, vera_gateway;

-- Contract: makes an earlier weight set of the group the active one again:
-- weight_set_id, or without it the set made before the active one (the
-- defaults when there is none). VN001 for a set the group does not have, or
-- when the group ranks with the defaults and names none. Audited with the
-- weights before and after. Admins only.
create or replace function vera.rollback_weights(group_id text, weight_set_id uuid default null)
returns table (active_set uuid, weights jsonb)
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    before constant jsonb := vera.active_weights(rollback_weights.group_id);
    target uuid := rollback_weights.weight_set_id;
begin
    perform vera.require_role(rollback_weights.group_id, 'admin');
    if target is null then
        if before ->> 'weight_set_id' is null then
            raise exception 'group % ranks with the default weights: there is nothing to roll back',
                vera.shown(rollback_weights.group_id) using errcode = 'VN001';
        end if;
        select w.weight_set_id into target
          from vera.ranking_weights w, vera.ranking_weights now_active
         where now_active.group_id = rollback_weights.group_id
           and now_active.weight_set_id = (before ->> 'weight_set_id')::uuid
           and w.group_id = rollback_weights.group_id
           and (w.created_at, w.weight_set_id) < (now_active.created_at, now_active.weight_set_id)
         order by w.created_at desc, w.weight_set_id desc
         limit 1;
    elsif not exists (select from vera.ranking_weights w
                       where w.group_id = rollback_weights.group_id and w.weight_set_id = target) then
        raise exception 'group % has no weight set %', vera.shown(rollback_weights.group_id), target
            using errcode = 'VN001';
    end if;
    update vera.ranking_weights w set active = false where w.group_id = rollback_weights.group_id and w.active;
    if target is not null then
        update vera.ranking_weights w set active = true
         where w.group_id = rollback_weights.group_id and w.weight_set_id = target;
    end if;
    active_set := target;
    weights := vera.active_weights(rollback_weights.group_id) - 'weight_set_id';
    perform vera.audit(rollback_weights.group_id, 'ranking.rollback', 'ranking_weights', target::text,
                       jsonb_build_object('before', before, 'after', weights));
    return next;
end
$$;
comment on function vera.rollback_weights(text, uuid) is
    'Makes an earlier weight set (by default the one before the active set) the group''s active one';
grant execute on function vera.rollback_weights(text, uuid) to vera_app, vera_worker, vera_gateway;

reset role;
