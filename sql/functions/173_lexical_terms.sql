-- The words the lexical half matches, on both sides: a fact's or passage's
-- stored tsvector (vera.facts.tsv, vera.chunks.tsv, set by the triggers
-- below) and a query's terms (vera.query_terms) come from the one function
-- vera.lexical_tsvector, so that what is indexed and what is asked agree.
--
-- Vietnamese syllable pairs (vera-search/10, issue 28): a Vietnamese word
-- is often two or three syllables ("thành phố", "Việt Nam"), which
-- unigram BM25 scores apart. A text that vera.query_language reads as
-- Vietnamese also holds each pair of adjacent words as one term
-- ("thành_phố"), so that a paragraph holding the phrase outscores one that
-- holds its syllables apart (XQuAD vi -> vi full text hit@1 0.892 -> 0.913,
-- docs/quality.md). English text gets none: pairs cost English full text
-- 0.024 hit@1 when applied to all text. The rule is decided per text (a
-- fact's text, a passage's heading and text, a query), by the same
-- vera.query_language the read path uses to drop a vector its model cannot
-- read. Since vera-search/11 a pair joins only words with white space
-- between them, has weight C and counts in no document length, and breve
-- or đ alone no longer make a text Vietnamese (English full text is again
-- as without pairs; docs/quality.md). The stored tsvectors depend on it: a
-- change to this function or to vera.query_language needs a migration that
-- recomputes them (as 0015 and 0016 did).
set role vera_owner;

-- Contract: the lexemes of a text as the lexical half indexes and matches
-- them: to_tsvector('simple') (lower case, diacritics kept, no stemming, no
-- stopwords), and, when vera.query_language(text) is 'vi', each pair of
-- words adjacent in the text, with only white space between them, as one
-- more lexeme "<first>_<second>" of weight C at the first word's positions
-- (the parser splits words at "_", so no single word of a text is ever such
-- a pair). Punctuation, a tag or an entity between two words makes no pair
-- ("thành, phố" holds none). The words keep weight D: BM25 counts a
-- document's length in its words alone (length(tsv) less the lexemes of
-- weight C, in vera.bm25_document_score and vera.count_terms), so pairs
-- change no length and no English statistic. A pair longer than a lexeme may be
-- (2,047 bytes) is left out. Immutable: it fills stored columns.
create or replace function vera.lexical_tsvector(content text)
returns tsvector
language sql immutable parallel safe
as $$
    select case
               -- text all in ASCII is never Vietnamese: spares vera.query_language's word split (~0.2 ms);
               -- nor is text without one of the marks (in NFD) its 'vi' needs: hook above, dot below,
               -- horn, breve, đ (a scientific abstract's µ or °: ~1-3 ms a passage spared)
               when w.v = ''::tsvector or content !~ '[^[:ascii:]]'
                    or pg_catalog.normalize(content, 'NFD') !~ '[\u0309\u0323\u031b\u0306\u0111\u0110]'
                    or vera.query_language(content) <> 'vi' then w.v
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
comment on function vera.lexical_tsvector(text) is
    'The lexemes the lexical half indexes and matches: simple words, and for Vietnamese text adjacent word pairs';
grant execute on function vera.lexical_tsvector(text) to vera_app, vera_worker, vera_gateway, vera_searcher;

-- Contract: the words of a query as the lexical half matches them: the
-- lexemes of vera.lexical_tsvector (lower case with diacritics kept; a
-- Vietnamese query's adjacent word pairs too), each once, sorted. No
-- stopword list: BM25 weighs a word by how rare it is in the groups
-- searched, so "the" counts for almost nothing and "IT" in an IT team's
-- notes for what it is worth there; candidate generation skips the
-- postings of words that cannot change the top (vera.lexical_candidates).
create or replace function vera.query_terms(query text)
returns text[]
language sql immutable
set search_path = vera, pg_temp
as $$
    select coalesce(array_agg(t.lexeme order by t.lexeme), '{}')
      from unnest(vera.lexical_tsvector(query)) t
$$;
comment on function vera.query_terms(text) is
    'The lexical half''s terms of a query: its words (simple configuration; Vietnamese: and word pairs), each once, sorted';
grant execute on function vera.query_terms(text) to vera_app, vera_worker, vera_gateway;

-- Contract: the lexical half's terms as a tsquery, any of them (OR); null
-- when the query has no word. What a text matches; BM25 decides the order.
create or replace function vera.lexical_query(query text)
returns tsquery
language sql immutable
set search_path = vera, pg_temp
as $$
    select vera.any_of(vera.query_terms(query))
$$;
comment on function vera.lexical_query(text) is
    'The lexical half''s tsquery: the query''s terms (vera.query_terms), OR-ed; null if none';
grant execute on function vera.lexical_query(text) to vera_app, vera_worker, vera_gateway;

-- Internal: the triggers that keep the stored tsvectors: a fact's from its
-- text, a passage's from its heading and text. They run before the row is
-- written, also when a statement sets tsv itself (it is derived, never
-- given), so the statistics' triggers (165_term_stats.sql) see the value
-- stored.
create or replace function vera.set_fact_tsv()
returns trigger
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    new.tsv := vera.lexical_tsvector(new.fact_text);
    return new;
end
$$;
comment on function vera.set_fact_tsv() is 'Internal: trigger setting a fact''s tsv (vera.lexical_tsvector of its text)';

create or replace function vera.set_chunk_tsv()
returns trigger
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    new.tsv := vera.lexical_tsvector(coalesce(new.heading, '') || ' ' || new.text);
    return new;
end
$$;
comment on function vera.set_chunk_tsv() is
    'Internal: trigger setting a passage''s tsv (vera.lexical_tsvector of its heading and text)';

create or replace trigger facts_set_tsv before insert or update of fact_text, tsv on vera.facts
    for each row execute function vera.set_fact_tsv();
create or replace trigger chunks_set_tsv before insert or update of heading, text, tsv on vera.chunks
    for each row execute function vera.set_chunk_tsv();

reset role;
