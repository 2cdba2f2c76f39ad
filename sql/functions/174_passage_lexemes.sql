-- The passages' full-text index (chunks_group_lexemes_idx, migration 0021)
-- and the tsqueries over it: each word of a passage keyed by its group and
-- its length class, as the facts' index keys theirs by group (and part:
-- vera.group_lexemes, 170_ranking.sql). vera.lexical_candidates
-- (177_lexical_candidates.sql) reads it.
set role vera_owner;

-- The passages' lengths in words (vera.chunks.words) are split into eight
-- classes by octave: up to 31 words, 32-63, 64-127, 128-255, 256-511,
-- 512-1,023, 1,024-2,047, and 2,048 or more. BM25 (b = 0.75) ranks a
-- shorter passage holding a word as often above a longer one, so a round
-- that scores only the shortest passages holding a frequent word
-- (vera.lexical_candidates) reads the word's postings class by class,
-- shortest first, and stops at the class that fills its budget: at
-- 1,000,000 passages, of the 1,049 passages of a tenant in a question's
-- first piece it read 466 rather than all (docs/benchmarks.md).
-- Octaves keep the classes few (a whole word is read as one posting list
-- per class) and the class that fills the budget at most twice as long as
-- the passages before it.

-- Internal: the upper bounds of the length classes but the last (the
-- class of a passage is the number of them it reaches, 0-7).
create or replace function vera.passage_length_bounds()
returns integer[]
language sql immutable parallel safe
as $$ select '{32,64,128,256,512,1024,2048}'::integer[] $$;
comment on function vera.passage_length_bounds() is
    'Internal: where the passages'' length classes end (in words): octaves from 32 to 2,048';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.passage_length_bounds() to vera_searcher;

-- Internal: the length class of a passage of that many words, 0 (up to 31)
-- to 7 (2,048 or more).
create or replace function vera.passage_length_class(words integer)
returns integer
language sql immutable parallel safe
as $$ select pg_catalog.width_bucket(words, vera.passage_length_bounds()) $$;
comment on function vera.passage_length_class(integer) is
    'Internal: a passage''s length class (0-7, octaves of vera.passage_length_bounds) by its words';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.passage_length_class(integer) to vera_searcher;

-- (keyed by group alone before the length classes)
drop function if exists vera.passage_lexemes(text, tsvector);

-- Internal: a passage's words as the passages' full-text index holds them,
-- keyed by its group and its length class: "<group_id> <class> <lexeme>".
-- One posting list per group, class and word, so that a round reads only
-- the searched groups' postings (keyed by the word alone, with the group as
-- a second column, before 0021, the index held one list per word for every
-- tenant, and a round walked them all, and those of the query's frequent
-- words it intersects with: at 1,000,000 passages in 10 tenants, "the" is
-- held by nearly all 1,000,000; docs/benchmarks.md), and one class at a
-- time when it wants the shortest passages. The same expression as the
-- index's once vera.group_keyed_words (170_ranking.sql) and
-- vera.passage_length_class are inlined too: plain SQL functions, which the
-- planner inlines into the round's statement, where it then matches the
-- index. A passage without words has no keys.
create or replace function vera.passage_lexemes(group_id text, words integer, tsv tsvector)
returns tsvector
language sql immutable parallel safe
as $$
    select case when tsv = ''::tsvector then tsv
                else vera.group_keyed_words(group_id || ' ' || vera.passage_length_class(words)::text, tsv)::tsvector
           end
$$;
comment on function vera.passage_lexemes(text, integer, tsvector) is
    'Internal: a passage''s words keyed by group and length class ("<group_id> <class> <lexeme>"), the passages'' full-text index';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.passage_lexemes(text, integer, tsvector) to vera_searcher;

-- (one tsquery for all the classes before them)
drop function if exists vera.passage_lexeme_query(text[], text[], text[], text[]);

-- Internal: the tsqueries over vera.passage_lexemes matching a passage of
-- one of the groups that holds one of the lexemes, one of and_any when that
-- names some, and none of none_of: one tsquery per length class, shortest
-- first (element c + 1 for class c), each null when lexemes or groups are
-- empty. A passage's keys all name its one group and class, so each pair's
-- conditions are one conjunction, and a class's groups are joined by OR. A
-- round reads the classes one by one (one small query each: one query
-- OR-ing all the classes' took 3.8 ms for a TimeQA question's 565
-- passages, against 0.95 for a query over the index before the classes).
create or replace function vera.passage_lexeme_queries(groups text[], lexemes text[], and_any text[] default null,
                                                       none_of text[] default null)
returns tsquery[]
language sql immutable
as $$
    -- the classes' queries differ only in the class of every key: written once with " # " in its
    -- place (a group id and a word hold no space, so " # " is found nowhere else), then filled in
    -- for each class (building each class's text anew took 0.22 ms a call, this 0.07)
    with template as (
        select pg_catalog.array_to_string(array(
                   select '(' || (select pg_catalog.string_agg(pg_catalog.quote_literal(g || ' # ' || vera.index_word(l)), ' | ')
                                    from pg_catalog.unnest(lexemes) l where pg_catalog.btrim(l) <> '') || ')'
                          || coalesce(' & (' || (select pg_catalog.string_agg(pg_catalog.quote_literal(g || ' # ' || vera.index_word(l)), ' | ')
                                                   from pg_catalog.unnest(and_any) l where pg_catalog.btrim(l) <> '') || ')', '')
                          || coalesce(' & !(' || (select pg_catalog.string_agg(pg_catalog.quote_literal(g || ' # ' || vera.index_word(l)), ' | ')
                                                    from pg_catalog.unnest(none_of) l where pg_catalog.btrim(l) <> '') || ')', '')
                     from pg_catalog.unnest(groups) g), ' | ') as text)
    select array(select nullif(pg_catalog.replace(t.text, ' # ', ' ' || c.class::text || ' '), '')::tsquery
                   from template t, pg_catalog.generate_series(0, pg_catalog.cardinality(vera.passage_length_bounds())) c(class)
                  order by c.class)
$$;
comment on function vera.passage_lexeme_queries(text[], text[], text[], text[]) is
    'Internal: tsqueries over vera.passage_lexemes, one per length class: in one of the groups, any of the lexemes, any of and_any, none of none_of';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.passage_lexeme_queries(text[], text[], text[], text[]) to vera_searcher;

reset role;
