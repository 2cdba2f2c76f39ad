-- Context packs (sql/schema/100_context_packs.sql): vera_client assembles
-- a pack from search hits (vera_client.domain.context) and keeps it here,
-- in the caller's own u: scope, so that an agent can read it again, cite
-- it and vote on its items. The text and citation of every item are taken
-- from the database, never from the client, and so is the provenance that
-- erasure follows (vera.erase_pack_items).
set role vera_owner;

-- Version of the context assembler (vera_client.domain.context builds the
-- packs; its ASSEMBLER_VERSION must equal this, pg_tests/search/
-- test_snapshots.py checks). Snapshots pin it: a pack assembled from a snapshot's answer by
-- another assembler would not be the pack it gave (VS005).
create or replace function vera.assembler_version()
returns text
language sql immutable parallel safe
set search_path = vera, pg_temp
as $$ select 'vera-context/1' $$;
comment on function vera.assembler_version() is 'Internal: version of the context assembler; snapshots pin it';

-- Internal: refuses a pack's JSON part unless it is an array of at most
-- 1,000,000 bytes.
create or replace function vera.check_pack_array(value jsonb, what text)
returns jsonb
language plpgsql immutable
set search_path = vera, pg_temp
as $$
begin
    if jsonb_typeof(coalesce(value, '[]')) <> 'array' then
        raise exception '% must be a JSON array', what using errcode = '22023';
    end if;
    if octet_length(coalesce(value, '[]')::text) > 1000000 then
        raise exception '% is over 1,000,000 bytes', what using errcode = '22001';
    end if;
    return coalesce(value, '[]');
end
$$;
comment on function vera.check_pack_array(jsonb, text) is 'Internal: a context pack''s JSON array, checked';

-- Internal: the period a pack's search asked about, as its request keeps it:
-- null (none), or {"start", "end", "text"} with start and end ISO days
-- (YYYY-MM-DD; null: open; end exclusive, after start) and text, the words
-- that stated it (at most 8,192 characters). Errors: 22023, 22007, 22008.
create or replace function vera.check_pack_period(during jsonb)
returns jsonb
language plpgsql immutable
set search_path = vera, pg_temp
as $$
declare
    first_day date;
    day_after date;
begin
    if during is null or jsonb_typeof(during) = 'null' then
        return null;
    end if;
    if jsonb_typeof(during) <> 'object'
       or exists (select from jsonb_object_keys(during) k where k not in ('start', 'end', 'text')) then
        raise exception 'during must be a JSON object of start, end and text' using errcode = '22023';
    end if;
    if jsonb_typeof(during -> 'text') is distinct from 'string' then
        raise exception 'during needs its text (the words that stated the period)' using errcode = '22023';
    end if;
    perform vera.check_length(during ->> 'text', 'during text', 8192);
    if coalesce(jsonb_typeof(during -> 'start'), 'null') not in ('null', 'string')
       or coalesce(jsonb_typeof(during -> 'end'), 'null') not in ('null', 'string')
       or (during ->> 'start') !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$'
       or (during ->> 'end') !~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}$' then
        raise exception 'during''s start and end must be days (YYYY-MM-DD) or null' using errcode = '22007';
    end if;
    first_day := (during ->> 'start')::date;  -- a day that does not exist (2026-02-30): 22008
    day_after := (during ->> 'end')::date;
    if first_day >= day_after then
        raise exception 'during must end after it starts: % .. %', first_day, day_after using errcode = '22023';
    end if;
    return jsonb_build_object('start', first_day, 'end', day_after, 'text', during ->> 'text');
end
$$;
comment on function vera.check_pack_period(jsonb) is 'Internal: the period a context pack''s search asked about, checked';

-- Internal: a pack's period (as check_pack_period keeps it) as vera.search's
-- during: days from midnight UTC, end exclusive; null for none.
create or replace function vera.pack_period_range(during jsonb)
returns tstzrange
language sql immutable
set search_path = vera, pg_temp
as $$
    select case when jsonb_typeof(during) = 'object' then
        tstzrange((during ->> 'start')::date::timestamp at time zone 'UTC',
                  (during ->> 'end')::date::timestamp at time zone 'UTC', '[)') end
$$;
comment on function vera.pack_period_range(jsonb) is 'Internal: a context pack''s period as a search''s during';

