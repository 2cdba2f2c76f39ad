"""Read-path latency against the PostgreSQL floor, in one run.

Builds (once per size; reused on later runs) a database of synthetic facts in
10 tenants with a Zipf-like vocabulary (a shared part and a part of each
tenant's own) and 384-dimension embeddings that follow the words (each word
has a random direction; a fact's vector is the normalised sum of its words').
Then, for a few hundred queries drawn from one tenant's facts, measures:

- vera.search (k = 10) as that tenant's owner: RLS, tenant and valid-time
  filters, both halves, fusion and the blend;
- the floor: a bare HNSW top-N query plus a bare GIN full-text top-N query on
  the same table, as a superuser, with no filter at all;
- recall@10 of vera.search's vector half against exact search over the rows
  the tenant may see;
- the same for a few settings of the knobs (ef_search, candidates N).

    .venv/bin/python benchmarks/search_latency.py [--facts 100000] [--queries 300] \\
        [--settings 40:default,20:default,40:40,100:default,100:200] [--during] \\
        [--shared-buffers 6GB]

--during also times each query with `during => DURING` (the period signal,
docs/time.md), interleaved with the same query without it.

--shared-buffers sets the server's shared_buffers (ALTER SYSTEM, kept by the
bench server until changed again; `default` resets it to PostgreSQL's 128 MB),
restarts it and loads the facts table and tenant 0's indexes into the buffers
(pg_prewarm), as a server that has run a while holds its working set: at
1,000,000 facts the table is 2.6 GB, and PostgreSQL's own guidance for a
dedicated server is a quarter of its memory (6 GB on this 24 GiB machine).
With --passages, the same for vera.chunks, its indexes of search, tenant 0's
HNSW index of passages and vera.episodes (PREWARM).
"""

from __future__ import annotations

import argparse
import io
import itertools
import random
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import psycopg
import psycopg.errors
import psycopg.sql

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Bench, cpu_reference, peak_server_memory, start

DIM = 384
TENANTS = 10
SHARED_WORDS = 3000
OWN_WORDS = 1500
SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ze", "qu", "ba", "do", "fe", "gi", "hu", "ja"]


# The head of a natural language's Zipf curve is its function words: the most
# frequent shared "words" are real English stopwords, which BM25 weighs next
# to nothing and whose postings the lexical half reads only when they could
# still change the top (no stopword list since vera-search/4).
HEAD = [
    "the", "of", "and", "to", "in", "is", "for", "on", "with", "as", "by", "at", "from", "that", "this",
    "it", "be", "are", "was", "or", "an", "a", "has", "have", "will", "can", "into", "their", "than", "its",
]  # fmt: skip


def word(index: int) -> str:
    """A stopword for the most frequent indexes, then a pronounceable pseudo-word (base-16 syllables)."""
    if index < len(HEAD):
        return HEAD[index]
    parts = []
    index += 16
    while index:
        index, digit = divmod(index, 16)
        parts.append(SYLLABLES[digit])
    return "".join(parts)


def zipf_weights(count: int, exponent: float = 1.07) -> list[float]:
    return [1 / (rank**exponent) for rank in range(1, count + 1)]


@dataclass
class Corpus:
    groups: list[str]
    keys: list[str]


def create_tenants(conn: psycopg.Connection) -> Corpus:
    """Ten tenants pinned to the synthetic embedder, each with entities and predicates."""
    groups, keys = [], []
    for tenant in range(TENANTS):
        row = conn.execute(
            "select * from vera.create_tenant(%s, 'Bench Owner')", (f"Tenant {tenant}",)
        ).fetchone()
        assert row is not None
        groups.append(row[0])
        keys.append(row[2])
    conn.execute("create table public.bench_corpus (position int, group_id text, api_key text)")
    for position, (group, key) in enumerate(zip(groups, keys, strict=True)):
        conn.execute("insert into public.bench_corpus values (%s, %s, %s)", (position, group, key))
    conn.execute(
        "update vera.groups set embedding_model = 'bench-words', embedding_dim = %s where group_id = any(%s)",
        (DIM, groups),
    )
    for group in groups:
        conn.execute(
            "insert into vera.predicates (group_id, name, cardinality) "
            "select %s, p, 'multi' from unnest(array['RUNS_ON','OWNED_BY','DEPENDS_ON','NOTE']) p",
            (group,),
        )
        conn.execute(
            "insert into vera.entities (group_id, canonical_name) "
            "select %s, 'service-' || i from generate_series(0, 999) i",
            (group,),
        )
    return Corpus(groups, keys)


def create_words(conn: psycopg.Connection) -> None:
    """One random direction per word: words 0..SHARED-1 shared, then each tenant's own."""
    conn.execute(f"create unlogged table public.bench_words (word_id int primary key, v vector({DIM}))")
    conn.execute(
        f"insert into public.bench_words select i, (select array_agg(random() - 0.5) "
        f"from generate_series(1, {DIM}) d where i > -d)::vector from generate_series(0, %s) i",
        (SHARED_WORDS + TENANTS * OWN_WORDS - 1,),
    )


