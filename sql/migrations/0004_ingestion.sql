-- 0004_ingestion: the connector's cursor and ingestion requests
-- (sql/functions/115_ingestion.sql), and ranking rules the first real
-- ingestion showed wrong (search version vera-search/2, so snapshots taken
-- with /1 fail closed): a fact's recency counts from its last confirmation
-- by its source, not only from the start of its validity, and passages of
-- tier 3-4 sources await verification as their claims do.
--
-- Apply with:  psql -v ON_ERROR_STOP=1 -1 -f 0004_ingestion.sql
set role vera_owner;
-- Ingestion by connectors: the worker reads a registered source (a folder of
-- Markdown, a CMDB export, ...) incrementally. What it has seen is the
-- source's cursor, kept beside the source so that a crash resumes where the
-- last committed file left off; a caller asks for a run by deferring a job
-- that carries its own principal, so the worker acts with the caller's rights.

-- Contract: the sources of one group (or of every readable group), without
-- their cursors (those can be large; source_cursor reads one).
create or replace function vera.list_sources(of_group text default null)
returns table (
    group_id text, source_id uuid, kind text, name text, uri text, trust_tier smallint,
    config jsonb, created_at timestamptz, retracted_at timestamptz, tracked_records integer
)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_principal();
    if list_sources.of_group is not null and vera.role_in(list_sources.of_group) is null then
        raise exception 'group % is not readable by the caller', list_sources.of_group using errcode = '42501';
    end if;
    return query
    select s.group_id, s.source_id, s.kind, s.name, s.uri, s.trust_tier, s.config, s.created_at, s.retracted_at,
           coalesce((select count(*)::integer from jsonb_object_keys(s.cursor)), 0)
      from vera.sources s
     where list_sources.of_group is null or s.group_id = list_sources.of_group
     order by s.group_id, s.name;
end
$$;
comment on function vera.list_sources(text) is 'The sources of a group (or of every readable group), by name';

-- Contract: a source's cursor: one entry per record key (a file's relative
-- path), as the connector wrote it ({} before the first run).
create or replace function vera.source_cursor(group_id text, source_id uuid)
returns jsonb
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
begin
    perform vera.require_principal();
    return coalesce((vera.visible_source(source_cursor.group_id, source_cursor.source_id)).cursor, '{}');
end
$$;
comment on function vera.source_cursor(text, uuid) is 'A source''s incremental cursor; {} before the first run';

-- Contract: merges changes into a source's cursor: a key with a JSON object
-- sets that record's entry, a key with null removes it. Members, so that the
-- change commits in the same transaction as the episode it describes.
create or replace function vera.advance_source_cursor(group_id text, source_id uuid, changes jsonb)
returns integer
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    tracked integer;
begin
    perform vera.require_role(advance_source_cursor.group_id, 'member');
    perform vera.visible_source(advance_source_cursor.group_id, advance_source_cursor.source_id);
    if jsonb_typeof(advance_source_cursor.changes) is distinct from 'object' then
        raise exception 'cursor changes must be a JSON object of record key -> entry or null' using errcode = '22023';
    end if;
    if exists (select from jsonb_each(advance_source_cursor.changes) c
                where jsonb_typeof(c.value) not in ('object', 'null') or char_length(c.key) not between 1 and 1000) then
        raise exception 'each cursor change is a record key (1-1000 characters) with an object or null'
            using errcode = '22023';
    end if;
    update vera.sources s
       set cursor = (coalesce(s.cursor, '{}')
                     || jsonb_strip_nulls(advance_source_cursor.changes))
                    - array(select c.key from jsonb_each(advance_source_cursor.changes) c
                             where jsonb_typeof(c.value) = 'null')
     where s.group_id = advance_source_cursor.group_id and s.source_id = advance_source_cursor.source_id
    returning (select count(*)::integer from jsonb_object_keys(s.cursor)) into tracked;
    return tracked;
end
$$;
comment on function vera.advance_source_cursor(text, uuid, jsonb) is
    'Merges per-record entries into a source''s cursor (null removes one); members';

