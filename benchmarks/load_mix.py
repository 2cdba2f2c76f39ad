"""Concurrent load: N clients (one connection each, loopback) mix search,
publish, feedback, review and retraction on a few hot subjects for a bounded
time, each operation its own READ COMMITTED transaction. Prints throughput,
p50/p95 per operation, errors by SQLSTATE (deadlocks 40P01 counted), and
invariant checks at the end:

- exactly one current value per functional (group, subject, predicate);
- no overlapping validity intervals within one functional history;
- no lost writes: every acknowledged publish is present (current,
  superseded, retracted or reviewed).

    .venv/bin/python benchmarks/load_mix.py [--seconds 60] [--clients 16] [--subjects 12]
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import sys
import threading
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime
from pathlib import Path
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Bench, start

OPERATIONS = {"search": 40, "publish": 25, "feedback": 10, "review": 10, "retract": 15}
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


class Shared:
    """What the clients share: acknowledged writes, latencies, errors."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.episodes: list[UUID] = []
        self.acknowledged: list[UUID] = []
        self.latencies: dict[str, list[float]] = defaultdict(list)
        self.errors: Counter[tuple[str, str]] = Counter()
        self.messages: dict[str, str] = {}
        self.sequence = 0

    def next_id(self) -> int:
        with self.lock:
            self.sequence += 1
            return self.sequence


def set_up(bench: Bench, subjects: int) -> tuple[str, UUID, UUID]:
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


def review(conn: psycopg.Connection, group: str) -> None:
    rows = conn.execute("select fact_id from vera.pending_reviews(%s) limit 20", (group,)).fetchall()
    if rows:
        (fact_id,) = random.choice(rows)
        decision = random.choice(["approve", "approve", "reject"])
        conn.execute("select * from vera.review_claim(%s, %s, %s)", (group, fact_id, decision))
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
    names = list(OPERATIONS)
    weights = list(OPERATIONS.values())
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
                elif operation == "search":
                    search(conn, args.subjects)
                elif operation == "feedback":
                    feedback(conn, args.subjects)
                elif operation == "review":
                    review(conn, group)
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
    found["acknowledged publishes missing (lost writes)"] = len(set(shared.acknowledged)) - present
    return found


def percentile(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--subjects", type=int, default=12, help="hot subjects the writers share")
    args = parser.parse_args()
    random.seed(11)
    bench = start("vera_bench_load_mix")
    setup = set_up(bench, args.subjects)
    shared = Shared()
    stop = time.monotonic() + args.seconds
    print(
        f"{args.clients} clients, {args.seconds:.0f} s, {args.subjects} hot subjects, mix {OPERATIONS}",
        flush=True,
    )
    started = time.monotonic()
    threads = [
        threading.Thread(target=client, args=(bench, shared, args, setup, stop)) for _ in range(args.clients)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.monotonic() - started
    total = sum(len(v) for v in shared.latencies.values())
    failed = sum(shared.errors.values())
    print(f"\n{total} operations committed in {wall:.1f} s: {total / wall:.1f} ops/s ({failed} failed)")
    print("| operation | committed | ops/s | p50 ms | p95 ms |")
    print("|---|---|---|---|---|")
    for name in OPERATIONS:
        values = shared.latencies.get(name, [])
        print(f"| {name} | {len(values)} | {len(values) / wall:.1f} | {percentile(values, 50) * 1000:.1f} "
              f"| {percentile(values, 95) * 1000:.1f} |")  # fmt: skip
    print("\nerrors by operation and SQLSTATE:", dict(sorted(shared.errors.items())) or "none")
    for state, message in sorted(shared.messages.items()):
        print(f"  {state}: {message}")
    deadlocks = sum(count for (_, state), count in shared.errors.items() if state == "40P01")
    print(f"deadlocks (40P01): {deadlocks}")
    print("\ninvariants (violations):")
    for name, count in check(bench, shared).items():
        print(f"  {name}: {count}")


if __name__ == "__main__":
    main()
