"""Concurrent load: N clients (one connection each, loopback) mix search,
publish, feedback, review and retraction on a few hot subjects for a bounded
time, each operation its own READ COMMITTED transaction; with passages (the
default) also connector-style ingestion (record_episode, store_chunks with
vectors and sometimes publish_claims in one transaction, as
vera_worker.connectors.writing does; a pool of record keys, so some writes
are new versions), hybrid searches over the passages and passage review.
Prints throughput, p50/p95 per operation, errors by SQLSTATE, deadlocks
(40P01, from the errors and from pg_stat_database before and after) and
serialization failures (40001), and invariant checks at the end:

- exactly one current value per functional (group, subject, predicate);
- no overlapping validity intervals within one functional history;
- no lost writes: every acknowledged publish is present (current,
  superseded, retracted or reviewed), and every acknowledged passage.

    .venv/bin/python benchmarks/load_mix.py [--seconds 60] [--clients 16] [--subjects 12]
        [--no-passages] [--seed-passages 2000]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import sys
import threading
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Bench, start

FACT_MIX = {"search": 40, "publish": 25, "feedback": 10, "review": 10, "retract": 15}
# with passages: the facts' operations at a smaller share beside ingestion, passage search and review
PASSAGE_MIX = {
    "search": 20,
    "passage search": 20,
    "publish": 12,
    "ingest": 15,
    "feedback": 8,
    "review": 8,
    "passage review": 5,
    "retract": 12,
}
MODEL = "load-mix-hash-384"  # a stand-in embedder: a word's vector is a hash of it
DIM = 384
RECORDS = 400  # record keys the ingesters share: about one write in three is a new version
HOSTS = ["blue", "green", "red", "amber", "violet", "teal"]
WORDS = [
    "payments",
    "ledger",
    "search",
    "gateway",
    "billing",
    "identity",
    "catalog",
    "pricing",
    "invoice",
    "audit",
]


# a Zipf vocabulary: a few words in most passages, most words rare
VOCABULARY = [
    *WORDS,
    *(
        f"{a}{b}"
        for a in ("ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo")
        for b in (
            "bar",
            "den",
            "fel",
            "gor",
            "han",
            "jis",
            "kem",
            "lun",
            "mor",
            "nis",
            "pol",
            "quor",
            "ret",
            "sil",
            "tam",
            "ulf",
            "ven",
            "wix",
            "yor",
            "zed",
        )
    ),
]
ZIPF = [1 / (rank + 1) for rank in range(len(VOCABULARY))]
_vectors: dict[str, np.ndarray] = {}


def word_vector(word: str) -> np.ndarray:
    vector = _vectors.get(word)
    if vector is None:
        seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "big")
        vector = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
        _vectors[word] = vector
    return vector


def embed(words: list[str]) -> list[float]:
    total = np.sum([word_vector(w) for w in words], axis=0)
    return [float(x) for x in total / (np.linalg.norm(total) or 1.0)]


def words(n: int, subjects: int) -> list[str]:
    chosen = random.choices(VOCABULARY, ZIPF, k=n)
    chosen[random.randrange(n)] = f"service-{random.randrange(subjects)}"
    return chosen


def passages(subjects: int) -> list[dict[str, object]]:
    """2-6 passages of 50-200 words, with vectors, as a connector stores a page."""
    result: list[dict[str, object]] = []
    for _ in range(random.randint(2, 6)):
        text = words(random.randint(50, 200), subjects)
        result.append({"text": " ".join(text), "heading": " ".join(text[:3]), "embedding": embed(text)})
    return result


class Shared:
    """What the clients share: acknowledged writes, latencies, errors."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.episodes: list[UUID] = []
        self.acknowledged: list[UUID] = []
        self.chunks: list[UUID] = []
        self.passage_hits = 0
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.errors: Counter[tuple[str, str]] = Counter()
        self.messages: dict[str, str] = {}
        self.sequence = 0

    def next_id(self) -> int:
        with self.lock:
            self.sequence += 1
            return self.sequence


