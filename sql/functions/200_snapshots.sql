-- Snapshots: a group's retrieval inputs frozen at one instant, searchable
-- later with the same answers, and refused once their pins no longer hold.
set role vera_owner;

-- Contract: copies everything a search of the group could return now
-- (facts and passages, with their text, full-text vector, embedding,
-- grading, validity, votes, citation and order key) and pins the embedding model and
-- dimension, the search version, the weights, and the group's ontology, policy
-- and assembler version (vera.group_rules, 198_snapshot_pins.sql). Must run in a REPEATABLE
-- READ (or SERIALIZABLE) transaction, so that the pins and every copied row
-- come from one view of the data (25000 otherwise). The snapshot is sealed
-- as the last step; readers refuse one that is not. Members of the group.
create or replace function vera.create_snapshot(group_id text, name text)
returns table (snapshot_id uuid, item_count integer, created_at timestamptz)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
    reference constant timestamptz := now();
    personal text;
    pinned record;
    weights jsonb;
    snapshot uuid;
    copied integer;
begin
    perform vera.require_role(create_snapshot.group_id, 'member');
    if current_setting('transaction_isolation') not in ('repeatable read', 'serializable') then
        raise exception 'create_snapshot needs a REPEATABLE READ transaction (begin isolation level repeatable read)'
            using errcode = '25000';
    end if;
    if coalesce(btrim(name), '') = '' or char_length(btrim(name)) > 200 then
        raise exception 'snapshot name must be 1 to 200 characters' using errcode = '22023';
    end if;
    if exists (select from vera.snapshots s where s.group_id = create_snapshot.group_id and s.name = btrim(create_snapshot.name)) then
        raise exception 'group % already has a snapshot named %', create_snapshot.group_id, vera.shown(btrim(name))
            using errcode = '23505';
    end if;
    select p.personal_group_id into personal from vera.principals p where p.principal_id = caller;
    select g.embedding_model, g.embedding_dim into pinned from vera.groups g where g.group_id = create_snapshot.group_id;
    weights := vera.active_weights(create_snapshot.group_id);

    insert into vera.snapshots as s (group_id, name, embedding_model, embedding_dim, search_version, weight_set_id,
                                     weights, pins, created_at, created_by)
    values (create_snapshot.group_id, vera.shown(btrim(name)), pinned.embedding_model, pinned.embedding_dim, vera.search_version(),
            (weights ->> 'weight_set_id')::uuid, weights - 'weight_set_id', vera.group_rules(create_snapshot.group_id),
            reference, caller)
    returning s.snapshot_id into snapshot;

    -- the same visibility rules and the same blend inputs as a live search
    with visible as (
        select 'fact'::vera.item_kind as kind, f.fact_id as item_id
          from vera.facts f
         where f.group_id = create_snapshot.group_id
           and vera.fact_visible(f.lifecycle, f.group_id, f.retired_at, f.valid_from, f.valid_to, reference, personal)
        union all
        -- published passages only: a proposed one answers its proposer alone, never the group
        select 'passage', c.chunk_id
          from vera.chunks c
          join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
         where c.group_id = create_snapshot.group_id and c.lifecycle = 'published'
           and e.status <> 'retracted' and e.observed_at <= reference
           and not exists (select from vera.episodes newer
                            where newer.group_id = e.group_id and newer.source_id = e.source_id
                              and newer.external_id = e.external_id and newer.version > e.version
                              and newer.observed_at <= reference and newer.status <> 'retracted')
    ), signals as (
        select i.*
          from vera.candidate_signals(
                   (select array_agg(v.kind) from visible v), (select array_agg(v.item_id) from visible v),
                   (select array_agg(create_snapshot.group_id) from visible v),
                   (select array_agg(null::float8) from visible v), (select array_agg(null::float8) from visible v),
                   (select array_agg(null::real) from visible v)) i
    ), details as (
        select d.*
          from vera.hit_details((select array_agg(v.kind) from visible v), (select array_agg(v.item_id) from visible v),
                                (select array_agg(create_snapshot.group_id) from visible v)) d
    ), inputs as (
        select s.kind, s.item_id, s.group_id, d.text, d.subject, d.predicate, d.object, s.authority,
               s.verification, s.confidence, s.valid_from, s.valid_to, s.up_votes, s.down_votes, d.citation,
               s.confirmed_at, s.order_key, s.time_scope
          from signals s join details d on d.kind = s.kind and d.item_id = s.item_id
    )
    insert into vera.snapshot_items (group_id, snapshot_id, item_kind, item_id, text, tsv, embedding, subject, predicate,
                                     object, tier, authority, verification, confidence, valid_from, valid_to,
                                     recorded_at, source_id, episode_id, chunk_id, up_votes, down_votes, citation,
                                     confirmed_at, order_key, time_scope, time_scope_version)
    select create_snapshot.group_id, snapshot, i.kind, i.item_id, i.text, coalesce(f.tsv, c.tsv),
           coalesce(f.embedding, c.embedding), i.subject, i.predicate, i.object, (i.citation ->> 'tier')::smallint,
           i.authority, i.verification, i.confidence, i.valid_from, i.valid_to,
           coalesce(f.recorded_at, c.created_at),
           (i.citation -> 'source' ->> 'source_id')::uuid, (i.citation -> 'episode' ->> 'episode_id')::uuid,
           (i.citation -> 'chunk' ->> 'chunk_id')::uuid, i.up_votes, i.down_votes, i.citation, i.confirmed_at,
           -- the time the period signal reads, and for a passage the reader that read it: the
           -- snapshot answers with them even after `vera reprocess --time-scopes`
           i.order_key, i.time_scope, c.time_scope_version
      from inputs i
      left join vera.facts f on i.kind = 'fact' and f.group_id = i.group_id and f.fact_id = i.item_id
      left join vera.chunks c on i.kind = 'passage' and c.group_id = i.group_id and c.chunk_id = i.item_id;
    get diagnostics copied = row_count;

    -- the BM25 statistics search used: the corpus rows, and the terms the
    -- copies hold (no other term can match a copy, so none can matter)
    insert into vera.snapshot_term_stats (group_id, snapshot_id, kind, term, documents, tokens)
    select create_snapshot.group_id, snapshot, x.kind, x.term, sum(x.documents), sum(x.tokens)
      from (select st.kind, st.term, st.documents, st.tokens from vera.term_stats st
             where st.group_id = create_snapshot.group_id
            union all
            select tc.kind, tc.term, tc.documents, tc.tokens from vera.term_stat_changes tc
             where tc.group_id = create_snapshot.group_id) x
     where x.term = '' or x.term in (select distinct u.lexeme from vera.snapshot_items i, unnest(i.tsv) u
                                      where i.group_id = create_snapshot.group_id and i.snapshot_id = snapshot)
     group by x.kind, x.term;

    update vera.snapshots s set sealed_at = clock_timestamp()
     where s.group_id = create_snapshot.group_id and s.snapshot_id = snapshot;
    perform vera.audit(create_snapshot.group_id, 'snapshot.create', 'snapshot', snapshot::text,
                       jsonb_build_object('name', btrim(name), 'items', copied));
    snapshot_id := snapshot;
    item_count := copied;
    created_at := reference;
    return next;
