-- 0004_group_lexemes: the facts' full-text index keyed by (group, word).
-- The (group_id, tsv) index answered "facts of group G holding w" by
-- intersecting G's posting list (every fact of the group: 100,000 in a
-- large tenant) with w's over every tenant; a bitmap of one rare word then
-- cost ~1 ms at 1,000,000 facts in 10 tenants and one of two frequent
-- words ~8 ms (docs/benchmarks.md). This index holds one posting list per
-- group and word, "<group_id> <lexeme>" (group ids never hold a space, nor
-- do lexemes), so such a bitmap reads only that group's postings of those
-- words. vera.group_lexemes (sql/functions/170_ranking.sql) is the same
-- expression, inlined by the planner into the lexical half's statement so
-- that it matches this index; the expression is spelled out here, in
-- built-in functions only, because migrations run before sql/functions.
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.
set role vera_owner;

drop index if exists vera.facts_group_tsv_idx;
create index facts_group_lexemes_idx on vera.facts using gin ((
    case when tsv = ''::tsvector then tsv
         else ('''' || group_id || ' ' || substr(replace(strip(tsv)::text, ''' ''', ''' ''' || group_id || ' '), 2))::tsvector
    end));

reset role;
