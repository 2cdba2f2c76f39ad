-- The lexical half of search's stage 1: one kind's BM25 top n, generated
-- rarest terms first (MaxScore), with the weights of 170_ranking.sql and the
-- statistics of 165_term_stats.sql. vera.search_candidates
-- (179_search_candidates.sql) calls it for facts and for passages.
set role vera_owner;

-- Internal: the lexical list of one kind (facts or passages): the n
-- visible documents of the groups with the best BM25 scores for the query
-- terms (vera.bm25_document_score with the weights of vera.bm25_weights: the
-- terms that occur in this kind, rarest here first, with their postings
-- here and their IDFs), ordered as stage 1 orders equal scores.
--
-- Candidate generation follows MaxScore (Turtle and Flood 1995): terms are
-- taken rarest first, a round's worth of postings at a time (at least one
-- term, then more while their postings sum to at most the budget of this
-- kind, vera.lexical_budget), and the documents holding any term taken so
-- far are scored on every query term. A document holding none of them
-- holds only the terms left, so it scores at most the sum of their
-- largest contributions (each IDF times the tf part at the most times one
-- document holds the term, which the statistics bound; at most k1 + 1);
-- once the n-th score found beats that bound, no other document can enter
-- the list and the frequent terms' postings are never read.
-- Generating terms: the rarest query term and every term held by at most a
-- tenth of the documents searched or by few (at most the budget). A term
-- held by more (IDF below ln 10, under a quarter of a rare word's weight)
-- still counts in every score, but a document holding only such words does
-- not become a candidate: otherwise a query with "the" and a few rare words
-- would rank most of a large corpus whenever the rare words match fewer
-- than n documents.
--
-- Passages (b = 0.75) get the exact top n of the documents holding a
-- generating term; a generating term of passages is one held by at most a
-- fiftieth of them (IDF >= ln 50) or by at most the budget. Scoring a
-- document (with its stored length, vera.chunks.words) is cheap beside
-- finding whether it answers (its episode the latest version, not
-- retracted) and its order key, so a round scores the
-- documents it reads and checks those two for its best n only (and those
-- tying with the n-th), and once the list holds n, only for those scoring
-- at least its n-th (no other can enter it: on TimeQA a question's later
-- rounds checked 68 and 19 paragraphs where they checked 101 each); the
-- second piece of a cut round (below), only for those scoring at least the
-- n-th of the list and the first piece together (a first round's second
-- piece checked its n best even below the first piece's n best:
-- test_a_second_piece_below_the_first_pieces_n_best_is_not_checked).
-- Once the list holds n and a document holding the
-- next term t alone (at most t's bound) could not beat the n-th score, a
-- round takes t alone and reads only the documents holding t and one of
-- the later terms left once those with the smallest bounds, as many as fit
-- beside t's under the n-th score, are set aside (a document holding t and
-- only those cannot enter); when all of them fit, t's documents are not
-- read at all. Nothing a brute-force list would hold is lost while no
-- round's terms are held by more than the budget of passages.
-- A round whose term is (a generating term may be held by a fiftieth of
-- the group: 2,000 of a tenant's 100,000 passages, each scored from its
-- words at about 5 microseconds) reads it in two pieces, the passages
-- holding it and a telling later term of the query first (one held by
-- at most a tenth of the passages searched, IDF >= ln 10), then those
-- holding it and none of those; it scores only the shortest of the first
-- piece, as many as the budget (or n, when more; equal lengths by id),
-- then the n shortest of the second (at most what the budget leaves),
-- reading their lengths from their rows one length class at a time,
-- shortest first, until the budget is filled (174_passage_lexemes.sql:
-- the index keys each word by its passage's class, so the longer classes'
-- passages are not read). A passage holding more of the query's words is
-- in the first piece, which is small beside the second (a passage the
-- question was asked of holds them all). A later word most passages hold
-- ("the", "on") tells nothing: counted in the first piece, it made that
-- piece nearly every passage holding t, whose longest then took the
-- budget from shorter ones holding t alone (at 1,000,000 passages the
-- lexical list held 0.686 of the exact BM25 top 10, then 0.863;
-- docs/benchmarks.md). A passage of the second piece holds t and only
-- words that tell little, so its score is mostly t's, the highest in its
-- shortest passages (BM25's length normalisation): the list takes at most
-- n of them, so its n shortest are scored (scoring the budget's rest as
-- well, ~180 passages a cut round at 1,000,000, cost an eighth of a
-- full-text search for 0.007 of the exact top 10). Of passages holding the
-- same words equally often the shorter scores higher (BM25's length
-- normalisation). What such a round gives up: a passage past its piece's
-- share (the budget; n for the second piece) that holds the word many
-- times (it is not read in a later round
-- either, which leaves out the passages holding an earlier round's terms).
-- A passage holding only the later terms is read in their rounds as
-- before.
-- Facts (b = 0) get it up to a bound on the rows read: a
-- round reads at most the budget of documents (at least n). Without length
-- normalisation a fact's score depends only on which query terms it holds
-- and how often (almost always once), so the thousands of facts holding one
-- frequent term tie, and an exact list reads them all to sort them by the
-- order key (the rarest term of "in on" in a 100,000-fact tenant holds
-- 14,000 facts: each row is a heap page, and the lexical half took 600 ms
-- and more, docs/benchmarks.md). A round of one term t holding more than
-- the budget therefore reads, the first in the table's order (the
-- full-text index's bitmap; as the HNSW half, among equal distances, takes
-- the index's order), at most the budget of
--   1. the documents holding t and a later (more frequent) query term,
--      which outscore those holding t alone once (IDFs are positive), then,
--   2. only while a document holding t alone once could still enter the
--      list (fewer than n found, or the n-th score at most t's IDF), the
--      documents holding t and no other query term.
-- What this gives up, only when a round of facts is cut at the budget:
-- among equal scores the table's order, not the order key, decides which
-- documents enter; a fact past the budget holding t twice (or holding t
-- and a later term, when step 1 is cut) may be missed, and the list's
-- scores may then fall below the exact list's. Every score in the list is
-- its document's exact BM25 score, in stage 1's order; the same data in
-- the same table gives the same list; a query none of whose rounds is cut
-- (every generating term held by at most the budget) gets the exact list.
--
-- Owned by vera_searcher, like vera.search_candidates, which passes the
-- caller's readable groups only.
create or replace function vera.lexical_candidates(
    target_kind vera.item_kind, groups text[], ranked_terms text[], ranked_postings bigint[],
    ranked_idfs double precision[], ranked_most_held bigint[], average_length double precision,
    reference timestamptz, personal_group text, caller uuid, n integer, group_order text[])
returns table (group_id text, item_id uuid, score double precision, order_key bytea)
language plpgsql stable
set search_path = vera, public, pg_temp
-- No plan_cache_mode of its own: it runs under its caller's, vera.search_candidates'
-- force_generic_plan, so its statements are planned once a session. (A generic plan of the facts'
-- round once read a small group's rows through the valid_from index, 8,818 rows for a round of 250;
-- test_fact_rounds_read_at_most_the_budget, which calls this function directly, now passes under
-- either mode: PGOPTIONS='-c plan_cache_mode=force_generic_plan'.)
-- Every row it reads comes through an index: a word index's postings, an episode's or source's
-- key. A sequential scan of the documents evaluates their keyed words (vera.passage_lexemes,
-- vera.group_lexemes: a regular expression over the whole tsvector) row by row, which the planner
-- prices as a few cheap built-ins. Before a table is first analyzed (a database loaded and
-- searched before autovacuum came by) it then chose one: the generic plan of a passage round read
-- all 2,000 passages of a fresh load_mix database and keyed each again for every length class,
-- 240 ms a statement against 4 through the index (test_lexical_candidates.py::
-- test_a_passage_round_reads_the_word_index_in_a_database_never_analyzed). With sequential scans
-- off a plan has one only where no index serves (PostgreSQL 18 counts disabled nodes first).
set enable_seqscan = off
as $$
declare
    k1 constant double precision := (select p.k1 from vera.bm25_parameters(target_kind) p);
    b constant double precision := (select p.b from vera.bm25_parameters(target_kind) p);
    -- no length normalisation: a round of facts reads at most the budget (see above)
    bounded_rounds constant boolean := b = 0;
    -- postings read per round, beyond the first term's; where bounded, documents read per round
    budget constant bigint := vera.lexical_budget(target_kind);
    taken integer := 0;
    generating integer;
    earlier integer;
    round_postings bigint;
    -- the most each term can add to a document's score (see the bound below), in ranked order
    upper_bounds double precision[];
    -- a passage round with nothing to read: its term's documents cannot enter the list
    skip_read boolean;
    -- this step's terms (a document holds one of them, and one of and_terms when set), its
    -- tsquery, the documents it leaves out (scored in another step), its row limit
    matching_terms text[];
    and_terms text[];
    matching tsquery;
    excluded tsquery;
    row_limit bigint;
    -- a bounded round's second step (the documents holding its term alone) is still to come
    alone_pending boolean := false;
    round_groups text[];
    round_ids uuid[];
    round_scores double precision[];
    round_keys bytea[];
    bound double precision;
    found_groups text[];
    found_ids uuid[];
    found_scores double precision[];
    found_keys bytea[];
    -- the least score a passage must reach to enter the list (its n-th once full)
    entry_score double precision;
    -- a passage round held by more than the budget is split in two pieces (the passages holding its
    -- term and a telling later one, then those holding it and none of those); the piece being read (the later terms one of
    -- which its passages hold, the terms they hold none of, its tsqueries over vera.passage_lexemes, one
    -- per length class, and the one being read), the passages the round may still score (its pieces
    -- share them) and the rows of a piece's shortest passages (null: every passage of the piece is scored)
    split boolean;
    piece_number integer;
    piece_and text[];
    piece_none text[];
    pieces tsquery[];
    -- the later terms that tell a cut round's passages apart (its first piece holds one of them)
    telling text[];
    -- the elements of a piece's tsqueries (one per length class) for the classes the groups' passages
    -- are in
    first_class integer;
    last_class integer;
    piece tsquery;
    unscored integer;
    shortest tid[];
    piece_groups text[];
    piece_ids uuid[];
    piece_scores double precision[];
    piece_keys bytea[];
    -- the parts of the facts' full-text index (vera.group_lexemes) a round has read, and its rows
    parts constant text[] := vera.lexeme_parts();
    -- the most parts a statement reads by their own keys (GIN merges that many lists per word)
    parts_by_key constant integer := 4;
    parts_read integer;
    parts_step integer;
    rows_read bigint;
    part_rows bigint;
begin
    if coalesce(cardinality(ranked_terms), 0) = 0 then
        return;
    end if;
    if target_kind = 'passage' then
        -- the length classes from the groups' shortest passage to their longest (two probes of
        -- chunks_group_words_idx a group): a round reads only those (a class no passage is in
        -- still cost a scan of the index: TimeQA's paragraphs are in four of the eight)
        select coalesce(vera.passage_length_class(min(r.shortest)), 0) + 1,
               coalesce(vera.passage_length_class(max(r.longest)), cardinality(vera.passage_length_bounds())) + 1
          into first_class, last_class
          from unnest(groups) g
         cross join lateral (select min(c.words) as shortest, max(c.words) as longest
                               from vera.chunks c where c.group_id = g) r;
    end if;

    -- the terms that may generate candidates, rarest first: the rarest
    -- always, then each one held by at most a tenth of the documents
    -- searched (IDF >= ln 10) or cheap to read (at most a budget of postings)
    select greatest(1, coalesce(min(t.position) - 1, cardinality(ranked_terms)))::integer into generating
      from unnest(ranked_idfs, ranked_postings) with ordinality as t(idf, postings, position)
     where t.idf < case when b = 0 then ln(10) else ln(50) end and t.postings > budget;
    upper_bounds := array(select u.idf * (k1 + 1) * u.most_held / (u.most_held + k1 * (1 - b))
                            from unnest(ranked_idfs, ranked_most_held) with ordinality u(idf, most_held, position)
                           order by u.position);
    loop
        skip_read := false;
        if alone_pending then
            -- a bounded round's step 2: its term alone, neither an earlier nor a later term
            alone_pending := false;
            matching_terms := ranked_terms[taken:taken];
            and_terms := null;
            excluded := vera.any_of(ranked_terms[1:earlier] || ranked_terms[taken + 1:]);
            row_limit := greatest(budget, n);
        else
            -- this round's terms: the rarest not taken yet, a budget's worth of postings
            earlier := taken;
            round_postings := 0;
            while taken < generating
                  and (round_postings = 0 or round_postings + ranked_postings[taken + 1] <= budget) loop
                taken := taken + 1;
                round_postings := round_postings + ranked_postings[taken];
            end loop;
            -- the documents holding one of them and none of the earlier rounds' (scored then)
            matching_terms := ranked_terms[earlier + 1:taken];
            and_terms := null;
            -- (facts filter their rows by it; passages' keys leave those out in the index's query)
            excluded := case when target_kind = 'fact' then vera.any_of(ranked_terms[1:earlier]) end;
            row_limit := null;
            if not bounded_rounds and coalesce(cardinality(found_scores), 0) = n and taken > earlier + 1
               and upper_bounds[earlier + 1] < found_scores[n] then
                -- passages once the list is full: one term a round, and only the documents that hold
                -- it with enough of the later terms to beat the n-th score (see above)
                taken := earlier + 1;
                round_postings := ranked_postings[taken];
                matching_terms := ranked_terms[taken:taken];
            end if;
            if not bounded_rounds and coalesce(cardinality(found_scores), 0) = n and taken = earlier + 1
               and upper_bounds[taken] < found_scores[n] then
                -- (a document holding t alone, bounded by t's most, cannot enter either: else every
                -- document holding t is read)
                select array_agg(l.term order by l.position) into and_terms
                  from (select u.term, u.position,
                               sum(u.bound) over (order by u.bound, u.position) as running
                          from unnest(ranked_terms[taken + 1:], upper_bounds[taken + 1:])
                               with ordinality u(term, bound, position)) l
                 where upper_bounds[taken] + l.running >= found_scores[n];
                skip_read := and_terms is null;
            end if;
            if bounded_rounds and round_postings > budget then
                -- one frequent term (rounds of several hold at most the budget): step 1, with a later term;
                -- never fewer rows than the list holds
                row_limit := greatest(budget, n);
                if taken < cardinality(ranked_terms) then
                    and_terms := ranked_terms[taken + 1:];
                    alone_pending := true;
                elsif coalesce(cardinality(found_scores), 0) = n and found_scores[n] > ranked_idfs[taken] then
                    -- no later term: this round is step 2 alone, and no document holding the term once
                    -- can enter the list
                    exit;
                end if;
            end if;
        end if;
        -- The facts' full-text index holds two posting lists per group and word: all its facts, and
        -- those of each of 16 parts of the group's facts (vera.group_lexemes). A round that reads
        -- every match reads the first. A round cut at row_limit reads part by part, in
        -- vera.lexeme_parts' order: first as many parts as should hold its rows, then, if too few of
        -- those matched (facts not visible, or a later term less common than its share says), as
        -- many more as the parts read yielded rows per part. So a word held by 17,000 facts costs
        -- the bitmap of ~1,100 of them, not the decoding and sorting of all 17,000
        -- (docs/benchmarks.md). A statement over m parts makes GIN merge m posting lists per word,
        -- so one that would read more than parts_by_key of them reads the keys without a part
        -- instead (the word's whole list, as without parts), leaving out the parts already read.
        -- Passages: one statement per piece, every match, over the passages' index keyed by group,
        -- length class and word (vera.passage_lexemes, 174_passage_lexemes.sql).
        parts_read := 0;
        rows_read := 0;
        loop
            exit when skip_read;
            if row_limit is null or target_kind = 'passage' then
                parts_step := cardinality(parts);
            elsif parts_read = 0 then
                -- the term's postings spread evenly over the parts and, in step 1, the share of them
                -- that hold a later term too: at least that of the most frequent later term, whose
                -- exp(-idf) is its share of the documents, (df + 0.5) / (N + 1); half again for the
                -- facts not visible at the reference instant
                parts_step := least(cardinality(parts),
                                    ceil(1.5 * row_limit * cardinality(parts)
                                         / greatest(round_postings * case when and_terms is null then 1
                                                                        else exp(-ranked_idfs[cardinality(ranked_idfs)])
                                                                   end, 1))::integer);
            else
                parts_step := least(cardinality(parts) - parts_read,
                                    ceil(1.5 * (row_limit - rows_read) * parts_read
                                         / greatest(rows_read, 1))::integer);
            end if;
            if parts_step > parts_by_key then
                parts_step := cardinality(parts) - parts_read;
            end if;
            if target_kind = 'fact' then
                matching := vera.group_lexeme_query(
                    groups, matching_terms, and_terms,
                    case when parts_step <= parts_by_key then parts[parts_read + 1:parts_read + parts_step] end);
                -- Static, so that its plan is cached for the session: planning it anew each round
                -- cost as much as reading the rows (4 ms a statement at 1,000,000 facts, the
                -- functions it inlines). The rows are read in a
                -- materialized CTE, which the planner plans for all its rows: the full-text index's
                -- bitmap, in the table's order. A limit on the scan itself would make it walk the
                -- group's rows through a b-tree, expecting to meet matches soon, which for a term
                -- held by one fact in 50 reads 50 rows per match (and another subset); the limit
                -- still stops the scan, as a CTE runs only as far as its reader asks.
                -- The word index is the only one that can serve the fenced subquery (its other
                -- conditions match no index), and sequential scans are off. A generic plan cannot
                -- look into the round's tsquery (a parameter) and takes its match for a fixed share
                -- of the rows; with visibility's "valid_from <= reference" beside it, it found a
                -- walk of the group through the valid-time index cheaper in a table of a few
                -- thousand facts, freshly analyzed: nearly every row read, each one's keyed words
                -- tested by a regular expression, 60-110 ms a statement on 3,005 facts, and
                -- load_mix.py's searches at 250 ms
                -- (test_a_fact_round_reads_the_word_index_in_a_table_of_a_few_thousand_facts)
                with holding as materialized (
                    select f.group_id, f.fact_id, f.tsv, f.fact_text, f.predicate, f.object_value, f.valid_from
                      from (select f.*
                              from vera.facts f
                             where vera.group_lexemes(f.group_id, f.fact_id, f.tsv) @@ matching
                               -- the parts read already (none but in a cut round's last statement)
                               and right(f.fact_id::text, 1) <> all (parts[1:parts_read])
                               -- the groups again (matching names them), as a filter: an index on
                               -- group_id would add the group's every row to the bitmap (100,000 in a
                               -- large tenant)
                               and array_position(groups, f.group_id) is not null
                            offset 0) f
                     where not coalesce(f.tsv @@ excluded, false)
                       and vera.fact_visible(f.lifecycle, f.group_id, f.retired_at, f.valid_from, f.valid_to,
                                             reference, personal_group)),
                cut as (select * from holding limit row_limit - rows_read)
                select array_agg(h.group_id), array_agg(h.item_id), array_agg(h.score), array_agg(h.order_key),
                       (select count(*) from cut)
                  into round_groups, round_ids, round_scores, round_keys, part_rows
                  from (select f.group_id, f.fact_id as item_id, s.score,
                               vera.fact_order_key(f.fact_text, f.predicate, f.object_value, f.valid_from)
                                   as order_key
                          from cut f
                         cross join lateral vera.bm25_document_score('fact', f.tsv, ranked_terms, ranked_idfs,
                                                                     average_length) s
                         -- (a fact the index matched by a word's first 500 characters alone scores nothing)
                         where s.score > 0
                         order by 3 desc, 4, array_position(group_order, f.group_id), 2
                         limit n) h;
                rows_read := rows_read + part_rows;
            else
                -- A round whose term more than the budget of passages hold reads it in two pieces: the
                -- passages holding it and a telling later term (those that hold more of the question), then
                -- those holding it and none of those; it scores the shortest passages of the first, as many as
                -- the budget (the list's length when longer), then the n shortest of the second (at most what
                -- the budget leaves), equal lengths by id (a passage's length is read from its row, its score
                -- needs its words: see above). The
                -- passages holding an earlier round's term (scored then) are left out by the full-text index
                -- itself (GIN evaluates "and not" exactly), not by a filter on every row read: those are
                -- neither fetched nor their tsvectors read (a long passage's is ~2 kB).
                -- (the later terms held by at most a tenth of the passages searched: see above)
                telling := array(select u.term from unnest(ranked_terms[taken + 1:], ranked_idfs[taken + 1:]) u(term, idf)
                                  where u.idf >= ln(10));
                split := round_postings > budget and and_terms is null and cardinality(telling) > 0;
                round_groups := '{}';
                round_ids := '{}';
                round_scores := '{}';
                round_keys := '{}';
                unscored := greatest(budget, n);
                for piece_number in 1 .. case when split then 2 else 1 end loop
                    if not split then
                        piece_and := and_terms;
                        piece_none := ranked_terms[1:earlier];
                    elsif piece_number = 1 then
                        piece_and := telling;
                        piece_none := ranked_terms[1:earlier];
                    else
                        piece_and := null;
                        piece_none := ranked_terms[1:earlier] || telling;
                    end if;
                    pieces := vera.passage_lexeme_queries(groups, matching_terms, piece_and, piece_none);
                    -- the least score a passage of this piece must reach: the n-th of the list (kept in
                    -- order: an element read) and, once the round's first piece found some, of the two
                    -- together (the pieces and the rounds hold different passages, so a passage below it has
                    -- n better ones already); its visibility and order key are then not looked up (a cut
                    -- round's second piece checked its n best even when the first had found n better)
                    if cardinality(round_scores) = 0 then
                        entry_score := case when coalesce(cardinality(found_scores), 0) = n then found_scores[n]
                                            else '-infinity'::double precision end;
                    else
                        entry_score := coalesce((select s.score from unnest(found_scores || round_scores) s(score)
                                                  order by s.score desc offset greatest(n, 1) - 1 limit 1),
                                                '-infinity'::double precision);
                    end if;
                    shortest := null;
                    if round_postings > budget then
                        exit when unscored <= 0;
                        if piece_number = 2 then
                            -- the second piece's n shortest at most (see above)
                            unscored := least(unscored, n);
                        end if;
                        -- the rows themselves (the function's one snapshot keeps them where they are), so
                        -- that the statement below reads those alone, length class by class, shortest
                        -- first, until the budget is filled: every passage of a class is shorter than any of
                        -- the next, so these are the piece's shortest (vera.passage_length_class). The
                        -- groups again (piece names them) as a filter that no index serves: "group_id = any
                        -- (groups)" let the planner AND the group's every row into the bitmap through an
                        -- index on group_id (100,000 in a tenant of 1,000,000 passages: 13 ms, against 0.4
                        -- for the word's postings)
                        shortest := '{}';
                        foreach piece in array pieces[first_class:last_class] loop
                            exit when cardinality(shortest) >= unscored;
                            shortest := shortest || array(
                                select c.ctid
                                  from vera.chunks c
                                 where vera.passage_lexemes(c.group_id, c.words, c.tsv) @@ piece
                                   and array_position(groups, c.group_id) is not null
                                   and (c.lifecycle = 'published'
                                        or (c.lifecycle = 'proposal' and c.proposed_by = caller))
                                 order by c.words, c.chunk_id
                                 limit unscored - cardinality(shortest));
                        end loop;
                        unscored := unscored - cardinality(shortest);
                    end if;
                    -- Static: planned once per session and kept (as the facts' statement above); the documents
                    -- holding the round's terms scored, then only the best n (and those tying with the n-th) checked
                    -- for visibility and given an order key
                    select array_agg(h.group_id), array_agg(h.item_id), array_agg(h.score), array_agg(h.order_key)
                      into piece_groups, piece_ids, piece_scores, piece_keys
                      from (select t.group_id, t.item_id, t.score,
                                   vera.passage_order_key(t.source_name, t.external_id, t.version, t.ordinal) as order_key
                              from (select r.group_id, r.item_id, r.score, r.ordinal, v.external_id, v.version, v.source_name
                                      from (select c.group_id, c.chunk_id as item_id, c.episode_id, c.ordinal, sc.score
                                              from (-- the piece's passages, a length class at a time (one
                                                    -- small tsquery each), or the rows chosen above (one
                                                    -- branch runs: its gate is decided before any row is read)
                                                    select h.group_id, h.chunk_id, h.episode_id, h.ordinal, h.tsv, h.words
                                                      from unnest(case when shortest is null then pieces[first_class:last_class] end) p(query)
                                                     cross join lateral (
                                                           select h.*
                                                             from vera.chunks h
                                                            where vera.passage_lexemes(h.group_id, h.words, h.tsv) @@ p.query
                                                              -- the groups again, a filter no index serves (above)
                                                              and array_position(groups, h.group_id) is not null
                                                              and (h.lifecycle = 'published'
                                                                   or (h.lifecycle = 'proposal' and h.proposed_by = caller))) h
                                                    union all
                                                    select h.group_id, h.chunk_id, h.episode_id, h.ordinal, h.tsv, h.words
                                                      from vera.chunks h
                                                     where h.ctid = any (shortest)) c
                                             cross join lateral vera.bm25_passage_score(c.tsv, c.words, ranked_terms,
                                                                                        ranked_idfs, average_length) sc
                                               -- once the list holds n, only a passage scoring at least its n-th
                                               -- can enter it (ties by order key): the others need no check; a
                                               -- passage the index matched by a word's first 500 characters
                                               -- alone (vera.index_word) scores nothing and is none
                                             where sc.score >= entry_score and sc.score > 0
                                             order by sc.score desc
                                            offset 0) r
                                     cross join lateral (
                                           select e.external_id, e.version, s.name as source_name
                                             from vera.episodes e
                                             join vera.sources s on s.group_id = e.group_id and s.source_id = e.source_id
                                            where e.group_id = r.group_id and e.episode_id = r.episode_id
                                              and e.status <> 'retracted' and e.observed_at <= reference
                                              and not exists (select from vera.episodes newer
                                                               where newer.group_id = e.group_id
                                                                 and newer.source_id = e.source_id
                                                                 and newer.external_id = e.external_id
                                                                 and newer.version > e.version
                                                                 and newer.observed_at <= reference
                                                                 and newer.status <> 'retracted')) v
                                     order by r.score desc
                                     fetch first (n) rows with ties) t
                             order by 3 desc, 4, array_position(group_order, t.group_id), 2
                             limit n) h;
                    round_groups := round_groups || coalesce(piece_groups, '{}');
                    round_ids := round_ids || coalesce(piece_ids, '{}');
                    round_scores := round_scores || coalesce(piece_scores, '{}');
                    round_keys := round_keys || coalesce(piece_keys, '{}');
                end loop;
            end if;
            parts_read := parts_read + parts_step;
            select array_agg(m.g), array_agg(m.i), array_agg(m.s), array_agg(m.k)
              into found_groups, found_ids, found_scores, found_keys
              from (select * from (select * from unnest(found_groups, found_ids, found_scores, found_keys)
                                   union all
                                   select * from unnest(round_groups, round_ids, round_scores, round_keys)) b(g, i, s, k)
                     order by b.s desc, b.k, array_position(group_order, b.g), b.i
                     limit n) m;
            exit when parts_read = cardinality(parts) or rows_read >= row_limit;
        end loop;
        -- step 2 only while a document holding the term alone once (its IDF) could enter the list
        if alone_pending and coalesce(cardinality(found_scores), 0) = n and found_scores[n] > ranked_idfs[taken] then
            alone_pending := false;
        end if;
        continue when alone_pending;
        exit when taken = generating;
        -- The most a document holding only the terms not taken can score: each term's IDF times its
        -- tf part, (k1 + 1) tf / (tf + k1 (1 - b + b |d| / avgdl)), at the most times a document holds
        -- the term (ranked_most_held, exact statistics) and the shortest length (|d| -> 0). Nearly
        -- every fact holds each of its words once, where this is the IDF itself, not (k1 + 1) times
        -- it: the rounds stop as soon as the list's last score beats the terms left.
        select sum(u.idf * (k1 + 1) * u.most_held / (u.most_held + k1 * (1 - b))) into bound
          from unnest(ranked_idfs[taken + 1:], ranked_most_held[taken + 1:]) u(idf, most_held);
        exit when coalesce(cardinality(found_scores), 0) = n and found_scores[n] > bound;
    end loop;

    return query select * from unnest(found_groups, found_ids, found_scores, found_keys);
end
$$;
comment on function vera.lexical_candidates(vera.item_kind, text[], text[], bigint[], double precision[], bigint[],
                                            double precision, timestamptz, text, uuid, integer, text[]) is
    'Internal: the BM25 top n of one kind, generated rarest terms first (MaxScore); facts'' rounds read at most vera.lexical_budget rows (250), passages'' score at most that many (their shortest); reads past RLS';
alter function vera.lexical_candidates(vera.item_kind, text[], text[], bigint[], double precision[], bigint[],
                                      double precision, timestamptz, text, uuid, integer, text[])
    owner to vera_searcher;

reset role;
