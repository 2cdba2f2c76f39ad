-- Remember in one call: an application (or an agent) hands VERA a text or a
-- chat transcript and, optionally, structured claims; VERA records them as
-- one episode of a source through the ordinary write path (record_episode,
-- store_chunks, publish_claims), so the source's tier and the contamination
-- guard apply exactly as to a connector's files. Nothing here publishes by
-- another path. Free text is not read for claims (no model is called here):
-- claims are the ones the caller passes.
set role vera_owner;

-- The trust tier a source gets when vera.remember registers it on first use:
-- 3 (informational). What an application writes for its users is neither
-- authoritative nor an agent's guess: in a personal u: scope it is searchable
-- at once (verification pending); in a shared scope it waits for review.
-- An admin who trusts it more registers the source first (vera.register_source).
create or replace function vera.remember_default_tier()
returns integer
language sql immutable parallel safe
as $$ select 3 $$;
comment on function vera.remember_default_tier() is
    'The trust tier of a source vera.remember registers on first use: 3 (informational)';
grant execute on function vera.remember_default_tier() to vera_app, vera_gateway;

-- Internal: plain text cut into passages as the folder connector cuts a .txt
-- file (python/vera_worker/domain/markdown.py, parse_plain_text; a test
-- compares the two): paragraphs (runs of non-blank lines) merged up to
-- max_chars, a longer paragraph cut at its last sentence end in each window
-- (or at max_chars when there is none past a third of it), surrounding
-- whitespace trimmed, offsets in characters of the text as given.
create or replace function vera.plain_passages(content text, max_chars integer default 1200)
returns jsonb
language plpgsql immutable parallel safe
set search_path = vera, pg_temp
as $$
declare
    gap text;
    paragraph text;
    cursor_at integer := 0;     -- offsets are 0-based, as Python counts
    block_start integer;
    block_end integer;
    piece_start integer;
    cut integer;
    window_text text;
    ends integer;
    spans integer[] := '{}';    -- start, end, start, end, ...
    n integer;
    result jsonb := '[]';
    piece text;
    left_trim integer;
    right_end integer;
    i integer;
begin
    -- each match: the whitespace before a paragraph, and the paragraph; matches are contiguous,
    -- so offsets add up in one pass (a search from each offset would be quadratic)
    for gap, paragraph in select m[1], m[2] from regexp_matches(content, '(\s*)(\S(?:[^\n]|\n(?!\s*\n))*)', 'g') as m loop
        block_start := cursor_at + char_length(gap);
        block_end := block_start + char_length(paragraph);
        cursor_at := block_end;
        piece_start := block_start;
        loop
            if block_end - piece_start > max_chars then
                window_text := substr(content, piece_start + 1, max_chars);
                ends := regexp_count(window_text, '(?<=[.!?。])\s+|\n');
                cut := case when ends > 0 then regexp_instr(window_text, '(?<=[.!?。])\s+|\n', 1, ends, 1) - 1 end;
                cut := piece_start + case when cut > max_chars / 3 then cut else max_chars end;
            else
                cut := block_end;
            end if;
            n := cardinality(spans);
            if n > 0 and cut - spans[n - 1] <= max_chars then
                spans[n] := cut;
            else
                spans := spans || array[piece_start, cut];
            end if;
            exit when cut >= block_end;
            piece_start := cut;
        end loop;
    end loop;
    i := 1;
    while i < cardinality(spans) loop
        piece := substr(content, spans[i] + 1, spans[i + 1] - spans[i]);
        left_trim := char_length(piece) - char_length(ltrim(piece, E' \t\n\r\f\v'));
        right_end := char_length(rtrim(piece, E' \t\n\r\f\v'));
        if right_end > left_trim then
            result := result || jsonb_build_array(jsonb_build_object(
                'text', substr(piece, left_trim + 1, right_end - left_trim),
                'char_start', spans[i] + left_trim, 'char_end', spans[i] + right_end));
        end if;
        i := i + 2;
    end loop;
    return result;
end
$$;
comment on function vera.plain_passages(text, integer) is
    'Internal: plain text cut into passages as the folder connector cuts a text file';