-- Contract: stores a context pack the caller assembled and returns its id.
-- items: a JSON array, in the pack's order, of {"kind": "fact" | "passage",
-- "item_id", "tokens" (>= 0), "signals": {relevance, authority, verification,
-- recency, feedback, confidence, period?}} (period: null or absent when the
-- search asked about no period); each item must be one the caller reads in
-- the groups searched (VN001 otherwise); its text, group, citation and
-- provenance are read here. The request: query (1 to 8,192 characters),
-- token_budget (100..32,000; the items' tokens must fit it), as_of,
-- groups (each readable; null: every readable group), min_authority (0..1),
-- max_tier (1..4), during (the period the search asked about, null for
-- none: {"start", "end", "text"} as vera.check_pack_period checks it).
-- weights, omitted, conflicts and warnings are kept as given (JSON; arrays
-- of at most 1,000,000 bytes). At most 1,000 items.
-- Errors: 22023, 22001, 22007, 22008, 54000, 42501, VN001, VA005.
create or replace function vera.store_context_pack(
    query text, token_budget integer, items jsonb, as_of timestamptz default null, groups text[] default null,
    min_authority double precision default null, max_tier integer default null, weights jsonb default null,
    assembler_version text default 'unknown', omitted jsonb default '[]', conflicts jsonb default '[]',
    warnings jsonb default '[]', during jsonb default null)
returns uuid
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
    targets constant text[] := vera.search_targets(store_context_pack.groups);
    personal text;
    new_pack uuid := gen_random_uuid();
    problem text;
    parsed record;
    missing record;
    asked_period jsonb;
begin
    if coalesce(btrim(store_context_pack.query), '') = '' then
        raise exception 'a context pack needs its query' using errcode = '22023';
    end if;
    perform vera.check_length(store_context_pack.query, 'query', 8192);
    if store_context_pack.token_budget is null or store_context_pack.token_budget not between 100 and 32000 then
        raise exception 'token_budget must be between 100 and 32000, got %',
            coalesce(store_context_pack.token_budget::text, 'null') using errcode = '22023';
    end if;
    perform vera.check_as_of(store_context_pack.as_of);
    asked_period := vera.check_pack_period(store_context_pack.during);
    if store_context_pack.min_authority is not null and not (store_context_pack.min_authority between 0 and 1) then
        raise exception 'min_authority must be between 0 and 1' using errcode = '22023';
    end if;
    if store_context_pack.max_tier is not null and store_context_pack.max_tier not between 1 and 4 then
        raise exception 'max_tier must be between 1 and 4, got %', store_context_pack.max_tier using errcode = '22023';
    end if;
    if coalesce(btrim(store_context_pack.assembler_version), '') = '' then
        raise exception 'assembler_version is required' using errcode = '22023';
    end if;
    perform vera.check_length(store_context_pack.assembler_version, 'assembler_version', 100);
    if store_context_pack.weights is not null and jsonb_typeof(store_context_pack.weights) <> 'object' then
        raise exception 'weights must be a JSON object' using errcode = '22023';
    end if;
    if jsonb_typeof(store_context_pack.items) is distinct from 'array' then
        raise exception 'items must be a JSON array of objects' using errcode = '22023';
    end if;
    if jsonb_array_length(store_context_pack.items) > 1000 then
        raise exception 'at most 1000 items per pack, got %', jsonb_array_length(store_context_pack.items)
            using errcode = '54000';
    end if;
    select format('item %s: %s', i - 1, reason) into problem
      from jsonb_array_elements(store_context_pack.items) with ordinality as a(x, i)
     cross join lateral (select case
            when jsonb_typeof(x) <> 'object' then 'not a JSON object'
            when coalesce(x ->> 'kind', '') not in ('fact', 'passage') then 'kind must be fact or passage'
            when coalesce(x ->> 'item_id', '') !~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                then 'item_id must be a UUID'
            when jsonb_typeof(x -> 'tokens') is distinct from 'number' or (x ->> 'tokens') !~ '^[0-9]{1,9}$'
                then 'tokens must be a whole number from 0'
            when jsonb_typeof(x -> 'signals') is distinct from 'object'
                or exists (select from unnest(array['relevance', 'authority', 'verification', 'recency', 'feedback',
                                                    'confidence']) s(name)
                            where jsonb_typeof(x -> 'signals' -> s.name) is distinct from 'number'
                               or (x -> 'signals' ->> s.name)::numeric not between 0 and 1)
                or (coalesce(jsonb_typeof(x -> 'signals' -> 'period'), 'null') <> 'null'
                    and (jsonb_typeof(x -> 'signals' -> 'period') <> 'number'
                         or (x -> 'signals' ->> 'period')::numeric not between 0 and 1))
                then 'signals must hold relevance, authority, verification, recency, feedback and confidence, each a number from 0 to 1, and period a number from 0 to 1 or null'
        end as reason) checks
     where reason is not null
     order by i limit 1;
    if problem is not null then
        raise exception '%', problem using errcode = '22023';
    end if;
    if (select coalesce(sum((x ->> 'tokens')::bigint), 0) from jsonb_array_elements(store_context_pack.items) x)
       > store_context_pack.token_budget then
        raise exception 'the items'' tokens exceed the token_budget of %', store_context_pack.token_budget
            using errcode = '22023';
    end if;
    select p.personal_group_id into personal from vera.principals p where p.principal_id = caller;

    -- each item as the caller reads it in the groups searched, with its provenance
    with wanted as (
        select i::integer as position, (x ->> 'kind')::vera.item_kind as kind, (x ->> 'item_id')::uuid as id,
               (x ->> 'tokens')::integer as tokens, x -> 'signals' as signals
          from jsonb_array_elements(store_context_pack.items) with ordinality as a(x, i)
    ), located as (
        select w.*, coalesce(f.group_id, c.group_id) as owner,
               coalesce(f.episode_id, (f.origin ->> 'episode_id')::uuid, c.episode_id) as episode,
               coalesce(f.source_id, (f.origin ->> 'source_id')::uuid, e.source_id) as source
          from wanted w
          left join vera.facts f on w.kind = 'fact' and f.fact_id = w.id and f.group_id = any (targets)
          left join vera.chunks c on w.kind = 'passage' and c.chunk_id = w.id and c.group_id = any (targets)
          left join vera.episodes e on e.group_id = c.group_id and e.episode_id = c.episode_id
    )
    select array_agg(l.position order by l.position) as positions, array_agg(l.kind order by l.position) as kinds,
           array_agg(l.id order by l.position) as ids, array_agg(l.owner order by l.position) as owners,
           array_agg(l.episode order by l.position) as episodes, array_agg(l.source order by l.position) as sources,
           array_agg(l.tokens order by l.position) as tokens,
           array_agg(l.signals order by l.position) as signals,
           min(l.position) filter (where l.owner is null) as first_missing
      into parsed from located l;
    if parsed.first_missing is not null then
        raise exception 'item %: no % % that you can read in the groups searched', parsed.first_missing - 1,
            parsed.kinds[parsed.first_missing], parsed.ids[parsed.first_missing] using errcode = 'VN001';
    end if;

    insert into vera.context_packs (group_id, pack_id, principal_id, searched_groups, request, weights,
                                    assembler_version, omitted, conflicts, warnings)
    values (personal, new_pack, caller, targets,
            jsonb_build_object('query', store_context_pack.query, 'token_budget', store_context_pack.token_budget,
                               'as_of', store_context_pack.as_of, 'scopes', to_jsonb(store_context_pack.groups),
                               'min_authority', store_context_pack.min_authority,
                               'max_tier', store_context_pack.max_tier, 'during', asked_period),
            store_context_pack.weights, btrim(store_context_pack.assembler_version),
            vera.check_pack_array(store_context_pack.omitted, 'omitted'),
            vera.check_pack_array(store_context_pack.conflicts, 'conflicts'),
            vera.check_pack_array(store_context_pack.warnings, 'warnings'));
    if parsed.ids is not null then
        insert into vera.context_pack_items (group_id, pack_id, position, item_kind, item_id, item_group_id,
                                             episode_id, source_id, text, tokens, citation, signals)
        select personal, new_pack, u.position, u.kind, u.id, u.owner, u.episode, u.source, d.text, u.tokens,
               d.citation,
               array[(u.signals ->> 'relevance')::real, (u.signals ->> 'authority')::real,
                     (u.signals ->> 'verification')::real, (u.signals ->> 'recency')::real,
                     (u.signals ->> 'feedback')::real, (u.signals ->> 'confidence')::real,
                     (u.signals ->> 'period')::real]
          from unnest(parsed.positions, parsed.kinds, parsed.ids, parsed.owners, parsed.episodes, parsed.sources,
                      parsed.tokens, parsed.signals) as u(position, kind, id, owner, episode, source, tokens, signals)
          join vera.hit_details(parsed.kinds, parsed.ids, parsed.owners) d on d.kind = u.kind and d.item_id = u.id;
    end if;
    return new_pack;
end
$$;
comment on function vera.store_context_pack(text, integer, jsonb, timestamptz, text[], double precision, integer, jsonb, text,
                                            jsonb, jsonb, jsonb, jsonb) is
    'Stores a context pack assembled by the caller (items read from the database); returns its id';
grant execute on function vera.store_context_pack(text, integer, jsonb, timestamptz, text[], double precision,
                                                  integer, jsonb, text, jsonb, jsonb, jsonb, jsonb)
    to vera_app, vera_gateway;

-- Internal: the caller's own pack (it lives in the caller's u: scope and
-- names the caller), or VN001: another principal's or tenant's pack reads
-- exactly as one that does not exist.
create or replace function vera.own_context_pack(of_pack uuid, caller uuid)
returns vera.context_packs
language plpgsql stable
set search_path = vera, pg_temp
as $$
declare
    pack vera.context_packs;