def set_up(bench: Bench, subjects: int, seed_passages: int, shared: Shared) -> tuple[str, UUID, UUID]:
    with bench.app() as conn:
        group = conn.execute(
            "select vera.create_group(%s, 'project', 'load')", (bench.organisation,)
        ).fetchone()[0]  # type: ignore[index]
        conn.execute("select vera.declare_predicate(%s, 'runs on', 'functional')", (group,))
        trusted = conn.execute(
            "select vera.register_source(%s, 'cmdb', 'cmdb', 1, null, '{}', null)", (group,)
        ).fetchone()[0]  # type: ignore[index]
        reviewed = conn.execute(
            "select vera.register_source(%s, 'markdown', 'wiki', 3, null, '{}', null)", (group,)
        ).fetchone()[0]  # type: ignore[index]
        conn.commit()
        # a corpus for the passage searches to find, written as the ingesters write
        written = 0
        while written < seed_passages:
            conn.execute("select vera.authenticate(%s)", (bench.api_key,))
            written += ingest(conn, shared, group, trusted, subjects, claims=False)
    # what a connector's run ends with after such a load (vera.end_source_run): the tables' first
    # statistics, so the clients' searches are planned on them whether or not autovacuum came by yet
    with bench.admin() as admin:
        admin.execute("select vera.refresh_planner_statistics()")
    return group, trusted, reviewed


def publish(conn: psycopg.Connection, shared: Shared, group: str, source: UUID, subjects: int) -> None:
    n = shared.next_id()
    episode = conn.execute(
        "select episode_id from vera.record_episode(%s, %s, %s, %s, %s, 'text/markdown')",
        (group, source, f"record-{n}", hashlib.sha256(str(n).encode()).digest(), f"objects/{n}"),
    ).fetchone()[0]  # type: ignore[index]
    now = datetime.now(UTC).isoformat()
    claims = []
    for _ in range(random.randint(1, 3)):
        subject = f"service-{random.randrange(subjects)}"
        claims.append(
            {"subject": subject, "predicate": "runs on", "object": random.choice(HOSTS), "valid_from": now}
        )
        claims.append({"subject": subject, "predicate": "depends on", "object": f"{random.choice(WORDS)}-db"})
    rows = conn.execute(
        "select fact_id from vera.publish_claims(%s, %s, %s)", (group, episode, Jsonb(claims))
    ).fetchall()
    conn.commit()
    with shared.lock:
        shared.episodes.append(episode)
        shared.acknowledged.extend(fact_id for (fact_id,) in rows)


def ingest(
    conn: psycopg.Connection, shared: Shared, group: str, source: UUID, subjects: int, *, claims: bool
) -> int:
    """One record version as a connector writes it: the episode, its passages and (when `claims`)
    its claims in one transaction; an unchanged record writes nothing. How many passages it wrote."""
    key = f"page-{random.randrange(RECORDS)}"
    chunks = passages(subjects)
    digest = hashlib.sha256(repr(chunks).encode()).digest()
    episode, created = conn.execute(
        "select episode_id, created from vera.record_episode(%s, %s, %s, %s, %s, 'text/markdown')",
        (group, source, key, digest, f"objects/{key}/{digest.hex()}"),
    ).fetchone()  # type: ignore[misc]
    stored: list[UUID] = []
    facts: list[UUID] = []
    if created:
        stored = [row[0] for row in conn.execute(
            "select chunk_id from vera.store_chunks(%s, %s, %s, %s)", (group, episode, Jsonb(chunks), MODEL)
        ).fetchall()]  # fmt: skip
        if claims:
            subject = f"service-{random.randrange(subjects)}"
            stated = [{"subject": subject, "predicate": "depends on", "object": f"{random.choice(WORDS)}-db"}]
            facts = [row[0] for row in conn.execute(
                "select fact_id from vera.publish_claims(%s, %s, %s)", (group, episode, Jsonb(stated))
            ).fetchall()]  # fmt: skip
    conn.commit()
    with shared.lock:
        if created:
            shared.episodes.append(episode)
        shared.chunks.extend(stored)
        shared.acknowledged.extend(facts)
    return len(stored)


def passage_search(conn: psycopg.Connection, shared: Shared, subjects: int) -> None:
    """A question over the passages, both halves (the query's words and its vector)."""
    asked = words(random.randint(3, 8), subjects)
    rows = conn.execute(
        "select kind from vera.search(%s, %s::vector, 10, embedding_model => %s)",
        (" ".join(asked), str(embed(asked)), MODEL),
    ).fetchall()
    conn.commit()
    if any(kind == "passage" for (kind,) in rows):
        with shared.lock:
            shared.passage_hits += 1


