-- Feedback on hits and the calibration of the blend's weights from it.
set role vera_owner;

-- Contract: records the caller's vote ('up' or 'down') on a hit of a query
-- (and of the period it asked about, during), with the seven signals the hit
-- has for that query (period null without during). The signals are computed
-- here by running the search again (a client cannot hand in made-up ones),
-- so the item must be among the first 100 hits of the query (VN001
-- otherwise). The query, trimmed, is at most 4,000 characters (22001). One vote per principal, hit and query: voting again replaces it.
create or replace function vera.record_feedback(
    kind vera.item_kind, item_id uuid, query text, vote text,
    query_embedding public.vector default null, as_of timestamptz default null, groups text[] default null,
    embedding_model text default null, during tstzrange default null)
returns setof vera.recorded_feedback
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
    normalised_query text;
    hit record;
    vote_sign smallint;
begin
    if kind is null or item_id is null then
        raise exception 'feedback needs the kind and id of a hit' using errcode = '22023';
    end if;
    vote_sign := case lower(btrim(coalesce(vote, ''))) when 'up' then 1 when 'down' then -1 end;
    if vote_sign is null then
        raise exception 'vote must be ''up'' or ''down'', got %', coalesce(vera.shown(quote_literal(vote)), 'null')
            using errcode = '22023';
    end if;
    normalised_query := regexp_replace(lower(btrim(coalesce(query, ''))), '\s+', ' ', 'g');
    if normalised_query = '' then
        raise exception 'feedback needs the query the hit answered' using errcode = '22023';
    end if;
    -- the vote keeps the query (trimmed): refused here, before the search, not by the table's check
    perform vera.check_length(btrim(query), 'query', 4000);
    select * into hit
      from vera.search(query, query_embedding, k => 100, as_of => record_feedback.as_of,
                       groups => record_feedback.groups, embedding_model => record_feedback.embedding_model,
                       during => record_feedback.during) s
     where s.kind = record_feedback.kind and s.item_id = record_feedback.item_id;
    if not found then
        raise exception '% % is not among the first 100 hits of this query', kind, item_id using errcode = 'VN001';
    end if;
    return query
        insert into vera.feedback as fb (group_id, principal_id, item_kind, item_id, query_text, query_sha256, vote,
                                         signals)
        values (hit.group_id, caller, kind, item_id, btrim(query), sha256(convert_to(normalised_query, 'UTF8')),
                vote_sign, array[hit.relevance, hit.authority, hit.verification, hit.recency, hit.feedback,
                                 hit.confidence, hit.period])
        on conflict on constraint feedback_one_vote do update
            set vote = excluded.vote, signals = excluded.signals, query_text = excluded.query_text,
                created_at = now()
        returning fb.feedback_id, fb.group_id,
                  jsonb_build_object('relevance', hit.relevance, 'authority', hit.authority,
                                     'verification', hit.verification, 'recency', hit.recency,
                                     'feedback', hit.feedback, 'confidence', hit.confidence,
                                     'period', hit.period),
                  (xmax = 0);
end
$$;
comment on function vera.record_feedback(vera.item_kind, uuid, text, text, public.vector, timestamptz, text[], text,
                                         tstzrange) is
    'Records the caller''s up/down vote on a hit of a query, with the hit''s seven signals';
grant execute on function vera.record_feedback(vera.item_kind, uuid, text, text, public.vector, timestamptz, text[],
                                               text, tstzrange)
    to vera_app, vera_worker, vera_gateway;

-- Contract: derives the blend's weights of a group from its feedback by the
-- mean-difference rule: each signal's separation is its mean on helpful
-- (up) hits minus its mean on unhelpful (down) hits; a signal earns weight in
-- proportion to a positive separation, none gets a negative weight, and the
-- weights sum to 1. The period signal is known only for votes on searches
-- that asked about a period: without such votes of both kinds its
-- separation is null and it keeps the share the active set gives it (the
-- other six share the rest). The set becomes the group's active one
-- (search uses it from the next call) only when the votes reach the group's
-- ranking.calibration_min_samples (or min_samples), both kinds of vote are
-- present and some signal separates; otherwise it is returned, not kept.
-- Admins only.
create or replace function vera.calibrate_weights(group_id text, min_samples integer default null)
returns table (weight_set_id uuid, persisted boolean, sample_count integer, helpful integer, unhelpful integer,
               weights jsonb, separation jsonb)
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    signal_names constant text[] := vera.signal_names();
    needed integer;
    stats record;
    means record;
    gap numeric;
    kept_share numeric := 0;
    positive_total numeric := 0;
    share numeric;
    shares numeric[] := '{}';
    largest integer := 1;
    new_weights jsonb := '{}';
    gaps jsonb := '{}';
    i integer;
    kept uuid;
