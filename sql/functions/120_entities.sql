-- Entity resolution, set-based: exact normalised alias -> pg_trgm fuzzy ->
-- semantic (name embeddings). A very close embedding links at once; a looser
-- one only names candidates for the equivalence judge (a worker job) and the
-- new entity stays provisional meanwhile.
--
-- A caller chooses its session's settings, and a definer function runs with
-- them unless it sets its own: with hnsw.ef_search = 1 and the other scans
-- off, the name search once read the one nearest name of any tenant through
-- an HNSW index shared by all of them and dropped it by the group filter
-- afterwards, which told the caller whether another tenant held that name
-- (issue 27). So no tenant query reads an index shared by all tenants here
-- (a large group's names get an HNSW index of their own, see
-- vera.missing_vector_indexes; a small group is searched exactly), and the
-- planner and pgvector settings these functions depend on are set on them.
set role vera_owner;

-- pgvector defines its settings (hnsw.*) when its library loads; load it now
-- so that the SET clauses below are checked as those settings rather than as
-- unknown placeholders, which only a superuser may set.
do $load$ begin perform '[1]'::public.vector; end $load$;

-- Internal: the function words a name may gain or lose and still name the
-- same thing (articles, prepositions, conjunctions, pronouns, auxiliaries
-- with their inflections: "when do the new episodes ..." / "when does the new
-- episodes ..."), English and Vietnamese, in vera.normalize_name's form.
-- A content word or a number is never one of them. Pure.
create or replace function vera.function_words()
returns text[]
language sql immutable parallel safe
as $$
    select '{a,an,the,of,for,to,in,on,at,by,with,from,into,onto,about,as,and,or,nor,but,if,then,than,so,
             do,does,did,done,doing,is,are,was,were,be,been,being,am,has,have,had,having,
             will,would,shall,should,can,could,may,might,must,
             i,me,my,we,us,our,you,your,he,him,his,she,her,it,its,they,them,their,
             this,that,these,those,there,here,what,which,who,whom,whose,when,where,why,how,
             not,no,s,t,ll,re,ve,d,
             và,của,là,các,những,cho,với,trong,trên,thì,mà,có,được,một,cái,này,đó,ở}'::text[]
$$;
comment on function vera.function_words() is
    'Internal: function words a name may gain or lose without naming another thing (English, Vietnamese)';

-- Internal: whether two different words are one word spelt two ways: no
-- digits in either (numbers tell siblings apart), the shorter of at least 4
-- letters, and one is the other with an inflection (episode/episodes,
-- deploy/deployed) or one edit away (a letter added, dropped, replaced or two
-- swapped: biling/billing). Pure.
create or replace function vera.words_are_variants(x text, y text)
returns boolean
language sql immutable parallel safe
as $$
    select x !~ '[0-9]' and y !~ '[0-9]' and least(char_length(x), char_length(y)) >= 4
       and (x || 's' = y or y || 's' = x or x || 'es' = y or y || 'es' = x
            or x || 'ed' = y or y || 'ed' = x or x || 'd' = y or y || 'd' = x
            or x || 'ing' = y or y || 'ing' = x
            -- one letter dropped (either way)
            or (char_length(x) = char_length(y) + 1
                and exists (select from generate_series(0, char_length(y)) i
                             where left(x, i) || substr(x, i + 2) = y))
            or (char_length(y) = char_length(x) + 1
                and exists (select from generate_series(0, char_length(x)) i
                             where left(y, i) || substr(y, i + 2) = x))
            -- one letter replaced, or two neighbours swapped
            or (char_length(x) = char_length(y)
                and exists (select from generate_series(0, char_length(x) - 1) i
                             where left(x, i) = left(y, i)
                               and (substr(x, i + 2) = substr(y, i + 2)
                                    or (substr(x, i + 1, 1) = substr(y, i + 2, 1)
                                        and substr(x, i + 2, 1) = substr(y, i + 1, 1)
                                        and substr(x, i + 3) = substr(y, i + 3))))))
     where x is not null and y is not null
