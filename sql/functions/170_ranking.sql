-- Ranking building blocks: the search version snapshots pin, the seven
-- signals of the blend, the weight sets, and the lexical query.
set role vera_owner;

-- Contract: the version of the ranking code. A snapshot records it and refuses
-- to answer once it differs; bump it whenever stage 1 or stage 2 changes what
-- a search returns.
create or replace function vera.search_version()
returns text
language sql immutable
set search_path = vera, pg_temp
as $$ select 'vera-search/14' $$;
comment on function vera.search_version() is 'Version of the ranking code; snapshots pin it';
grant execute on function vera.search_version() to vera_app, vera_worker, vera_gateway;

-- Internal: the signals of the blend, in the order search returns them.
create or replace function vera.signal_names()
returns text[]
language sql immutable parallel safe
as $$ select array['relevance', 'authority', 'verification', 'recency', 'feedback', 'confidence', 'period'] $$;
comment on function vera.signal_names() is 'The seven signals of the blend, in the order search returns them';

-- Contract: the blend's default weights and recency half-life. The period
-- signal counts only in a search that asks about a period (`during`); in
-- one that does not, the other six share its weight in proportion (the
-- blend divides by their sum), so these six are the weights such a search
-- has always used (0.40, 0.18, 0.12, 0.12, 0.08, 0.10), times 0.8.
create or replace function vera.default_weights()
returns jsonb
language sql immutable
set search_path = vera, pg_temp
as $$
    select '{"relevance": 0.32, "authority": 0.144, "verification": 0.096, "recency": 0.096,
             "feedback": 0.064, "confidence": 0.08, "period": 0.20, "half_life": "30 days"}'::jsonb
$$;
comment on function vera.default_weights() is 'Default weights of the seven signals and the recency half-life';
grant execute on function vera.default_weights() to vera_app, vera_worker, vera_gateway;

-- Internal: checks weights a caller passes in and completes them: the seven
-- signals, each a non-negative number (absent ones count 0), scaled to sum 1;
-- half_life an interval of at least one second (default 30 days).
create or replace function vera.checked_weights(weights jsonb)
returns jsonb
language plpgsql immutable
set search_path = vera, pg_temp
as $$
declare
    signal_names constant text[] := vera.signal_names();
    unknown text;
    -- numeric, not float8: a JSON number may lie outside float8's range (1e400, 1e-400) or overflow the sum
    total numeric := 0;
    share numeric;
    half_life interval;
    result jsonb := '{}';
    signal text;
begin
    if jsonb_typeof(weights) is distinct from 'object' then
        raise exception 'weights must be a JSON object of the seven signals (%)', array_to_string(signal_names, ', ')
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
    'Internal: validates weights (seven non-negative numbers, optional half_life) and scales them to sum 1';

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
                    'period', w.period, 'half_life', w.half_life::text, 'weight_set_id', w.weight_set_id)
           from vera.ranking_weights w
          where w.group_id = active_weights.group_id and w.active),
        vera.default_weights())
$$;
comment on function vera.active_weights(text) is 'The active weight set of a group (RLS applies), else the defaults';
grant execute on function vera.active_weights(text) to vera_app, vera_worker, vera_gateway;

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

-- The period signal: how far an item's time fits the period a search asks
-- about (during): 1
-- when its time overlaps it, 0 when it states times of which none does, 0.5
-- when it states none (a passage that names no date, or whose scope was not
-- read yet). A fact's time is its validity; a passage's, the periods its
-- text states (vera.chunks.time_scope). Null when the search asks about no
-- period: the blend then leaves the signal out.
create or replace function vera.period_signal(item_time tstzmultirange, during tstzrange)
returns real
language sql immutable
as $$
    select case
        when during is null then null
        when item_time is null or isempty(item_time) then 0.5
        when item_time && during then 1
        else 0
    end::real
$$;
comment on function vera.period_signal(tstzmultirange, tstzrange) is
    'Period signal: 1 when the item''s time overlaps the period asked about, 0 when not, 0.5 when it states none';

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
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.fact_order_key(text, text, text, timestamptz) to vera_searcher;

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
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.passage_order_key(text, text, integer, integer) to vera_searcher;

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
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.group_order_key(vera.group_kind, text) to vera_searcher;

