-- The passages' full-text index (chunks_group_lexemes_idx, migration 0021)
-- and the tsqueries over it: each word of a passage keyed by its group, as
-- the facts' index keys theirs (vera.group_lexemes, 170_ranking.sql).
-- vera.lexical_candidates (177_lexical_candidates.sql) reads it.
set role vera_owner;

-- Internal: a passage's words as the passages' full-text index holds them,
-- keyed by its group: "<group_id> <lexeme>". One posting list per group and
-- word, so that a round reads only the searched groups' postings: keyed by
-- the word alone (with the group as a second column, before 0021), the
-- index held one list per word for every tenant, and a round walked them
-- all, and those of the query's frequent words it intersects with (at
-- 1,000,000 passages in 10 tenants, "the" is held by nearly all 1,000,000,
-- a word of a fiftieth of a tenant's passages by ~20,000;
-- docs/benchmarks.md). The same expression as the index's once
-- vera.group_keyed_words (170_ranking.sql) is inlined too: plain SQL
-- functions, which the planner inlines into the round's statement, where
-- it then matches the index. A passage without words has no keys.
create or replace function vera.passage_lexemes(group_id text, tsv tsvector)
returns tsvector
language sql immutable parallel safe
as $$
    select case when tsv = ''::tsvector then tsv else vera.group_keyed_words(group_id, tsv)::tsvector end
$$;
comment on function vera.passage_lexemes(text, tsvector) is
    'Internal: a passage''s words keyed by group ("<group_id> <lexeme>"), the passages'' full-text index';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.passage_lexemes(text, tsvector) to vera_searcher;

-- Internal: the tsquery over vera.passage_lexemes matching a passage of one
-- of the groups that holds one of the lexemes, one of and_any when that
-- names some, and none of none_of; null when lexemes or groups are empty. A
-- passage's keys all name its one group, so each group's conditions are one
-- conjunction and the groups' are joined by OR.
create or replace function vera.passage_lexeme_query(groups text[], lexemes text[], and_any text[] default null,
                                                     none_of text[] default null)
returns tsquery
language sql immutable
as $$
    select nullif(pg_catalog.array_to_string(array(
               select '(' || (select pg_catalog.string_agg(pg_catalog.quote_literal(g || ' ' || vera.index_word(l)), ' | ')
                                from pg_catalog.unnest(lexemes) l where pg_catalog.btrim(l) <> '') || ')'
                      || coalesce(' & (' || (select pg_catalog.string_agg(pg_catalog.quote_literal(g || ' ' || vera.index_word(l)), ' | ')
                                               from pg_catalog.unnest(and_any) l where pg_catalog.btrim(l) <> '') || ')', '')
                      || coalesce(' & !(' || (select pg_catalog.string_agg(pg_catalog.quote_literal(g || ' ' || vera.index_word(l)), ' | ')
                                                from pg_catalog.unnest(none_of) l where pg_catalog.btrim(l) <> '') || ')', '')
                 from pg_catalog.unnest(groups) g), ' | '), '')::tsquery
$$;
comment on function vera.passage_lexeme_query(text[], text[], text[], text[]) is
    'Internal: tsquery over vera.passage_lexemes: in one of the groups, any of the lexemes, any of and_any, none of none_of';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.passage_lexeme_query(text[], text[], text[], text[]) to vera_searcher;

reset role;
