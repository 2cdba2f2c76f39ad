-- The groups the vector half of search reads: those of the searched groups
-- pinned to the query embedding's dimension (and model, when named).
-- vera.search (180_search.sql) passes them to stage 1 (179_search_candidates.sql).
set role vera_owner;

-- Internal: the searched groups whose pinned embedding matches the query
-- embedding (dimension, and model when named). None when no embedding is
-- given or no searched group holds vectors; VE001 when some do, but none
-- in this dimension and model.
create or replace function vera.vector_targets(targets text[], query_embedding public.vector, embedding_model text)
returns text[]
language plpgsql stable
set search_path = vera, public, pg_temp
-- as vera.search_candidates: a plan that does not depend on the values, re-planned each call otherwise
set plan_cache_mode = force_generic_plan
as $$
declare
    dim constant integer := public.vector_dims(query_embedding);
    matching text[];
    pins text;
begin
    if query_embedding is null then
        return '{}';
    end if;
    select array_agg(g.group_id) filter (where g.embedding_dim = dim
                                           and (vector_targets.embedding_model is null
                                                or g.embedding_model = vector_targets.embedding_model)),
           string_agg(distinct format('%s (%s dimensions)', g.embedding_model, g.embedding_dim), ', ')
      into matching, pins
      from vera.groups g
     where g.group_id = any (targets) and g.embedding_dim is not null;
    if pins is not null and matching is null then
        raise exception 'query embedding is % (% dimensions), but the groups searched are pinned to %',
            coalesce(vera.shown(vector_targets.embedding_model), 'of no named model'), dim, pins using errcode = 'VE001';
    end if;
    return coalesce(matching, '{}');
end
$$;
comment on function vera.vector_targets(text[], public.vector, text) is
    'Internal: searched groups pinned to the query embedding''s dimension (and model); VE001 when none is';

reset role;