end
$$;
comment on function vera.create_snapshot(text, text) is
    'Freezes a group''s retrieval inputs with their pins (model, dimension, search version, weights, ontology, policy, assembler)';
grant execute on function vera.create_snapshot(text, text) to vera_app, vera_worker, vera_gateway;

-- Contract: a group's snapshots, newest first, each with every pin (as
-- vera.live_pins shapes them) and the pins that no longer hold (stale_pins:
-- empty when the snapshot can answer; see vera.snapshot_pin_changes).
create or replace function vera.list_snapshots(group_id text)
returns table (snapshot_id uuid, name text, created_at timestamptz, sealed boolean, item_count integer,
               embedding_model text, embedding_dim integer, search_version text, weights jsonb, pins jsonb,
               stale_pins text[])
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    live constant jsonb := vera.live_pins(list_snapshots.group_id);
begin
    perform vera.require_role(list_snapshots.group_id, 'viewer');
    return query
        select s.snapshot_id, s.name, s.created_at, s.sealed_at is not null,
               (select count(*)::integer from vera.snapshot_items i
                 where i.group_id = s.group_id and i.snapshot_id = s.snapshot_id),
               s.embedding_model, s.embedding_dim, s.search_version, s.weights, vera.snapshot_pins(s),
               array(select c.pin from vera.pin_changes(vera.snapshot_pins(s), live) c)
          from vera.snapshots s
         where s.group_id = list_snapshots.group_id
         order by s.created_at desc, s.name;