begin
    select cp.* into pack
      from vera.principals p
      join vera.context_packs cp on cp.group_id = p.personal_group_id
     where p.principal_id = caller and cp.pack_id = of_pack and cp.principal_id = caller;
    if not found then
        raise exception 'no context pack % of yours', of_pack using errcode = 'VN001';
    end if;
    return pack;
end
$$;
comment on function vera.own_context_pack(uuid, uuid) is 'Internal: the caller''s own context pack, or VN001';

-- Contract: a context pack, for the principal who made it only (anyone
-- else, and an id that exists nowhere: VN001). items: a JSON array in
-- order of {position, kind, item_id, group_id, text, tokens, citation,
-- signals {seven}, erased}; an item whose source was erased has empty text
-- and erased true. Errors: VN001, 22023, VA005.
create or replace function vera.get_context_pack(of_pack uuid)
returns table (pack_id uuid, created_at timestamptz, searched_groups text[], request jsonb, weights jsonb,
               assembler_version text, items jsonb, omitted jsonb, conflicts jsonb, warnings jsonb)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
    pack vera.context_packs;
begin
    if of_pack is null then
        raise exception 'pack_id is required' using errcode = '22023';
    end if;
    pack := vera.own_context_pack(of_pack, caller);
    return query
        select pack.pack_id, pack.created_at, pack.searched_groups, pack.request, pack.weights,
               pack.assembler_version,
               coalesce((select jsonb_agg(jsonb_build_object(
                                    'position', i.position, 'kind', i.item_kind, 'item_id', i.item_id,
                                    'group_id', i.item_group_id, 'text', i.text, 'tokens', i.tokens,
                                    'citation', i.citation,
                                    'signals', jsonb_build_object('relevance', i.signals[1], 'authority', i.signals[2],
                                                                  'verification', i.signals[3], 'recency', i.signals[4],
                                                                  'feedback', i.signals[5], 'confidence', i.signals[6],
                                                                  'period', i.signals[7]),
                                    'erased', i.erased) order by i.position)
                           from vera.context_pack_items i
                          where i.group_id = pack.group_id and i.pack_id = pack.pack_id), '[]'::jsonb),
               pack.omitted, pack.conflicts, pack.warnings;
