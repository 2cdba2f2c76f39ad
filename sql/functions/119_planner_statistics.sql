-- The planner's statistics of the tables a search reads, gathered when a
-- connector run ends (vera.end_source_run) if a load outran autovacuum.
--
-- Autovacuum analyzes a table once a tenth of it changed, but it wakes once
-- a minute (autovacuum_naptime), and a search planned before a table's first
-- analyze is planned on default guesses: a group_id filter taken for 0.5% of
-- the rows, so stage 2 found a candidate's passage by walking its group's
-- (group_id, words) index instead of the primary key. A folder of 2,000
-- passages searched right after its first load took ~60 ms a search against
-- ~20 once analyzed (docs/benchmarks.md, issue 31's tenth pass). A run that
-- just loaded a source is where that first search comes from, so its end
-- analyzes a table never analyzed, or one that more than doubled since its
-- last analyze (a first real load after a few rows), and leaves the rest to
-- autovacuum: analyzing vera.chunks at 1,000,000 passages takes ~6 s, which
-- one tenant's run should not pay for the others' writes, and a table must
-- double for it to come again.
set role vera_owner;

-- Internal: analyzes each table a search reads that was never analyzed or
-- whose rows changed since its last analyze outnumber (and pass 50) the rows
-- it had then, and returns those tables. One that another session is
-- analyzing (autovacuum, a concurrent run's end) is skipped, not waited for.
-- Definer (the tables' owner may analyze them); callers pass nothing and
-- learn only which of VERA's tables were due.
create or replace function vera.refresh_planner_statistics()
returns text[]
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    searched constant text[] := array['chunks', 'facts', 'episodes', 'sources', 'entities'];
    due text[];
    table_name text;
begin
    due := array(
        select t
          from unnest(searched) t
          join pg_catalog.pg_class c on c.oid = pg_catalog.to_regclass('vera.' || t)
         where c.reltuples < 0
            or pg_catalog.pg_stat_get_mod_since_analyze(c.oid) > greatest(c.reltuples, 50));
    foreach table_name in array due loop
        execute format('analyze (skip_locked) vera.%I', table_name);
    end loop;
    return due;
end
$$;
comment on function vera.refresh_planner_statistics() is
    'Internal: analyzes the searched tables never analyzed or more than doubled since; returns them';

reset role;
