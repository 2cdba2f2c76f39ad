-- The planner settings the searching functions fix for themselves (issue 27).
-- A caller may `set` any planner setting before it calls the SQL API, and a
-- function runs with the caller's settings unless it sets its own: with the
-- other scans off, a caller chose the plan of a definer function that reads
-- past row-level security (once, the shared entity-name HNSW index, which
-- told it whether another tenant held a name: 120_entities.sql). These
-- functions search (the trigram probe, similar_aliases, sets its own scans
-- in 120_entities.sql; hnsw.* are set in each function's own definition),
-- so every enable_* flag is on in them whatever the session says (but
-- sequential scans in vera.lexical_candidates, which they call and which
-- turns them off itself: 177_lexical_candidates.sql), and
-- pg_tests/security/test_session_settings.py checks that their answers are
-- the defaults' answers under hostile settings.
--
-- Applied after every function is created (CREATE OR REPLACE drops a
-- function's SET clauses), as the role that migrates: two of them belong to
-- vera_searcher. A SET clause costs a little per call and keeps a function
-- from being inlined; these are PL/pgSQL, never inlined anyway.
do $pin$
declare
    searching constant text[] := array[
        'vera.resolve_entities(text[], text[], public.vector[], text[])',
        'vera.search_candidates(text[], text[], text[], public.vector, timestamptz, text, integer, integer)',
        'vera.snapshot_candidates(text, uuid, text[], public.vector, integer)'];
    flags constant text[] := array[
        'enable_seqscan', 'enable_indexscan', 'enable_indexonlyscan', 'enable_bitmapscan', 'enable_sort',
        'enable_incremental_sort', 'enable_nestloop', 'enable_hashjoin', 'enable_mergejoin', 'enable_hashagg',
        'enable_material', 'enable_memoize'];
    target text;
    flag text;
begin
    foreach target in array searching loop
        foreach flag in array flags loop
            execute format('alter function %s set %I = on', target, flag);
        end loop;
    end loop;
end
$pin$;
