"""Write-path throughput: batches of 10,000 synthetic claims published with
vera.publish_claims into a database that already holds 100,000 facts,
without and with 384-dimension embeddings, each with the BM25 statistics'
triggers off (as before vera-search/4) and on, batch by batch in turn.
Prints claims/s and the peak memory of the database server's processes.

--compare fulltext-index compares instead the facts' full-text index as
migration 0004 left it (one posting list per group and word) and as it is now
(0005: also one per group, word and part of the group's facts), each built in
turn before its batch; --no-embeddings skips the 384-dimension runs.

    .venv/bin/python benchmarks/write_throughput.py [--existing 100000] [--batches 3] \\
        [--compare statistics|fulltext-index] [--no-embeddings]
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from pathlib import Path

from psycopg.types.json import Jsonb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Bench, cpu_reference, peak_server_memory, start
from vera_client.adapters.postgres.provisioning import build_missing_vector_indexes

WORDS = [
    "billing",
    "payments",
    "search",
    "gateway",
    "ledger",
    "identity",
    "catalog",
    "pricing",
    "checkout",
    "invoice",
    "shipping",
    "inventory",
    "fraud",
    "risk",
    "ranking",
    "feed",
    "profile",
    "session",
    "notify",
    "email",
    "sms",
    "audit",
    "report",
    "export",
    "import",
    "scheduler",
    "router",
    "cache",
    "index",
    "storage",
    "backup",
    "archive",
    "metrics",
    "tracing",
    "logging",
    "alerting",
]
# (predicate, functional)
PREDICATES = [
    ("runs on", True), ("owned by", True), ("depends on", False), ("exposes", False),
    ("written in", True), ("deployed via", False), ("pages", False), ("stores data in", False),
]  # fmt: skip
OBJECTS = [f"{a}-{b}" for a in ("cluster", "team", "db", "queue", "region", "lang") for b in WORDS[:20]]


def subject(rng: random.Random, pool: int) -> str:
    i = rng.randrange(pool)
    return f"{WORDS[i % len(WORDS)]}-{WORDS[(i // len(WORDS)) % len(WORDS)]}-{i // (len(WORDS) ** 2)}"


def claims(rng: random.Random, n: int, pool: int, dims: int | None) -> list[dict[str, object]]:
    batch = []
    for _ in range(n):
        predicate, _functional = rng.choice(PREDICATES)
        claim: dict[str, object] = {
            "subject": subject(rng, pool),
            "predicate": predicate,
            "object": rng.choice(OBJECTS),
            "confidence": round(rng.uniform(0.5, 1), 2),
        }
        if dims:
            vector = [rng.gauss(0, 1) for _ in range(dims)]
            norm = math.sqrt(sum(x * x for x in vector))
            claim["embedding"] = [round(x / norm, 5) for x in vector]
        batch.append(claim)
    return batch


def publish(bench: Bench, batch: list[dict[str, object]], model: str | None) -> float:
    with bench.app() as conn:
        source = conn.execute(
            "select vera.register_source(%s, 'cmdb', 'bench-cmdb', 1)", (bench.organisation,)
        ).fetchone()[0]  # type: ignore[index]
        episode = conn.execute(
            "select episode_id from vera.record_episode(%s, %s, %s, sha256(%s::bytea))",
            (bench.organisation, source, f"export-{time.monotonic_ns()}", str(time.monotonic_ns()).encode()),
        ).fetchone()[0]  # type: ignore[index]
        payload = Jsonb(batch)
        started = time.perf_counter()
        conn.execute(
            "select count(*) from vera.publish_claims(%s, %s, %s, %s)",
            (bench.organisation, episode, payload, model),
        )
        conn.commit()
        return time.perf_counter() - started


def statistics_triggers(bench: Bench, *, enabled: bool) -> None:
    """Turns the triggers that keep the BM25 statistics (sql/functions/165_term_stats.sql) off or on:
    off is what publishing cost before vera-search/4."""
    with bench.admin() as admin:
        for table, trigger in (("facts", "facts_count_inserted"), ("facts", "facts_count_deleted"),
                               ("facts", "facts_count_changed")):  # fmt: skip
            admin.execute(f"alter table vera.{table} {'enable' if enabled else 'disable'} trigger {trigger}")  # type: ignore[arg-type]


def index_0004() -> str:
    """The facts' full-text index as migration 0004 created it (its own statement, under another
    name), rebuilt in the current one's place for the "before" batches."""
    migration = Path(__file__).resolve().parent.parent / "sql" / "migrations" / "0004_group_lexemes.sql"
    text = migration.read_text(encoding="utf-8")
    start = text.index("create index facts_group_lexemes_idx")
    statement = text[start : text.index(";", start)]
    return statement.replace("facts_group_lexemes_idx", "facts_group_lexemes_0004_idx", 1)


