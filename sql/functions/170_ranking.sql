-- Ranking building blocks: the search version snapshots pin, the six signals
-- of the blend, the weight sets, and the lexical query.
set role vera_owner;

-- Contract: the version of the ranking code. A snapshot records it and refuses
-- to answer once it differs; bump it whenever stage 1 or stage 2 changes what
-- a search returns.
create or replace function vera.search_version()
returns text
language sql immutable
set search_path = vera, pg_temp
as $$ select 'vera-search/3' $$;
comment on function vera.search_version() is 'Version of the ranking code; snapshots pin it';

-- Contract: the blend's default weights and recency half-life.
create or replace function vera.default_weights()
returns jsonb
language sql immutable
set search_path = vera, pg_temp
as $$
    select '{"relevance": 0.40, "authority": 0.18, "verification": 0.12, "recency": 0.12,
             "feedback": 0.08, "confidence": 0.10, "half_life": "30 days"}'::jsonb
$$;
comment on function vera.default_weights() is 'Default weights of the six signals and the recency half-life';

-- Internal: checks weights a caller passes in and completes them: the six
-- signals, each a non-negative number (absent ones count 0), scaled to sum 1;
-- half_life an interval of at least one second (default 30 days).
create or replace function vera.checked_weights(weights jsonb)
returns jsonb
language plpgsql immutable
set search_path = vera, pg_temp
as $$
declare
    signal_names constant text[] := array['relevance', 'authority', 'verification', 'recency', 'feedback', 'confidence'];
    unknown text;
    -- numeric, not float8: a JSON number may lie outside float8's range (1e400, 1e-400) or overflow the sum
    total numeric := 0;
    share numeric;
    half_life interval;
    result jsonb := '{}';
    signal text;
begin
    if jsonb_typeof(weights) is distinct from 'object' then
        raise exception 'weights must be a JSON object of the six signals (%)', array_to_string(signal_names, ', ')
            using errcode = '22023';
    end if;
    select k into unknown from jsonb_object_keys(weights) k where not k = any (signal_names || 'half_life'::text) limit 1;
    if unknown is not null then
        raise exception 'unknown weight "%": the signals are %, plus half_life', vera.shown(unknown), array_to_string(signal_names, ', ')
            using errcode = '22023';
    end if;
    foreach signal in array signal_names loop
        if weights ? signal and (jsonb_typeof(weights -> signal) <> 'number' or (weights ->> signal)::numeric < 0) then
            raise exception 'weight % must be a non-negative number, got %', signal, vera.shown((weights -> signal)::text) using errcode = '22023';
        end if;
        total := total + coalesce((weights ->> signal)::numeric, 0);
    end loop;
    if total <= 0 then
        raise exception 'at least one weight must be positive' using errcode = '22023';
    end if;
    foreach signal in array signal_names loop
        share := coalesce((weights ->> signal)::numeric, 0) / total;
        -- a share below one in a billion counts 0: it changes no ranking, and its products with the
        -- signals could underflow float8 (9e-94 times a recency of 1e-30 is below its range)
        result := result || jsonb_build_object(signal, case when share < 1e-9 then 0 else share::float8 end);
    end loop;
    begin
        half_life := coalesce(weights ->> 'half_life', '30 days')::interval;
    exception when others then
        raise exception 'half_life must be an interval such as "30 days", got %', vera.shown((weights -> 'half_life')::text)
            using errcode = '22023';
    end;
    if half_life < interval '1 second' then
        raise exception 'half_life must be at least one second, got %', half_life using errcode = '22023';
    end if;
    return result || jsonb_build_object('half_life', half_life::text);
end
$$;
comment on function vera.checked_weights(jsonb) is
    'Internal: validates weights (six non-negative numbers, optional half_life) and scales them to sum 1';

-- Contract: the weights a group's searches use now: its active weight set,
-- else the defaults. Search reads it on every call, so a calibration takes
-- effect at once.
create or replace function vera.active_weights(group_id text)
returns jsonb
language sql stable security definer
set search_path = vera, pg_temp
as $$
    select coalesce(
        (select jsonb_build_object(
                    'relevance', w.relevance, 'authority', w.authority, 'verification', w.verification,
                    'recency', w.recency, 'feedback', w.feedback, 'confidence', w.confidence,
                    'half_life', w.half_life::text, 'weight_set_id', w.weight_set_id)
           from vera.ranking_weights w
          where w.group_id = active_weights.group_id and w.active),
        vera.default_weights())