-- Contract: asks the worker to read a source (or one path below its root).
-- The job carries the caller's principal: the worker vouches for it, so the
-- run writes with the caller's rights (retracting deleted records needs an
-- admin). Members and above; returns the job id.
create or replace function vera.request_ingest(group_id text, source_id uuid, path text default null)
returns bigint
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    found_source vera.sources;
begin
    perform vera.require_role(request_ingest.group_id, 'member');
    found_source := vera.visible_source(request_ingest.group_id, request_ingest.source_id);
    if found_source.retracted_at is not null then
        raise exception 'source % was retracted: register it again to read it', found_source.name
            using errcode = '22023';
    end if;
    if request_ingest.path is not null
       and (char_length(request_ingest.path) > 1000 or request_ingest.path ~ '(^|/)[.][.](/|$)'
            or request_ingest.path ~ '^/') then
        raise exception 'path must be a relative path below the source''s root, without ..' using errcode = '22023';
    end if;
    return vera.enqueue_job('vera.ingest_source', jsonb_build_object(
        'group_id', request_ingest.group_id, 'source_id', request_ingest.source_id,
        'principal_id', vera.current_principal(), 'path', request_ingest.path));
end
$$;
comment on function vera.request_ingest(text, uuid, text) is
    'Defers an ingestion run of a source for the worker, on behalf of the caller; members';

grant execute on function
    vera.list_sources(text),
    vera.source_cursor(text, uuid),
    vera.advance_source_cursor(text, uuid, jsonb),
    vera.request_ingest(text, uuid, text)
    to vera_app, vera_worker, vera_gateway;

-- Ranking: a fact's last confirmation travels with the blend's inputs and
-- with snapshot copies.
alter type vera.search_item add attribute confirmed_at timestamptz;
alter table vera.snapshot_items add column confirmed_at timestamptz;

-- Contract: the version of the ranking code. A snapshot records it and refuses
-- to answer once it differs; bump it whenever stage 1 or stage 2 changes what
-- a search returns.
create or replace function vera.search_version()
returns text
language sql immutable
set search_path = vera, pg_temp
as $$ select 'vera-search/2' $$;

comment on function vera.verification_signal(vera.verification) is
    'Verification signal: human_verified 1.0, auto (and passages of tier 1-2 sources) 0.6, pending 0.2';

-- Internal: stage 2, the blend. Relevance is the fused stage-1 score
-- min-max normalised over the batch (1 when the batch has one score); the
-- other five signals come from each item (a fact's recency counts from the
-- later of its valid_from and its last confirmation, as of the reference);
-- weights per group (key "*" for all). Ties fall to the fused score, then
-- to the item id, so equal inputs always give the same order.
create or replace function vera.blend(items vera.search_item[], weights_by_group jsonb,
                                      reference timestamptz, k integer)
returns table (
    rank integer, kind vera.item_kind, item_id uuid, group_id text, text text,
    subject text, predicate text, object text, score real,
    relevance real, authority real, verification real, recency real, feedback real, confidence real,
    citation jsonb)
language sql stable
set search_path = vera, pg_temp
as $$
    with batch as (
        select i.*, min(i.fused) over () as lowest, max(i.fused) over () as highest,
               coalesce(weights_by_group -> i.group_id, weights_by_group -> '*') as weights
          from unnest(items) i
    ), signals as (
        select b.*,
               (case when b.highest > b.lowest then (b.fused - b.lowest) / (b.highest - b.lowest) else 1 end)::real
                   as relevance_signal,
               vera.verification_signal(b.verification) as verification_score,
               vera.recency_signal(
                   case when b.confirmed_at is null then b.valid_from
                        else greatest(b.valid_from, least(b.confirmed_at, reference)) end,
                   b.valid_to, reference, (b.weights ->> 'half_life')::interval) as recency_signal,
               vera.feedback_signal(b.up_votes, b.down_votes) as feedback_score
          from batch b
    ), scored as (
        select s.*,
               (s.relevance_signal * (s.weights ->> 'relevance')::float8
                + s.authority * (s.weights ->> 'authority')::float8
                + s.verification_score * (s.weights ->> 'verification')::float8
                + s.recency_signal * (s.weights ->> 'recency')::float8
                + s.feedback_score * (s.weights ->> 'feedback')::float8
                + s.confidence * (s.weights ->> 'confidence')::float8)::real as total
          from signals s
    )
    select (row_number() over (order by s.total desc, s.fused desc, s.item_id))::integer,
           s.kind, s.item_id, s.group_id, s.text, s.subject, s.predicate, s.object, s.total,
           s.relevance_signal, s.authority, s.verification_score, s.recency_signal, s.feedback_score, s.confidence,
           s.citation
      from scored s
     order by s.total desc, s.fused desc, s.item_id
     limit k
$$;
comment on function vera.blend(vera.search_item[], jsonb, timestamptz, integer) is
    'Internal: stage 2, the six-signal blend over a batch of candidates';

