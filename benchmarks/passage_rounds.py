"""TimeQA's paragraphs searched by two versions of the passages' lexical rounds in one run.

Reads the TimeQA group that `benchmarks/quality.py --only timeqa` leaves in its database
(vera_bench_quality on the bench server) and runs every answerable question through vera.search
(k = 10, full text only and hybrid) with a git revision's FILES (sql/functions/177_lexical_candidates.sql,
BM25's scoring, the match confidence, stage 1's candidates, stage 2's candidate signals and blend, the
tier authority, vera.search and the hits' details) and
vera.lexical_budget (--base-budget: 250 since issue 31's first pass, 1,000 before), then with this
checkout's, installed in turn in batches of 65 questions so that both see the same load (after a
first batch with each that is not counted, so that both meet warm caches). Prints the CPU reference
before and after, hit@10, MRR@10 and the p50 / p95 of vera.search for each, and how many top 10s
are the same (and how many with the same match confidences, lexical matches and similarities, bit
for bit).

    .venv/bin/python benchmarks/passage_rounds.py [--base main] [--candidates 100] [--limit N]

--synthetic N compares the same way on tenant 0 of the synthetic passages that
`benchmarks/search_latency.py --passages N` built (its queries). It has no judged answers: each
query's exact BM25 top 10 over the tenant's passages stands for them, and each leg prints the share
of it that its top 10 holds (the full-text leg's is what the rounds' cuts give up).

--apply-migration FILE (repeatable) first runs a migration of this checkout on the bench database,
for functions that read what it adds (the base's functions ignore it): a database built before the
migration, such as a synthetic one, need not be rebuilt. It must run twice harmlessly, as
sql/migrations/0019_passage_words.sql does (`add column if not exists`).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import bench_server, cpu_reference
from quality import DATABASE, MINILM_MODEL, VectorCache, mrr, read_timeqa
from search_latency import Corpus, make_passage_queries
from vera_client.adapters.embedders.local_minilm import LocalMiniLMEmbedder
from vera_client.adapters.postgres.embedded import EmbeddedPostgres

ROOT = Path(__file__).resolve().parents[1]
BUDGET = (
    "set role vera_owner; create or replace function vera.lexical_budget(kind vera.item_kind) returns bigint"
    " language sql immutable as $$ select case kind when 'fact' then 250 else {passages} end::bigint $$;"
    " reset role;"
)
SEARCH = (
    "select item_id, match_confidence, lexical_match, similarity"
    " from vera.search(%(query)s, %(embedding)s::vector, 10, groups => %(groups)s,"
    " candidates => %(candidates)s, embedding_model => %(model)s)"
)
BATCH = 65
# A synthetic query's exact BM25 top 10 over the tenant's passages (no judged answers there, so the
# full-text leg is measured against it): every passage holding a query term scored as the rounds
# score it (vera.bm25_passage_score, the statistics and IDFs of vera.search_candidates), equal
# scores by id. It reads every holder of "the" too: about 0.5 s a query at 100,000 passages a tenant.
EXACT_BM25 = """
    with terms as (select vera.query_terms(%(query)s) as terms),
    stats as (
        select array_agg(k.kind) as kinds, array_agg(st.term) as terms, array_agg(st.documents) as documents,
               array_agg(st.tokens) as tokens
          from terms, unnest('{fact,passage}'::vera.item_kind[]) k(kind)
         cross join lateral vera.term_statistics(array[%(group)s], k.kind, terms.terms) st),
    weights as (
        select array_agg(w.term order by w.postings, w.term) as terms,
               array_agg(w.idf order by w.postings, w.term) as idfs, min(w.average_length) as average_length
          from stats, vera.bm25_weights(stats.kinds, stats.terms, stats.documents, stats.tokens) w
         where w.kind = 'passage')
    select c.chunk_id
      from vera.chunks c, weights w
     cross join lateral vera.bm25_passage_score(c.tsv, c.words, w.terms, w.idfs, w.average_length) s
     where c.group_id = %(group)s and c.lifecycle = 'published' and c.tsv @@ vera.any_of(w.terms)
     order by s.score desc, c.chunk_id
     limit 10"""
# the search path's files compared: the tier authority (inlined since issue 31's fourth pass), the
# ranking functions (BM25's scoring, since the third), the lexical rounds, the match confidence
# (inlined since issue 31), stage 2's candidate signals and blend, stage 1's candidates (their
# lexical match) and search itself with the hits' details (since the fourth)
FILES = (
    "sql/functions/130_publish.sql",
    "sql/functions/170_ranking.sql",
    "sql/functions/171_match_confidence.sql",
    "sql/functions/174_passage_lexemes.sql",
    "sql/functions/177_lexical_candidates.sql",
    "sql/functions/178_blend.sql",
    "sql/functions/179_search_candidates.sql",
    "sql/functions/180_search.sql",
)


def count_from_one(text: str) -> int:
    """An argument that counts something (questions, candidates, passages, a budget): 1 or more."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is less than 1")
    return value


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base", default="main", help="the git revision to compare with")
    parser.add_argument(
        "--base-budget",
        type=count_from_one,
        default=250,
        help="the passages' budget at --base (1000 before issue 31)",
    )
    parser.add_argument(
        "--candidates", type=count_from_one, default=100, help="at most 10,000, as vera.search"
    )
    parser.add_argument("--limit", type=count_from_one, help="the first N questions only (a quick run)")
    parser.add_argument(
        "--synthetic",
        type=count_from_one,
        metavar="N",
        help="instead of TimeQA, tenant 0 of the database `search_latency.py --passages N` built"
        " (--limit queries of its kind, 200 by default)",
    )
    parser.add_argument(
        "--eval-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "eval"
    )
    parser.add_argument(
        "--apply-migration",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="a migration of this checkout to run on the bench database first (idempotent)",
    )
    args = parser.parse_args()
    if args.candidates > 10_000:
        parser.error(f"argument --candidates: {args.candidates} is more than vera.search takes (10,000)")
    # a file the base does not have yet (174_passage_lexemes.sql before issue 31's sixth pass) adds
    # nothing: its functions stay as this checkout installs them, and the base calls none of them; a
    # revision that does not exist is an error, not a base of this checkout's files
    known = subprocess.run(  # noqa: S603 (git, a revision the operator names)
        ["git", "rev-parse", "--verify", "--quiet", f"{args.base}^{{commit}}"],  # noqa: S607
        capture_output=True, check=False, cwd=ROOT,
    )  # fmt: skip
    if known.returncode != 0:
        sys.exit(f"passage_rounds.py: --base {args.base} is no commit of this repository")
    base = "\n".join(
        subprocess.run(  # noqa: S603 (git, a revision the operator names)
            ["git", "show", f"{args.base}:{path}"],  # noqa: S607
            capture_output=True, text=True, check=False, cwd=ROOT,
        ).stdout
        for path in FILES
    )  # fmt: skip
    budget = (ROOT / "sql/functions/170_ranking.sql").read_text()
    current = budget[budget.index("create or replace function vera.lexical_budget") :]
    current = current[: current.index("$$;") + 3]
    versions = {
        # the budget after the files (170_ranking.sql defines it too)
        "base": base + "\n" + BUDGET.format(passages=args.base_budget),
        "this checkout": "set role vera_owner; "
        + current
        + " reset role;\n"
        + "\n".join((ROOT / path).read_text() for path in FILES),
    }
    server = bench_server()
    database = f"vera_bench_passages_{args.synthetic}" if args.synthetic else DATABASE
    with psycopg.connect(server.admin_url("postgres"), autocommit=True) as conn:
        if conn.execute("select from pg_database where datname = %s", (database,)).fetchone() is None:
            built_by = (
                f"search_latency.py --passages {args.synthetic}"
                if args.synthetic
                else "quality.py --only timeqa"
            )
            sys.exit(
                f"passage_rounds.py: no database {database} on the bench server:"
                f" run benchmarks/{built_by} first"
            )
    for migration in args.apply_migration:
        with psycopg.connect(server.admin_url(database), autocommit=True) as admin:
            admin.execute(migration.read_text())  # type: ignore[call-overload]
    if args.synthetic:
        database, group, key, questions, vectors, ids = synthetic(server, args.synthetic, args.limit or 200)
        compare(args, server, versions=versions, database=database, group=group, key=key, questions=questions,
                vectors=vectors, model=None, ids=ids)  # fmt: skip
        return
    with psycopg.connect(server.admin_url(DATABASE), autocommit=True) as admin:
        row = admin.execute(
            "select g.group_id, m.principal_id from vera.groups g join vera.memberships m using (group_id)"
            " where g.name = 'TimeQA (MiniLM)' and m.role = 'owner' limit 1"
        ).fetchone()
        if row is None:
            raise SystemExit(f"no TimeQA group in {DATABASE}: run benchmarks/quality.py --only timeqa first")
        group, owner = row
        key = admin.execute(
            "select api_key from vera.issue_api_key(%s, 'passage rounds', null)", (owner,)
        ).fetchone()
        assert key is not None
        ids = dict(
            admin.execute(
                "select c.chunk_id, e.external_id from vera.chunks c join vera.episodes e"
                " on e.group_id = c.group_id and e.episode_id = c.episode_id where c.group_id = %s",
                (group,),
            ).fetchall()
        )
        _, questions = read_timeqa(args.eval_dir / "timeqa")
        questions = questions[: args.limit] if args.limit else questions
        texts = [q for q, _ in questions]
        embedded = VectorCache(LocalMiniLMEmbedder()).embed(texts, "questions").vectors
    compare(args, server, versions=versions, database=DATABASE, group=group, key=key[0], questions=questions,
            vectors=[v.tolist() for v in embedded], model=MINILM_MODEL, ids=ids)  # fmt: skip