$$;
comment on function vera.active_weights(text) is 'The active weight set of a group (RLS applies), else the defaults';

-- Signals, each in [0, 1]. Inlined into the blend (plain SQL, immutable).

-- human-verified 1.0, verified automatically 0.8, awaiting verification 0.5.
-- A passage is graded when it is stored (vera.store_chunks): text of a tier
-- 1-2 source counts as verified automatically, of a tier 3-4 source as
-- awaiting verification, and a reviewer's approval makes it human-verified.
create or replace function vera.verification_signal(verification vera.verification)
returns real
language sql immutable
as $$
    select case verification when 'human_verified' then 1.0 when 'pending' then 0.5 else 0.8 end::real
$$;
comment on function vera.verification_signal(vera.verification) is
    'Verification signal: human_verified 1.0, auto (and passages of tier 1-2 sources) 0.8, pending 0.5';

-- exp(-ln 2 * age / half_life), age from since (the blend passes the later
-- of the start of validity and the last confirmation by the source) to the
-- reference instant; 0 once the validity has ended at that instant
create or replace function vera.recency_signal(valid_from timestamptz, valid_to timestamptz,
                                                reference timestamptz, half_life interval)
returns real
language sql immutable
as $$
    select case
        when valid_to is not null and valid_to <= reference then 0
        -- past 100 half-lives the value is below 1e-30 (and exp would underflow)
        when extract(epoch from reference - valid_from) > 100 * extract(epoch from half_life) then 0
        else exp(-ln(2) * greatest(extract(epoch from reference - valid_from), 0)
                 / extract(epoch from half_life))
    end::real
$$;
comment on function vera.recency_signal(timestamptz, timestamptz, timestamptz, interval) is
    'Recency signal: exponential decay with the half-life; 0 when invalidated at the reference instant';

-- (up + 1) / (up + down + 2): 0.5 without votes
create or replace function vera.feedback_signal(up_votes integer, down_votes integer)
returns real
language sql immutable
as $$ select ((coalesce(up_votes, 0) + 1)::float8 / (coalesce(up_votes, 0) + coalesce(down_votes, 0) + 2))::real $$;
comment on function vera.feedback_signal(integer, integer) is 'Feedback signal: (up + 1) / (up + down + 2)';

-- The order of equal scores. Every place that orders candidates (each half
-- of stage 1 where scores tie, the blend, snapshot search) breaks ties by
-- keys that the data decides, never by a random id, so that the same data
-- gives the same order in any database. A key is bytes compared bytewise
-- (no collation can change it): its parts in UTF-8, each ended by a zero
-- byte, which UTF-8 text never contains, so comparing two keys compares
-- their parts in turn. Numbers are zero-padded, instants written in UTC.

-- a fact: its text, then its predicate, object and the start of its validity
create or replace function vera.fact_order_key(fact_text text, predicate text, object_value text,
                                               valid_from timestamptz)
returns bytea
language sql stable parallel safe
as $$
    select pg_catalog.convert_to(fact_text, 'UTF8') || '\x00'::bytea
           || pg_catalog.convert_to(predicate, 'UTF8') || '\x00'::bytea
           || pg_catalog.convert_to(object_value, 'UTF8') || '\x00'::bytea
           || pg_catalog.convert_to(pg_catalog.to_char(valid_from at time zone 'UTC', 'YYYY-MM-DD HH24:MI:SS.US'),
                                    'UTF8') || '\x00'::bytea
$$;
comment on function vera.fact_order_key(text, text, text, timestamptz) is
    'Order key of a fact among equal scores: text, predicate, object, valid_from (bytes)';

-- a passage: the name of its source, its record (external id), the version
-- and its position in it
create or replace function vera.passage_order_key(source_name text, external_id text, version integer,
                                                  ordinal integer)
