-- The passages' full-text index (chunks_group_lexemes_idx, migration 0021)
-- and how the lexical half reads it: the keys of a passage, the tsqueries
-- over them, and the shortest passages holding a frequent word
-- (vera.lexical_candidates, 177_lexical_candidates.sql, calls both).
set role vera_owner;

-- Internal: the length band of a passage of this many words (BM25's length,
-- vera.chunks.words): four bands to each doubling of the length (a band
-- spans about a fifth more words than the one before). Never decreasing as
-- the words grow, so that every passage of a lower band is shorter than
-- every passage of a higher one. The same expression as the index's.
create or replace function vera.passage_length_band(words integer)
returns integer
language sql immutable parallel safe
as $$ select floor(4 * ln(greatest(words, 1)::float8) / ln(2::float8))::integer $$;
comment on function vera.passage_length_band(integer) is
    'Internal: the length band of a passage of this many words (four to each doubling), as its index keys it';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.passage_length_band(integer) to vera_searcher;

-- Internal: a passage's keys in the passages' full-text index: each of its
-- words keyed by its group, "<group_id> <lexeme>", and its length band,
-- "<group_id> length <band>" (vera.passage_length_band; no lexeme holds a
-- space, so no word's key has three parts). The first keys give one
-- posting list per group and word, so that a round reads only the searched
-- groups' postings (keyed by the word alone, the index held one list per
-- word for every tenant: at 1,000,000 passages a word that a fiftieth of a
-- tenant's passages hold is held by 20,000 across the tenants, and GIN
-- walked them all to find the tenant's 2,000); the band lets a round that
-- scores only the shortest passages holding a frequent word read those
-- alone (vera.shortest_passages). The same expression as the index's once
-- vera.group_keyed_words (170_ranking.sql) and vera.passage_length_band
-- are inlined too: plain SQL functions, which the planner inlines into the
-- round's statement, where it then matches the index. A passage
-- without words has no keys.
create or replace function vera.passage_lexemes(group_id text, words integer, tsv tsvector)
returns tsvector
language sql immutable parallel safe
as $$
    select case when tsv = ''::tsvector then tsv
                else (vera.group_keyed_words(group_id, tsv)
                      || ' ''' || group_id || ' length ' || vera.passage_length_band(words)::text || '''')::tsvector
           end
$$;
comment on function vera.passage_lexemes(text, integer, tsvector) is
    'Internal: a passage''s keys in the passages'' full-text index: "<group_id> <lexeme>" and "<group_id> length <band>"';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.passage_lexemes(text, integer, tsvector) to vera_searcher;

-- Internal: the tsquery over vera.passage_lexemes matching a passage of one
-- of the groups that holds one of the lexemes, one of and_any when that
-- names some, none of none_of, and whose length band lies between
-- first_band and last_band when those are given; null when lexemes or
-- groups are empty. A passage's keys all name its one group, so each
-- group's conditions are one conjunction and the groups' are joined by OR.
create or replace function vera.passage_lexeme_query(groups text[], lexemes text[], and_any text[] default null,
                                                     none_of text[] default null, first_band integer default null,
                                                     last_band integer default null)
returns tsquery
language sql immutable
as $$
    select nullif(pg_catalog.array_to_string(array(
               select '(' || (select pg_catalog.string_agg(pg_catalog.quote_literal(g || ' ' || l), ' | ')
                                from pg_catalog.unnest(lexemes) l where pg_catalog.btrim(l) <> '') || ')'
                      || coalesce(' & (' || (select pg_catalog.string_agg(pg_catalog.quote_literal(g || ' ' || l), ' | ')
                                               from pg_catalog.unnest(and_any) l where pg_catalog.btrim(l) <> '') || ')', '')
                      || coalesce(' & !(' || (select pg_catalog.string_agg(pg_catalog.quote_literal(g || ' ' || l), ' | ')
                                                from pg_catalog.unnest(none_of) l where pg_catalog.btrim(l) <> '') || ')', '')
                      || coalesce(' & (' || (select pg_catalog.string_agg(pg_catalog.quote_literal(g || ' length ' || b), ' | ')
                                               from pg_catalog.generate_series(first_band, last_band) b) || ')', '')
                 from pg_catalog.unnest(groups) g), ' | '), '')::tsquery
$$;
comment on function vera.passage_lexeme_query(text[], text[], text[], text[], integer, integer) is
    'Internal: tsquery over vera.passage_lexemes: in one of the groups, any of the lexemes, any of and_any, none of none_of, in the length bands';
-- the candidate stages, which run as vera_searcher, call it
grant execute on function vera.passage_lexeme_query(text[], text[], text[], text[], integer, integer) to vera_searcher;

-- Internal: the rows of the `wanted` shortest passages (fewest words, then
-- by id) of the groups that answer a round's piece (lexemes, and_any and
-- none_of as vera.passage_lexeme_query takes them; published, or proposed
-- by the caller), for a round that scores only those
-- (vera.lexical_candidates). Reading every passage holding a frequent word
-- to sort them by length read ~2,000 rows at 1,000,000 passages; this reads
-- them by length band instead, shortest first (half the average length and
-- below, then two bands more, then four, ...), until the bands read hold
-- the wanted number: every passage of a band not read is longer than all
-- those read, so the shortest are among them, the same rows as the sort of
-- all. Returns their row addresses (ctid), which hold still for the caller's
-- snapshot (a stable function: one snapshot for all its statements).
create or replace function vera.shortest_passages(groups text[], lexemes text[], and_any text[], none_of text[],
                                                  caller uuid, wanted integer, average_length double precision)
returns tid[]
language plpgsql stable
set search_path = vera, public, pg_temp
as $$
declare
    -- a passage of 2^31 - 1 words lies in this band
    last_possible constant integer := vera.passage_length_band(2147483647);
    first_band integer := 0;
    last_band integer := vera.passage_length_band((average_length / 2)::integer);
    width integer := 2;
    rows_found tid[] := '{}';
    lengths integer[] := '{}';
    ids uuid[] := '{}';
    band_rows tid[];
    band_lengths integer[];
    band_ids uuid[];
    -- the piece's passages in the bands being read
    reading tsquery;
begin
    if coalesce(wanted, 0) <= 0 then
        return '{}';
    end if;
    loop
        reading := vera.passage_lexeme_query(groups, lexemes, and_any, none_of, first_band, last_band);
        -- the groups again (reading names them), as a filter
        select array_agg(c.ctid), array_agg(c.words), array_agg(c.chunk_id)
          into band_rows, band_lengths, band_ids
          from vera.chunks c
         where vera.passage_lexemes(c.group_id, c.words, c.tsv) @@ reading
           and c.group_id = any (groups)
           and (c.lifecycle = 'published' or (c.lifecycle = 'proposal' and c.proposed_by = caller));
        rows_found := rows_found || coalesce(band_rows, '{}');
        lengths := lengths || coalesce(band_lengths, '{}');
        ids := ids || coalesce(band_ids, '{}');
        exit when cardinality(rows_found) >= wanted or last_band >= last_possible;
        first_band := last_band + 1;
        last_band := least(last_band + width, last_possible);
        width := width * 2;
    end loop;
    return array(select r.row_address
                   from unnest(rows_found, lengths, ids) r(row_address, words, chunk_id)
                  order by r.words, r.chunk_id
                  limit wanted);
end
$$;
comment on function vera.shortest_passages(text[], text[], text[], text[], uuid, integer, double precision) is
    'Internal: the row addresses of the shortest passages answering a lexical round''s piece, read by length band';
alter function vera.shortest_passages(text[], text[], text[], text[], uuid, integer, double precision)
    owner to vera_searcher;

reset role;