def fulltext_index(bench: Bench, definitions: dict[bool, str], *, current: bool) -> None:
    """The facts' full-text index as migration 0004 left it or as it is now (the other one dropped)."""
    names = {True: "facts_group_lexemes_idx", False: "facts_group_lexemes_0004_idx"}
    with bench.admin() as admin:
        if admin.execute("select to_regclass(%s)", (f"vera.{names[current]}",)).fetchone() == (None,):
            admin.execute(definitions[current])  # type: ignore[arg-type]
        admin.execute(f"drop index if exists vera.{names[not current]}")  # type: ignore[arg-type]
        admin.execute("analyze vera.facts")


def seed(bench: Bench, rng: random.Random, existing: int, batch: int, subjects: int) -> None:
    print(f"seeding {existing:,} facts ...", flush=True)
    seeded = 0
    seed_seconds = 0.0
    while seeded < existing:
        n = min(batch, existing - seeded)
        seed_seconds += publish(bench, claims(rng, n, subjects, None), None)
        seeded += n
    print(f"  seeded at {seeded / seed_seconds:,.0f} claims/s")
    with bench.admin() as admin:
        admin.execute("vacuum analyze")
        facts = admin.execute("select count(*) from vera.facts").fetchone()[0]  # type: ignore[index]
    print(f"database holds {facts:,} facts\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--existing", type=int, default=100_000)
    parser.add_argument("--batch", type=int, default=10_000)
    parser.add_argument("--batches", type=int, default=3)
    parser.add_argument("--subjects", type=int, default=30_000, help="distinct subject names")
    parser.add_argument(
        "--compare",
        choices=("statistics", "fulltext-index"),
        default="statistics",
        help="before/after: the BM25 statistics' triggers off/on, or the facts' text index as of 0004/now",
    )
    parser.add_argument("--no-embeddings", action="store_true", help="only the runs without embeddings")
    args = parser.parse_args()
    index_compared = args.compare == "fulltext-index"
    rng = random.Random(7)
    bench = start("vera_bench_write")
    with bench.app() as conn:
        conn.execute("select vera.declare_predicate(%s, p, 'functional') from unnest(%s::text[]) p",
                     (bench.organisation, [p for p, functional in PREDICATES if functional]))  # fmt: skip
        conn.commit()
    seed(bench, rng, args.existing, args.batch, args.subjects)
    with bench.admin() as admin:
        row = admin.execute("select pg_get_indexdef('vera.facts_group_lexemes_idx'::regclass)").fetchone()
        reference = cpu_reference(admin)
    print(reference)
    definitions = {True: str(row[0]) if row else "", False: index_0004()}
    print(f"{'run':<40}{'claims/s':>12}{'batch s':>10}{'peak server MiB':>18}")
    runs = (
        (("no embeddings", None),)
        if args.no_embeddings
        else (("no embeddings", None), ("384-dim embeddings", 384))
    )
    for label, dims in runs:
        if dims:
            # production state: the group holds vectors and, above 5,000 of
            # them, an HNSW index of its own (vera db maintain) that each
            # insert must update
            publish(bench, claims(rng, args.batch, args.subjects, dims), "synthetic-384")
            build_missing_vector_indexes(bench.server.admin_url(bench.database))
        # before and after in one run: the BM25 statistics' triggers off and
        # on (or the full-text index as of 0004 and now), batch by batch
        # in turn, so the machine's noise hits both alike
        rates: dict[bool, list[float]] = {False: [], True: []}
        peaks = {False: 0.0, True: 0.0}
        for _ in range(args.batches):
            for counted in (False, True):
                if index_compared:
                    fulltext_index(bench, definitions, current=counted)
                else:
                    statistics_triggers(bench, enabled=counted)
                batch = claims(rng, args.batch, args.subjects, dims)
                with peak_server_memory(bench.server) as memory:
                    seconds = publish(bench, batch, "synthetic-384" if dims else None)
                peaks[counted] = max(peaks[counted], memory["peak_mib"])
                rates[counted].append(args.batch / seconds)
        statistics_triggers(bench, enabled=True)
        if index_compared:
            fulltext_index(bench, definitions, current=True)
        for counted in (False, True):
            median = sorted(rates[counted])[len(rates[counted]) // 2]
            after = (
                ("group-word-part index (0005)" if counted else "group-word index (0004)")
                if index_compared
                else (f"statistics {'on' if counted else 'off'}")
            )
            row = f"{label}, {after}"
            print(f"{row:<40}{median:>12,.0f}{args.batch / median:>10.2f}{peaks[counted]:>18,.0f}")


if __name__ == "__main__":
    main()
