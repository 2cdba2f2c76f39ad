-- Per-group HNSW indexes. One HNSW index shared by every tenant answers a
-- tenant's query with the nearest rows of all tenants, which the tenant
-- filter then throws away (a 10% tenant gets 4 of 40); pgvector's iterative
-- scan recovers them at 5-15 ms a query. A large group therefore gets an
-- index of its own (the group is its predicate) and a small one is searched
-- exactly (docs/benchmarks.md has the figures).
set role vera_owner;

-- Internal: the name of a group's own HNSW index on a table, for one dimension.
create or replace function vera.group_vector_index_name(table_name text, group_id text, dim integer)
returns text
language sql immutable
as $$ select format('%s_%s_%s_hnsw_idx', table_name, dim, translate(group_id, ':', '_')) $$;
comment on function vera.group_vector_index_name(text, text, integer) is
    'Internal: name of a group''s own HNSW index on a table for one dimension';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.group_vector_index_name(text, text, integer) to vera_searcher;

-- Internal: whether that index exists and may be used (an index still being
-- built concurrently, or whose build failed, is not valid yet).
create or replace function vera.group_vector_index_ready(table_name text, group_id text, dim integer)
returns boolean
language sql stable
set search_path = vera, pg_temp
as $$
    select coalesce((
        select i.indisvalid and i.indisready
          from pg_catalog.pg_index i
         where i.indexrelid = pg_catalog.to_regclass(
                   format('vera.%I', vera.group_vector_index_name(table_name, group_id, dim)))), false)
$$;
comment on function vera.group_vector_index_ready(text, text, integer) is
    'Internal: whether a group''s own HNSW index exists and is valid';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.group_vector_index_ready(text, text, integer) to vera_searcher;

-- Contract (operators): the per-group HNSW indexes that should exist and do
-- not, each with the statements that build it without blocking writers
-- (CREATE INDEX CONCURRENTLY, which cannot run inside a function or a
-- transaction: `vera db maintain` runs them one by one). A group needs its
-- own index on facts, chunks or entity names once it holds min_rows vectors
-- of a dimension there. An index whose concurrent build failed is dropped and
-- built again. Reads every group's row counts, so it belongs to
-- vera_searcher (past RLS) and answers only with names and counts.
create or replace function vera.missing_vector_indexes(min_rows integer default 5000)
returns table (group_id text, table_name text, dim integer, vector_rows bigint, index_name text, statements text[])
language plpgsql stable security definer
set search_path = vera, public, pg_temp
as $$
begin
    if min_rows is null or min_rows < 1 then
        raise exception 'min_rows must be at least 1, got %', coalesce(min_rows::text, 'null') using errcode = '22023';
    end if;
    return query
        with counts as (
            select 'facts'::text as table_name, f.group_id, public.vector_dims(f.embedding) as dim, count(*) as vector_rows
              from vera.facts f where f.embedding is not null group by 1, 2, 3
            union all
            select 'chunks', c.group_id, public.vector_dims(c.embedding), count(*)
              from vera.chunks c where c.embedding is not null group by 1, 2, 3
            union all
            select 'entities', e.group_id, public.vector_dims(e.name_embedding), count(*)
              from vera.entities e where e.name_embedding is not null group by 1, 2, 3
        )
        select c.group_id, c.table_name, c.dim, c.vector_rows, name.index_name,
               case when to_regclass(format('vera.%I', name.index_name)) is not null
                    then array[format('drop index concurrently if exists vera.%I', name.index_name)] else '{}' end
               || format('create index concurrently if not exists %I on vera.%I using hnsw '
                         '((%I::public.vector(%s)) public.vector_cosine_ops) '
                         'where group_id = %L and public.vector_dims(%I) = %s',
                         name.index_name, c.table_name, name.column_name, c.dim, c.group_id, name.column_name, c.dim)
          from counts c
          cross join lateral (select vera.group_vector_index_name(c.table_name, c.group_id, c.dim) as index_name,
                                     case c.table_name when 'entities' then 'name_embedding' else 'embedding' end
                                         as column_name) name
         where c.vector_rows >= min_rows
           and not vera.group_vector_index_ready(c.table_name, c.group_id, c.dim)
         order by c.vector_rows desc, c.group_id, c.table_name;
end
$$;
comment on function vera.missing_vector_indexes(integer) is
    'Per-group HNSW indexes due (groups with at least min_rows vectors) and the statements that build them';
alter function vera.missing_vector_indexes(integer) owner to vera_searcher;
grant execute on function vera.missing_vector_indexes(integer) to vera_operator;

reset role;