-- Internal: what the blend reads of each live stage-1 candidate (grading,
-- validity, last confirmation, votes). Text and citation are left out: only the k hits that
-- survive the blend need them (vera.hit_details). Runs under RLS.
create or replace function vera.candidate_signals(
    kinds vera.item_kind[], ids uuid[], owners text[], fused double precision[])
returns setof vera.search_item
language sql stable
set search_path = vera, pg_temp
as $$
    with candidate as (
        select * from unnest(kinds, ids, owners, fused) as u(kind, item_id, group_id, fused)
    ), votes as (
        select fb.item_kind, fb.item_id, count(*) filter (where fb.vote > 0)::integer as up_votes,
               count(*) filter (where fb.vote < 0)::integer as down_votes
          from vera.feedback fb
          join candidate c on fb.group_id = c.group_id and fb.item_kind = c.kind and fb.item_id = c.item_id
         group by 1, 2
    )
    select row('fact'::vera.item_kind, f.fact_id, f.group_id, c.fused, null, null, null, null, f.authority,
               f.verification, f.confidence, f.valid_from, f.valid_to, coalesce(v.up_votes, 0),
               coalesce(v.down_votes, 0), null, stated.observed_at)::vera.search_item
      from candidate c
      join vera.facts f on f.group_id = c.group_id and f.fact_id = c.item_id
      left join vera.episodes stated on stated.group_id = f.group_id and stated.episode_id = f.episode_id
      left join votes v on v.item_kind = 'fact' and v.item_id = f.fact_id
     where c.kind = 'fact'
    union all
    select row('passage'::vera.item_kind, ch.chunk_id, ch.group_id, c.fused, null, null, null, null,
               vera.tier_authority(src.trust_tier),
               -- text of an informational or unverified source awaits verification, as its claims do
               case when src.trust_tier >= 3 then 'pending'::vera.verification end,
               1.0, ep.observed_at, next_version.observed_at,
               coalesce(v.up_votes, 0), coalesce(v.down_votes, 0), null, null)::vera.search_item
      from candidate c
      join vera.chunks ch on ch.group_id = c.group_id and ch.chunk_id = c.item_id
      join vera.episodes ep on ep.group_id = ch.group_id and ep.episode_id = ch.episode_id
      join vera.sources src on src.group_id = ep.group_id and src.source_id = ep.source_id
      left join votes v on v.item_kind = 'passage' and v.item_id = ch.chunk_id
      left join lateral vera.next_version_observed(ep.group_id, ep.source_id, ep.external_id, ep.version)
           next_version(observed_at) on true
     where c.kind = 'passage'
$$;
comment on function vera.candidate_signals(vera.item_kind[], uuid[], text[], double precision[]) is
    'Internal: blend inputs (grading, validity, votes) of live candidates';

