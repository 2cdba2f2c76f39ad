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
-- embedding, read for the hits alone, go out first).
--
-- SET STORAGE applies to rows written from now on and changes nothing
-- else, so this migration is instant. Passages stored before it keep their
-- words out of the row, and are found as before, until the table is
-- rewritten: `vacuum full vera.chunks` moves them in (an exclusive lock
-- while it copies the table and rebuilds its indexes, the HNSW ones too:
-- about 5 minutes for 100,000 passages on 2 cores; docs/operations.md).
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.

set role vera_owner;

alter table vera.chunks alter column tsv set storage main;

reset role;