def stage_facts(conn: psycopg.Connection, corpus: Corpus, per_tenant: int) -> None:
    """Synthetic facts: 5-12 Zipf-drawn words, two thirds shared, one third the tenant's own;
    10% superseded and 5% pending review, so that the valid-time filter has work."""
    rng = random.Random(7)
    shared, own = zipf_weights(SHARED_WORDS), zipf_weights(OWN_WORDS)
    predicates = ["RUNS_ON", "OWNED_BY", "DEPENDS_ON", "NOTE"]
    conn.execute(
        "create unlogged table public.bench_staging (group_id text, subject int, predicate text, "
        "fact_text text, words int[], lifecycle vera.fact_lifecycle, valid_from timestamptz, "
        "valid_to timestamptz)"
    )
    for tenant, group in enumerate(corpus.groups):
        buffer = io.StringIO()
        for _ in range(per_tenant):
            count = rng.randint(5, 12)
            own_words = rng.choices(range(OWN_WORDS), weights=own, k=count // 3)
            picks = rng.choices(range(SHARED_WORDS), weights=shared, k=count - count // 3) + [
                SHARED_WORDS + tenant * OWN_WORDS + i for i in own_words
            ]
            subject, predicate = rng.randrange(1000), rng.choice(predicates)
            text = f"service-{subject} {predicate.lower().replace('_', ' ')} " + " ".join(
                word(p) for p in picks
            )
            roll = rng.random()
            lifecycle, valid_to = "published", "\\N"
            if roll < 0.10:
                lifecycle, valid_to = "superseded", "2026-06-01"
            elif roll < 0.15:
                lifecycle = "pending_review"
            buffer.write(
                f"{group}\t{subject}\t{predicate}\t{text}\t{{{','.join(map(str, picks))}}}\t{lifecycle}\t"
                f"2026-0{rng.randint(1, 5)}-01\t{valid_to}\n"
            )
        with conn.cursor().copy("copy public.bench_staging from stdin") as copy:
            copy.write(buffer.getvalue())


def load_facts(conn: psycopg.Connection) -> None:
    """Staged facts into vera.facts; a fact's vector is the normalised sum of its words' directions."""
    conn.execute(
        """
        insert into vera.facts (group_id, subject_entity_id, predicate, object_value, fact_text, embedding,
                                tier, authority, verification, confidence, lifecycle, valid_from, valid_to)
        select s.group_id, e.entity_id, s.predicate, 'x', s.fact_text,
               (select l2_normalize(sum(w.v))
                  from unnest(s.words) u join public.bench_words w on w.word_id = u),
               1 + (s.subject % 3), 1.0 - 0.15 * (s.subject % 3), 'auto', 0.5 + (s.subject % 5) / 10.0,
               s.lifecycle, s.valid_from, s.valid_to
          from public.bench_staging s
          join vera.entities e on e.group_id = s.group_id and e.canonical_name = 'service-' || s.subject
        """
    )


def build_indexes(conn: psycopg.Connection) -> None:
    started = time.perf_counter()
    # what `vera db maintain` does: each large group gets an HNSW index of its own
    for (statements,) in conn.execute("select statements from vera.missing_vector_indexes()").fetchall():
        for statement in statements:
            conn.execute(statement)
    built = time.perf_counter()
    print(f"per-group HNSW indexes built in {built - started:.0f} s", flush=True)
    # the floor's indexes, as a bare installation has them: one HNSW and one
    # GIN index over every tenant's rows
    conn.execute(
        f"create index facts_floor_hnsw_idx on vera.facts using hnsw ((embedding::vector({DIM})) "
        f"vector_cosine_ops) where vector_dims(embedding) = {DIM}"
    )
    conn.execute("create index facts_floor_tsv_idx on vera.facts using gin (tsv)")
    floor_tenant_index(conn)
    conn.execute("vacuum analyze vera.facts")
    print(f"floor HNSW and GIN indexes built in {time.perf_counter() - built:.0f} s", flush=True)


def floor_tenant_index(conn: psycopg.Connection) -> None:
    """The tenant-filtered floor's full-text index, (group_id, tsv) as VERA's own was until migration
    0004 (now keyed by group and word, an expression a bare query does not use): built here if a
    database of an earlier run lacks it."""
    if conn.execute("select to_regclass('vera.facts_floor_group_tsv_idx')").fetchone() == (None,):
        conn.execute("set maintenance_work_mem = '1GB'")
        conn.execute("create index facts_floor_group_tsv_idx on vera.facts using gin (group_id, tsv)")
        conn.execute("analyze vera.facts")


def build(facts: int, rebuild: bool) -> tuple[Bench, Corpus, float]:
    """The database of this size, built unless a previous run left it (or rebuild)."""
    bench = start(f"vera_bench_search_{facts}", fresh=rebuild)
    with bench.admin() as conn:
        if conn.execute("select to_regclass('public.bench_corpus')").fetchone() != (None,):
            rows = conn.execute(
                "select group_id, api_key from public.bench_corpus order by position"
            ).fetchall()
            floor_tenant_index(conn)
            return bench, Corpus([r[0] for r in rows], [r[1] for r in rows]), 0.0
    started = time.perf_counter()
    with bench.admin() as conn:
        conn.execute("set maintenance_work_mem = '2GB'")
        conn.execute("set max_parallel_maintenance_workers = 2")
        corpus = create_tenants(conn)
        create_words(conn)
        stage_facts(conn, corpus, facts // TENANTS)
        load_facts(conn)
        print(f"loaded {facts:,} facts in {time.perf_counter() - started:.0f} s", flush=True)
        build_indexes(conn)
    return bench, corpus, time.perf_counter() - started


# what a search of tenant 0 reads, loaded into the buffers by size_buffers: each table's heap and the
# indexes of its kind's search (and tenant 0's own HNSW index of the table, vera.group_vector_index_name)
PREWARM = {
    "facts": ("facts", "facts_pkey", "facts_group_lexemes_idx"),
    # a passage's episode is joined for its status and source
    "chunks": ("chunks", "chunks_pkey", "chunks_group_lexemes_idx", "episodes", "episodes_pkey",
               "episodes_record_hash_idx", "episodes_version_unique"),
}  # fmt: skip


def size_buffers(bench: Bench, corpus: Corpus, size: str, table: str = "facts") -> None:
    """shared_buffers set to size (or reset) and the server restarted; then the table (facts or chunks)
    and the indexes tenant 0's searches read (PREWARM) are loaded into the buffers."""
    with bench.admin() as conn:
        if size == "default":
            conn.execute("alter system reset shared_buffers")
        else:
            try:
                conn.execute(
                    psycopg.sql.SQL("alter system set shared_buffers = {}").format(psycopg.sql.Literal(size))
                )
            except psycopg.errors.InvalidParameterValue as error:
                # nothing was written: the server keeps its setting
                raise SystemExit(f"--shared-buffers {size!r}: {error.diag.message_primary}") from None
    bench.server.stop()
    bench.server.start()
    with bench.admin() as conn:
        conn.execute("create extension if not exists pg_prewarm")
        started = time.perf_counter()
        rows = conn.execute(
            "select c.relname, public.pg_prewarm(c.oid) from pg_class c"
            " join pg_namespace n on n.oid = c.relnamespace where n.nspname = 'vera'"
            " and (c.relname = any(%s) or c.relname = vera.group_vector_index_name(%s, %s, %s))"
            " order by c.relname",
            (list(PREWARM[table]), table, corpus.groups[0], DIM),
        ).fetchall()
        toast = prewarm_toast(conn, table, corpus.groups[0])
        print(f"shared_buffers {conn.execute('show shared_buffers').fetchone()[0]}; "  # type: ignore[index]
              f"prewarmed {sum(r[1] for r in rows):,} pages of {len(rows)} relations "
              f"({', '.join(r[0] for r in rows)}) and {toast:,} pages of tenant 0's TOAST "
              f"in {time.perf_counter() - started:.0f} s")  # fmt: skip


def prewarm_toast(conn: psycopg.Connection, table: str, group: str) -> int:
    """The pages of the table's TOAST that hold the group's values stored out of line (a passage's
    embedding and long text: most of vera.chunks' bytes) loaded into the buffers; the number of pages.
    Only the group's: at 1,000,000 passages the whole TOAST (3.6 GB) would crowd out the rest."""
    row = conn.execute(
        "select t.oid::regclass::text, array_agg(a.attname::text) from pg_class c"
        " join pg_class t on t.oid = c.reltoastrelid"
        " join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped"
        " and a.attstorage <> 'p' where c.oid = %s::regclass group by t.oid",
        (f"vera.{table}",),
    ).fetchone()
    if row is None:
        return 0
    toast, columns = row
    values = psycopg.sql.SQL(" union all ").join(
        psycopg.sql.SQL("select pg_column_toast_chunk_id({}) from vera.{} where group_id = %(group)s").format(
            psycopg.sql.Identifier(column), psycopg.sql.Identifier(table)
        )
        for column in columns
    )
    query = psycopg.sql.SQL(
        "select coalesce(sum(public.pg_prewarm(%(toast)s::regclass, 'buffer', 'main', b.block, b.block)), 0)"
        " from (select distinct (t.ctid::text::point)[0]::bigint as block from {} t"
        " where t.chunk_id in ({})) b"
    ).format(psycopg.sql.SQL(toast), values)
    return int(conn.execute(query, {"toast": toast, "group": group}).fetchone()[0])  # type: ignore[index]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def timed(
    conn: psycopg.Connection, sql: str, params: tuple[object, ...]
) -> tuple[float, list[tuple[object, ...]]]:
    started = time.perf_counter()
    rows = conn.execute(sql, params).fetchall()
    return (time.perf_counter() - started) * 1000, rows


SEARCH = "select item_id from vera.search(%s, %s::vector, 10, candidates => %s, ef_search => %s)"
# The synthetic facts are valid from the first of a month of 2026-01..05 (superseded ones, never
# visible now, until 2026-06): this period overlaps the validity of the fifth valid from 2026-01-01.
DURING = "[2025-07-01, 2026-02-01)"
SEARCH_DURING = (
    "select item_id from vera.search(%s, %s::vector, 10, candidates => %s, ef_search => %s,"
    f" during => '{DURING}'::tstzrange)"
)
# the lexical half on its own: the query text, no embedding
LEXICAL_HALF = (
    "select item_id from vera.search(%s, null, 10, candidates => %s, weights => '{\"relevance\": 1}')"
)
VECTOR_HALF = (
    "select item_id from vera.search(null, %s::vector, 10, candidates => %s, ef_search => %s,"
    " weights => '{\"relevance\": 1}')"
)
FLOOR_HNSW = (
    f"select fact_id from vera.facts where vector_dims(embedding) = {DIM}"
    f" order by embedding::vector({DIM}) <=> %s::vector limit %s"
)
# The floor's full text drops the function words (HEAD) as a bare installation
# must: without them an OR query of "the" ranks every row of the table.
FLOOR_FTS = (
    "select fact_id from vera.facts where tsv @@ %s::tsquery order by ts_rank(tsv, %s::tsquery) desc limit %s"
)
# the same two queries restricted to the tenant's group (HNSW with pgvector's
# iterative scan, so that the filter does not starve it): what any tenant-aware
# application would run at the very least
TENANT_HNSW = (
    f"select fact_id from vera.facts where vector_dims(embedding) = {DIM} and group_id = %s"
    f" order by embedding::vector({DIM}) <=> %s::vector limit %s"
)
TENANT_FTS = (
    "select fact_id from vera.facts where tsv @@ %s::tsquery and group_id = %s"
    " order by ts_rank(tsv, %s::tsquery) desc limit %s"
)


def floor_query(text: str) -> str:
    """The floor's OR query: the query's words but the function words (only those: a word no row holds)."""
    return " | ".join(f"'{w}'" for w in text.split() if w not in HEAD) or "'no-word-left'"


EXACT = (
    f"select fact_id from vera.facts f where f.group_id = %s and vector_dims(f.embedding) = {DIM}"
    " and vera.fact_visible(f.lifecycle, f.group_id, f.retired_at, f.valid_from, f.valid_to, now(), null)"
    f" order by f.embedding::vector({DIM}) <=> %s::vector limit 10"
)


def make_queries(bench: Bench, corpus: Corpus, count: int) -> list[tuple[str, str]]:
    """Query text: 2-4 words of a random fact of tenant 0; its embedding: the
    normalised sum of those words' directions."""
    rng = random.Random(11)
    with bench.admin() as conn:
        # the first 5,000 rows in the table's order on every run: a synchronised scan of a large
        # table would start where another scan left off, and draw other queries
        conn.execute("set synchronize_seqscans = off")
        facts = conn.execute(
            "select words from public.bench_staging where group_id = %s limit 5000", (corpus.groups[0],)
        ).fetchall()
        queries = []
        for _ in range(count):
            words = rng.choice(facts)[0]
            picked = rng.sample(words, min(len(words), rng.randint(2, 4)))
            vector = conn.execute(
                "select l2_normalize(sum(v))::text from public.bench_words where word_id = any(%s)", (picked,)
            ).fetchone()[0]  # type: ignore[index]
            queries.append((" ".join(word(p) for p in picked), vector))
    return queries


def measure(
    bench: Bench,
    corpus: Corpus,
    queries: list[tuple[str, str]],
    candidates: int,
    ef_search: int | None,
    *,
    during: bool,
    sql: dict[str, str] | None = None,
) -> dict[str, float]:
    """The latencies of vera.search, its lexical half and the floors, and the vector half's recall@10;
    sql: the floor and exact queries of another table than the facts' (PASSAGE_QUERIES)."""
    floor_hnsw, floor_fts, tenant_hnsw, tenant_fts, exact_sql = (
        (FLOOR_HNSW, FLOOR_FTS, TENANT_HNSW, TENANT_FTS, EXACT)
        if sql is None
        else (sql["floor_hnsw"], sql["floor_fts"], sql["tenant_hnsw"], sql["tenant_fts"], sql["exact"])
    )
    search_ms, lexical_ms, hnsw_ms, fts_ms, floor_ms, tenant_ms, recalls = [], [], [], [], [], [], []
    during_ms: list[float] = []
    group = corpus.groups[0]
    with psycopg.connect(bench.server.app_url(bench.database)) as app, bench.admin() as admin:
        app.execute("select vera.authenticate(%s)", (corpus.keys[0],))
        admin.execute("set hnsw.ef_search = 40")
        admin.execute("set hnsw.iterative_scan = relaxed_order")
        for text, vector in queries[:20]:  # warm the caches
            timed(app, SEARCH, (text, vector, candidates, ef_search))
            timed(admin, floor_hnsw, (vector, candidates))
        for text, vector in queries:
            # 4: the same search with a period (--during), beside it in random order like the rest
            order = [0, 1, 2, 3, 4] if during else [0, 1, 2, 3]
            random.shuffle(order)
            for which in order:
                if which == 0:
                    elapsed, _ = timed(app, SEARCH, (text, vector, candidates, ef_search))
                    search_ms.append(elapsed)
                elif which == 3:
                    elapsed, _ = timed(app, LEXICAL_HALF, (text, candidates))
                    lexical_ms.append(elapsed)
                elif which == 4:
                    elapsed, _ = timed(app, SEARCH_DURING, (text, vector, candidates, ef_search))
                    during_ms.append(elapsed)
                elif which == 2:
                    hnsw, _ = timed(admin, tenant_hnsw, (group, vector, candidates))
                    fts, _ = timed(
                        admin, tenant_fts, (floor_query(text), group, floor_query(text), candidates)
                    )
                    tenant_ms.append(hnsw + fts)
                else:
                    hnsw, _ = timed(admin, floor_hnsw, (vector, candidates))
                    fts, _ = timed(admin, floor_fts, (floor_query(text), floor_query(text), candidates))
                    hnsw_ms.append(hnsw)
                    fts_ms.append(fts)
                    floor_ms.append(hnsw + fts)
        admin.execute("set enable_indexscan = off")
        admin.execute("set enable_bitmapscan = off")
        for _, vector in queries[:100]:
            _, got = timed(app, VECTOR_HALF, (vector, candidates, ef_search))
            _, exact = timed(admin, exact_sql, (corpus.groups[0], vector))
            expected = {row[0] for row in exact}
            recalls.append(len(expected & {row[0] for row in got}) / max(1, len(expected)))
        app.rollback()
    return {
        "search_p50": statistics.median(search_ms),
        "search_p95": percentile(search_ms, 0.95),
        "lexical_p50": statistics.median(lexical_ms),
        "lexical_p95": percentile(lexical_ms, 0.95),
        "hnsw_p50": statistics.median(hnsw_ms),
        "fts_p50": statistics.median(fts_ms),
        "floor_p50": statistics.median(floor_ms),
        "floor_p95": percentile(floor_ms, 0.95),
        "tenant_p50": statistics.median(tenant_ms),
        "tenant_p95": percentile(tenant_ms, 0.95),
        "recall": statistics.mean(recalls),
        "during_p50": statistics.median(during_ms) if during_ms else float("nan"),
        "during_p95": percentile(during_ms, 0.95) if during_ms else float("nan"),
    }


# --- passages (issue 31) ---------------------------------------------------------------------------

# Vietnamese words: syllables of onsets, vowels with their tones and codas, as the language writes
# them (diacritics kept: the 'simple' configuration matches them by exact form).
VI_ONSETS = ["", "b", "c", "ch", "d", "đ", "g", "h", "kh", "l", "m", "n", "ng", "nh", "ph", "qu", "s", "t",
             "th", "tr", "v", "x"]  # fmt: skip
VI_VOWELS = ["a", "á", "à", "ả", "ã", "ạ", "ă", "ắ", "â", "ấ", "ầ", "e", "é", "ê", "ế", "ề", "i", "í", "o",
             "ó", "ô", "ố", "ơ", "ớ", "u", "ú", "ư", "ứ", "y"]  # fmt: skip
VI_CODAS = ["", "", "n", "ng", "nh", "m", "c", "t", "p", "i"]
VI_WORDS = 2000
VIETNAMESE_SHARE = 0.2
PASSAGES_PER_EPISODE = 4


def vi_word(index: int) -> str:
    """A Vietnamese syllable: onset, vowel with tone, coda (index spread over the three)."""
    index, onset = divmod(index * 7919 % (len(VI_ONSETS) * len(VI_VOWELS) * len(VI_CODAS)), len(VI_ONSETS))
    coda, vowel = divmod(index, len(VI_VOWELS))
    return VI_ONSETS[onset] + VI_VOWELS[vowel] + VI_CODAS[coda]


def passage_vocabulary() -> list[str]:
    """Word ids: the shared words, then the Vietnamese ones, then each tenant's own."""
    shared = [word(i) for i in range(SHARED_WORDS)]
    seen = set(shared)
    vietnamese = []
    i = 0
    while len(vietnamese) < VI_WORDS:
        w = vi_word(i)
        i += 1
        if w not in seen:
            seen.add(w)
            vietnamese.append(w)
    own = [f"{word(SHARED_WORDS + i)}{tenant}" for tenant in range(TENANTS) for i in range(OWN_WORDS)]
    return shared + vietnamese + own


# Topics a tenant's passages are about, each a random direction: a passage's vector is mostly its
# topic's, as a sentence embedder places pages on one subject near each other.
TOPICS = 200
# the weight of a passage's (or query's) own words beside its topic's direction (both unit length)
WORDS_WEIGHT = 0.7


def word_directions(conn: psycopg.Connection, words: int) -> np.ndarray:
    """public.bench_words' random directions, a row per word id."""
    directions = np.zeros((words, DIM), dtype=np.float32)
    for word_id, text in conn.execute("select word_id, v::text from public.bench_words order by word_id"):
        directions[word_id] = np.array(text.strip("[]").split(","), dtype=np.float32)
    return directions


def topic_directions() -> np.ndarray:
    """Every tenant's TOPICS random unit directions (seeded: the same on every run)."""
    topics = np.random.default_rng(17).standard_normal((TENANTS * TOPICS, DIM)).astype(np.float32)
    return topics / np.linalg.norm(topics, axis=1, keepdims=True)


def passage_vector(
    topic: np.ndarray, directions: np.ndarray, picks: list[int], vocabulary: list[str]
) -> np.ndarray:
    """A passage's (or a question's) vector: its topic's direction plus WORDS_WEIGHT times the
    normalised sum of its distinct content words' directions (the function words, HEAD, left out),
    normalised. Before, a passage's vector was the sum of its 50-300 words' directions, as a fact's
    is of its 5-12: every passage then lay near the sum of the common words (two passages at cosine
    0.78 on average, a passage's nearest at 0.90; now 0.06 and 0.75), and HNSW's recall@10 of the
    tenant's passages was 0.57; an embedding model does not do that (it weighs content words, and
    pages on one subject cluster)."""
    content = sorted({p for p in picks if vocabulary[p] not in HEAD_SET})
    words = directions[content].sum(axis=0) if content else np.zeros(DIM, dtype=np.float32)
    return blend(topic, words)


def blend(topic: np.ndarray, words: np.ndarray) -> np.ndarray:
    """passage_vector's last step: the words' sum normalised, WORDS_WEIGHT of it beside the topic's
    direction, normalised (float32 throughout)."""
    words /= float(np.linalg.norm(words)) or 1.0
    vector = topic + WORDS_WEIGHT * words
    return vector / (float(np.linalg.norm(vector)) or 1.0)


HEAD_SET = frozenset(HEAD)


def passage_vectors(
    topics: np.ndarray, directions: np.ndarray, passages: list[list[int]], head: np.ndarray
) -> np.ndarray:
    """passage_vector of many passages at once, bit for bit (topics: a row per passage; head: whether
    a word id is a function word). Each sum adds the passage's distinct content words in increasing id
    order, one float32 addition at a time, as numpy's sum over the rows of directions[content] does:
    the passages, longest first, take their j-th word's direction together."""
    contents = []
    for picks in passages:
        unique = np.unique(np.asarray(picks, dtype=np.intp))
        contents.append(unique[~head[unique]])
    lengths = np.array([len(c) for c in contents], dtype=np.intp)
    order = np.argsort(-lengths, kind="stable")
    longest = int(lengths.max(initial=0))
    ids = np.zeros((len(passages), longest), dtype=np.intp)
    for row, index in enumerate(order.tolist()):
        ids[row, : lengths[index]] = contents[index]
    ordered = lengths[order]
    sums = np.zeros((len(passages), DIM), dtype=np.float32)
    for j in range(longest):
        active = int(np.count_nonzero(ordered > j))
        sums[:active] += directions[ids[:active, j]]
    words = np.empty_like(sums)
    words[order] = sums
    return np.stack([blend(topics[i], words[i]) for i in range(len(passages))])


# an embedding's components as text with four decimals, as f"{x:.4f}" writes them: x * 10,000 is exact in
# float64 for a float32 x (24 + 14 bits), and rint rounds half to even as Python's formatting does
FOUR_DECIMALS = [f"{k / 10000:.4f}" for k in range(-10000, 10001)] + ["-0.0000"]


def embedding_texts(vectors: np.ndarray) -> list[str]:
    """Each row of vectors as pgvector text, "[" + ",".join(f"{x:.4f}" for x in row) + "]"."""
    scaled = np.rint(vectors.astype(np.float64) * 10000.0).astype(np.intp) + 10000
    scaled[(scaled == 10000) & np.signbit(vectors)] = 20001
    if scaled.min(initial=0) < 0 or scaled.max(initial=0) > 20001:
        raise ValueError("an embedding component outside [-1, 1]")
    table = FOUR_DECIMALS
    return ["[" + ",".join([table[k] for k in row]) + "]" for row in scaled.tolist()]


def drawn(random_: Callable[[], float], cumulative: np.ndarray, total: float, k: int) -> np.ndarray:
    """rng.choices(range(n), cum_weights=cum, k=k) as an array, the same draws: k calls of
    rng.random(), each bisected right into cum[:-1] (cumulative) after the multiplication by
    total = cum[-1] + 0.0, as random.Random.choices does."""
    return np.searchsorted(cumulative, np.array([random_() for _ in range(k)]) * total, side="right")


def shuffled(rng: random.Random, x: list[int]) -> None:
    """rng.shuffle(x), the same swaps from the same draws (CPython's Random.shuffle with its
    _randbelow_with_getrandbits inline: twice as fast)."""
    getrandbits = rng.getrandbits
    for i in range(len(x) - 1, 0, -1):
        n = i + 1
        k = n.bit_length()
        j = getrandbits(k)
        while j >= n:
            j = getrandbits(k)
        x[i], x[j] = x[j], x[i]


STAGING_BATCH = 2_000


def stage_passages(
    conn: psycopg.Connection, corpus: Corpus, per_tenant: int, staged: Callable[[str], object] | None = None
) -> None:
    """Synthetic passages of 50-300 Zipf-drawn words: a fifth in Vietnamese (its own Zipf
    vocabulary), the rest from the shared words, and a quarter of every passage's words the
    tenant's own; four passages an episode. The vector: passage_vector of its topic (Zipf-drawn
    from TOPICS, per tenant) and its words (numpy, from public.bench_words). staged(group) is
    called once a tenant's passages are in public.bench_staging.

    The draws are those of random.Random.choices and shuffle and the vectors passage_vector's
    (drawn, shuffled, passage_vectors, embedding_texts: the same texts, words and vectors as the
    loop a passage at a time of earlier runs, in a fraction of its time; tests/test_bench_passages.py)."""
    rng = random.Random(7)
    # its own generator: the texts (rng) stay those of earlier runs
    topic_rng = random.Random(13)
    cum_topics = list(itertools.accumulate(zipf_weights(TOPICS, 0.8)))
    vocabulary = passage_vocabulary()
    head = np.array([w in HEAD_SET for w in vocabulary])
    directions = word_directions(conn, len(vocabulary))
    topics = topic_directions()
    draws = {
        name: (np.array(cum[:-1]), cum[-1] + 0.0)
        for name, cum in (
            ("shared", list(itertools.accumulate(zipf_weights(SHARED_WORDS)))),
            ("vi", list(itertools.accumulate(zipf_weights(VI_WORDS)))),
            ("own", list(itertools.accumulate(zipf_weights(OWN_WORDS)))),
        )
    }
    ids = [str(i) for i in range(len(vocabulary))]
    conn.execute(
        "create unlogged table public.bench_staging (group_id text, episode int, ordinal int,"
        " passage_text text, words int[], embedding vector, topic int)"
    )
    for tenant, group in enumerate(corpus.groups):
        own_base = SHARED_WORDS + VI_WORDS + tenant * OWN_WORDS
        for first in range(0, per_tenant, STAGING_BATCH):
            batch, batch_topics = [], []
            for _ in range(first, min(per_tenant, first + STAGING_BATCH)):
                count = rng.randint(50, 300)
                own_count = count // 4
                if rng.random() < VIETNAMESE_SHARE:
                    picks = (drawn(rng.random, *draws["vi"], count - own_count) + SHARED_WORDS).tolist()
                else:
                    picks = drawn(rng.random, *draws["shared"], count - own_count).tolist()
                picks += (drawn(rng.random, *draws["own"], own_count) + own_base).tolist()
                shuffled(rng, picks)
                batch.append(picks)
                batch_topics.append(
                    tenant * TOPICS + topic_rng.choices(range(TOPICS), cum_weights=cum_topics)[0]
                )
            embeddings = embedding_texts(passage_vectors(topics[batch_topics], directions, batch, head))
            buffer = io.StringIO()
            for p, (picks, topic, embedding) in enumerate(zip(batch, batch_topics, embeddings, strict=True),
                                                           start=first):  # fmt: skip
                text = " ".join([vocabulary[i] for i in picks])
                buffer.write(f"{group}\t{p // PASSAGES_PER_EPISODE}\t{p % PASSAGES_PER_EPISODE}\t{text}\t"
                             f"{{{','.join([ids[i] for i in picks])}}}\t{embedding}\t{topic}\n")  # fmt: skip
            with conn.cursor().copy("copy public.bench_staging from stdin") as copy:
                copy.write(buffer.getvalue())
        print(f"  staged tenant {tenant}", flush=True)
        if staged is not None:
            staged(group)


def create_episodes(conn: psycopg.Connection, corpus: Corpus, per_tenant: int) -> None:
    """One source a tenant, an episode per four passages (its external_id 'doc-' and its number)."""
    for group in corpus.groups:
        source = conn.execute(
            "insert into vera.sources (group_id, kind, name, trust_tier)"
            " values (%s, 'bench', 'bench docs', 1) returning source_id",
            (group,),
        ).fetchone()[0]  # type: ignore[index]
        conn.execute(
            """insert into vera.episodes (group_id, source_id, external_id, content_sha256, observed_at,
                                          status)
               select %s, %s, 'doc-' || e, sha256(e::text::bytea), '2026-01-01', 'received'
                 from generate_series(0, %s) e""",
            (group, source, (per_tenant - 1) // PASSAGES_PER_EPISODE),
        )
    # the episodes' statistics, or the join of load_passages walks the staging table once an episode
    conn.execute("analyze vera.episodes")


def load_passages(conn: psycopg.Connection, group: str) -> None:
    """A tenant's staged passages into vera.chunks (its episodes made by create_episodes)."""
    conn.execute(
        """insert into vera.chunks (group_id, episode_id, ordinal, text, embedding)
           select s.group_id, e.episode_id, s.ordinal, s.passage_text, s.embedding
             from public.bench_staging s
             join vera.episodes e on e.group_id = s.group_id and e.external_id = 'doc-' || s.episode
            where s.group_id = %s""",
        (group,),
    )


# the product's full-text index of passages, dropped while the passages are loaded and then made again
# from its own definition (pg_indexes): one build of it is a fraction of the cost of its upkeep row by row
DEFERRED_INDEXES = ("chunks_group_lexemes_idx",)
# building the per-group and floor HNSW indexes in memory (1,000,000 passages: ~2.5 GB)
BUILD_MEMORY = "4GB"


def build_passages(passages: int, rebuild: bool) -> tuple[Bench, Corpus, float]:
    """The passages database of this size, built unless a previous run left it (or rebuild): the
    passages are staged (python) while those of the tenants staged before are loaded into vera.chunks
    (two connections of their own), then the indexes are built."""
    bench = start(f"vera_bench_passages_{passages}", fresh=rebuild)
    with bench.admin() as conn:
        if conn.execute("select to_regclass('public.bench_corpus')").fetchone() != (None,):
            rows = conn.execute(
                "select group_id, api_key from public.bench_corpus order by position"
            ).fetchall()
            return bench, Corpus([r[0] for r in rows], [r[1] for r in rows]), 0.0
    started = time.perf_counter()
    with bench.admin() as conn:
        conn.execute(f"set maintenance_work_mem = '{BUILD_MEMORY}'")
        conn.execute("set max_parallel_maintenance_workers = 2")
        corpus = create_tenants(conn)
        conn.execute(f"create unlogged table public.bench_words (word_id int primary key, v vector({DIM}))")
        conn.execute(
            f"insert into public.bench_words select i, (select array_agg(random() - 0.5) "
            f"from generate_series(1, {DIM}) d where i > -d)::vector from generate_series(0, %s) i",
            (SHARED_WORDS + VI_WORDS + TENANTS * OWN_WORDS - 1,),
        )
        create_episodes(conn, corpus, passages // TENANTS)
        deferred = [
            row[0]
            for row in conn.execute(
                "select indexdef from pg_indexes where schemaname = 'vera' and indexname = any(%s)",
                (list(DEFERRED_INDEXES),),
            ).fetchall()
        ]
        for name in DEFERRED_INDEXES:
            conn.execute(psycopg.sql.SQL("drop index vera.{}").format(psycopg.sql.Identifier(name)))
        loads: list[float] = []

        def load(group: str, after: Future[None] | None) -> None:
            if after is not None:
                after.result()
            with bench.admin() as loader:
                # the statistics' trigger groups the tenant's every word (vera.count_terms) in memory
                loader.execute("set work_mem = '256MB'")
                begun = time.perf_counter()
                load_passages(loader, group)
                loads.append(time.perf_counter() - begun)

        futures: list[Future[None]] = []

        def staged_tenant(group: str) -> None:
            # tenant 0 (the one searched) alone, as a load of one tenant after another lays it out
            # (its rows together in the table and its TOAST, not between another loader's), then two
            # tenants at a time
            futures.append(pool.submit(load, group, futures[0] if len(futures) in (1, 2) else None))

        with ThreadPoolExecutor(max_workers=2) as pool:
            stage_passages(conn, corpus, passages // TENANTS, staged_tenant)
            staged = time.perf_counter()
            print(f"staged {passages:,} passages in {staged - started:.0f} s", flush=True)
            for future in futures:
                future.result()
        print(f"loaded {passages:,} passages in {time.perf_counter() - started:.0f} s "
              f"(vera.chunks: {sum(loads):.0f} s over {len(loads)} tenants, "
              f"{time.perf_counter() - staged:.0f} s after the staging)", flush=True)  # fmt: skip
        built = time.perf_counter()
        for definition in deferred:
            conn.execute(definition)
        print(f"{', '.join(DEFERRED_INDEXES)} built in {time.perf_counter() - built:.0f} s", flush=True)
        mark = time.perf_counter()
        for (statements,) in conn.execute("select statements from vera.missing_vector_indexes()").fetchall():
            for statement in statements:
                conn.execute(statement)
        print(f"per-group HNSW indexes built in {time.perf_counter() - mark:.0f} s", flush=True)
        mark = time.perf_counter()
        conn.execute(
            f"create index chunks_floor_hnsw_idx on vera.chunks using hnsw ((embedding::vector({DIM})) "
            f"vector_cosine_ops) where vector_dims(embedding) = {DIM}"
        )
        print(f"floor HNSW index built in {time.perf_counter() - mark:.0f} s", flush=True)
        floor_text_indexes(conn)
        mark = time.perf_counter()
        conn.execute("vacuum analyze vera.chunks")
        conn.execute("vacuum analyze vera.episodes")
        print(f"vacuum analyze in {time.perf_counter() - mark:.0f} s", flush=True)
        print(f"HNSW and GIN indexes built in {time.perf_counter() - built:.0f} s", flush=True)
    return bench, corpus, time.perf_counter() - started


def floor_text_indexes(conn: psycopg.Connection) -> None:
    """The floors' full-text indexes of passages, made when missing: over tsv alone (the bare floor)
    and over (group_id, tsv), which a tenant-aware application would have (the tenant-filtered floor;
    vera's own index before migration 0021, which keys each word by its group instead)."""
    for name, columns in (("chunks_floor_tsv_idx", "tsv"), ("chunks_floor_group_tsv_idx", "group_id, tsv")):
        if conn.execute("select to_regclass(%s)", (f"vera.{name}",)).fetchone() != (None,):
            continue
        mark = time.perf_counter()
        conn.execute(f"set maintenance_work_mem = '{BUILD_MEMORY}'")
        conn.execute(f"create index {name} on vera.chunks using gin ({columns})")
        conn.execute("analyze vera.chunks")
        print(f"floor GIN index {name} built in {time.perf_counter() - mark:.0f} s", flush=True)


PASSAGE_QUERIES = {
    "floor_hnsw": (
        f"select chunk_id from vera.chunks where vector_dims(embedding) = {DIM}"
        f" order by embedding::vector({DIM}) <=> %s::vector limit %s"
    ),
    "floor_fts": (
        "select chunk_id from vera.chunks where tsv @@ %s::tsquery"
        " order by ts_rank(tsv, %s::tsquery) desc limit %s"
    ),
    "tenant_hnsw": (
        f"select chunk_id from vera.chunks where vector_dims(embedding) = {DIM} and group_id = %s"
        f" order by embedding::vector({DIM}) <=> %s::vector limit %s"
    ),
    "tenant_fts": (
        "select chunk_id from vera.chunks where tsv @@ %s::tsquery and group_id = %s"
        " order by ts_rank(tsv, %s::tsquery) desc limit %s"
    ),
    "exact": (
        f"select chunk_id from vera.chunks c where c.group_id = %s and vector_dims(c.embedding) = {DIM}"
        " and c.lifecycle = 'published'"
        f" order by c.embedding::vector({DIM}) <=> %s::vector limit 10"
    ),
}


def make_passage_queries(bench: Bench, corpus: Corpus, count: int) -> list[tuple[str, str]]:
    """Query text: 3-8 words of a random passage of tenant 0 (a question's length); its embedding:
    passage_vector of the passage's topic and those words (a question lands near its subject)."""
    rng = random.Random(11)
    vocabulary = passage_vocabulary()
    topics = topic_directions()
    with bench.admin() as conn:
        conn.execute("set synchronize_seqscans = off")
        rows = conn.execute(
            "select words, topic from public.bench_staging where group_id = %s limit 5000",
            (corpus.groups[0],),
        ).fetchall()
        directions = word_directions(conn, len(vocabulary))
    queries = []
    for _ in range(count):
        passage_words, topic = rng.choice(rows)
        words = list(dict.fromkeys(passage_words))
        picked = rng.sample(words, min(len(words), rng.randint(3, 8)))
        vector = passage_vector(topics[topic], directions, picked, vocabulary)
        queries.append(
            (" ".join(vocabulary[p] for p in picked), "[" + ",".join(f"{x:.5f}" for x in vector) + "]")
        )
    return queries


def passages_main(args: argparse.Namespace) -> None:
    bench, corpus, build_seconds = build_passages(args.passages, args.rebuild)
    with bench.admin() as conn:
        floor_text_indexes(conn)
    if args.shared_buffers:
        size_buffers(bench, corpus, args.shared_buffers, "chunks")
    with bench.admin() as conn:
        sizes = conn.execute(
            "select pg_size_pretty(pg_table_size('vera.chunks')), "
            "pg_size_pretty(pg_relation_size('vera.chunks_group_lexemes_idx')), "
            "current_setting('shared_buffers')"
        ).fetchone()
        assert sizes is not None
        reference = cpu_reference(conn)
    queries = make_passage_queries(bench, corpus, args.queries)
    built = f"built in {build_seconds:.0f} s" if build_seconds else "reused"
    print(f"{args.passages:,} passages (50-300 words, {VIETNAMESE_SHARE:.0%} Vietnamese) in {TENANTS} "
          f"tenants, {DIM} dims ({built}); table {sizes[0]}, group GIN {sizes[1]}; "
          f"shared_buffers {sizes[2]}")  # fmt: skip
    print(reference)
    print(f"{len(queries)} queries of 3-8 words as tenant 0's owner (10% of the rows), k = 10")
    settings = [
        (int(n), None if ef == "default" else int(ef))
        for n, ef in (setting.split(":") for setting in args.settings.split(","))
    ]
    print("| candidates N | ef_search | vera.search p50 / p95 | lexical half p50 / p95 "
          "| floor p50 / p95 (HNSW + FTS) | ratio p50 | tenant-filtered floor p50 / p95 "
          "| recall@10 |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    last = None
    for candidates, ef_search in settings:
        r = measure(bench, corpus, queries, candidates, ef_search, during=False, sql=PASSAGE_QUERIES)
        shown = ef_search or f"{max(100, candidates)} (default)"
        print(
            f"| {candidates} | {shown} | {r['search_p50']:.1f} / {r['search_p95']:.1f} ms "
            f"| {r['lexical_p50']:.1f} / {r['lexical_p95']:.1f} ms "
            f"| {r['floor_p50']:.1f} / {r['floor_p95']:.1f} ms ({r['hnsw_p50']:.1f} + {r['fts_p50']:.1f}) "
            f"| {r['search_p50'] / r['floor_p50']:.2f}x "
            f"| {r['tenant_p50']:.1f} / {r['tenant_p95']:.1f} ms | {r['recall']:.3f} |",
            flush=True,
        )
        last = r
    assert last is not None
    print(
        f"passages {args.passages}: vera.search p50 {last['search_p50']:.1f}"
        f" / p95 {last['search_p95']:.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument(
        "--passages",
        type=int,
        help="measure N passages (50-300 words, a share in Vietnamese) instead of facts",
    )
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rebuild", action="store_true", help="drop and rebuild the database of this size")
    parser.add_argument(
        "--settings",
        default="40:default",
        help="candidates:ef_search pairs to measure, comma-separated (ef_search 'default' = max(100, N))",
    )
    parser.add_argument(
        "--during",
        action="store_true",
        help=f"also time each query with during => '{DURING}' (a fifth of the facts' validity)",
    )
    parser.add_argument(
        "--shared-buffers",
        help="set shared_buffers (e.g. 6GB, or 'default'), restart the server and prewarm the tenant's data",
    )
    args = parser.parse_args()
    if args.passages:
        passages_main(args)
        return
    bench, corpus, build_seconds = build(args.facts, args.rebuild)
    if args.shared_buffers:
        size_buffers(bench, corpus, args.shared_buffers)
    with bench.admin() as conn:
        sizes = conn.execute(
            "select pg_size_pretty(pg_table_size('vera.facts')), "
            "pg_size_pretty((select sum(pg_relation_size(indexrelid)) from pg_index i join pg_class c"
            " on c.oid = i.indexrelid where c.relname ~ '^facts_384_o_')), "
            "pg_size_pretty(pg_relation_size('vera.facts_group_lexemes_idx')),"
            " current_setting('shared_buffers')"
        ).fetchone()
        assert sizes is not None
        reference = cpu_reference(conn)
    queries = make_queries(bench, corpus, args.queries)
    built = f"built in {build_seconds:.0f} s" if build_seconds else "reused"
    print(f"{args.facts:,} facts in {TENANTS} tenants, {DIM} dims ({built}); table {sizes[0]}, "
          f"per-group HNSW {sizes[1]}, group-word GIN {sizes[2]}; shared_buffers {sizes[3]}")  # fmt: skip
    print(reference)
    print(
        f"{len(queries)} queries as tenant 0's owner (10% of the rows), k = 10; the floor runs ef_search 40"
    )
    settings: list[tuple[int, int | None]] = [
        (int(n), None if ef == "default" else int(ef))
        for n, ef in (setting.split(":") for setting in args.settings.split(","))
    ]
    during_column = f" vera.search with during {DURING} p50 / p95 |" if args.during else ""
    print("| candidates N | ef_search | vera.search p50 / p95 |" + during_column + " lexical half p50 / p95 "
          "| floor p50 / p95 (HNSW + FTS) | ratio p50 "
          "| tenant-filtered floor p50 / p95 | recall@10 |")  # fmt: skip
    print("|---|---|---|" + ("---|" if args.during else "") + "---|---|---|---|---|")
    with peak_server_memory(bench.server) as memory:
        for candidates, ef_search in settings:
            r = measure(bench, corpus, queries, candidates, ef_search, during=args.during)
            shown = ef_search or f"{max(100, candidates)} (default)"
            with_during = f"| {r['during_p50']:.1f} / {r['during_p95']:.1f} ms " if args.during else ""
            print(
                f"| {candidates} | {shown} | {r['search_p50']:.1f} / {r['search_p95']:.1f} ms "
                + with_during
                + f"| {r['lexical_p50']:.1f} / {r['lexical_p95']:.1f} ms "
                f"| {r['floor_p50']:.1f} / {r['floor_p95']:.1f} ms "
                f"({r['hnsw_p50']:.1f} + {r['fts_p50']:.1f}) "
                f"| {r['search_p50'] / r['floor_p50']:.2f}x "
                f"| {r['tenant_p50']:.1f} / {r['tenant_p95']:.1f} ms | {r['recall']:.3f} |",
                flush=True,
            )
    print(
        f"peak server memory while querying: {memory['peak_mib']:.0f} MiB "
        "(sum of USS: shared buffers excluded)"
    )


if __name__ == "__main__":
    main()