-- Contract: copies everything a search of the group could return now
-- (facts and passages, with their text, full-text vector, embedding,
-- grading, validity, votes and citation) and pins the embedding model and
-- dimension, the search version and the weights. Must run in a REPEATABLE
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
        raise exception 'group % already has a snapshot named %', create_snapshot.group_id, btrim(name)
            using errcode = '23505';
    end if;
    select p.personal_group_id into personal from vera.principals p where p.principal_id = caller;
    select g.embedding_model, g.embedding_dim into pinned from vera.groups g where g.group_id = create_snapshot.group_id;
    weights := vera.active_weights(create_snapshot.group_id);

    insert into vera.snapshots as s (group_id, name, embedding_model, embedding_dim, search_version, weight_set_id,
                                     weights, created_at, created_by)
    values (create_snapshot.group_id, btrim(name), pinned.embedding_model, pinned.embedding_dim, vera.search_version(),
            (weights ->> 'weight_set_id')::uuid, weights - 'weight_set_id', reference, caller)
    returning s.snapshot_id into snapshot;

    -- the same visibility rules and the same blend inputs as a live search
    with visible as (
        select 'fact'::vera.item_kind as kind, f.fact_id as item_id
          from vera.facts f
         where f.group_id = create_snapshot.group_id
           and vera.fact_visible(f.lifecycle, f.group_id, f.retired_at, f.valid_from, f.valid_to, reference, personal)
        union all
        select 'passage', c.chunk_id
          from vera.chunks c
          join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
         where c.group_id = create_snapshot.group_id
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
                   (select array_agg(0::float8) from visible v)) i
    ), details as (
        select d.*
          from vera.hit_details((select array_agg(v.kind) from visible v), (select array_agg(v.item_id) from visible v),
                                (select array_agg(create_snapshot.group_id) from visible v)) d
    ), inputs as (
        select s.kind, s.item_id, s.group_id, d.text, d.subject, d.predicate, d.object, s.authority,
               s.verification, s.confidence, s.valid_from, s.valid_to, s.up_votes, s.down_votes, d.citation,
               s.confirmed_at
          from signals s join details d on d.kind = s.kind and d.item_id = s.item_id
    )
    insert into vera.snapshot_items (group_id, snapshot_id, item_kind, item_id, text, tsv, embedding, subject, predicate,
                                     object, tier, authority, verification, confidence, valid_from, valid_to,
                                     recorded_at, source_id, episode_id, chunk_id, up_votes, down_votes, citation,
                                     confirmed_at)
    select create_snapshot.group_id, snapshot, i.kind, i.item_id, i.text, coalesce(f.tsv, c.tsv),
           coalesce(f.embedding, c.embedding), i.subject, i.predicate, i.object, (i.citation ->> 'tier')::smallint,
           i.authority, i.verification, i.confidence, i.valid_from, i.valid_to,
           coalesce(f.recorded_at, c.created_at),
           (i.citation -> 'source' ->> 'source_id')::uuid, (i.citation -> 'episode' ->> 'episode_id')::uuid,
           (i.citation -> 'chunk' ->> 'chunk_id')::uuid, i.up_votes, i.down_votes, i.citation, i.confirmed_at
      from inputs i
      left join vera.facts f on i.kind = 'fact' and f.group_id = i.group_id and f.fact_id = i.item_id
      left join vera.chunks c on i.kind = 'passage' and c.group_id = i.group_id and c.chunk_id = i.item_id;
    get diagnostics copied = row_count;

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
    'Freezes a group''s retrieval inputs with their pins (model, dimension, search version, weights)';

-- Contract: searches a snapshot: the same stages as vera.search, over the
-- copies, with the snapshot's weights and its creation instant as "now", so
-- it answers what search answered when the snapshot was taken. Fails
-- closed: VS002 for a snapshot that was never sealed, VS001 when the
-- search version or the group's embedding pin has changed since.
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
    vector_weight double precision default 1)
returns table (
    rank integer, kind vera.item_kind, item_id uuid, group_id text, text text,
    subject text, predicate text, object text, score real,
    relevance real, authority real, verification real, recency real, feedback real, confidence real,
    citation jsonb)
language plpgsql stable security definer
set search_path = vera, public, pg_temp
as $$
declare
    frozen vera.snapshots;
    current_pin record;
    n integer;
    lexical tsquery;
    items vera.search_item[];
begin
    perform vera.require_role(search_snapshot.snapshot_group, 'viewer');
    n := vera.check_search_arguments(query, query_embedding, k, null, k_rrf, candidates,
                                     lexical_weight, vector_weight, null);
    select * into frozen from vera.snapshots s
     where s.group_id = search_snapshot.snapshot_group and s.name = btrim(search_snapshot.snapshot);
    if not found then
        raise exception 'group % has no snapshot named %', search_snapshot.snapshot_group, snapshot using errcode = 'VN001';
    end if;
    if frozen.sealed_at is null then
        raise exception 'snapshot % is not sealed: its copy never completed; create it again', frozen.name
            using errcode = 'VS002';
    end if;
    if frozen.search_version <> vera.search_version() then
        raise exception 'snapshot % was taken with search version %, this database runs %: its answers cannot be reproduced',
            frozen.name, frozen.search_version, vera.search_version() using errcode = 'VS001';
    end if;
    select g.embedding_model, g.embedding_dim into current_pin from vera.groups g where g.group_id = frozen.group_id;
    if frozen.embedding_model is not null
       and (current_pin.embedding_model is distinct from frozen.embedding_model
            or current_pin.embedding_dim is distinct from frozen.embedding_dim) then
        raise exception 'snapshot % was taken with embedding model % (% dimensions); the group now uses % (% dimensions)',
            frozen.name, frozen.embedding_model, frozen.embedding_dim,
            coalesce(current_pin.embedding_model, 'none'), coalesce(current_pin.embedding_dim::text, '-')
            using errcode = 'VS001';
    end if;
    if query_embedding is not null and frozen.embedding_dim is not null
       and (public.vector_dims(query_embedding) <> frozen.embedding_dim
            or (embedding_model is not null and embedding_model <> frozen.embedding_model)) then
        raise exception 'query embedding is % (% dimensions), but snapshot % is pinned to % (% dimensions)',
            coalesce(embedding_model, 'of no named model'), public.vector_dims(query_embedding), frozen.name,
            frozen.embedding_model, frozen.embedding_dim using errcode = 'VE001';
    end if;
    lexical := vera.lexical_query(query);

    items := array(
        select row(i.item_kind, i.item_id, i.group_id,
                   coalesce(lexical_weight / (k_rrf + c.lexical_rank)::float8, 0)
                   + coalesce(vector_weight / (k_rrf + c.vector_rank)::float8, 0),
                   i.text, i.subject, i.predicate, i.object, i.authority, i.verification, i.confidence,
                   i.valid_from, i.valid_to, i.up_votes, i.down_votes, i.citation, i.confirmed_at)::vera.search_item
          from vera.snapshot_candidates(frozen.group_id, frozen.snapshot_id, lexical,
                                        case when frozen.embedding_dim is not null then query_embedding end, n) c
          join vera.snapshot_items i
            on i.group_id = frozen.group_id and i.snapshot_id = frozen.snapshot_id
           and i.item_kind = c.kind and i.item_id = c.item_id);
    return query select * from vera.blend(items, jsonb_build_object('*', frozen.weights), frozen.created_at, k);