def synthetic(
    server: EmbeddedPostgres, passages: int, count: int
) -> tuple[str, str, str, list[tuple[str, set[str]]], list[str], dict[object, str]]:
    """The database `search_latency.py --passages N` leaves: tenant 0's group and key, and count of its
    queries, each with its exact BM25 top 10 standing for the judged answers it has not."""
    database = f"vera_bench_passages_{passages}"
    admin_url = server.admin_url(database)

    class Admin:
        def admin(self) -> psycopg.Connection:
            return psycopg.connect(admin_url, autocommit=True)

    with psycopg.connect(admin_url, autocommit=True) as admin:
        row = admin.execute("select group_id, api_key from public.bench_corpus where position = 0").fetchone()
        if row is None:
            raise SystemExit(f"no corpus in {database}: run search_latency.py --passages {passages} first")
        group, key = row
        ids = {r[0]: str(r[0]) for r in admin.execute("select chunk_id from vera.chunks where group_id = %s",
                                                         (group,))}  # fmt: skip
        queries = make_passage_queries(Admin(), Corpus([group], [key]), count)  # type: ignore[arg-type]
        # each query's exact BM25 top 10 stands for its judged answers (the leg that measures it is
        # full text: the hybrid leg's hit@10 and MRR against it mean little)
        began = time.perf_counter()
        exact = [
            {str(r[0]) for r in admin.execute(EXACT_BM25, {"query": q, "group": group}).fetchall()}
            for q, _ in queries
        ]
        print(
            f"exact BM25 top 10 of {len(queries)} queries in {time.perf_counter() - began:.0f} s", flush=True
        )
    return (
        database,
        group,
        key,
        list(zip([q for q, _ in queries], exact, strict=True)),
        [v for _, v in queries],
        ids,
    )