$$;
comment on function vera.words_are_variants(text, text) is
    'Internal: one word spelt two ways (an inflection or one edit; no digits; 4 letters or more)';

-- Internal: whether two normalised names (vera.normalize_name) differ only
-- trivially, so that a trigram link may merge them: the same letters spaced
-- otherwise ("e mail" / "email"), or every word one has and the other lacks
-- is a function word (vera.function_words) or the other's spelling of it
-- (vera.words_are_variants). A differing content word or number makes them
-- two names of two things however similar their trigrams: "when do the new
-- episodes of supernatural start" and "... of the flash start" are two
-- questions, "adobe photoshop elements" and "adobe photoshop lightroom" two
-- products (issue 28). Pure. Not declared strict (null gives null all the
-- same): the planner folds a strict call with a null argument before the
-- EXECUTE check, so a role not granted these would get null, not 42501.
create or replace function vera.names_differ_trivially(a text, b text)
returns boolean
language sql immutable parallel safe
as $$
    with words as (
        select string_to_array(a, ' ') as of_a, string_to_array(b, ' ') as of_b
    ), differing as (
        select array(select w from unnest(words.of_a) w where not w = any (words.of_b)) as in_a,
               array(select w from unnest(words.of_b) w where not w = any (words.of_a)) as in_b
          from words
    )
    select a = b
        or replace(a, ' ', '') = replace(b, ' ', '')
        or (not exists (select from unnest(differing.in_a) x
                         where not x = any (vera.function_words())
                           and not exists (select from unnest(differing.in_b) y where vera.words_are_variants(x, y)))
            and not exists (select from unnest(differing.in_b) y
                             where not y = any (vera.function_words())
                               and not exists (select from unnest(differing.in_a) x where vera.words_are_variants(x, y))))
      from differing
     where a is not null and b is not null
$$;
comment on function vera.names_differ_trivially(text, text) is
    'Internal: two normalised names that differ only in spacing, function words or spellings of a word';
-- vera.similar_aliases (owned by vera_resolver) calls them
grant execute on function vera.function_words(), vera.words_are_variants(text, text),
    vera.names_differ_trivially(text, text) to vera_resolver;

-- Internal: for each (ordinal, group, normalised name), the most similar alias of that
-- group by pg_trgm similarity at or above the group's threshold, with the
-- same numbers in both (numbers tell siblings apart: db-1 / db-2, v1 / v2)
-- and no content word of its own (vera.names_differ_trivially).
-- It belongs to vera_resolver, which bypasses row-level security: the %
-- operator is not leakproof, so under RLS the planner may not use the trigram
-- index for it and compares each name with every alias (50 ms a name at
-- 20,000 aliases instead of 1 ms). The group check RLS would make is made here.
-- The probe compares the group under "C" (`group_id = $1 collate "C"`), as
-- only the trigram index entity_aliases_group_trgm_idx does: no btree serves
-- that condition, so the planner cannot scan the whole group through one and
-- compare the name with each alias (it costs % at a fraction of its price;
-- ~40 ms a long name at 1,000 aliases, issue 32); the index reads only the
-- group's postings of the name's trigrams. The same equality: group ids are
-- ASCII and both collations deterministic.
create or replace function vera.similar_aliases(ordinals integer[], groups text[], norms text[], thresholds float8[])
returns table (ordinal integer, entity_id uuid, score real)
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
-- During a bulk load the statistics lag behind the table, and a planner that
-- believes it small scans every alias once per name (50 ms instead of a few):
-- for this one probe, only a bitmap scan of the trigram index (or, for a name
-- with digits, of the numbers' index) is on the table (and on, whatever the
-- caller turned off).
set enable_seqscan = off
set enable_indexscan = off
set enable_bitmapscan = on
set enable_sort = on
set enable_nestloop = on
set enable_hashjoin = on
set enable_mergejoin = on
as $$
declare
    probe record;
    best record;