end
$$;
comment on function vera.search_snapshot(text, text, text, public.vector, integer, integer, integer, text,
                                         double precision, double precision) is
    'Searches a sealed snapshot with its pinned weights and instant; fails closed on changed pins (VS001/VS002)';

-- Ingestion: a record deleted (its episode retracted) and restored unchanged comes back.
-- Contract: records one version of a source record. Unchanged content (same
-- SHA-256 as the latest version, unless that version was retracted) is a
-- no-op that returns the existing episode; changed content becomes the next
-- version. Members and above.
create or replace function vera.record_episode(
    group_id text, source_id uuid, external_id text, content_sha256 bytea,
    object_key text default null, mime text default null, observed_at timestamptz default now(),
    title text default null, uri text default null
)
returns table (episode_id uuid, version integer, created boolean)
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    src vera.sources;
    latest record;
begin
    perform vera.require_role(record_episode.group_id, 'member');
    src := vera.visible_source(record_episode.group_id, record_episode.source_id);
    if src.retracted_at is not null then
        raise exception 'source % was retracted at %; register it again to ingest from it', src.name, src.retracted_at
            using errcode = '22023';
    end if;
    if coalesce(record_episode.external_id, '') = '' or char_length(record_episode.external_id) > 2000 then
        raise exception 'external_id must be 1 to 2000 characters' using errcode = '22023';
    end if;
    if record_episode.content_sha256 is null or octet_length(record_episode.content_sha256) <> 32 then
        raise exception 'content_sha256 must be the 32-byte SHA-256 of the record''s content' using errcode = '22023';
    end if;
    -- one writer per record at a time, so two ingesters cannot both create version n+1
    perform pg_advisory_xact_lock(hashtextextended(
        record_episode.group_id || '/' || record_episode.source_id || '/' || record_episode.external_id, 0));
    select e.episode_id, e.version, e.content_sha256, e.status into latest from vera.episodes e
     where e.group_id = record_episode.group_id and e.source_id = record_episode.source_id
       and e.external_id = record_episode.external_id
     order by e.version desc limit 1;
    -- a retracted record that comes back (a deleted file restored) is a new version, even unchanged
    if found and latest.content_sha256 = record_episode.content_sha256 and latest.status <> 'retracted' then
        return query select latest.episode_id, latest.version, false;
        return;
    end if;
    return query
    insert into vera.episodes as e (group_id, source_id, external_id, version, content_sha256, object_key, mime,
                                    observed_at, title, uri)
    values (record_episode.group_id, record_episode.source_id, record_episode.external_id,
            coalesce(latest.version, 0) + 1, record_episode.content_sha256, record_episode.object_key,
            record_episode.mime, coalesce(record_episode.observed_at, now()), record_episode.title, record_episode.uri)
    returning e.episode_id, e.version, true;
end
$$;
comment on function vera.record_episode(text, uuid, text, bytea, text, text, timestamptz, text, text) is
    'Records a version of a source record; unchanged content returns the existing episode';