def compare(
    args: argparse.Namespace,
    server: EmbeddedPostgres,
    *,
    versions: dict[str, str],
    database: str,
    group: str,
    key: str,
    questions: list[tuple[str, set[str]]],
    vectors: list[object] | list[str],
    model: str | None,
    ids: dict[object, str],
) -> None:
    """Every question, full text only and hybrid, with each version installed in turn."""
    texts = [q for q, _ in questions]
    with psycopg.connect(server.admin_url(database), autocommit=True) as admin:
        # the machine's speed before and after: a pair's figures compare with each other, and with
        # another run's only as far as these agree
        speed_before = cpu_reference(admin)
        legs = ("full text", "hybrid")
        elapsed: dict[tuple[str, str], list[float]] = {(v, leg): [] for v in versions for leg in legs}
        ranked: dict[tuple[str, str], dict[int, list[str]]] = {(v, leg): {} for v in versions for leg in legs}
        # each hit's match confidence, lexical match and similarity, bit for bit (its score holds its
        # recency, which moves with the clock)
        scored: dict[tuple[str, str], dict[int, list[tuple[object, ...]]]] = {
            (v, leg): {} for v in versions for leg in legs
        }
        # first a batch with each version that is not counted, so that both meet warm caches: on a server
        # just started, the version that ran first was the slower with the same functions (7.1 against
        # 5.1 ms at p50 over 40 queries)
        for batch, first in [(-1, 0), *enumerate(range(0, len(texts), BATCH))]:
            order = list(versions) if batch % 2 == 0 else list(reversed(versions))
            for version in order:
                admin.execute(versions[version])  # type: ignore[call-overload]
                with psycopg.connect(server.app_url(database)) as app:
                    app.execute("select vera.authenticate(%s)", (key,))
                    for i in range(first, min(first + BATCH, len(texts))):
                        for leg in legs:
                            hybrid = leg == "hybrid"
                            params = {
                                "query": texts[i], "embedding": vectors[i] if hybrid else None,
                                "model": model if hybrid else None, "groups": [group],
                                "candidates": args.candidates,
                            }  # fmt: skip
                            began = time.perf_counter()
                            rows = app.execute(SEARCH, params).fetchall()
                            if batch < 0:
                                continue
                            elapsed[version, leg].append((time.perf_counter() - began) * 1000)
                            ranked[version, leg][i] = [ids[r[0]] for r in rows]
                            scored[version, leg][i] = [tuple(r) for r in rows]
                    app.rollback()
        admin.execute(versions["this checkout"])  # type: ignore[call-overload]
        speed_after = cpu_reference(admin)
    print(f"before: {speed_before}\nafter: {speed_after}")
    report(
        args.base, args.candidates, questions, elapsed, ranked,
        scored=scored, synthetic=database if args.synthetic else None,
    )  # fmt: skip


