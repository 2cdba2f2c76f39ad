-- 0021_passage_group_lexemes: the passages' full-text index keyed by
-- (group, length class, word), as the facts' is by (group, word) (0004)
-- (issue 31, sixth and seventh passes).
--
-- chunks_group_tsv_idx was a GIN index over (group_id, tsv): one posting
-- list per word for every tenant, intersected with the group's. At
-- 1,000,000 passages in 10 tenants a word that a fiftieth of a tenant's
-- passages hold is held by ~20,000, "the" by nearly all 1,000,000, and a
-- lexical round walked those lists to find its tenant's postings. The new
-- index holds each word of a passage keyed by its group and the octave of
-- its length in words, "<group_id> <class> <lexeme>" (class 0 up to 31
-- words, 1 for 32-63, ..., 7 from 2,048): a round reads only its groups'
-- lists, and a round that scores only a frequent word's shortest passages
-- reads them class by class, shortest first. vera.passage_lexemes
-- (sql/functions/174_passage_lexemes.sql) is the same expression, inlined
-- by the planner into a round's statement so that it matches this index;
-- it is spelled out here, in built-in functions only, because migrations
-- run before sql/functions.
--
-- A word is keyed by its first 500 characters (vera.index_word): a lexeme
-- may hold 2,046 bytes, and to_tsvector keeps words of up to 2,047, so a
-- word of ~2,000 characters keyed beside its group made the key too long
-- and the row's write fail ("word is too long"), since 0004 for a fact's
-- text. The facts' index is rebuilt with the same cut.
--
-- A b-tree of (group_id, words) gives a group's shortest and longest
-- passage, so that a round scans only the classes in between.
--
-- fastupdate is off: a round reads the index once per length class, and
-- each of those scans read the whole pending list of passages written
-- since the last vacuum (242 pages after TimeQA's 15,524 paragraphs were
-- loaded: a search took 55 ms instead of 18 until a vacuum emptied it);
-- a passage's words go into the index as it is written.
--
-- Building it reads every passage (about 50 s for 100,000 and 3 minutes
-- for 1,000,000 on 2 cores, with the memory set below: GIN sorts its keys
-- in maintenance_work_mem, and PostgreSQL's default of 64 MB makes it
-- write and merge many runs); the old index is dropped after it. The
-- facts' index is rebuilt the same way (each fact read once). It runs
-- twice harmlessly (a benchmark database built before it takes it with
-- `benchmarks/passage_rounds.py --apply-migration`).
--
-- Unreleased until sql/migrations/RELEASED lists it; from then on frozen.
set role vera_owner;

set local maintenance_work_mem = '256MB';
create index if not exists chunks_group_lexemes_idx on vera.chunks using gin ((
    case when tsv = ''::tsvector then tsv
         else ('''' || (group_id || ' ' || width_bucket(words, '{32,64,128,256,512,1024,2048}'::integer[])::text) || ' '
               || substr(replace(regexp_replace(strip(tsv)::text, '((?:[^'' ]{250}){2})[^'' ]+', '\1', 'g'), ''' ''',
                                 ''' ''' || (group_id || ' ' || width_bucket(words, '{32,64,128,256,512,1024,2048}'::integer[])::text) || ' '), 2))::tsvector
    end)) with (fastupdate = off);
drop index if exists vera.chunks_group_tsv_idx;
-- a group's shortest and longest passages, for the length classes a lexical round reads
-- (vera.lexical_candidates, sql/functions/177_lexical_candidates.sql)
create index if not exists chunks_group_words_idx on vera.chunks (group_id, words);
-- the facts' keys cut their words as the passages' do (see above)
drop index if exists vera.facts_group_lexemes_idx;
create index facts_group_lexemes_idx on vera.facts using gin ((
    case when tsv = ''::tsvector then tsv
         else ('''' || group_id || ' ' || substr(replace(regexp_replace(strip(tsv)::text, '((?:[^'' ]{250}){2})[^'' ]+', '\1', 'g'), ''' ''', ''' ''' || group_id || ' '), 2)
               || ' ''' || group_id || ' '
               || replace(left(substr(regexp_replace(strip(tsv)::text, '((?:[^'' ]{250}){2})[^'' ]+', '\1', 'g'), 2), -1), ''' ''',
                          ' ' || right(fact_id::text, 1) || ''' ''' || group_id || ' ')
               || ' ' || right(fact_id::text, 1) || '''')::tsvector
    end));

reset role;