begin
    if exists (select from unnest(groups) g where not g = any (vera.writable_groups())) then
        raise exception 'permission denied: member role required in every group resolved into' using errcode = '42501';
    end if;
    for probe in select * from unnest(ordinals, groups, norms, thresholds) as u(o, g, n, t) loop
        if probe.n ~ '[0-9]' then
            -- A name with digits links only to an alias with the same numbers: the
            -- numbers' index finds those (entity_aliases_group_numbers_idx, migration
            -- 0018), where the trigram index would recheck every sibling that differs
            -- in its numbers alone (page 1234, page 1235, ...). similarity() >= t is
            -- what % means; written out, it leaves the trigram index out of this plan.
            select a.entity_id, similarity(a.alias_norm, probe.n) as score
              into best
              from vera.entity_aliases a
              join vera.entities e on e.group_id = a.group_id and e.entity_id = a.entity_id
             where a.group_id = probe.g collate "C" and a.alias_norm ~ '[0-9]'
               and regexp_replace(a.alias_norm, '[^0-9]+', ' ', 'g') = regexp_replace(probe.n, '[^0-9]+', ' ', 'g')
               and similarity(a.alias_norm, probe.n) >= probe.t and e.status <> 'merged'
               and vera.names_differ_trivially(a.alias_norm, probe.n)
             order by 2 desc, e.created_at
             limit 1;
        else
            -- the % operator, which the index serves, reads this setting
            perform set_config('pg_trgm.similarity_threshold', probe.t::text, true);
            -- One query per name, planned with its values (EXECUTE): only when the
            -- planner sees the name's trigrams does it choose the trigram index;
            -- as a join it estimates the index from nothing and scans every alias.
            execute
                'select a.entity_id, similarity(a.alias_norm, $2) as score
                   from vera.entity_aliases a
                   join vera.entities e on e.group_id = a.group_id and e.entity_id = a.entity_id
                  where a.group_id = $1 collate "C" and a.alias_norm % $2 and e.status <> ''merged''
                    and regexp_replace(a.alias_norm, ''[^0-9]+'', '' '', ''g'') = regexp_replace($2, ''[^0-9]+'', '' '', ''g'')
                    and vera.names_differ_trivially(a.alias_norm, $2)
                  order by 2 desc, e.created_at
                  limit 1'
              into best
              using probe.g, probe.n;
        end if;
        if best.entity_id is not null and best.score >= probe.t then
            ordinal := probe.o;
            entity_id := best.entity_id;
            score := best.score;
            return next;
        end if;
    end loop;
end
$$;
comment on function vera.similar_aliases(integer[], text[], text[], float8[]) is
    'Internal: the most similar alias per (group, name) by trigrams (reads past RLS, checks the groups itself)';
alter function vera.similar_aliases(integer[], text[], text[], float8[]) owner to vera_resolver;
-- vera.resolve_entities (a definer: vera_owner) calls it; vera_resolver owns it
grant execute on function vera.similar_aliases(integer[], text[], text[], float8[]) to vera_owner;

-- Internal: resolves names to entities, creating what is not found.
-- Inputs are aligned arrays, one element per (group, name); names with the
-- same normalised form in a group resolve to the same entity.
-- method: exact | fuzzy | semantic | new | provisional. candidates: for a
-- provisional entity, the judge's candidate entity ids, best first.
create or replace function vera.resolve_entities(
    groups text[], names text[], embeddings public.vector[], types text[]
)
returns table (ordinal integer, entity_id uuid, method text, candidates uuid[])
language plpgsql volatile security definer
set search_path = vera, public, pg_temp
set hnsw.ef_search = 40
set hnsw.iterative_scan = relaxed_order
-- and every planner enable_* flag on (250_pinned_settings.sql)
as $$
declare
    work vera.entity_resolution[];
    -- a transaction-local set before pg_trgm's module was loaded in this backend leaves an
    -- empty placeholder behind, which is no value to restore
    previous_threshold text := coalesce(nullif(current_setting('pg_trgm.similarity_threshold', true), ''), '0.3');
    threshold float8;
    pending vera.entity_resolution;
    mentions record;
    mention integer;
    nearest record;
    semantic_link float8;
    semantic_candidate float8;
    candidate_limit integer;
