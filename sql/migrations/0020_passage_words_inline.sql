-- 0020_passage_words_inline: a passage's words kept in its own row
-- (issue 31, fifth pass).
--
-- A lexical round scores every passage it reads from its tsvector. A
-- passage of 50-300 words has a tsvector of about 2 kB, which PostgreSQL
-- moved out of the row into the TOAST table (its default for a row over
-- 2 kB): reading it cost a TOAST index probe and page per passage, about
-- 5 microseconds of a round's 9-10 per passage (docs/benchmarks.md).
-- Storage MAIN keeps tsv in the row: it is compressed first and moved out
-- only when the row could not fit a page otherwise (the text and the
-- embedding, read for the ten hits alone, go out first).
--
-- SET STORAGE applies to rows written afterwards, so the table is
-- rewritten once to move the existing passages' words in: setting words'
-- expression again (the same one) rewrites every row, and a row written
-- anew has its out-of-line values fetched back and stored by the columns'
-- storage of now. The rewrite rebuilds vera.chunks' indexes, the HNSW ones
-- too.
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.

set role vera_owner;

alter table vera.chunks
    alter column tsv set storage main,
    alter column words set expression as
        (pg_catalog.length(tsv) - pg_catalog.length(pg_catalog.ts_filter(tsv, '{c}')));

reset role;