end
$$;
comment on function vera.list_snapshots(text) is 'A group''s snapshots with their pins, newest first';
grant execute on function vera.list_snapshots(text) to vera_app, vera_worker, vera_gateway;

-- Contract: deletes a snapshot and its copies (members of the group).
create or replace function vera.drop_snapshot(group_id text, name text)
returns void
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    dropped uuid;
begin
    perform vera.require_role(drop_snapshot.group_id, 'member');
    delete from vera.snapshots s where s.group_id = drop_snapshot.group_id and s.name = btrim(drop_snapshot.name)
    returning s.snapshot_id into dropped;
    if dropped is null then
        raise exception 'group % has no snapshot named %', drop_snapshot.group_id, vera.shown(name) using errcode = 'VN001';
    end if;
    perform vera.audit(drop_snapshot.group_id, 'snapshot.drop', 'snapshot', dropped::text,
                       jsonb_build_object('name', btrim(name)));
end
$$;
comment on function vera.drop_snapshot(text, text) is 'Deletes a snapshot and its copied items';
grant execute on function vera.drop_snapshot(text, text) to vera_app, vera_worker, vera_gateway;

-- Internal: stage 1 over a snapshot's copies: the lexical half by BM25
-- with the statistics pinned when the snapshot was taken (every copy that
-- matches a term is scored: the exact top n, which live search finds too
-- unless a round of a frequent word is cut), the
-- vector half by exact cosine distance (snapshots are read rarely and carry
-- no HNSW index). Like vera.search_candidates it belongs to vera_searcher
-- and checks the group itself, and cuts through equal scores by kind and
-- the copied order key, as live search does. Each candidate gets its own
-- lexical match (over the query's IDF mass in the pinned statistics) and
-- similarity, as in vera.search_candidates.
create or replace function vera.snapshot_candidates(
    group_id text, snapshot_id uuid, terms text[], query_embedding public.vector, n integer)
returns table (kind vera.item_kind, item_id uuid, lexical_rank integer, vector_rank integer,
               lexical_match double precision, similarity double precision)
language plpgsql stable security definer
set search_path = vera, public, pg_temp
-- every planner enable_* flag on (250_pinned_settings.sql)
as $$
declare
    matching constant tsquery := vera.any_of(terms);
begin
    if not snapshot_candidates.group_id = any (vera.readable_groups()) then
        raise exception 'permission denied: cannot read group %', vera.shown(snapshot_candidates.group_id) using errcode = '42501';
    end if;
    return query
        with pinned as (
            select st.kind, st.term, st.documents, st.tokens from vera.snapshot_term_stats st
             where st.group_id = snapshot_candidates.group_id and st.snapshot_id = snapshot_candidates.snapshot_id
               and (st.term = '' or st.term = any (terms))
        ), weighted as (
            -- terms in the order live search ranks them (rarest first), so the sums add up alike
            select w.kind, min(w.average_length) as average_length,
                   array_agg(w.term order by w.postings, w.term) as ranked_terms,
                   array_agg(w.idf order by w.postings, w.term) as idfs
              from vera.bm25_weights((select array_agg(p.kind) from pinned p), (select array_agg(p.term) from pinned p),
                                     (select array_agg(p.documents) from pinned p),
                                     (select array_agg(p.tokens) from pinned p)) w
             group by w.kind
        ), mass as (
            select vera.query_idf_mass(terms, (select array_agg(p.term) from pinned p),
                                       (select array_agg(p.documents) from pinned p)) as idf_mass
             where cardinality(terms) > 0
        ), scored as (
            select i.item_kind, i.item_id, i.order_key,
                   vera.bm25_score(i.item_kind, i.tsv, w.ranked_terms, w.idfs, w.average_length) as score
              from vera.snapshot_items i
              join weighted w on w.kind = i.item_kind
             where matching is not null and i.tsv @@ matching
               and i.group_id = snapshot_candidates.group_id and i.snapshot_id = snapshot_candidates.snapshot_id
        ), lexical_list as (
            select sc.item_kind, sc.item_id, (rank() over (order by sc.score desc))::integer as position
              from scored sc
             order by sc.score desc, sc.item_kind, sc.order_key, sc.item_id
             limit n),
        vector_list as (
            select i.item_kind, i.item_id,
                   (rank() over (order by i.embedding <=> query_embedding))::integer as position
              from vera.snapshot_items i
             where query_embedding is not null and public.vector_dims(i.embedding) = public.vector_dims(query_embedding)
               and i.group_id = snapshot_candidates.group_id and i.snapshot_id = snapshot_candidates.snapshot_id
             order by i.embedding <=> query_embedding, i.item_kind, i.order_key, i.item_id
             limit n),
        listed as (
            select coalesce(l.item_kind, v.item_kind) as item_kind, coalesce(l.item_id, v.item_id) as item_id,
                   l.position as lexical_position, v.position as vector_position
              from lexical_list l
              full join vector_list v on v.item_kind = l.item_kind and v.item_id = l.item_id)
        select li.item_kind, li.item_id, li.lexical_position, li.vector_position,
               vera.lexical_match(
                   (select vera.bm25_score(i.item_kind, i.tsv, w.ranked_terms, w.idfs, w.average_length)
                      from weighted w where w.kind = i.item_kind),
                   (select m.idf_mass from mass m)),
               case when query_embedding is not null
                         and public.vector_dims(i.embedding) = public.vector_dims(query_embedding)
                    then 1 - (i.embedding <=> query_embedding) end
          from listed li
          join vera.snapshot_items i
            on i.group_id = snapshot_candidates.group_id and i.snapshot_id = snapshot_candidates.snapshot_id
           and i.item_kind = li.item_kind and i.item_id = li.item_id;
end
$$;
comment on function vera.snapshot_candidates(text, uuid, text[], public.vector, integer) is
    'Internal: stage 1 over a snapshot''s copies (reads past RLS, checks the group itself)';
alter function vera.snapshot_candidates(text, uuid, text[], public.vector, integer) owner to vera_searcher;
-- vera.search_snapshot (a definer: vera_owner) calls it; vera_searcher owns it
grant execute on function vera.snapshot_candidates(text, uuid, text[], public.vector, integer) to vera_owner;

-- Erasure deletes the copies that cite what it erases; the pinned
-- statistics then drop every term no remaining copy holds, so no word of
-- the erased text stays behind. No answer of the snapshot changes: a term
-- that matches no copy weighs nothing.
create or replace function vera.prune_snapshot_terms()
returns trigger
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
begin
    delete from vera.snapshot_term_stats st
     using (select distinct o.group_id, o.snapshot_id, u.lexeme
              from old_rows o cross join lateral unnest(o.tsv) u) gone
     where st.group_id = gone.group_id and st.snapshot_id = gone.snapshot_id and st.term = gone.lexeme
       and not exists (select from vera.snapshot_items i
                        where i.group_id = st.group_id and i.snapshot_id = st.snapshot_id
                          and i.tsv @@ quote_literal(st.term)::tsquery);
    return null;
end
$$;
comment on function vera.prune_snapshot_terms() is
    'Internal: trigger dropping pinned BM25 terms that no remaining snapshot copy holds';

create or replace trigger snapshot_items_prune_terms after delete on vera.snapshot_items
    referencing old table as old_rows for each statement execute function vera.prune_snapshot_terms();

-- Contract: searches a snapshot: the same stages as vera.search, over the
-- copies, with the snapshot's weights and its creation instant as "now", so
-- it answers what search answered when the snapshot was taken. Fails
-- closed: VS002 for a snapshot that was never sealed; for a pin that no
-- longer holds the code vera.pin_changes gives it (VS001 search version,
-- embedding model or no pins recorded, VS003 ontology, VS004 policy, VS005
-- assembler), naming every pin that changed.
create or replace function vera.search_snapshot(
    snapshot_group text,
    snapshot text,
    query text default null,
    query_embedding public.vector default null,
    k integer default 10,
    k_rrf integer default 1,
    candidates integer default null,
    embedding_model text default null,
    lexical_weight double precision default 1,
    vector_weight double precision default 1,
    during tstzrange default null)
returns setof vera.search_hit
language plpgsql stable security definer
set search_path = vera, public, pg_temp
as $$
declare
    frozen vera.snapshots;
    stale record;
    n integer;
    items vera.search_item[];
begin
    perform vera.require_role(search_snapshot.snapshot_group, 'viewer');
    n := vera.check_search_arguments(query, query_embedding, k, null, k_rrf, candidates,
                                     lexical_weight, vector_weight, null);
    if isempty(during) then
        raise exception 'during must be a period that holds an instant (it is empty)' using errcode = '22023';
    end if;
    select * into frozen from vera.snapshots s
     where s.group_id = search_snapshot.snapshot_group and s.name = btrim(search_snapshot.snapshot);
    if not found then
        raise exception 'group % has no snapshot named %', vera.shown(search_snapshot.snapshot_group), vera.shown(snapshot) using errcode = 'VN001';
    end if;
    if frozen.sealed_at is null then
        raise exception 'snapshot % is not sealed: its copy never completed; create it again', frozen.name
            using errcode = 'VS002';
    end if;
    -- the first pin that changed gives the code (the codes sort in the order
    -- vera.pin_changes checks the pins); the message names them all
    select min(c.code) as code, string_agg(c.pin || ': ' || c.change, '; ' order by c.code, c.pin) as changes
      into stale
      from vera.pin_changes(vera.snapshot_pins(frozen), vera.live_pins(frozen.group_id)) c;
    if stale.code is not null then
        raise exception 'snapshot % no longer holds its pins (%): its answers cannot be reproduced; take it again',
            frozen.name, stale.changes using errcode = stale.code;
    end if;
    if query_embedding is not null and frozen.embedding_dim is not null
       and (public.vector_dims(query_embedding) <> frozen.embedding_dim
            or (embedding_model is not null and embedding_model <> frozen.embedding_model)) then
        raise exception 'query embedding is % (% dimensions), but snapshot % is pinned to % (% dimensions)',
            coalesce(vera.shown(embedding_model), 'of no named model'), public.vector_dims(query_embedding), frozen.name,
            frozen.embedding_model, frozen.embedding_dim using errcode = 'VE001';
    end if;
    items := array(
        select row(i.item_kind, i.item_id, i.group_id,
                   i.text, i.subject, i.predicate, i.object, i.authority, i.verification, i.confidence,
                   i.valid_from, i.valid_to, i.up_votes, i.down_votes, i.citation, i.confirmed_at,
                   i.order_key, i.time_scope, c.lexical_match, c.similarity,
                   vera.match_confidence(c.lexical_match, c.similarity, lexical_weight,
                                         vector_weight))::vera.search_item
          from vera.snapshot_candidates(frozen.group_id, frozen.snapshot_id, vera.query_terms(query),
                                        case when frozen.embedding_dim is not null
                                                   and vera.model_reads(frozen.embedding_model, query)
                                             then query_embedding end, n) c
          join vera.snapshot_items i
            on i.group_id = frozen.group_id and i.snapshot_id = frozen.snapshot_id
           and i.item_kind = c.kind and i.item_id = c.item_id);
    return query select * from vera.blend(items, jsonb_build_object('*', frozen.weights), frozen.created_at, k,
                                          during);
end
$$;
comment on function vera.search_snapshot(text, text, text, public.vector, integer, integer, integer, text,
                                         double precision, double precision, tstzrange) is
    'Searches a sealed snapshot with its pinned weights and instant; fails closed on changed pins (VS001-VS005)';
grant execute on function vera.search_snapshot(text, text, text, public.vector, integer, integer, integer, text,
                                               double precision, double precision, tstzrange)
    to vera_app, vera_worker, vera_gateway;

reset role;