end
$$;
comment on function vera.get_context_pack(uuid) is 'A context pack, for the principal who made it only';
grant execute on function vera.get_context_pack(uuid) to vera_app, vera_gateway;

-- Contract: the caller's vote ('up' or 'down') on the item at a position of
-- one of its own packs: recorded exactly as vera.record_feedback records a
-- vote on a hit of the pack's query, as of the pack's as_of, in its groups and
-- asking about its period (during); query_embedding
-- and embedding_model as there. Errors: VN001 (not a pack of the caller,
-- no such position, an erased item, or no longer among the query's first
-- 100 hits), 22023, VA005.
create or replace function vera.record_pack_feedback(
    of_pack uuid, item_position integer, vote text, query_embedding public.vector default null,
    embedding_model text default null)
returns setof vera.recorded_feedback
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
as $$
declare
    caller constant uuid := vera.require_principal();
    pack vera.context_packs;
    item vera.context_pack_items;
begin
    if of_pack is null or item_position is null then
        raise exception 'feedback on a pack needs the pack id and a position' using errcode = '22023';
    end if;
    pack := vera.own_context_pack(of_pack, caller);
    select * into item from vera.context_pack_items i
     where i.group_id = pack.group_id and i.pack_id = pack.pack_id and i.position = item_position and not i.erased;
    if not found then
        raise exception 'context pack % has no item at position %', of_pack, item_position using errcode = 'VN001';
    end if;
    return query
        select * from vera.record_feedback(
            item.item_kind, item.item_id, pack.request ->> 'query', record_pack_feedback.vote,
            record_pack_feedback.query_embedding, (pack.request ->> 'as_of')::timestamptz,
            case when jsonb_typeof(pack.request -> 'scopes') = 'array'
                 then array(select jsonb_array_elements_text(pack.request -> 'scopes')) end,
            record_pack_feedback.embedding_model, vera.pack_period_range(pack.request -> 'during'));