begin
    select array_agg(row(i::integer, g, btrim(n), vera.normalize_name(n), e, t, null, null, null)::vera.entity_resolution
                     order by i)
      into work
      from unnest(groups, names, embeddings, types) with ordinality as u(g, n, e, t, i);
    if work is null then
        return;
    end if;

    -- serialise resolution of the same names across transactions (1024 buckets, in order: no deadlock);
    -- taken before any history lock (vera.lock_histories); READ COMMITTED sees what the last holder created
    perform vera.require_read_committed();
    perform pg_advisory_xact_lock(b)
       from (select distinct (hashtextextended(w.group_id || '/' || w.norm, 0) & 1023) as b
               from unnest(work) w order by 1) buckets;

    -- 1. exact normalised alias (the oldest live entity wins a tie), as one join
    select array_agg(row(w.ordinal, w.group_id, w.name, w.norm, w.embedding, w.entity_type,
                         hit.entity_id, case when hit.entity_id is not null then 'exact' end, null)::vera.entity_resolution
                     order by w.ordinal)
      into work
      from unnest(work) w
      left join (
          select distinct on (a.group_id, a.alias_norm) a.group_id, a.alias_norm, a.entity_id
            from vera.entity_aliases a
            join vera.entities e on e.group_id = a.group_id and e.entity_id = a.entity_id
           where e.status <> 'merged'
             and (a.group_id, a.alias_norm) in (select u.group_id, u.norm from unnest(work) u)
           order by a.group_id, a.alias_norm, e.created_at, e.entity_id) hit
        on hit.group_id = w.group_id and hit.alias_norm = w.norm;

    -- 2. trigram similarity to known aliases, at or above the group's threshold: one probe per
    -- (group, name) however often the batch names it (a record's claims repeat their subject)
    with probed as (
        select min(u.ordinal) as ordinal, u.group_id, u.norm
          from unnest(work) u
         where u.entity_id is null and u.norm <> ''
         group by u.group_id, u.norm
    ), hit as (
        select p.group_id, p.norm, s.entity_id
          from probed p
          join vera.similar_aliases(
                  (select array_agg(p.ordinal order by p.ordinal) from probed p),
                  (select array_agg(p.group_id order by p.ordinal) from probed p),
                  (select array_agg(p.norm order by p.ordinal) from probed p),
                  -- each group's threshold, looked up once per group
                  (select array_agg(g.threshold order by p.ordinal)
                     from probed p
                     join (select d.group_id, (vera.setting(d.group_id, 'er.trigram_link'))::float8 as threshold
                             from (select distinct x.group_id from probed x) d) g on g.group_id = p.group_id)
               ) s on s.ordinal = p.ordinal
    )
    select array_agg(case when hit.entity_id is null then w
                          else row(w.ordinal, w.group_id, w.name, w.norm, w.embedding, w.entity_type,
                                   hit.entity_id, 'fuzzy', null)::vera.entity_resolution end order by w.ordinal)
      into work
      from unnest(work) w
      left join hit on w.entity_id is null and hit.group_id = w.group_id and hit.norm = w.norm;
    perform set_config('pg_trgm.similarity_threshold', previous_threshold, true);

    -- 3. name embeddings: the nearest entities of the same group and dimension. A group with
    -- an HNSW index of its names of its own (a large one) is searched through it: the group
    -- is its predicate, so only the group's names are in it. Any other group is searched
    -- exactly: "+ 0" keeps the index out, and the primary key finds the group's names.
    -- one search per (group, name, vector), its answer given to every mention of them
    for mentions in select (array_agg(w order by w.ordinal))[1] as first, array_agg(w.ordinal) as ordinals
                      from unnest(work) w
                     where w.entity_id is null and w.embedding is not null
                     group by w.group_id, w.norm, w.embedding loop
        pending := mentions.first;
        semantic_link := (vera.setting(pending.group_id, 'er.semantic_link'))::float8;
        semantic_candidate := (vera.setting(pending.group_id, 'er.semantic_candidate'))::float8;
        candidate_limit := (vera.setting(pending.group_id, 'er.candidate_limit'))::integer;
        execute format(
            -- the numbers of the nearest few only (normalising every name of the group cost ~10 ms a name)
            'select array_agg(entity_id order by distance) as ids, min(distance) as best, '
            '       (array_agg(regexp_replace(vera.normalize_name(canonical_name), ''[^0-9]+'', '' '', ''g'') '
            '                  order by distance))[1] as best_numbers '
            '  from (select e.entity_id, e.canonical_name, e.name_embedding::vector(%1$s) <=> $1::vector(%1$s) as distance '
            '          from vera.entities e '
            '         where e.group_id = %2$L and vector_dims(e.name_embedding) = %1$s and e.status <> ''merged'' '
            '         order by (e.name_embedding::vector(%1$s) <=> $1::vector(%1$s)) %3$s limit $2) nearest '
            ' where distance <= 1 - $3', public.vector_dims(pending.embedding), pending.group_id,
            case when vera.group_vector_index_ready('entities', pending.group_id, public.vector_dims(pending.embedding))
                 then '' else '+ 0, e.entity_id' end)
          into nearest
          using pending.embedding, greatest(candidate_limit, 1), semantic_candidate;
        -- numbers tell siblings apart: db-1 and db-2 embed almost alike (0.98), so two names that
        -- both carry numbers link only with the same numbers (k8s still links to Kubernetes);
        -- otherwise the judge decides
        if nearest.best is not null and 1 - nearest.best >= semantic_link
           and (nearest.best_numbers !~ '[0-9]' or pending.norm !~ '[0-9]'
                or nearest.best_numbers = regexp_replace(pending.norm, '[^0-9]+', ' ', 'g')) then
            pending.entity_id := nearest.ids[1];
            pending.method := 'semantic';
        elsif nearest.ids is not null and candidate_limit > 0 then
            pending.method := 'provisional';
            pending.candidates := nearest.ids[1:candidate_limit];
        end if;
        foreach mention in array mentions.ordinals loop
            work[mention].entity_id := pending.entity_id;
            work[mention].method := pending.method;
            work[mention].candidates := pending.candidates;
        end loop;
    end loop;

    -- 4. the rest are new entities, one per (group, normalised name)
    with created as (
        insert into vera.entities (group_id, canonical_name, entity_type, status, name_embedding)
        select distinct on (w.group_id, w.norm) w.group_id, w.name, w.entity_type,
               case when w.method = 'provisional' then 'provisional' else 'active' end, w.embedding
          from unnest(work) w
         where w.entity_id is null
         order by w.group_id, w.norm, w.ordinal
        returning vera.entities.group_id, vera.entities.entity_id, vera.normalize_name(canonical_name) as norm
    )
    select array_agg(case when w.entity_id is null
                          then row(w.ordinal, w.group_id, w.name, w.norm, w.embedding, w.entity_type,
                                   c.entity_id, coalesce(w.method, 'new'), w.candidates)::vera.entity_resolution
                          else w end order by w.ordinal)
      into work
      from unnest(work) w
      left join created c on w.entity_id is null and c.group_id = w.group_id and c.norm = w.norm;

    -- every surface form becomes an alias of the entity it resolved to
    insert into vera.entity_aliases (group_id, entity_id, alias, alias_norm)
    select distinct on (w.group_id, w.entity_id, w.norm) w.group_id, w.entity_id, w.name, w.norm
      from unnest(work) w
     where w.norm <> ''
    on conflict do nothing;

    return query select w.ordinal, w.entity_id, w.method, w.candidates from unnest(work) w order by w.ordinal;
end
$$;
comment on function vera.resolve_entities(text[], text[], public.vector[], text[]) is
    'Internal: resolves names to entities (exact, fuzzy, semantic), creating the rest';

reset role;