def report(
    base: str,
    candidates: int,
    questions: list[tuple[str, set[str]]],
    elapsed: dict[tuple[str, str], list[float]],
    ranked: dict[tuple[str, str], dict[int, list[str]]],
    *,
    scored: dict[tuple[str, str], dict[int, list[tuple[object, ...]]]],
    synthetic: str | None = None,
) -> None:
    legs = ("full text", "hybrid")
    texts = [q for q, _ in questions]
    corpus = f"{synthetic}, tenant 0" if synthetic else "TimeQA"
    print(f"{corpus}, {len(texts)} questions, k = 10, candidates {candidates}; base {base}")
    # a synthetic corpus has no judged answers: its queries' exact BM25 top 10s stand for them, and
    # the share of those a leg's top 10 holds is what the rounds' cuts gave up
    quality = "recall@10 of the exact BM25 top 10" if synthetic else "hit@10 | MRR@10"
    print(f"| lexical rounds | leg | {quality} | vera.search p50 | p95 |")
    print("|---|---|---|---|---|" + ("" if synthetic else "---|"))
    for (version, leg), values in elapsed.items():
        values.sort()
        found = ranked[version, leg]
        if synthetic:
            measured = statistics.mean(
                len(set(found[i][:10]) & e) / max(1, len(e)) for i, (_, e) in enumerate(questions)
            )
            shown = f"{measured:.3f}"
        else:
            hit = statistics.mean(float(bool(set(found[i][:10]) & e)) for i, (_, e) in enumerate(questions))
            reciprocal = statistics.mean(
                mrr(found[i], dict.fromkeys(e, 1)) for i, (_, e) in enumerate(questions)
            )
            shown = f"{hit:.3f} | {reciprocal:.3f}"
        print(f"| {version} | {leg} | {shown} | {statistics.median(values):.1f} ms "
              f"| {values[int(0.95 * len(values))]:.1f} ms |")  # fmt: skip
    same = sum(
        ranked["base", leg][i] == ranked["this checkout", leg][i] for leg in legs for i in range(len(texts))
    )
    exact = sum(
        scored["base", leg][i] == scored["this checkout", leg][i] for leg in legs for i in range(len(texts))
    )
    print(f"the same top 10: {same} of {len(legs) * len(texts)}; with the same match confidence,"
          f" lexical match and similarity to the last bit: {exact}")  # fmt: skip


if __name__ == "__main__":
    main()
