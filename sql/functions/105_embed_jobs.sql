-- The embed job: facts written without a vector (from SQL, or from a client
-- without an embedder) are embedded by the worker, which acts for the
-- principal that wrote them. It reads what still lacks a vector, embeds it
-- outside any transaction (a hosted model may take seconds), and hands the
-- vectors back; the pinning rule (one model and dimension per group) applies
-- as to any write.
set role vera_owner;

-- Contract: the facts among fact_ids of group_id that still have no vector,
-- with the text to embed. Members; facts the caller cannot read (another
-- tenant's ids, erased facts) are simply not returned.
create or replace function vera.facts_to_embed(group_id text, fact_ids uuid[])
returns table (fact_id uuid, fact_text text)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_role(facts_to_embed.group_id, 'member');
    if cardinality(facts_to_embed.fact_ids) > 10000 then
        raise exception 'at most 10000 facts per call' using errcode = '54000';
    end if;
    return query
    select f.fact_id, f.fact_text
      from vera.facts f
     where f.group_id = facts_to_embed.group_id
       and f.fact_id = any (facts_to_embed.fact_ids)
       and f.embedding is null
     order by f.fact_id;
end
$$;
comment on function vera.facts_to_embed(text, uuid[]) is
    'The facts among the ids that have no vector yet, with their text (members)';
grant execute on function vera.facts_to_embed(text, uuid[]) to vera_app, vera_worker, vera_gateway;

-- Contract: stores one vector per fact (same order), all of one dimension,
-- computed by embedding_model; pins the group's model at its first vector and
-- refuses another (VE001). Only facts still without a vector are written, so
-- a replayed job changes nothing. Returns how many facts got their vector.
create or replace function vera.set_fact_embeddings(
    group_id text, fact_ids uuid[], embeddings public.vector[], embedding_model text
)
returns integer
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    dims integer[];
    written integer;
    stored_ids jsonb;
begin
    perform vera.require_role(set_fact_embeddings.group_id, 'member');
    if fact_ids is null or embeddings is null or cardinality(fact_ids) <> cardinality(embeddings) then
        raise exception 'fact_ids and embeddings must be arrays of the same length' using errcode = '22023';
    end if;
    if cardinality(fact_ids) > 10000 then
        raise exception 'at most 10000 facts per call' using errcode = '54000';
    end if;
    if cardinality(fact_ids) = 0 then
        return 0;
    end if;
    select array_agg(distinct public.vector_dims(e)) into dims from unnest(embeddings) e;
    if array_position(embeddings, null) is not null then
        raise exception 'every fact needs a vector (got null)' using errcode = '22023';
    end if;
    if cardinality(dims) > 1 then
        raise exception 'fact embeddings of different dimensions in one call: %', vera.shown(dims::text) using errcode = 'VE001';
    end if;
    if exists (select from unnest(embeddings) e where public.vector_norm(e) = 0) then
        raise exception 'an all-zero fact embedding has no direction (cosine distance is undefined)'
            using errcode = 'VE002';
    end if;
    perform vera.pin_embedding(set_fact_embeddings.group_id, embedding_model, dims[1]);
    -- the writers' lock order: histories before fact rows (a retraction of the same episode
    -- takes them in that order too, so the two cannot deadlock)
    perform vera.lock_histories(array_agg(f.group_id), array_agg(f.subject_entity_id), array_agg(f.predicate))
       from vera.facts f
      where f.group_id = set_fact_embeddings.group_id and f.fact_id = any (fact_ids) and f.embedding is null;
    with stored as (
        update vera.facts f
           set embedding = v.embedding
          from unnest(fact_ids, embeddings) as v(fact_id, embedding)
         where f.group_id = set_fact_embeddings.group_id
           and f.fact_id = v.fact_id
           and f.embedding is null
        returning f.fact_id
    )
    select count(*), jsonb_agg(stored.fact_id) into written, stored_ids from stored;
    -- the graph's edges of these facts carry the vector too (Graphiti's fact_embedding)
    if written > 0 then
        perform vera.enqueue_job('vera.project_to_graph', jsonb_build_object(
            'group_id', set_fact_embeddings.group_id, 'fact_ids', stored_ids));
    end if;
    return written;
end
$$;
comment on function vera.set_fact_embeddings(text, uuid[], public.vector[], text) is
    'Stores the vectors of facts that had none, pinning the group''s model (members)';
grant execute on function vera.set_fact_embeddings(text, uuid[], public.vector[], text)
    to vera_app, vera_worker, vera_gateway;

reset role;