returns bytea
language sql stable parallel safe
as $$
    select pg_catalog.convert_to(source_name, 'UTF8') || '\x00'::bytea
           || pg_catalog.convert_to(external_id, 'UTF8') || '\x00'::bytea
           || pg_catalog.convert_to(pg_catalog.lpad(version::text, 10, '0'), 'UTF8') || '\x00'::bytea
           || pg_catalog.convert_to(pg_catalog.lpad(ordinal::text, 10, '0'), 'UTF8') || '\x00'::bytea
$$;
comment on function vera.passage_order_key(text, text, integer, integer) is
    'Order key of a passage among equal scores: source name, record, version, ordinal (bytes)';

-- a group, after the item's own key: items identical but for their group
-- (the same text in a workspace and its project) follow the groups' kinds
-- and names
create or replace function vera.group_order_key(kind vera.group_kind, name text)
returns bytea
language sql stable parallel safe
as $$
    select pg_catalog.convert_to(kind::text, 'UTF8') || '\x00'::bytea
           || pg_catalog.convert_to(name, 'UTF8') || '\x00'::bytea
$$;
comment on function vera.group_order_key(vera.group_kind, text) is
    'Order key of a group among equal items: kind, name (bytes)';

-- Words that carry no meaning on their own in English and Vietnamese. The
-- index keeps them ('simple' configuration); only the query drops them, since
-- with OR semantics a "the" would match most of the corpus. Question words
-- (where, who, đâu, ai) stay: they are what a question is about.
create or replace function vera.search_stopwords()
returns text[]
language sql immutable
as $$
    select array[
        'a', 'an', 'and', 'are', 'as', 'at', 'be', 'been', 'but', 'by', 'can', 'did', 'do', 'does', 'for',
        'from', 'had', 'has', 'have', 'i', 'if', 'in', 'into', 'is', 'it', 'its', 'of', 'on', 'or', 's',
        'so', 'such', 't', 'than', 'that', 'the', 'their', 'then', 'there', 'these', 'they', 'this',
        'those', 'to', 'was', 'were', 'will', 'with', 'would', 'you', 'your', 'we', 'our', 'me', 'my',
        'về', 'của', 'là', 'và', 'các', 'những', 'được', 'cho', 'với', 'này', 'đó', 'thì', 'mà', 'một',
        'đã', 'đang', 'sẽ', 'bị', 'bởi', 'tại', 'từ', 'theo', 'như', 'nhưng', 'hay', 'hoặc', 'rằng'
    ]
$$;
comment on function vera.search_stopwords() is 'Function words the lexical query leaves out (English, Vietnamese)';

-- Contract: the lexical half's query: the words of the text, lower-cased with
-- diacritics kept ('simple'), stopwords left out, any of them (OR). Null
-- when nothing searchable remains (only punctuation or stopwords).
create or replace function vera.lexical_query(query text)
returns tsquery
language sql immutable
set search_path = vera, pg_temp
as $$
    select nullif(string_agg(quote_literal(t.lexeme), ' | ' order by t.lexeme), '')::tsquery
      from unnest(to_tsvector('simple'::regconfig, coalesce(query, ''))) t
     where not t.lexeme = any (vera.search_stopwords())
$$;
comment on function vera.lexical_query(text) is
    'The lexical half''s tsquery: the query''s words (simple configuration) minus stopwords, OR-ed; null if none';

-- Internal: whether a fact is an answer at an instant (valid time, current
-- knowledge): a published or superseded revision whose validity covers it
-- and that no newer version of its source took back; a proposal only in
-- its proposer's own personal scope. Pending, rejected, retracted and
-- accepted (copied elsewhere) rows never are. Plain SQL so that it inlines.
create or replace function vera.fact_visible(lifecycle vera.fact_lifecycle, group_id text, retired_at timestamptz,
                                             valid_from timestamptz, valid_to timestamptz,
                                             reference timestamptz, personal_group text)
returns boolean
language sql immutable
as $$
    select retired_at is null
       and valid_from <= reference and (valid_to is null or valid_to > reference)
       and (lifecycle in ('published', 'superseded')
            or (lifecycle = 'proposal' and group_id = personal_group))
$$;
comment on function vera.fact_visible(vera.fact_lifecycle, text, timestamptz, timestamptz, timestamptz,
                                      timestamptz, text) is
    'Internal: whether a fact answers at an instant (published/superseded revision valid then; own proposals)';

reset role;
