-- 0005_lexeme_parts: the facts' full-text index keys each word twice, by
-- group ("<group_id> <lexeme>", as 0004 did) and by group and one of 16
-- parts of the group's facts ("<group_id> <lexeme> <part>", the part being
-- the last hex digit of the fact id). A round of the lexical half that
-- reads at most 250 facts holding a frequent word (vera.lexical_candidates)
-- decoded that word's whole posting list and sorted it into heap order
-- first: at 1,000,000 facts, for a word held by 17,704 of a tenant's
-- facts, 2.1 and 2.2 ms before the 250 rows (0.9 ms); one part of it
-- (~1,100 facts) costs 0.15 ms (docs/benchmarks.md). Rounds that read
-- every match keep reading the keys without a part. vera.group_lexemes
-- (sql/functions/170_ranking.sql) is the same expression, inlined by the
-- planner into the round's statement so that it matches this index; the
-- expression is spelled out here, in built-in functions only, because
-- migrations run before sql/functions.
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.
set role vera_owner;

drop index if exists vera.facts_group_lexemes_idx;
create index facts_group_lexemes_idx on vera.facts using gin ((
    case when tsv = ''::tsvector then tsv
         else ('''' || group_id || ' ' || substr(replace(strip(tsv)::text, ''' ''', ''' ''' || group_id || ' '), 2)
               || ' ''' || group_id || ' '
               || replace(left(substr(strip(tsv)::text, 2), -1), ''' ''',
                          ' ' || right(fact_id::text, 1) || ''' ''' || group_id || ' ')
               || ' ' || right(fact_id::text, 1) || '''')::tsvector
    end));

reset role;

drop function if exists vera.group_lexemes(text, tsvector);
drop function if exists vera.group_lexeme_query(text[], text[], text[]);
-- the BM25 weights now say how many times one document can hold a term at most, and the lexical
-- rounds take it (a tighter bound on what the terms not read yet can add to a score)
drop function if exists vera.bm25_weights(vera.item_kind[], text[], bigint[], bigint[]);
drop function if exists vera.lexical_candidates(vera.item_kind, text[], text[], bigint[], double precision[],
                                                double precision, timestamptz, text, uuid, integer, text[]);