-- Erasure keeps raw bytes another episode still references.
-- Internal: retracts (and with erase, deletes) episodes of one group.
-- Returns the retract_cleanup job id.
create or replace function vera.withdraw_episodes(
    target_group text, episode_ids uuid[], erase boolean, action text, target_kind text, target_id text,
    reason text
)
returns bigint
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    withdrawn record;
    restored record;
    object_keys jsonb;
    erased record;
    cleanup_job bigint;
begin
    -- the facts drawn from the episodes, and proposals made from them
    with gone as (
        update vera.facts f set lifecycle = 'retracted', retired_at = coalesce(f.retired_at, now())
         where ((f.group_id = target_group and f.episode_id = any (episode_ids))
                or (f.origin ->> 'episode_id')::uuid = any (episode_ids))
           and f.lifecycle <> 'retracted'
        returning f.group_id, f.fact_id, f.subject_entity_id, f.predicate
    )
    select coalesce(jsonb_agg(gone.fact_id), '[]') as fact_ids,
           array_agg(gone.group_id) as g, array_agg(gone.subject_entity_id) as s, array_agg(gone.predicate) as p
      into withdrawn from gone;
    -- facts retracted earlier (say, with their source) still name their graph edges
    select coalesce(jsonb_agg(distinct f.fact_id), '[]') as fact_ids into erased
      from vera.facts f
     where (f.group_id = target_group and f.episode_id = any (episode_ids))
        or (f.origin ->> 'episode_id')::uuid = any (episode_ids);
    -- raw bytes that another episode still references stay (a record restored unchanged
    -- is a new version under the same content-addressed key)
    with withdrawn_keys as (
        select distinct e.object_key from vera.episodes e
         where e.group_id = target_group and e.episode_id = any (episode_ids) and e.object_key is not null
    ), kept_keys as (
        select distinct e.object_key from vera.episodes e
         where e.group_id = target_group and e.object_key in (select k.object_key from withdrawn_keys k)
           and not e.episode_id = any (episode_ids)
    )
    select coalesce(jsonb_agg(k.object_key order by k.object_key), '[]') into object_keys
      from withdrawn_keys k where k.object_key not in (select kept.object_key from kept_keys kept);

    update vera.episodes e set status = 'retracted'
     where e.group_id = target_group and e.episode_id = any (episode_ids);

    if erase then
        delete from vera.feedback fb
         where fb.group_id = target_group
           and ((fb.item_kind = 'fact' and fb.item_id in (select (x #>> '{}')::uuid from jsonb_array_elements(erased.fact_ids) x))
                or (fb.item_kind = 'passage' and fb.item_id in (
                        select c.chunk_id from vera.chunks c
                         where c.group_id = target_group and c.episode_id = any (episode_ids))));
        delete from vera.snapshot_items si
         where si.group_id = target_group
           and (si.episode_id = any (episode_ids)
                or (si.item_kind = 'fact' and si.item_id in (select (x #>> '{}')::uuid from jsonb_array_elements(erased.fact_ids) x)));
        delete from vera.facts f
         where (f.group_id = target_group and f.episode_id = any (episode_ids))
            or (f.origin ->> 'episode_id')::uuid = any (episode_ids);
        -- chunks go with their episodes (on delete cascade)
        delete from vera.episodes e where e.group_id = target_group and e.episode_id = any (episode_ids);
    end if;

    -- values these facts had superseded become current again
    select coalesce(jsonb_agg(t.fact_id) filter (where t.lifecycle = 'published'), '[]') as fact_ids into restored
      from vera.rebuild_timelines(withdrawn.g, withdrawn.s, withdrawn.p) t;

    cleanup_job := vera.enqueue_job('vera.retract_cleanup', jsonb_build_object(
        'group_id', target_group,
        'edge_ids', erased.fact_ids,
        'object_keys', case when erase then object_keys else '[]'::jsonb end,
        'episode_ids', to_jsonb(episode_ids),
        'restored_fact_ids', restored.fact_ids,
        'erase', erase),
        now() + make_interval(secs => (vera.setting(target_group, 'retract.cleanup_delay_seconds'))::float8));
    perform vera.audit(target_group, action, target_kind, target_id, jsonb_build_object(
        'reason', reason, 'episodes', cardinality(episode_ids), 'facts', jsonb_array_length(erased.fact_ids),
        'cleanup_job', cleanup_job));
    return cleanup_job;
end
$$;
comment on function vera.withdraw_episodes(text, uuid[], boolean, text, text, text, text) is
    'Internal: retracts or erases episodes and enqueues their retract_cleanup job';

reset role;
