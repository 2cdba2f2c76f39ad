-- 0016_vietnamese_pair_weights: Vietnamese word pairs (0015) refined
-- (issue 28, vera-search/11). Three changes to vera.lexical_tsvector and
-- vera.query_language (sql/functions/172_query_language.sql,
-- 173_lexical_terms.sql) that change stored tsvectors:
-- - a pair lexeme has weight C, so that BM25 counts a document's length in
--   its words alone (vera.bm25_document_score, vera.count_terms: length(tsv)
--   less the lexemes of weight C); with 0015's pairs, of weight D, the
--   Vietnamese paragraphs' pairs raised the average length English ones
--   are normalised against;
-- - a pair joins two words with only white space between them, none across
--   punctuation ("thành, phố");
-- - breve (ă) and đ alone no longer make a text Vietnamese ("CS Aerostar
--   Bacău", "Novak Đoković"): they need a tone mark on a vowel beside them.
--
-- The rows holding a letter outside ASCII whose tsvector the rule now
-- gives otherwise are recomputed, and the BM25 statistics
-- (vera.term_stats) moved by the difference, for the rows the statistics
-- count (165_term_stats.sql): each term's documents and tokens, and the
-- corpus row's tokens by the lengths as counted (0015's pairs counted in
-- length, now none does). Migrations run before sql/functions, so the
-- rule as of this migration is spelled out below as two functions
-- (vera.query_language_0016, vera.lexical_tsvector_0016: the same bodies
-- as vera.query_language and vera.lexical_tsvector), dropped at the end
-- (temporary functions need a privilege vera_owner lacks). Running it again changes nothing: a row already
-- holding its new tsvector is not updated, so nothing is counted twice.
-- Snapshots keep the tsvectors and statistics they were taken with
-- (their pairs, weight D, count in length as when they were taken).
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.

set role vera_owner;

create function vera.query_language_0016(query text)
returns text
language sql immutable
as $$
    with word as (
        select w, regexp_replace(w, '[[:ascii:]]', '', 'g') ~ '[[:alpha:]]' as foreign_word
          from regexp_split_to_table(coalesce(query, ''), '\s+') w
         where w ~ '[[:alpha:]]'
    ), share as (
        select count(*) as words, count(*) filter (where foreign_word) as foreign_words,
               normalize(string_agg(w, ' ') filter (where foreign_word), nfd) as foreign_text
          from word
    )
    select case when s.words = 0 or s.foreign_words::float8 / s.words < 0.3 then 'en'
                when s.foreign_text ~ '[\u0309\u0323\u031b]'
                     or (s.foreign_text ~ '[\u0306\u0111\u0110]'
                         and s.foreign_text ~ '[aeiouyAEIOUY][\u0302\u0306]?[\u0300\u0301\u0303]') then 'vi'
                when s.foreign_words::float8 / s.words >= 0.5 then 'other'
                else 'en' end
      from share s
$$;