-- (vera.query_terms, the words of a query, is in 173_lexical_terms.sql with
-- the stored tsvectors' rule: both sides come from vera.lexical_tsvector.)

-- Internal: the tsquery matching any of these lexemes; null (matching
-- nothing) for none. Empty and blank words are left out: quoted, '' is no
-- lexeme and would be a syntax error (42601) of the tsquery.
create or replace function vera.any_of(lexemes text[])
returns tsquery
language sql immutable
as $$
    select nullif(pg_catalog.array_to_string(
               array(select pg_catalog.quote_literal(t) from pg_catalog.unnest(lexemes) t
                      where pg_catalog.btrim(t) <> ''), ' | '), '')::tsquery
$$;
comment on function vera.any_of(text[]) is
    'Internal: a tsquery matching any of the lexemes (OR), empty ones left out; null for none';
-- vera.lexical_query (the SQL API, run as its caller) and the candidate stages (vera_searcher) call it
grant execute on function vera.any_of(text[]) to vera_app, vera_worker, vera_gateway, vera_searcher;

-- Internal: a word as the full-text indexes key it: its first 500
-- characters (at most 2,000 bytes, which beside a group id and a part stay
-- under the 2,046 bytes a lexeme may hold; to_tsvector keeps words of up to
-- 2,047). A longer word is keyed by its first 500 in a stored text's keys
-- (vera.index_words) and in a query's alike, so that a long word fails
-- neither its row's write nor a search for it; a word sharing those 500
-- characters with it is a candidate of such a search that its score (from
-- the whole words, vera.bm25_document_score) does not count.
create or replace function vera.index_word(lexeme text)
returns text
language sql immutable parallel safe
as $$ select left(lexeme, 500) $$;
comment on function vera.index_word(text) is
    'Internal: a word as the full-text indexes key it (its first 500 characters)';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.index_word(text) to vera_searcher;

-- Internal: the text form of a tsvector's words as the full-text indexes
-- key them, "'<word>' '<word>' ...", each cut to its first 500 characters
-- (vera.index_word: a word holds neither a space nor a quote, so each is
-- one run of other characters between quotes). Built-in functions only,
-- inlined with its callers into the indexes' expressions.
create or replace function vera.index_words(tsv tsvector)
returns text
language sql immutable parallel safe
as $$ select regexp_replace(strip(tsv)::text, '((?:[^'' ]{250}){2})[^'' ]+', '\1', 'g') $$;
comment on function vera.index_words(tsvector) is
    'Internal: a tsvector''s words in text form, each cut as vera.index_word cuts it';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.index_words(tsvector) to vera_searcher;

-- Internal: the text form of a tsvector's words keyed by a prefix,
-- "'<group_id> <lexeme>' ...", as both full-text indexes key them: the
-- prefix is the group id for facts (vera.group_lexemes), the group id and
-- the passage's length class, "<group_id> <class>", for passages
-- (vera.passage_lexemes). A lexeme holds no space, so "' '" in the text
-- form of the stripped vector (before any prefix is added) only ever
-- separates two lexemes. Built-in functions only, inlined with its caller
-- into the index's expression.
create or replace function vera.group_keyed_words(group_id text, tsv tsvector)
returns text
language sql immutable parallel safe
as $$ select '''' || group_id || ' ' || substr(replace(vera.index_words(tsv), ''' ''', ''' ''' || group_id || ' '), 2) $$;
comment on function vera.group_keyed_words(text, tsvector) is
    'Internal: a tsvector''s words keyed by a group ("''<group_id> <lexeme>'' ..."), as the full-text indexes key them';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.group_keyed_words(text, tsvector) to vera_searcher;

-- Internal: a fact's words as the facts' full-text index holds them
-- (facts_group_lexemes_idx, migrations 0004 and 0005), each twice: keyed by
-- its group, "<group_id> <lexeme>", and by its group and the part of the
-- group's facts it falls in, "<group_id> <lexeme> <part>", the part being
-- the last hex digit of the fact id (vera.lexeme_parts: 16, spread evenly
-- by the ids' random bits). The first key gives one posting list per group
-- and word, so that the lexical half reads only the searched groups'
-- postings; the second lets a round that reads at most a budget of facts
-- holding a frequent word read a part of its list instead of decoding and
-- sorting all of it (vera.lexical_candidates). The same expression as the
-- index's once vera.group_keyed_words is inlined too: plain SQL functions,
-- which the planner inlines into the query, where it then matches the
-- index.
create or replace function vera.group_lexemes(group_id text, fact_id uuid, tsv tsvector)
returns tsvector
language sql immutable parallel safe
as $$
    select case when tsv = ''::tsvector then tsv
                else (vera.group_keyed_words(group_id, tsv)
                      || ' ''' || group_id || ' '
                      || replace(left(substr(vera.index_words(tsv), 2), -1), ''' ''',
                                 ' ' || right(fact_id::text, 1) || ''' ''' || group_id || ' ')
                      || ' ' || right(fact_id::text, 1) || '''')::tsvector
           end
$$;
comment on function vera.group_lexemes(text, uuid, tsvector) is
    'Internal: a fact''s lexemes keyed by group ("<group_id> <lexeme>") and by group and part ("... <part>"), the facts'' full-text index';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.group_lexemes(text, uuid, tsvector) to vera_searcher;

-- Internal: the parts of a group's facts in the order a round reads them
-- (the last hex digit of a fact id, vera.group_lexemes).
create or replace function vera.lexeme_parts()
returns text[]
language sql immutable parallel safe
as $$
    select '{0,1,2,3,4,5,6,7,8,9,a,b,c,d,e,f}'::text[]
$$;
comment on function vera.lexeme_parts() is 'Internal: the 16 parts of the facts'' full-text index, in reading order';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.lexeme_parts() to vera_searcher;

-- Internal: the tsquery over vera.group_lexemes matching a fact of one of
-- the groups that holds one of the lexemes and, when and_any names some,
-- one of those too; in one of the parts when parts is given, else in any
-- (the keys without a part); null when lexemes or groups are empty. A
-- fact's keys all name its one part, so "(t in any of the parts) & (u in
-- any of them)" matches t and u in the same part, and GIN iterates only
-- the postings of the left side (the rarer), skipping through the right
-- side's; a disjunction of per-part conjunctions would make it walk every
-- listed posting of both.
create or replace function vera.group_lexeme_query(groups text[], lexemes text[], and_any text[] default null,
                                                   parts text[] default null)
returns tsquery
language sql immutable
as $$
    with key_suffix as (
        select case when parts is null then '' else ' ' || part end as suffix
          from pg_catalog.unnest(coalesce(parts, '{""}'::text[])) part
    )
    select nullif(pg_catalog.array_to_string(array(
               select '(' || (select pg_catalog.string_agg(pg_catalog.quote_literal(g || ' ' || vera.index_word(l) || k.suffix), ' | ')
                                from pg_catalog.unnest(lexemes) l cross join key_suffix k) || ')'
                      || coalesce(' & (' || (select pg_catalog.string_agg(pg_catalog.quote_literal(g || ' ' || vera.index_word(l) || k.suffix),
                                                                          ' | ')
                                               from pg_catalog.unnest(and_any) l cross join key_suffix k) || ')', '')
                 from pg_catalog.unnest(groups) g), ' | '), '')::tsquery
$$;
comment on function vera.group_lexeme_query(text[], text[], text[], text[]) is
    'Internal: tsquery over vera.group_lexemes: in one of the groups (and parts), any of the lexemes (and any of and_any)';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.group_lexeme_query(text[], text[], text[], text[]) to vera_searcher;

-- (vera.lexical_query, the lexical half's tsquery, is in 173_lexical_terms.sql.)

-- BM25 (Okapi; Robertson and Zaragoza 2009) with the IDF that Lucene uses,
-- ln(1 + (N - df + 0.5) / (df + 0.5)), which stays positive for a word in
-- most documents (the original log((N - df + 0.5) / (df + 0.5)) turns
-- negative past half of them), and k1 = 1.2. N, df and the average length
-- come from the statistics of exactly the groups searched
-- (vera.term_statistics); a document's length is its number of distinct
-- words, a term's frequency its positions in the tsvector.
--
-- b, the weight of length normalisation: 0.75 for passages, the usual
-- value; 0 for facts. A fact is one statement, subject, predicate and
-- object, whose length says how long its names are, not how much it says:
-- normalising it would rank "billing-api runs on heroku" above "billing-api
-- runs on k8s-hanoi-2" for "where does billing-api run", by the length of
-- a cluster's name (BM25F likewise gives short fields their own b).
create or replace function vera.bm25_parameters(kind vera.item_kind)
returns table (k1 double precision, b double precision)
language sql immutable
as $$ select 1.2::float8, case kind when 'fact' then 0.0::float8 else 0.75::float8 end $$;
comment on function vera.bm25_parameters(vera.item_kind) is 'BM25''s k1 (1.2) and b (0.75 for passages, 0 for facts)';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.bm25_parameters(vera.item_kind) to vera_searcher;

-- The budget of candidate generation (vera.lexical_candidates): postings
-- per round of rare terms, beyond the first term's. For facts (b = 0) also
-- the most documents a round reads: their scores tie in thousands (one
-- term, held once), and each row read is a heap page, 10-50 us
-- (docs/benchmarks.md); passages are read exactly, whatever the count
-- (250 for them too: a word held by more, and by over a fiftieth of them,
-- generates no candidates; 1,000 read ~2,000 passages a TimeQA question).
create or replace function vera.lexical_budget(kind vera.item_kind)
returns bigint
language sql immutable
as $$ select 250::bigint $$;
comment on function vera.lexical_budget(vera.item_kind) is
    'Postings per round of candidate generation (250); facts'' rounds read at most that many';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.lexical_budget(vera.item_kind) to vera_searcher;

create or replace function vera.bm25_idf(documents bigint, document_frequency bigint)
returns double precision
language sql immutable
as $$ select ln(1 + (documents - document_frequency + 0.5) / (document_frequency + 0.5)) $$;
comment on function vera.bm25_idf(bigint, bigint) is
    'Internal: BM25 inverse document frequency ln(1 + (N - df + 0.5) / (df + 0.5))';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.bm25_idf(bigint, bigint) to vera_searcher;

-- Internal: BM25's weights of the query terms from statistics rows (kind,
-- term, documents, tokens; term '' is a kind's corpus). The IDF is the
-- group's whole knowledge's: N and df count facts and passages together,
-- so a fact and a passage that hold the same words score alike and the two
-- lists merge by score (with statistics per kind, a word rarer among a
-- handful of passages than among many facts would rank every passage
-- first). Length is normalised within each kind (its average length).
-- One row per kind and term that occurs in that kind: its postings there,
-- and the most times one document of the kind can hold it (its occurrences
-- less one for each other document holding it), which bounds the score a
-- document can draw from it (vera.lexical_candidates).
create or replace function vera.bm25_weights(kinds vera.item_kind[], terms text[], documents bigint[], tokens bigint[])
returns table (kind vera.item_kind, term text, postings bigint, idf double precision,
               average_length double precision, most_held bigint)
language sql immutable
as $$
    with stats as (
        select * from unnest(kinds, terms, documents, tokens) as s(kind, term, documents, tokens)
    ), corpus as (
        select s.kind, s.documents, greatest(s.tokens::float8 / s.documents, 1) as average_length
          from stats s where s.term = '' and s.documents > 0
    ), frequency as (
        select s.term, sum(s.documents)::bigint as documents
          from stats s where s.term <> '' and s.documents > 0 group by s.term
    )
    select s.kind, s.term, s.documents,
           vera.bm25_idf((select sum(c.documents)::bigint from corpus c), f.documents), c.average_length,
           s.tokens - s.documents + 1
      from stats s
      join corpus c on c.kind = s.kind
      join frequency f on f.term = s.term
     where s.term <> '' and s.documents > 0
$$;
comment on function vera.bm25_weights(vera.item_kind[], text[], bigint[], bigint[]) is
    'Internal: per kind and query term, postings, IDF over facts and passages together, and average length';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.bm25_weights(vera.item_kind[], text[], bigint[], bigint[]) to vera_searcher;

-- Internal: a document's BM25 score for query terms with their IDFs. A
-- document's length is its number of distinct words (length(tsv) less its
-- lexemes of weight C: a Vietnamese text's word pairs count in no length,
-- 173_lexical_terms.sql), so that
-- scoring reads only the query terms' entries: setweight marks them and
-- ts_filter keeps them, both in C, and only those few are unnested (their
-- positions are the term frequencies). Length counted in distinct words
-- rather than tokens changes each document's length by a similar factor,
-- which the division by the average mostly cancels.
--
-- The formula lives here once, as a one-row set-returning function: used
-- in FROM (cross join lateral), the planner inlines it into the query that
-- scores many rows, where a call of the scalar vera.bm25_score, whose body
-- has a FROM clause and so never inlines, costs a SQL function call per
-- row (about 25 us, five times the inlined subquery: docs/benchmarks.md).
create or replace function vera.bm25_document_score(kind vera.item_kind, tsv tsvector, terms text[],
                                                    idfs double precision[], average_length double precision)
returns table (score double precision)
language sql immutable
as $$
    select coalesce(sum(q.idf * u.tf * (p.k1 + 1)
                        / (u.tf + p.k1 * (1 - p.b + p.b * (pg_catalog.length(tsv)
                                                           - pg_catalog.length(pg_catalog.ts_filter(tsv, '{c}')))
                                                          / average_length))), 0)
      from vera.bm25_parameters(kind) p,
           (select x.lexeme, pg_catalog.cardinality(x.positions)::float8 as tf
              from pg_catalog.unnest(pg_catalog.ts_filter(pg_catalog.setweight(tsv, 'A', terms), '{a}')) x) u
      join unnest(terms, idfs) q(term, idf) on q.term = u.lexeme
$$;
comment on function vera.bm25_document_score(vera.item_kind, tsvector, text[], double precision[], double precision) is
    'Internal: BM25 score of a tsvector as one row, for cross join lateral (inlined); vera.bm25_score as a value';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.bm25_document_score(vera.item_kind, tsvector, text[], double precision[],
                                                   double precision)
    to vera_searcher;

-- Internal: vera.bm25_document_score of a passage for its stored length
-- (vera.chunks.words, 0019_passage_words), the same value to the last bit:
-- the same statement (so the same plan and order of the sum) with the
-- length read, not counted. Counting it copied the passage's tsvector twice
-- for each query term it holds (length and ts_filter inside the sum), the
-- larger part of scoring a passage, which the passages' lexical rounds do
-- hundreds of times a query (docs/benchmarks.md, "Third pass"). Used in
-- FROM (cross join lateral), like vera.bm25_document_score, so that it
-- inlines.
create or replace function vera.bm25_passage_score(tsv tsvector, words integer, terms text[],
                                                   idfs double precision[], average_length double precision)
returns table (score double precision)
language sql immutable
as $$
    select coalesce(sum(q.idf * u.tf * (p.k1 + 1)
                        / (u.tf + p.k1 * (1 - p.b + p.b * words / average_length))), 0)
      from vera.bm25_parameters('passage') p,
           (select x.lexeme, pg_catalog.cardinality(x.positions)::float8 as tf
              from pg_catalog.unnest(pg_catalog.ts_filter(pg_catalog.setweight(tsv, 'A', terms), '{a}')) x) u
      join unnest(terms, idfs) q(term, idf) on q.term = u.lexeme
$$;
comment on function vera.bm25_passage_score(tsvector, integer, text[], double precision[], double precision) is
    'Internal: a passage''s BM25 score for its stored length (vera.chunks.words), as vera.bm25_document_score';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.bm25_passage_score(tsvector, integer, text[], double precision[], double precision)
    to vera_searcher;

create or replace function vera.bm25_score(kind vera.item_kind, tsv tsvector, terms text[], idfs double precision[],
                                           average_length double precision)
returns double precision
language sql immutable
as $$ select s.score from vera.bm25_document_score(kind, tsv, terms, idfs, average_length) s $$;
comment on function vera.bm25_score(vera.item_kind, tsvector, text[], double precision[], double precision) is
    'Internal: BM25 score of a fact''s or passage''s tsvector for terms with their IDFs, given the average length';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.bm25_score(vera.item_kind, tsvector, text[], double precision[], double precision)
    to vera_searcher;

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
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.fact_visible(vera.fact_lifecycle, text, timestamptz, timestamptz, timestamptz,
                                            timestamptz, text)
    to vera_searcher;

reset role;
