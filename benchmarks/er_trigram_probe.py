"""Cost of entity resolution's trigram rung (vera.similar_aliases) per new
name, against a group of 1,000 and 10,000 aliases (issue 32).

Loads N aliases into the bench organisation, long names (SciFact titles with
" (n)" as benchmarks/connectors.py numbers its Confluence pages) or short ones
(doc-n, the folder's subjects), analyses, then times probes of names the
group does not hold (new titles; titles with one word changed, which link;
doc-n past N) through vera.similar_aliases, and prints the median and the
plan of the probe's query as the function runs it (auto_explain, nested
statements). Each probe's answer is printed as a digest, so two runs (main's
SQL and this branch's) can be compared: the same digest is the same merges.

    .venv/bin/python benchmarks/er_trigram_probe.py [--sizes 1000,10000] [--probes 40]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import sys
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Bench, cpu_reference, start
from ingest_throughput import documents


def load(bench: Bench, names: list[str]) -> None:
    with bench.admin() as admin:
        admin.execute("delete from vera.entity_aliases where group_id = %s", (bench.organisation,))
        admin.execute("delete from vera.entities where group_id = %s", (bench.organisation,))
        admin.execute(
            "with e as (insert into vera.entities (group_id, canonical_name) "
            "           select %s, n from unnest(%s::text[]) n returning entity_id, canonical_name) "
            "insert into vera.entity_aliases (group_id, entity_id, alias, alias_norm) "
            "select %s, e.entity_id, e.canonical_name, vera.normalize_name(e.canonical_name) from e "
            "on conflict do nothing",
            (bench.organisation, names, bench.organisation),
        )
        admin.execute("analyze vera.entity_aliases, vera.entities")


def probe(bench: Bench, names: list[str]) -> tuple[list[float], str, str]:
    """Per-name milliseconds, a digest of the answers, the plan of the last probe."""
    timings: list[float] = []
    answers: list[str] = []
    with psycopg.connect(bench.server.admin_url(bench.database)) as conn:
        threshold = conn.execute(
            "select vera.setting(%s, 'er.trigram_link')", (bench.organisation,)
        ).fetchone()
        assert threshold is not None
        for name in names:
            conn.execute("select vera.authenticate(%s)", (bench.api_key,))
            started = time.perf_counter()
            row = conn.execute(
                "select a.alias_norm, s.score from vera.similar_aliases(array[1], array[%s], "
                "array[vera.normalize_name(%s)], array[%s::float8]) s "
                "join vera.entity_aliases a on a.group_id = %s and a.entity_id = s.entity_id",
                (bench.organisation, name, threshold[0], bench.organisation),
            ).fetchone()
            timings.append((time.perf_counter() - started) * 1000)
            answers.append(f"{name}->{row[0] if row else None}")
            conn.rollback()
        # the plan the function's EXECUTE got, for the last name
        conn.execute("load 'auto_explain'")
        conn.execute("set auto_explain.log_min_duration = 0")
        conn.execute("set auto_explain.log_nested_statements = on")
        conn.execute("set auto_explain.log_analyze = on")
        conn.execute("set client_min_messages = log")
        conn.execute("set auto_explain.log_level = notice")
        plans: list[str] = []
        conn.add_notice_handler(lambda d: plans.append(d.message_primary or ""))
        conn.execute("select vera.authenticate(%s)", (bench.api_key,))
        conn.execute(
            "select * from vera.similar_aliases(array[1], array[%s], array[vera.normalize_name(%s)], "
            "array[%s::float8])",
            (bench.organisation, names[-1], threshold[0]),
        )
        conn.rollback()
    plan = next((p for p in plans if "entity_aliases" in p and "similar_aliases" not in p.split("\n")[0]), "")
    digest = hashlib.sha256("\n".join(answers).encode()).hexdigest()[:12]
    return timings, digest, plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000", help="aliases in the group (comma-separated)")
    parser.add_argument("--probes", type=int, default=40, help="names probed per size and kind")
    parser.add_argument("--plans", action="store_true", help="print the probe query's plan")
    options = parser.parse_args()
    sizes = [int(s) for s in options.sizes.split(",")]
    bench = start("vera_bench_er_probe")
    texts = [title for title, _ in documents(5183)]
    with bench.admin() as admin:
        print(cpu_reference(admin))
    print("| aliases | names | probes | linked | median ms | max ms | answers |")
    print("|---|---|---|---|---|---|---|")
    for size in sizes:
        titles = [f"{texts[n % len(texts)]} ({n})" if n >= len(texts) else texts[n] for n in range(size)]
        held = set(titles)
        # half new titles (nothing links), half a held title with one word changed (links at 0.85)
        fresh = [t for t in texts if t not in held][: options.probes // 2]
        if len(fresh) < options.probes // 2:
            fresh += [f"{t} ({n + 20000})" for n, t in enumerate(texts[: options.probes // 2 - len(fresh)])]
        edited = [t.replace(" the ", " a ", 1) if " the " in t else t + "s" for t in titles[1 :: size // 20]]
        longs = fresh + edited[: options.probes - len(fresh)]
        shorts = [f"doc-{size + n}" for n in range(options.probes)]
        for kind, names, probes in [
            ("long", titles, longs),
            ("short", [f"doc-{n}" for n in range(size)], shorts),
        ]:
            load(bench, names)
            timings, digest, plan = probe(bench, probes)
            linked = linked_count(bench, probes)
            print(f"| {size:,} | {kind} | {len(probes)} | {linked} | {statistics.median(timings):.2f} "
                  f"| {max(timings):.2f} | {digest} |")  # fmt: skip
            if options.plans:
                print("\n```\n" + plan.strip() + "\n```\n")


def linked_count(bench: Bench, names: list[str]) -> int:
    with psycopg.connect(bench.server.admin_url(bench.database)) as conn:
        threshold = conn.execute(
            "select vera.setting(%s, 'er.trigram_link')", (bench.organisation,)
        ).fetchone()
        assert threshold is not None
        conn.execute("select vera.authenticate(%s)", (bench.api_key,))
        row = conn.execute(
            "select count(*) from vera.similar_aliases(%s, %s, %s, %s)",
            (
                list(range(len(names))),
                [bench.organisation] * len(names),
                [conn.execute("select vera.normalize_name(%s)", (n,)).fetchone()[0] for n in names],  # type: ignore[index]
                [threshold[0]] * len(names),
            ),
        ).fetchone()
        conn.rollback()
    return int(row[0]) if row else 0


if __name__ == "__main__":
    main()