create function vera.lexical_tsvector_0016(content text)
returns tsvector
language sql immutable parallel safe
as $$
    select case
               -- text all in ASCII is never Vietnamese: spares vera.query_language's word split (~0.2 ms)
               when w.v = ''::tsvector or content !~ '[^[:ascii:]]' or vera.query_language_0016(content) <> 'vi' then w.v
               else (w.v::text || coalesce(' ' || (
                   select pg_catalog.string_agg(
                              '''' || replace(replace(p.pair, '\', '\\'), '''', '''''') || ''':' || p.positions, ' ')
                     from (select x.previous || '_' || pg_catalog.lower(x.token) as pair,
                                  pg_catalog.string_agg((x.position - 1)::text || 'C', ',' order by x.position)
                                      as positions
                             from (
                                  -- the parser's tokens in order; to_tsvector('simple') gives a position to
                                  -- every one but blanks (12), tags (13), protocols (14) and entities (23)
                                  select t.tokid, t.token,
                                         pg_catalog.lag(t.tokid, 1) over o as gap_type,
                                         pg_catalog.lag(t.token, 1) over o as gap,
                                         pg_catalog.lag(t.tokid, 2) over o as previous_type,
                                         pg_catalog.lower(pg_catalog.lag(t.token, 2) over o) as previous,
                                         count(*) filter (where t.tokid not in (12, 13, 14, 23)) over o as position
                                    from pg_catalog.ts_parse('pg_catalog.default', content)
                                         with ordinality t(tokid, token, n)
                                  window o as (order by t.n)) x
                            where x.tokid not in (12, 13, 14, 23) and x.previous_type not in (12, 13, 14, 23)
                              and x.gap_type = 12 and x.gap ~ '^[[:space:]]+$'
                              and pg_catalog.octet_length(x.previous) + pg_catalog.octet_length(x.token) < 2047
                            group by 1) p), ''))::tsvector
           end
      from (select pg_catalog.to_tsvector('simple'::regconfig, coalesce(content, '')) as v) w
$$;

-- Row-level security binds vera_owner too (forced): for the rows of every
-- group, it is lifted for this transaction's updates and forced again below.
alter table vera.facts no force row level security;
alter table vera.chunks no force row level security;
alter table vera.episodes no force row level security;

-- The triggers that set tsv (vera-search/10's, when upgrading a database
-- that has them; a new database gets them after its migrations) would put
-- back the old rule's tsvector: off for this transaction's updates, on
-- again below. Updating tsv alone fires none of the statistics' triggers.
do $$
begin
    if exists (select from pg_trigger where tgrelid = 'vera.facts'::regclass and tgname = 'facts_set_tsv') then
        alter table vera.facts disable trigger facts_set_tsv;
    end if;
    if exists (select from pg_trigger where tgrelid = 'vera.chunks'::regclass and tgname = 'chunks_set_tsv') then
        alter table vera.chunks disable trigger chunks_set_tsv;
    end if;
end
$$;

with computed as (
    select f.group_id, f.fact_id, vera.lexical_tsvector_0016(f.fact_text) as tsv
      from vera.facts f
     where f.fact_text ~ '[^[:ascii:]]'
), changed as (
    update vera.facts f
       set tsv = c.tsv
      from computed c
     where f.group_id = c.group_id and f.fact_id = c.fact_id and f.tsv is distinct from c.tsv
    returning f.group_id, f.lifecycle, old.tsv as old_tsv, new.tsv as new_tsv
), counted as (
    select c.* from changed c where c.lifecycle in ('published', 'superseded', 'proposal')
), delta as (
    select d.group_id, d.term, sum(d.documents) as documents, sum(d.tokens) as tokens
      from (select c.group_id, u.lexeme as term, 1 as documents, cardinality(u.positions) as tokens
              from counted c, unnest(c.new_tsv) u
            union all
            select c.group_id, u.lexeme, -1, -cardinality(u.positions) from counted c, unnest(c.old_tsv) u
            union all
            select c.group_id, '', 0,
                   (length(c.new_tsv) - length(ts_filter(c.new_tsv, '{c}')))
                   - (length(c.old_tsv) - length(ts_filter(c.old_tsv, '{c}')))
              from counted c) d
     group by d.group_id, d.term
    having sum(d.documents) <> 0 or sum(d.tokens) <> 0
)
insert into vera.term_stats as s (group_id, kind, term, documents, tokens)
select d.group_id, 'fact', d.term, d.documents, d.tokens from delta d order by d.group_id, d.term
    on conflict (group_id, kind, term) do update
   set documents = s.documents + excluded.documents, tokens = s.tokens + excluded.tokens;

with computed as (
    select c.group_id, c.chunk_id, vera.lexical_tsvector_0016(coalesce(c.heading, '') || ' ' || c.text) as tsv
      from vera.chunks c
     where (coalesce(c.heading, '') || ' ' || c.text) ~ '[^[:ascii:]]'
), changed as (
    update vera.chunks c
       set tsv = m.tsv
      from computed m
     where c.group_id = m.group_id and c.chunk_id = m.chunk_id and c.tsv is distinct from m.tsv
    returning c.group_id, c.episode_id, c.lifecycle, old.tsv as old_tsv, new.tsv as new_tsv
), counted as (
    select c.* from changed c
      join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
     where c.lifecycle in ('published', 'proposal') and e.status <> 'retracted'
), delta as (
    select d.group_id, d.term, sum(d.documents) as documents, sum(d.tokens) as tokens
      from (select c.group_id, u.lexeme as term, 1 as documents, cardinality(u.positions) as tokens
              from counted c, unnest(c.new_tsv) u
            union all
            select c.group_id, u.lexeme, -1, -cardinality(u.positions) from counted c, unnest(c.old_tsv) u
            union all
            select c.group_id, '', 0,
                   (length(c.new_tsv) - length(ts_filter(c.new_tsv, '{c}')))
                   - (length(c.old_tsv) - length(ts_filter(c.old_tsv, '{c}')))
              from counted c) d
     group by d.group_id, d.term
    having sum(d.documents) <> 0 or sum(d.tokens) <> 0
)
insert into vera.term_stats as s (group_id, kind, term, documents, tokens)
select d.group_id, 'passage', d.term, d.documents, d.tokens from delta d order by d.group_id, d.term
    on conflict (group_id, kind, term) do update
   set documents = s.documents + excluded.documents, tokens = s.tokens + excluded.tokens;

-- terms no document holds any more (pairs across punctuation, a Romanian
-- name's) are dropped, as vera.apply_term_changes drops them; the corpus rows stay
delete from vera.term_stats s where s.term <> '' and s.documents = 0;

do $$
begin
    if exists (select from pg_trigger where tgrelid = 'vera.facts'::regclass and tgname = 'facts_set_tsv') then
        alter table vera.facts enable trigger facts_set_tsv;
    end if;
    if exists (select from pg_trigger where tgrelid = 'vera.chunks'::regclass and tgname = 'chunks_set_tsv') then
        alter table vera.chunks enable trigger chunks_set_tsv;
    end if;
end
$$;

alter table vera.facts force row level security;
alter table vera.chunks force row level security;
alter table vera.episodes force row level security;

drop function if exists vera.lexical_tsvector_0016(text);
drop function if exists vera.query_language_0016(text);

reset role;
