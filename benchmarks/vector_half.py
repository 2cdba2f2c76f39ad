"""Stage 1's vector half of two versions, alternated call by call in one session.

A git revision's `vera.search_candidates` (sql/functions/179_search_candidates.sql) is installed
beside this checkout's under another name (vera.search_candidates_base), and each of tenant 0's
queries over the synthetic passages that `benchmarks/search_latency.py --passages N` built is run
through both, vector half only (no words: the lexical rounds do not run), in random order, three
times. Whole searches (`benchmarks/passage_rounds.py --synthetic N`) measure the vector half among
~20 other statements, whose noise hides a change of a few tenths of a millisecond; here each call is
the vector statements alone, next to its pair. Prints the CPU reference, the p50 and mean of each
version, and how many calls gave both the same candidate list (ids in rank order). The base's copy
is dropped at the end.

    .venv/bin/python benchmarks/vector_half.py --passages 100000 [--base main] [--queries 200]
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import cpu_reference
from search_latency import build_passages, make_passage_queries

ROOT = Path(__file__).resolve().parents[1]
FILE = "sql/functions/179_search_candidates.sql"
VERSIONS = {"base": "vera.search_candidates_base", "this checkout": "vera.search_candidates"}
# the vector half only: no terms, the tenant's group for vectors, n = 40 (search's default for k = 10)
CALL = (
    "select count(*), array_agg(item_id order by vector_rank, item_id)::text"
    " from {function}(%s::text[], '{{}}'::text[], %s::text[], %s::vector, now(), null, 40, null)"
)
ROUNDS = 3


def base_source(revision: str) -> str:
    """The revision's 179 under another name (every mention of the function is renamed); a revision
    that is no commit here, or has no such file, ends the benchmark saying so."""
    shown = subprocess.run(  # noqa: S603 (git, a revision the operator names)
        ["git", "show", f"{revision}:{FILE}"],  # noqa: S607
        capture_output=True, text=True, check=False, cwd=ROOT,
    )  # fmt: skip
    if shown.returncode != 0:
        sys.exit(f"vector_half.py: --base {revision}: no {FILE} at that revision of this repository")
    return shown.stdout.replace("vera.search_candidates(", "vera.search_candidates_base(")


def drop_base(admin: psycopg.Connection) -> None:
    """Drops every copy of the base's function (a plain DROP FUNCTION refuses a name with two)."""
    admin.execute(
        "do $$ declare f regprocedure; begin"
        " for f in select p.oid::regprocedure from pg_proc p"
        " where p.proname = 'search_candidates_base' and p.pronamespace = 'vera'::regnamespace"
        " loop execute format('drop function %s', f); end loop; end $$"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--passages", type=int, required=True, help="the synthetic corpus (built if missing)")
    parser.add_argument("--base", default="main", help="the git revision to compare with (default: main)")
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    if args.queries < 1 or args.passages < 1:
        parser.error("--passages and --queries must be at least 1")
    source = base_source(args.base)
    bench, corpus, _ = build_passages(args.passages, False)
    queries = make_passage_queries(bench, corpus, args.queries)
    group = [corpus.groups[0]]
    with bench.admin() as admin:
        drop_base(admin)  # a copy an interrupted run left, whatever its signature
        try:
            admin.execute(source)  # type: ignore[arg-type]
        except psycopg.Error as error:
            sys.exit(f"vector_half.py: --base {args.base}: its {FILE} does not install here: {error}")
        admin.execute((ROOT / FILE).read_text())  # type: ignore[arg-type]
        speed = cpu_reference(admin)
    elapsed: dict[str, list[float]] = {name: [] for name in VERSIONS}
    same = 0
    try:
        with psycopg.connect(bench.server.admin_url(bench.database)) as conn:
            # as tenant 0's owner: the function reads the caller's groups from the authentication
            conn.execute("select vera.authenticate(%s)", (corpus.keys[0],))
            for _ in range(ROUNDS):
                for _, vector in queries:
                    order = list(VERSIONS)
                    random.shuffle(order)
                    lists = {}
                    for name in order:
                        began = time.perf_counter()
                        try:
                            lists[name] = conn.execute(
                                CALL.format(function=VERSIONS[name]),  # type: ignore[arg-type]
                                (group, group, vector),
                            ).fetchone()
                        except psycopg.Error as error:
                            which = args.base if name == "base" else "this checkout"
                            sys.exit(f"vector_half.py: {which}: vera.search_candidates fails here: {error}")
                        elapsed[name].append((time.perf_counter() - began) * 1000)
                    same += lists["base"] == lists["this checkout"]
            conn.rollback()
    finally:
        with bench.admin() as admin:
            drop_base(admin)
    print(speed)
    print(f"{bench.database}, tenant 0, {len(queries)} queries x {ROUNDS}, vector half only, n = 40;"
          f" base {args.base}")  # fmt: skip
    print("| version | p50 | mean |\n|---|---|---|")
    for name, times in elapsed.items():
        print(f"| {name} | {statistics.median(times):.2f} ms | {statistics.mean(times):.2f} ms |")
    print(f"the same candidate list: {same} of {len(queries) * ROUNDS}")


if __name__ == "__main__":
    main()