begin
    perform vera.require_role(calibrate_weights.group_id, 'admin');
    needed := coalesce(min_samples, (vera.setting(calibrate_weights.group_id, 'ranking.calibration_min_samples'))::integer);
    if needed < 1 then
        raise exception 'min_samples must be at least 1, got %', needed using errcode = '22023';
    end if;
    select count(*)::integer as total,
           count(*) filter (where f.vote > 0)::integer as ups,
           count(*) filter (where f.vote < 0)::integer as downs
      into stats
      from vera.feedback f
     where f.group_id = calibrate_weights.group_id;
    -- each signal's mean on up and on down votes (avg skips the votes that lack it)
    select array_agg(m.up order by m.i) as up_means, array_agg(m.down order by m.i) as down_means
      into means
      from (select n.i, avg(f.signals[n.i]) filter (where f.vote > 0) as up,
                   avg(f.signals[n.i]) filter (where f.vote < 0) as down
              from generate_series(1, cardinality(signal_names)) n(i)
              left join vera.feedback f on f.group_id = calibrate_weights.group_id
             group by n.i) m;

    sample_count := stats.total;
    helpful := stats.ups;
    unhelpful := stats.downs;
    persisted := false;
    if stats.ups = 0 or stats.downs = 0 then
        -- no contrast to learn from
        return next;
        return;
    end if;
    -- the weights are computed from the rounded gaps they are shown with, in
    -- numeric, and rounded to 6 digits; what rounding leaves over goes to the
    -- largest, so they sum to exactly 1 and none leaves [0, 1]
    for i in 1 .. cardinality(signal_names) loop
        gap := round((means.up_means[i] - means.down_means[i])::numeric, 6);
        gaps := gaps || jsonb_build_object(signal_names[i], gap);
        if gap is null then  -- not known for these votes: it keeps its share
            kept_share := kept_share
                + coalesce((vera.active_weights(calibrate_weights.group_id) ->> signal_names[i])::numeric, 0);
        end if;
        positive_total := positive_total + greatest(coalesce(gap, 0), 0);
    end loop;
    separation := gaps;
    if positive_total <= 0 then
        return next;
        return;
    end if;
    for i in 1 .. cardinality(signal_names) loop
        shares := shares || case
            when gaps ->> signal_names[i] is null
                then round(coalesce((vera.active_weights(calibrate_weights.group_id) ->> signal_names[i])::numeric, 0), 6)
            else round(greatest((gaps ->> signal_names[i])::numeric, 0) / positive_total * (1 - kept_share), 6) end;
        if shares[i] > shares[largest] then
            largest := i;
        end if;
    end loop;
    share := 1 - (select sum(x) from unnest(shares) x);
    shares[largest] := shares[largest] + share;
    for i in 1 .. cardinality(signal_names) loop
        new_weights := new_weights || jsonb_build_object(signal_names[i], shares[i]);
    end loop;
    weights := new_weights || jsonb_build_object(
        'half_life', vera.active_weights(calibrate_weights.group_id) ->> 'half_life');
    if stats.total < needed then
        return next;
        return;
    end if;

    update vera.ranking_weights w set active = false where w.group_id = calibrate_weights.group_id and w.active;
    insert into vera.ranking_weights as w (group_id, relevance, authority, verification, recency, feedback, confidence,
                                           period, half_life, sample_count, separation, active, created_by)
    values (calibrate_weights.group_id, (weights ->> 'relevance')::real, (weights ->> 'authority')::real,
            (weights ->> 'verification')::real, (weights ->> 'recency')::real, (weights ->> 'feedback')::real,
            (weights ->> 'confidence')::real, (weights ->> 'period')::real, (weights ->> 'half_life')::interval,
            stats.total, gaps, true, vera.current_principal())
    returning w.weight_set_id into kept;
    weight_set_id := kept;
    persisted := true;
    perform vera.audit(calibrate_weights.group_id, 'ranking.calibrate', 'ranking_weights', kept::text,
                       jsonb_build_object('weights', weights, 'separation', gaps, 'sample_count', stats.total));
    return next;
end
$$;
comment on function vera.calibrate_weights(text, integer) is
    'Derives blend weights from feedback (mean-difference rule); activates them above the minimum sample count';
grant execute on function vera.calibrate_weights(text, integer) to vera_app, vera_worker, vera_gateway;

-- Contract: makes the defaults the group's weights again (admins).
create or replace function vera.reset_weights(group_id text)
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(reset_weights.group_id, 'admin');
    update vera.ranking_weights w set active = false where w.group_id = reset_weights.group_id and w.active;
    perform vera.audit(reset_weights.group_id, 'ranking.reset', 'ranking_weights', null, '{}');
end
$$;
comment on function vera.reset_weights(text) is 'Deactivates a group''s calibrated weights: search uses the defaults again';
grant execute on function vera.reset_weights(text) to vera_app, vera_worker, vera_gateway;

reset role;