def search(conn: psycopg.Connection, subjects: int) -> list[UUID]:
    query = f"service-{random.randrange(subjects)} runs on"
    rows = conn.execute("select kind, item_id from vera.search(%s, null, 10)", (query,)).fetchall()
    conn.commit()
    return [item for kind, item in rows if kind == "fact"]


def feedback(conn: psycopg.Connection, subjects: int) -> None:
    query = f"service-{random.randrange(subjects)} depends on"
    rows = conn.execute("select kind, item_id from vera.search(%s, null, 10)", (query,)).fetchall()
    if rows:
        kind, item = random.choice(rows)
        conn.execute(
            "select * from vera.record_feedback(%s, %s, %s, %s)",
            (kind, item, query, random.choice(["up", "down"])),
        )
    conn.commit()


# what a review lists and decides with: a claim's functions, a passage's
REVIEWS = {
    "review": (
        "select fact_id from vera.pending_reviews(%s) limit 20",
        "select * from vera.review_claim(%s, %s, %s)",
    ),
    "passage review": (
        "select chunk_id from vera.pending_passages(%s) limit 20",
        "select * from vera.review_passage(%s, %s, %s)",
    ),
}


def review(conn: psycopg.Connection, group: str, operation: str) -> None:
    """Approves (2 in 3) or rejects one of 20 items waiting for review."""
    pending, decide = REVIEWS[operation]
    rows = conn.execute(pending, (group,)).fetchall()
    if rows:
        (item,) = random.choice(rows)
        conn.execute(decide, (group, item, random.choice(["approve", "approve", "reject"])))
    conn.commit()


def retract(conn: psycopg.Connection, shared: Shared, group: str) -> None:
    with shared.lock:
        episode = random.choice(shared.episodes) if shared.episodes else None
    if episode is not None:
        conn.execute("select vera.retract_episode(%s, %s, 'load test')", (group, episode))
    conn.commit()


def client(
    bench: Bench, shared: Shared, args: argparse.Namespace, setup: tuple[str, UUID, UUID], stop: float
) -> None:
    group, trusted, reviewed = setup
    mix = FACT_MIX if args.no_passages else PASSAGE_MIX
    names = list(mix)
    weights = list(mix.values())
    conn = psycopg.connect(bench.server.app_url(bench.database))
    try:
        while time.monotonic() < stop:
            operation = random.choices(names, weights)[0]
            started = time.perf_counter()
            try:
                conn.execute("select vera.authenticate(%s)", (bench.api_key,))
                if operation == "publish":
                    # a third of the publishes come from the tier-3 source and wait for review
                    source = reviewed if random.random() < 0.33 else trusted
                    publish(conn, shared, group, source, args.subjects)
                elif operation == "ingest":
                    source = reviewed if random.random() < 0.33 else trusted
                    ingest(conn, shared, group, source, args.subjects, claims=random.random() < 0.5)
                elif operation == "passage search":
                    passage_search(conn, shared, args.subjects)
                elif operation == "search":
                    search(conn, args.subjects)
                elif operation == "feedback":
                    feedback(conn, args.subjects)
                elif operation in REVIEWS:
                    review(conn, group, operation)
                else:
                    retract(conn, shared, group)
            except psycopg.Error as error:
                conn.rollback()
                with shared.lock:
                    shared.errors[(operation, error.sqlstate or "?")] += 1
                    shared.messages.setdefault(error.sqlstate or "?", str(error).splitlines()[0][:160])
                continue
            elapsed = time.perf_counter() - started
            with shared.lock:
                shared.latencies[operation].append(elapsed)
    finally:
        conn.close()


INVARIANTS = {
    "functional histories with more than one current value": """
        select count(*) from (
            select f.group_id, f.subject_entity_id, f.predicate from vera.facts f
              join vera.predicates p on p.group_id = f.group_id and p.name = f.predicate
                                    and p.cardinality = 'functional'
             where f.lifecycle = 'published'
             group by 1, 2, 3 having count(*) > 1) x""",
    "overlapping validity intervals within a functional history": """
        select count(*) from vera.facts a
          join vera.facts b on b.group_id = a.group_id and b.subject_entity_id = a.subject_entity_id
                           and b.predicate = a.predicate and b.fact_id > a.fact_id
          join vera.predicates p on p.group_id = a.group_id and p.name = a.predicate
                                and p.cardinality = 'functional'
         where a.lifecycle in ('published', 'superseded') and a.retired_at is null
           and b.lifecycle in ('published', 'superseded') and b.retired_at is null
           and tstzrange(a.valid_from, a.valid_to) && tstzrange(b.valid_from, b.valid_to)""",
}


