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

-- The calibration of the weights from these votes, its guards, its schedule, its history
-- and rollback: sql/functions/195_weights.sql.

-- Contract: makes the defaults the group's weights again (admins).
create or replace function vera.reset_weights(group_id text)
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    before jsonb;
begin
    perform vera.require_role(reset_weights.group_id, 'admin');
    before := vera.active_weights(reset_weights.group_id);
    update vera.ranking_weights w set active = false where w.group_id = reset_weights.group_id and w.active;
    perform vera.audit(reset_weights.group_id, 'ranking.reset', 'ranking_weights', null,
                       jsonb_build_object('before', before, 'after', vera.default_weights()));
end
$$;
comment on function vera.reset_weights(text) is 'Deactivates a group''s calibrated weights: search uses the defaults again';
grant execute on function vera.reset_weights(text) to vera_app, vera_worker, vera_gateway;

reset role;
