-- 0015_vietnamese_pairs: Vietnamese text is also indexed by its adjacent
-- word pairs (issue 28, vera-search/10). The stored tsvectors of facts and
-- passages were generated columns, to_tsvector('simple') of the text; they
-- become plain columns that the triggers facts_set_tsv and chunks_set_tsv
-- (sql/functions/173_lexical_terms.sql) fill with vera.lexical_tsvector,
-- which adds to the words of a text vera.query_language reads as
-- Vietnamese each pair of adjacent words as one lexeme ("thành_phố", at
-- the first word's positions). A table definition calls no vera function
-- (pg_tests/platform/test_catalog.py), hence triggers rather than a new
-- generation expression.
--
-- The rows whose text is Vietnamese are recomputed here and their pairs
-- added to the BM25 statistics (vera.term_stats: each pair's documents and
-- tokens, the corpus row's tokens by the longer lengths), for the rows the
-- statistics count (165_term_stats.sql). English and other rows keep
-- their tsvector, which the rule leaves as it was. Migrations run before
-- sql/functions, so the rule (vera.query_language and
-- vera.lexical_tsvector as of this migration) is spelled out in the
-- statements, in built-in functions only (as 0005 spelled out its index
-- expression). Running it again changes nothing: a row already
-- holding its pairs is not updated, so nothing is counted twice.
-- Snapshots keep the tsvectors and statistics they were taken with.
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.

set role vera_owner;

alter table vera.facts alter column tsv drop expression if exists;
alter table vera.chunks alter column tsv drop expression if exists;

-- Row-level security binds vera_owner too (forced): for the rows of every
-- group, it is lifted for this transaction's updates and forced again below.
alter table vera.facts no force row level security;
alter table vera.chunks no force row level security;
alter table vera.episodes no force row level security;

with computed as (
    select f.group_id, f.fact_id, n.tsv
      from vera.facts f
     cross join lateral (
           -- vera.query_language: the share of words holding a letter outside ASCII, and a mark
           -- only Vietnamese uses among Latin scripts
           select case when s.words = 0 or s.foreign_words::float8 / s.words < 0.3 then 'en'
                       when normalize(s.foreign_text, nfd) ~ '[\u0309\u0323\u031b\u0306\u0111\u0110]' then 'vi'
                       when s.foreign_words::float8 / s.words >= 0.5 then 'other'
                       else 'en' end as language
             from (select count(*) as words, count(*) filter (where x.foreign_word) as foreign_words,
                          string_agg(x.w, ' ') filter (where x.foreign_word) as foreign_text
                     from (select w, regexp_replace(w, '[[:ascii:]]', '', 'g') ~ '[[:alpha:]]' as foreign_word
                             from regexp_split_to_table(f.fact_text, '\s+') w
                            where w ~ '[[:alpha:]]') x) s) l
     cross join lateral (select to_tsvector('simple'::regconfig, f.fact_text) as v) w
     cross join lateral (
           -- vera.lexical_tsvector: the words, and each pair of adjacent words at the first's positions
           select (w.v::text || coalesce(' ' || (
                      select string_agg('''' || replace(replace(p.pair, '\', '\\'), '''', '''''') || ''':'
                                        || p.positions, ' ')
                        from (select a.lexeme || '_' || b.lexeme as pair,
                                     string_agg(a.position::text, ',' order by a.position) as positions
                                from (select u.lexeme, x.position from unnest(w.v) u, unnest(u.positions) x(position)) a
                                join (select u.lexeme, x.position from unnest(w.v) u, unnest(u.positions) x(position)) b
                                  on b.position = a.position + 1
                               where octet_length(a.lexeme) + octet_length(b.lexeme) < 2047
                               group by 1) p), ''))::tsvector as tsv) n
     where l.language = 'vi' and w.v <> ''::tsvector and f.tsv is distinct from n.tsv
), changed as (
    update vera.facts f
       set tsv = c.tsv
      from computed c
     where f.group_id = c.group_id and f.fact_id = c.fact_id
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
            select c.group_id, '', 0, length(c.new_tsv) - length(c.old_tsv) from counted c) d
     group by d.group_id, d.term
    having sum(d.documents) <> 0 or sum(d.tokens) <> 0
)
insert into vera.term_stats as s (group_id, kind, term, documents, tokens)
select d.group_id, 'fact', d.term, d.documents, d.tokens from delta d order by d.group_id, d.term
    on conflict (group_id, kind, term) do update
   set documents = s.documents + excluded.documents, tokens = s.tokens + excluded.tokens;

with computed as (
    select c.group_id, c.chunk_id, n.tsv
      from vera.chunks c
     cross join lateral (
           -- vera.query_language: the share of words holding a letter outside ASCII, and a mark
           -- only Vietnamese uses among Latin scripts
           select case when s.words = 0 or s.foreign_words::float8 / s.words < 0.3 then 'en'
                       when normalize(s.foreign_text, nfd) ~ '[\u0309\u0323\u031b\u0306\u0111\u0110]' then 'vi'
                       when s.foreign_words::float8 / s.words >= 0.5 then 'other'
                       else 'en' end as language
             from (select count(*) as words, count(*) filter (where x.foreign_word) as foreign_words,
                          string_agg(x.w, ' ') filter (where x.foreign_word) as foreign_text
                     from (select w, regexp_replace(w, '[[:ascii:]]', '', 'g') ~ '[[:alpha:]]' as foreign_word
                             from regexp_split_to_table(coalesce(c.heading, '') || ' ' || c.text, '\s+') w
                            where w ~ '[[:alpha:]]') x) s) l
     cross join lateral (select to_tsvector('simple'::regconfig, coalesce(c.heading, '') || ' ' || c.text) as v) w
     cross join lateral (
           -- vera.lexical_tsvector: the words, and each pair of adjacent words at the first's positions
           select (w.v::text || coalesce(' ' || (
                      select string_agg('''' || replace(replace(p.pair, '\', '\\'), '''', '''''') || ''':'
                                        || p.positions, ' ')
                        from (select a.lexeme || '_' || b.lexeme as pair,
                                     string_agg(a.position::text, ',' order by a.position) as positions
                                from (select u.lexeme, x.position from unnest(w.v) u, unnest(u.positions) x(position)) a
                                join (select u.lexeme, x.position from unnest(w.v) u, unnest(u.positions) x(position)) b
                                  on b.position = a.position + 1
                               where octet_length(a.lexeme) + octet_length(b.lexeme) < 2047
                               group by 1) p), ''))::tsvector as tsv) n
     where l.language = 'vi' and w.v <> ''::tsvector and c.tsv is distinct from n.tsv
), changed as (
    update vera.chunks c
       set tsv = m.tsv
      from computed m
     where c.group_id = m.group_id and c.chunk_id = m.chunk_id
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
            select c.group_id, '', 0, length(c.new_tsv) - length(c.old_tsv) from counted c) d
     group by d.group_id, d.term
    having sum(d.documents) <> 0 or sum(d.tokens) <> 0
)
insert into vera.term_stats as s (group_id, kind, term, documents, tokens)
select d.group_id, 'passage', d.term, d.documents, d.tokens from delta d order by d.group_id, d.term
    on conflict (group_id, kind, term) do update
   set documents = s.documents + excluded.documents, tokens = s.tokens + excluded.tokens;

alter table vera.facts force row level security;
alter table vera.chunks force row level security;
alter table vera.episodes force row level security;

reset role;