-- Internal: the group vera.remember writes to: the one named, or the
-- caller's personal u: scope; 42501 unless the caller is a member there (so
-- another tenant's group is refused as everywhere, before anything is read).
create or replace function vera.remember_target(to_group text)
returns text
language plpgsql stable
set search_path = vera, pg_temp
as $$
declare
    target text := to_group;
begin
    if target is null then
        select p.personal_group_id into target from vera.principals p where p.principal_id = vera.require_principal();
    end if;
    perform vera.require_role(target, 'member');
    return target;
end
$$;
comment on function vera.remember_target(text) is
    'Internal: the named group, or the caller''s u: scope, where the caller is a member (else 42501)';

-- Internal: the passages of what vera.remember is given, as store_chunks
-- takes them: one per message (heading: the speaker, its name else its role),
-- or the text cut as plain text. Checks the input's shape (22023, 22001,
-- 54000); each message's text is checked as every passage, by store_chunks.
create or replace function vera.remember_chunks(content text, messages jsonb)
returns jsonb
language plpgsql immutable
set search_path = vera, pg_temp
as $$
declare
    problem text;
    chunks jsonb;
begin
    if (content is null) = (messages is null) then
        raise exception 'pass either content (a text) or messages (a chat transcript), not both nor neither'
            using errcode = '22023';
    end if;
    if content is not null then
        perform vera.check_length(content, 'content', 100000);
        if content !~ '\S' then
            raise exception 'content is empty' using errcode = '22023';
        end if;
        return vera.plain_passages(content);
    end if;
    if jsonb_typeof(messages) <> 'array' or jsonb_array_length(messages) = 0 then
        raise exception 'messages must be a non-empty JSON array of {"role", "content", "name"?}'
            using errcode = '22023';
    end if;
    if jsonb_array_length(messages) > 1000 then
        raise exception 'at most 1000 messages per call, got %', jsonb_array_length(messages) using errcode = '54000';
    end if;
    select format('message %s: %s', i - 1, reason) into problem
      from jsonb_array_elements(messages) with ordinality as a(m, i)
     cross join lateral (select case
               when jsonb_typeof(m) <> 'object' then 'not a JSON object'
               when jsonb_typeof(m -> 'content') is distinct from 'string' then 'content must be a string'
               when coalesce(jsonb_typeof(m -> 'role'), 'null') not in ('string', 'null')
                    or coalesce(jsonb_typeof(m -> 'name'), 'null') not in ('string', 'null')
                   then 'role and name must be strings'
           end as reason) checks
     where reason is not null
     order by i limit 1;
    if problem is not null then
        raise exception '%', problem using errcode = '22023';
    end if;
    select jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
               'text', m ->> 'content',
               'heading', coalesce(nullif(btrim(m ->> 'name'), ''), nullif(btrim(m ->> 'role'), ''))))
               order by i)
      into chunks
      from jsonb_array_elements(messages) with ordinality as a(m, i);
    return chunks;
end
$$;
comment on function vera.remember_chunks(text, jsonb) is
    'Internal: the passages vera.remember stores for a text or a chat transcript';

-- Contract: what vera.remember would store, without storing it: the group it
-- lands in, that group's embedding pin (null when none yet) and the passages
-- ({"text", "heading"?, "char_start"?, "char_end"?}, in order). A client
-- with an embedder embeds these texts and passes the vectors to
-- vera.remember (embeddings), so that memories are found by meaning too.
-- Members of the group; errors as vera.remember's.
create or replace function vera.remember_passages(
    content text default null, messages jsonb default null, to_group text default null
)
returns table (group_id text, embedding_model text, embedding_dim integer, passages jsonb)
language plpgsql stable security definer
set search_path = vera, pg_temp
as $$
declare
    target text := vera.remember_target(remember_passages.to_group);
begin
    return query
    select target, g.embedding_model, g.embedding_dim,
           vera.remember_chunks(remember_passages.content, remember_passages.messages)
      from vera.groups g where g.group_id = target;