end
$$;
comment on function vera.record_pack_feedback(uuid, integer, text, public.vector, text) is
    'Records a vote on the item at a position of one of the caller''s context packs, as on a hit';
grant execute on function vera.record_pack_feedback(uuid, integer, text, public.vector, text)
    to vera_app, vera_gateway;

-- Internal (erasure, sql/functions/150_retract.sql): empties the pack items
-- whose text came from what is erased in target_group (its episodes, the
-- facts drawn from them, their chunks, or a source's facts without an
-- episode) and marks them erased; drops the packs' omissions, warnings and
-- conflict values that name an erased item (a conflict left with one value
-- goes). Row-level security lets the admins of the group whose content an
-- item holds read and update it (policies erase_items_of_administered_groups).
create or replace function vera.erase_pack_items(
    target_group text, episode_ids uuid[], fact_ids uuid[], chunk_ids uuid[], erased_source uuid default null)
returns integer
language plpgsql volatile
set search_path = vera, pg_temp
as $$
declare
    emptied integer;
    erased_ids uuid[];
begin
    with gone as (
        update vera.context_pack_items i
           set text = '', erased = true,
               citation = jsonb_build_object('group_id', i.item_group_id, 'erased', true)
         where i.item_group_id = target_group and not i.erased
           and (i.episode_id = any (episode_ids)
                or (i.item_kind = 'fact' and i.item_id = any (fact_ids))
                or (i.item_kind = 'passage' and i.item_id = any (chunk_ids))
                or (erased_source is not null and i.source_id = erased_source))
        returning i.item_id
    )
    select count(*)::integer, array_agg(distinct gone.item_id) into emptied, erased_ids from gone;
    erased_ids := coalesce(erased_ids, '{}') || coalesce(fact_ids, '{}') || coalesce(chunk_ids, '{}');
    update vera.context_packs p
       set omitted = coalesce((select jsonb_agg(o) from jsonb_array_elements(p.omitted) o
                                where not coalesce((o ->> 'item_id')::uuid = any (erased_ids), false)), '[]'),
           warnings = coalesce((select jsonb_agg(w) from jsonb_array_elements(p.warnings) w
                                 where not coalesce((w ->> 'item_id')::uuid = any (erased_ids), false)), '[]'),
           conflicts = coalesce((
               select jsonb_agg(kept.conflict)
                 from (select c || jsonb_build_object('values', coalesce(
                                  (select jsonb_agg(v) from jsonb_array_elements(c -> 'values') v
                                    where not coalesce((v ->> 'fact_id')::uuid = any (erased_ids), false)),
                                  '[]')) as conflict
                         from jsonb_array_elements(p.conflicts) c) kept
                where jsonb_array_length(kept.conflict -> 'values') > 1), '[]')
     where target_group = any (p.searched_groups)
       and (p.omitted::text ~* any (array(select x::text from unnest(erased_ids) x))
            or p.warnings::text ~* any (array(select x::text from unnest(erased_ids) x))
            or p.conflicts::text ~* any (array(select x::text from unnest(erased_ids) x)));
    return emptied;
end
$$;
comment on function vera.erase_pack_items(text, uuid[], uuid[], uuid[], uuid) is
    'Internal: empties context pack items (and omissions, warnings, conflicts) citing erased content';

reset role;
