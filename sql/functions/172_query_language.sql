-- Whether a query's vector can help (issue 28): an embedding model reads
-- some languages; a query in another one gets a confidently wrong vector
-- (all-MiniLM-L6-v2 strips Vietnamese diacritics, and its Vietnamese
-- vectors land on the wrong paragraphs). The clients have left such a
-- query's vector out since vera-search/6 (vera_client/domain/languages.py);
-- since vera-search/8 vera.search does the same for SQL callers, who send
-- the vector themselves: with the calibrated match (vera-search/7) the
-- similarity of a Vietnamese question to English paragraphs, which is
-- noise, outweighed the few names and numbers it shares with them (XQuAD
-- vi -> en hybrid hit@1 0.339 with fused ranks, 0.166 with the match,
-- docs/quality.md "Confidence (issue 28)"). Both rules are the same, tested
-- against each other (pg_tests/search/test_query_language.py).
set role vera_owner;

-- Contract: the language of a query as the read path tells it: 'vi' for
-- Vietnamese, 'other' for text mostly outside ASCII, else 'en' (English or
-- not known). Of the words that hold a letter, the share that hold a letter
-- outside ASCII: below 0.3 'en' (an English query may name a café or Zoë);
-- else 'vi' when those words hold a mark that among Latin scripts only
-- Vietnamese uses (after NFD: hook above, dot below, horn), or a breve or
-- the letter đ beside a tone mark (grave, acute, tilde) on a vowel: breve
-- and đ alone are Romanian's and Serbian's too ("CS Aerostar Bacău",
-- "Novak Đoković"; since vera-search/11, no XQuAD vi question or paragraph
-- changes); else 'other' from 0.5, 'en' below. vera_client's
-- domain.languages.query_language is the same rule. Letters are told by
-- the database's character classes ([[:alpha:]]): a UTF-8 database with a
-- UTF-8 ctype (as vera db init creates) knows every script's.
create or replace function vera.query_language(query text)
returns text
language sql immutable parallel safe
set search_path = vera, pg_temp
as $$
    with word as (
        -- a word that holds a letter; foreign when one of its letters lies outside ASCII
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
comment on function vera.query_language(text) is
    'The language of a query as the read path tells it: vi, other (mostly outside ASCII) or en';
grant execute on function vera.query_language(text) to vera_app, vera_worker, vera_gateway;

-- Contract: the languages an embedding model reads, for models known to
-- read few; null for a model that reads many or is not known (its vectors
-- are trusted). all-MiniLM-L6-v2 was trained on English. vera_client's
-- adapters.embedders.MODEL_LANGUAGES holds the same.
create or replace function vera.model_languages(model text)
returns text[]
language sql immutable parallel safe
as $$ select case model when 'all-MiniLM-L6-v2' then array['en'] end $$;
comment on function vera.model_languages(text) is
    'Languages an embedding model reads (null: many, or not known)';
grant execute on function vera.model_languages(text) to vera_app, vera_worker, vera_gateway;

-- Contract: whether a model reads a query, so that its vector can help:
-- true for a model of many or unknown languages, for a search without
-- text (a vector alone is searched as given), and for a query in one of
-- its languages.
create or replace function vera.model_reads(model text, query text)
returns boolean
language sql immutable parallel safe
set search_path = vera, pg_temp
as $$
    select vera.model_languages(model) is null or coalesce(btrim(query), '') = ''
           or vera.query_language(query) = any (vera.model_languages(model))
$$;
comment on function vera.model_reads(text, text) is
    'Whether an embedding model reads a query (its languages hold the query''s; true when not known)';
grant execute on function vera.model_reads(text, text) to vera_app, vera_worker, vera_gateway;

reset role;