end
$$;
comment on function vera.remember_passages(text, jsonb, text) is
    'The group, its embedding pin and the passages vera.remember would store (nothing is stored)';
grant execute on function vera.remember_passages(text, jsonb, text) to vera_app, vera_gateway;

-- Contract: records what an application or agent wants remembered, in one
-- call and one transaction:
--   content   a text (at most 100,000 characters), or
--   messages  a chat transcript: a JSON array of {"role", "content", "name"?}
--             (at most 1,000 messages of at most 20,000 characters each, a
--             role or name of at most 2,000);
--             exactly one of the two
--   source    the source's name in the group (default 'memory'); registered on
--             first use, kind 'memory', tier vera.remember_default_tier() (3),
--             when the caller administers the group (its own u: scope always);
--             otherwise an admin must have registered it
--   at        when it was said (the episode's observation time; default now)
--   to_group  where it goes; default the caller's personal u: scope
--   claims    structured claims as vera.publish_claims takes them (at most
--             1,000; "chunk" cites a passage by its position)
--   embeddings, embedding_model
--             optional: one vector per passage, in the order
--             vera.remember_passages gives them, by that model (the group's
--             pin applies: VE001 for another model or dimension); a claim's
--             "embedding" (its fact text's vector, vera.claim_fact_texts) is
--             by that model too. A claim without one is found by its words
--             at once and by meaning once the worker's embed job ran.
--   time_scopes
--             optional: one {"time_scope", "time_scope_version"?} per
--             passage, in the same order: the periods it states, as
--             vera.store_chunks takes them (the Python client reads them with
--             VERA's reader; without them the passages' scopes are not read)
-- The episode is keyed by its content (text or messages, and claims; not the
-- vectors, of passages or of claims): the same content again records nothing new and returns the
-- episode it made (created false). Passages: one per message (heading: the
-- speaker), or the text cut as plain text; graded and guarded by the
-- source's tier as store_chunks and publish_claims grade them. Errors: 22023
-- (neither or both of content and messages, blank or malformed input, a
-- vector or time scope count that is not the passage count, a retracted
-- source, a malformed time scope), 22001
-- (too long), 54000 (too many messages or claims), 42501 (no member of the
-- group, or a new source in a group the caller does not administer), VE001.
create or replace function vera.remember(
    content text default null, messages jsonb default null, source text default 'memory',
    at timestamptz default null, to_group text default null, claims jsonb default '[]',
    embeddings jsonb default null, embedding_model text default null, time_scopes jsonb default null
)
returns table (group_id text, source_id uuid, episode_id uuid, version integer, created boolean,
               passages integer, claims_recorded integer, claims_published integer,
               lifecycle vera.fact_lifecycle)
language plpgsql volatile security definer
set search_path = vera, pg_temp
as $$
declare
    target text := vera.remember_target(remember.to_group);
    source_name text := btrim(coalesce(remember.source, ''));
    found_source vera.sources;
    chunks jsonb := vera.remember_chunks(remember.content, remember.messages);
    title text;
    recorded record;
    stored integer := 0;
    published integer := 0;
    claim_count integer := 0;
    passage_lifecycle vera.fact_lifecycle;
    digest bytea;
begin
    if source_name = '' or char_length(source_name) > 200 then
        raise exception 'source must be a name of 1 to 200 characters' using errcode = '22023';
    end if;
    if remember.at is not null and (not vera.is_world_time(remember.at) or remember.at > now() + interval '100 years') then
        raise exception 'at must be a finite time (from 4714 BC) at most 100 years ahead, got %', remember.at
            using errcode = '22023';
    end if;
    if jsonb_typeof(coalesce(remember.claims, '[]')) <> 'array' then
        raise exception 'claims must be a JSON array of objects (vera.publish_claims'' shape)' using errcode = '22023';
    end if;
    claim_count := jsonb_array_length(coalesce(remember.claims, '[]'));
    if claim_count > 1000 then
        raise exception 'at most 1000 claims per call, got %', claim_count using errcode = '54000';
    end if;
    if remember.embeddings is not null then
        if jsonb_typeof(remember.embeddings) <> 'array'
           or jsonb_array_length(remember.embeddings) <> jsonb_array_length(chunks) then
            raise exception 'embeddings must be a JSON array of one vector per passage (% passages)',
                jsonb_array_length(chunks) using errcode = '22023';
        end if;
        select jsonb_agg(c || jsonb_build_object('embedding', e) order by i) into chunks
          from jsonb_array_elements(chunks) with ordinality as a(c, i)
          join jsonb_array_elements(remember.embeddings) with ordinality as v(e, j) on j = i;
    end if;
    if remember.time_scopes is not null then
        if jsonb_typeof(remember.time_scopes) <> 'array'
           or jsonb_array_length(remember.time_scopes) <> jsonb_array_length(chunks)
           or exists (select from jsonb_array_elements(remember.time_scopes) t
                       where jsonb_typeof(t) <> 'object'
                          or not t ? 'time_scope'
                          or t - 'time_scope' - 'time_scope_version' <> '{}') then
            raise exception 'time_scopes must be a JSON array of one {"time_scope", "time_scope_version"?} per passage (% passages)',
                jsonb_array_length(chunks) using errcode = '22023';
        end if;
        select jsonb_agg(c || t order by i) into chunks
          from jsonb_array_elements(chunks) with ordinality as a(c, i)
          join jsonb_array_elements(remember.time_scopes) with ordinality as v(t, j) on j = i;
    end if;
    title := btrim(split_part(btrim(coalesce(remember.content, remember.messages -> 0 ->> 'content')), E'\n', 1));

    -- the source, registered on first use where the caller may register it
    select * into found_source from vera.sources s where s.group_id = target and s.name = source_name;
    if not found then
        if vera.role_in(target) < 'admin' then
            raise exception 'source % is not registered in group %: an admin registers it (vera.register_source) with its trust tier',
                vera.shown(source_name), vera.shown(target) using errcode = '42501';
        end if;
        found_source.source_id := vera.register_source(target, 'memory', source_name, vera.remember_default_tier());
    end if;

    -- keyed by content: jsonb's text form is canonical (keys sorted, one spelling per value);
    -- the claims' vectors are not content (a client with an embedder adds them, one without not)
    digest := sha256(convert_to(jsonb_build_object(
        'content', remember.content, 'messages', remember.messages,
        'claims', (select coalesce(jsonb_agg(case when jsonb_typeof(c) = 'object'
                                                  then c - 'embedding' - 'subject_embedding' else c end
                                             order by i), '[]')
                     from jsonb_array_elements(coalesce(remember.claims, '[]')) with ordinality as a(c, i)))::text,
        'UTF8'));
    select * into recorded from vera.record_episode(
        target, found_source.source_id, 'remember/' || encode(digest, 'hex'), digest,
        mime => case when remember.content is not null then 'text/plain' else 'application/json' end,
        observed_at => coalesce(remember.at, now()),
        title => left(nullif(title, ''), 200));
    if recorded.created then
        select count(*)::integer into stored
          from vera.store_chunks(target, recorded.episode_id, chunks, remember.embedding_model);
        if claim_count > 0 then
            select count(*) filter (where p.lifecycle = 'published')::integer into published
              from vera.publish_claims(target, recorded.episode_id, remember.claims, remember.embedding_model) p;
        end if;
    else
        claim_count := 0;
    end if;
    select ch.lifecycle into passage_lifecycle from vera.chunks ch
     where ch.group_id = target and ch.episode_id = recorded.episode_id
     order by ch.ordinal limit 1;
    return query select target, found_source.source_id, recorded.episode_id, recorded.version, recorded.created,
                        stored, claim_count, published, passage_lifecycle;
end
$$;
comment on function vera.remember(text, jsonb, text, timestamptz, text, jsonb, jsonb, text, jsonb) is
    'Records a text or chat transcript (and structured claims) as one episode of a source, idempotent by content';
grant execute on function vera.remember(text, jsonb, text, timestamptz, text, jsonb, jsonb, text, jsonb)
    to vera_app, vera_gateway;

reset role;
