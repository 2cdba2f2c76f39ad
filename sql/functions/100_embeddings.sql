-- Embeddings: one model and dimension pinned per group, and validation of
-- incoming vectors. No vector index is shared by all groups: a shared index
-- answers one tenant's query with every tenant's nearest rows and filters
-- afterwards, which costs recall and, under a caller's settings, told one
-- tenant about another's names (issue 27). A large group gets indexes of its
-- own (vera.missing_vector_indexes, 175_vector_indexes.sql).
set role vera_owner;

-- What earlier versions left behind, dropped on every migrate (idempotent):
-- the entity-name HNSW indexes shared by all groups, one per dimension, and
-- the function that made them.
drop function if exists vera.ensure_vector_indexes(integer);
do $drop_shared$
declare
    shared record;
begin
    for shared in
        select c.relname from pg_catalog.pg_class c
         where c.relnamespace = 'vera'::regnamespace and c.relkind = 'i'
           and c.relname ~ '^entities_name_embedding_[0-9]+_hnsw_idx$'
    loop
        execute format('drop index vera.%I', shared.relname);
    end loop;
end
$drop_shared$;

-- Internal: pins (model, dim) on a group at its first vector, and refuses a
-- different model or dimension afterwards (a model change is a reprocess).
create or replace function vera.pin_embedding(target_group text, model text, dim integer)
returns void
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    pinned record;
begin
    if coalesce(pg_catalog.btrim(model), '') = '' then
        raise exception 'embedding_model is required when vectors are given' using errcode = '22023';
    end if;
    select g.embedding_model, g.embedding_dim into pinned from vera.groups g where g.group_id = target_group;
    if pinned.embedding_model is null then
        -- only the first pin locks the group row (writers with vectors would otherwise queue on it)
        select g.embedding_model, g.embedding_dim into pinned from vera.groups g
         where g.group_id = target_group for update;
    end if;
    if pinned.embedding_model is null then
        update vera.groups g set embedding_model = model, embedding_dim = dim where g.group_id = target_group;
    elsif pinned.embedding_model <> model or pinned.embedding_dim <> dim then
        raise exception 'group % is pinned to embedding model % (% dimensions); got % (% dimensions)',
            target_group, pinned.embedding_model, pinned.embedding_dim, vera.shown(model), dim using errcode = 'VE001';
    end if;
end
$$;
comment on function vera.pin_embedding(text, text, integer) is
    'Internal: pins a group''s embedding model and dimension, or refuses a mismatch (VE001)';

-- Internal: parses JSON number arrays into vectors, all of one dimension.
-- Returns the dimension (null when no vector is given). JSON cannot carry NaN;
-- out-of-range numbers become infinite in float4 and are refused (VE002).
create or replace function vera.parse_vectors(vectors jsonb, what text, out dim integer, out parsed public.vector[])
language plpgsql stable
set search_path = vera, public, pg_temp
as $$
declare
    dims integer[];
begin
    if vectors is null or jsonb_typeof(vectors) <> 'array' then
        return;
    end if;
    begin
        -- each vector parsed once (its text is ~8 KB for 384 dimensions; materialized, or the
        -- planner would copy the cast into both aggregates)
        with p as materialized (
            select e.i, case when jsonb_typeof(e.v) = 'null' then null else (e.v::text)::public.vector end as vec
              from jsonb_array_elements(vectors) with ordinality as e(v, i)
        )
        select array_agg(p.vec order by p.i), array_agg(distinct public.vector_dims(p.vec)) filter (where p.vec is not null)
          into parsed, dims
          from p;
    exception when data_exception or invalid_text_representation then
        raise exception 'invalid % embedding: % (numbers only, finite, as a JSON array)', what, vera.shown(sqlerrm)
            using errcode = 'VE002';
    end;
    if cardinality(dims) > 1 then
        raise exception '% embeddings of different dimensions in one call: %', what, vera.shown(dims::text) using errcode = 'VE001';
    end if;
    if exists (select from unnest(parsed) p where p is not null and public.vector_norm(p) = 0) then
        raise exception 'an all-zero % embedding has no direction (cosine distance is undefined)', what
            using errcode = 'VE002';
    end if;
    dim := dims[1];
end
$$;
comment on function vera.parse_vectors(jsonb, text) is 'Internal: JSON arrays of numbers to vectors of one dimension';

-- Contract: the embedding models (and dimensions) pinned by the named groups,
-- or by every group the caller reads; a query vector must come from one of
-- them. Groups the caller cannot read are not seen.
create or replace function vera.pinned_models(groups text[] default null)
returns table (embedding_model text, embedding_dim integer)
language sql stable security definer
set search_path = vera, pg_temp
as $$
    select distinct g.embedding_model, g.embedding_dim
      from vera.groups g
     where g.group_id = any (vera.readable_groups())  -- vera_owner's policy on groups admits every row
       and (pinned_models.groups is null or g.group_id = any (pinned_models.groups))
       and g.embedding_model is not null
     order by 1, 2
$$;
comment on function vera.pinned_models(text[]) is
    'The embedding models and dimensions pinned by the named (default: all readable) groups';
grant execute on function vera.pinned_models(text[]) to vera_app, vera_worker, vera_gateway;

reset role;
