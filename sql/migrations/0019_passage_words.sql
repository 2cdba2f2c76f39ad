-- 0019_passage_words: a passage's length as BM25 counts it, stored
-- (issue 31, third pass).
--
-- BM25 divides a passage's term frequencies by its length, its distinct
-- words: length(tsv) less its lexemes of weight C (a Vietnamese text's word
-- pairs, 173_lexical_terms.sql). Counting them took two more tsvector
-- copies for every passage a lexical round scores; vera.chunks.words holds
-- the count, generated from tsv (built-in functions only, so the table
-- needs no vera function: pg_tests/platform/test_catalog.py). A generated
-- column is computed after the BEFORE trigger that sets tsv
-- (chunks_set_tsv), on every insert and update, so it can never disagree
-- with tsv and no write path (retract, erase, a new version, a review)
-- needs to keep it. Adding it rewrites vera.chunks once.
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.

set role vera_owner;

alter table vera.chunks
    add column if not exists words integer
        generated always as (pg_catalog.length(tsv) - pg_catalog.length(pg_catalog.ts_filter(tsv, '{c}'))) stored;

reset role;