def check(bench: Bench, shared: Shared) -> dict[str, int]:
    with bench.admin() as admin:
        found = {name: admin.execute(sql).fetchone()[0] for name, sql in INVARIANTS.items()}  # type: ignore[index]
        present = admin.execute(
            "select count(*) from vera.facts where fact_id = any(%s)", (shared.acknowledged,)
        ).fetchone()[0]  # type: ignore[index]
        stored = admin.execute(
            "select count(*) from vera.chunks where chunk_id = any(%s)", (shared.chunks,)
        ).fetchone()[0]  # type: ignore[index]
    found["acknowledged publishes missing (lost writes)"] = len(set(shared.acknowledged)) - present
    found["acknowledged passages missing (lost writes)"] = len(set(shared.chunks)) - stored
    return found


def server_deadlocks(bench: Bench) -> int:
    """The server's own count of deadlocks in this benchmark's database (it counts no
    serialization failures: those are only known from the clients' 40001 errors)."""
    with bench.admin() as admin:
        row = admin.execute(
            "select deadlocks from pg_stat_database where datname = current_database()"
        ).fetchone()
    return int(row[0])  # type: ignore[index]


def percentile(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--subjects", type=int, default=12, help="hot subjects the writers share")
    parser.add_argument("--no-passages", action="store_true", help="the facts' operations only")
    parser.add_argument(
        "--seed-passages", type=int, default=2000, help="passages written before the clients start"
    )
    args = parser.parse_args()
    random.seed(11)
    bench = start("vera_bench_load_mix")
    with bench.admin() as admin:
        # a lock wait of over deadlock_timeout (1 s) and every deadlock's detail go to the server log
        admin.execute(f'alter database "{bench.database}" set log_lock_waits = on')
    shared = Shared()
    setup = set_up(bench, args.subjects, 0 if args.no_passages else args.seed_passages, shared)
    mix = FACT_MIX if args.no_passages else PASSAGE_MIX
    print(
        f"{args.clients} clients, {args.seconds:.0f} s, {args.subjects} hot subjects, "
        f"{len(shared.chunks)} passages to start with, mix {mix}",
        flush=True,
    )
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")
    deadlocks_before = server_deadlocks(bench)
    stop = time.monotonic() + args.seconds
    started = time.monotonic()
    threads = [
        threading.Thread(target=client, args=(bench, shared, args, setup, stop)) for _ in range(args.clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - started
    deadlocks_after = server_deadlocks(bench)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    total = sum(len(v) for v in shared.latencies.values())
    failed = sum(shared.errors.values())
    print(f"\n{total} operations committed in {wall:.1f} s: {total / wall:.1f} ops/s ({failed} failed)")
    print("| operation | committed | ops/s | p50 ms | p95 ms |")
    print("|---|---|---|---|---|")
    for name in mix:
        values = shared.latencies.get(name, [])
        print(f"| {name} | {len(values)} | {len(values) / wall:.1f} | {percentile(values, 50) * 1000:.1f} "
              f"| {percentile(values, 95) * 1000:.1f} |")  # fmt: skip
    print("\nerrors by operation and SQLSTATE:", dict(sorted(shared.errors.items())) or "none")
    for state, message in sorted(shared.messages.items()):
        print(f"  {state}: {message}")
    deadlocks = sum(count for (_, state), count in shared.errors.items() if state == "40P01")
    serialization = sum(count for (_, state), count in shared.errors.items() if state == "40001")
    if "passage search" in mix:
        print(f"passage searches with a passage among their hits: {shared.passage_hits}")
    print(f"load average after: {load} (1, 5, 15 min)")
    print(
        f"deadlocks: {deadlocks} (40P01 errors), {deadlocks_after - deadlocks_before} (pg_stat_database); "
        f"serialization failures: {serialization} (40001 errors)"
    )
    print("\ninvariants (violations):")
    for name, count in check(bench, shared).items():
        print(f"  {name}: {count}")


if __name__ == "__main__":
    main()
