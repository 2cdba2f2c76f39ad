"""Calibration from votes (issue 30): does a stream of votes move the blend toward the best
weights, and never below where it started by more than noise?

The development set is SciFact (BEIR test split: 5,183 abstracts, 300 claims with graded
relevance, ../shared/eval/scifact). Each abstract is one passage of one group, written through
the SQL API as ingestion writes it, full text only (no embedder: the weights act on the blend,
whatever stage 1 found). The abstracts are spread at random over two sources, tier 1 and tier 2
(authority 1.00 and 0.85), and each is observed a random 0 to 180 days ago (the recency signal
spans 1 to 0.016): the two signals vary from passage to passage but, by construction, say
nothing about relevance, so the ideal weights give them little, the defaults give them 0.24 of
the blend, and the calibration has something to learn. `--uniform` writes every abstract in one
source on one day instead: then only relevance and the votes' feedback signal vary.

The claims are shuffled (seeded) into voted-on queries and held-out ones. The vote stream is a
simulated user: pick a voted-on query at random, search it through VeraClient.search with the
group's active weights (k = 10), look at the first `--examine` hits and vote on each through
VeraClient.feedback: up when the qrels call the abstract relevant, down when not, each vote
flipped with probability `--noise`. At each checkpoint (a number of votes cast) the group is
calibrated through VeraClient.calibrate, the call `vera weights calibrate` and the worker's
schedule make (vera.run_calibration: the mean-difference rule, the floor and step guards, the
group's min_samples), as one scheduled run per checkpoint would; then every query is searched
again with k = 100 over all its candidates and scored.

Printed per checkpoint: the weights, nDCG@10 on voted-on and on held-out queries, the change
from the start with two standard errors of the per-query paired difference (the noise), and
nDCG@10 of the ideal weights: the best of a grid (step 0.05) over the shares of relevance,
authority, recency and feedback (the signals that vary here), an oracle fitted on the very
queries it is scored on, re-blended from the signals each search returned, with the feedback
counts of that moment. The re-blend of the active weights is checked against the live ranking.

    .venv/bin/python benchmarks/calibration.py [--votes 400] [--checkpoints 4] [--voted 100]
        [--held-out 100] [--examine 5] [--noise 0.1] [--uniform] [--seed 7] [--eval-dir DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import math
import random
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Bench, cpu_reference, start
from quality import Passage, create_tenant, ndcg, passage_ids, read_scifact
from vera_client.adapters.postgres.executor import begin, prepare
from vera_client.api import sources as sources_api
from vera_client.api.hits import SIGNAL_NAMES
from vera_client.client import VeraClient
from vera_client.domain.callers import ApiKey
from vera_client.domain.time_scopes import EXTRACTION_VERSION, time_scope

DATABASE = "vera_bench_calibration"
K, CANDIDATES = 100, 100
BATCH = 200  # passages per ingestion transaction
MAX_AGE_DAYS = 180
GRID_STEP = 0.05
# the signals that vary on this set (verification and confidence are alike for every passage,
# the period is asked of none): the ideal is searched over their shares
VARYING = ("relevance", "authority", "recency", "feedback")


@dataclass(frozen=True, kw_only=True, slots=True)
class Ranked:
    """One query's candidates as the live search ranked them: document ids, and the blend's
    signals per candidate (rows, in SIGNAL_NAMES order; period 0 when not asked)."""

    docs: list[str]
    signals: np.ndarray


def load(
    bench: Bench, key: str, group: str, passages: Sequence[Passage], *, uniform: bool, seed: int
) -> float:
    """Writes each passage as one episode with one chunk, as the owner, in a tier-1 or a tier-2
    source at random, observed a random 0 to MAX_AGE_DAYS days ago (uniform: all in one tier-2
    source, observed now). Returns the seconds spent."""
    rng = random.Random(seed)
    now = datetime.now(UTC)
    caller = ApiKey(key)
    with prepare(psycopg.connect(bench.server.app_url(bench.database))) as conn:
        with begin(conn, caller) as tx:
            tiers = (2,) if uniform else (1, 2)
            sources = [
                tx.run(sources_api.register_source(group, "dataset", f"tier {tier}", tier, token_env=None,
                                                   config={}, uri=None))
                for tier in tiers
            ]  # fmt: skip
        started = time.perf_counter()
        for first in range(0, len(passages), BATCH):
            with begin(conn, caller) as tx:
                for passage in passages[first : first + BATCH]:
                    source = rng.choice(sources)
                    age = timedelta(0) if uniform else timedelta(days=rng.uniform(0, MAX_AGE_DAYS))
                    episode = tx.run(sources_api.record_episode(
                        group, source, passage.external_id,
                        hashlib.sha256(passage.embedded_text.encode()).digest(),
                        object_key=None, mime="text/plain", observed_at=now - age,
                        title=passage.heading, uri=None,
                    ))  # fmt: skip
                    chunk: dict[str, object] = {"text": passage.text,
                                                "time_scope": time_scope(passage.text, passage.heading),
                                                "time_scope_version": EXTRACTION_VERSION}  # fmt: skip
                    if passage.heading:
                        chunk["heading"] = passage.heading
                    tx.run(sources_api.store_chunks_call(group, episode.episode_id, [chunk], None))
        return time.perf_counter() - started


def rank_all(
    vera: VeraClient, group: str, queries: Sequence[tuple[str, str]], ids: dict[Any, str]
) -> list[Ranked]:
    """Every query searched live (the group's active weights), all its candidates returned."""
    ranked = []
    for _, text in queries:
        hits = vera.search(text, groups=[group], k=K, candidates=CANDIDATES)
        rows = [[getattr(h.signals, name) or 0.0 for name in SIGNAL_NAMES] for h in hits]
        signals = np.asarray(rows, dtype=np.float64).reshape(-1, len(SIGNAL_NAMES))
        ranked.append(Ranked(docs=[ids[h.item_id] for h in hits], signals=signals))
    return ranked


def ndcgs(ranked: Ranked, truth: dict[str, int], points: np.ndarray) -> np.ndarray:
    """nDCG@10 of the query's candidates ordered by the blend of each weight set (the columns of
    points): scores as the blend keeps them (real), ties by relevance (the blend's next key, the
    fused score, orders alike), then by the live order."""
    count = len(ranked.docs)
    if count == 0:
        return np.zeros(points.shape[1])
    totals = (ranked.signals @ points).astype(np.float32).T  # weight sets x candidates
    relevance = np.broadcast_to(ranked.signals[:, 0], totals.shape)
    position = np.broadcast_to(np.arange(count), totals.shape)
    order = np.lexsort((position, -relevance, -totals), axis=-1)[:, :10]
    gains = np.asarray([truth.get(doc, 0) for doc in ranked.docs], dtype=np.float64)
    discounts = 1 / np.log2(np.arange(2, 12))
    best = sorted(truth.values(), reverse=True)[:10]
    ideal_dcg = sum(g * discounts[i] for i, g in enumerate(best))
    return (
        (gains[order] * discounts[: order.shape[1]]).sum(axis=1) / ideal_dcg
        if ideal_dcg
        else np.zeros(len(order))
    )


def as_vector(weights: dict[str, Any]) -> np.ndarray:
    return np.asarray([float(weights.get(name) or 0.0) for name in SIGNAL_NAMES])


def grid() -> np.ndarray:
    """Every split of the blend over the varying signals in steps of GRID_STEP, as columns."""
    steps = round(1 / GRID_STEP)
    points = []
    for cut in itertools.combinations(range(steps + len(VARYING) - 1), len(VARYING) - 1):
        bounds = (-1, *cut, steps + len(VARYING) - 1)
        shares = [(bounds[i + 1] - bounds[i] - 1) / steps for i in range(len(VARYING))]
        points.append(as_vector(dict(zip(VARYING, shares, strict=True))))
    # relevance-heavy sets first: of sets that rank alike (a signal equal for every candidate
    # weighs nothing), the ideal shown is the one that gives relevance the most
    points.sort(key=lambda w: -w[0])
    return np.stack(points, axis=1)


def ideal(
    ranked: Sequence[Ranked], truth: Sequence[dict[str, int]], points: np.ndarray
) -> tuple[float, np.ndarray]:
    """The best mean nDCG@10 over the weight sets, and that set."""
    means = np.mean([ndcgs(r, t, points) for r, t in zip(ranked, truth, strict=True)], axis=0)
    best = int(np.argmax(means))
    return float(means[best]), points[:, best]


def change(now: Sequence[float], then: Sequence[float]) -> tuple[float, float]:
    """Mean per-query difference and two standard errors of it."""
    diffs = [a - b for a, b in zip(now, then, strict=True)]
    return statistics.mean(diffs), 2 * statistics.stdev(diffs) / math.sqrt(len(diffs))


def shown(weights: np.ndarray, names: Sequence[str] = VARYING) -> str:
    return " ".join(f"{name[:3]} {weights[SIGNAL_NAMES.index(name)]:.2f}" for name in names)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--votes", type=int, default=400, help="votes cast in all (default 400)")
    parser.add_argument("--checkpoints", type=int, default=4,
                        help="calibrations, evenly spread over the votes (default 4)")  # fmt: skip
    parser.add_argument("--voted", type=int, default=100, help="queries the votes are cast on (default 100)")
    parser.add_argument("--held-out", type=int, default=100, help="queries never voted on (default 100)")
    parser.add_argument("--examine", type=int, default=5, help="hits voted on per search (default 5)")
    parser.add_argument("--noise", type=float, default=0.1, help="share of votes flipped (default 0.1)")
    parser.add_argument("--uniform", action="store_true", help="one source, one day: no noisy signals")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--eval-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "eval"
    )
    return parser.parse_args()


@dataclass(kw_only=True, slots=True)
class Stream:
    """The simulated user: votes on the first `examine` hits of a random voted-on query, as the
    qrels judge them, a share `noise` of them flipped."""

    vera: VeraClient
    group: str
    queries: Sequence[tuple[str, str]]
    qrels: dict[str, dict[str, int]]
    ids: dict[Any, str]
    rng: random.Random
    examine: int
    noise: float
    cast: int = 0

    def vote_until(self, total: int) -> None:
        while self.cast < total:
            qid, text = self.rng.choice(self.queries)
            for hit in self.vera.search(text, groups=[self.group], k=self.examine):
                if self.cast >= total:
                    break
                relevant = self.qrels[qid].get(self.ids[hit.item_id], 0) > 0
                vote = "up" if relevant != (self.rng.random() < self.noise) else "down"
                self.vera.feedback("passage", hit.item_id, text, vote, groups=[self.group])
                self.cast += 1


def measure(
    stream: Stream, queries: Sequence[tuple[str, str]], start: list[float] | None, points: np.ndarray
) -> dict[str, Any]:
    """The queries searched live with the active weights: per-query nDCG@10, its mean, the change
    from start (±2 SE), the ideal of the grid, and how far the re-blend is from the live ranking."""
    weights = as_vector(stream.vera.active_weights(stream.group))
    truth = [stream.qrels[q] for q, _ in queries]
    ranked = rank_all(stream.vera, stream.group, queries, stream.ids)
    live = [ndcg(r.docs, t) for r, t in zip(ranked, truth, strict=True)]
    again = [float(ndcgs(r, t, weights[:, None])[0]) for r, t in zip(ranked, truth, strict=True)]
    return {
        "weights": weights, "per_query": live, "mean": statistics.mean(live),
        "change": change(live, start or live), "ideal": ideal(ranked, truth, points),
        "gap": max(abs(a - b) for a, b in zip(live, again, strict=True)),
    }  # fmt: skip


def report(rows: Sequence[dict[str, Any]]) -> None:
    print(f"\n| votes | weights ({', '.join(VARYING)}) | nDCG@10 voted-on | Δ vs start (±2 SE) |"
          " ideal, voted-on | nDCG@10 held-out | Δ vs start (±2 SE) | ideal, held-out |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        cells = [str(row["votes"]), f"{shown(row['voted']['weights'])} ({row['note']})"]
        for name in ("voted", "held"):
            delta, noise = row[name]["change"]
            best, at = row[name]["ideal"]
            cells += [f"{row[name]['mean']:.3f}", f"{delta:+.3f} ± {noise:.3f}", f"{best:.3f} ({shown(at)})"]
        print("| " + " | ".join(cells) + " |")
    worst = min(sum(row[name]["change"]) for row in rows[1:] for name in ("voted", "held"))
    gap = max(row[name]["gap"] for row in rows for name in ("voted", "held"))
    print(f"\nnever below the start by more than noise: {'yes' if worst >= 0 else 'NO'}"
          f" (lowest Δ + 2 SE {worst:+.3f}); the re-blend of the active weights against"
          f" live nDCG@10: largest gap {gap:.2g}")  # fmt: skip


def main() -> None:
    args = arguments()
    rng = random.Random(args.seed)
    passages, queries, qrels = read_scifact(args.eval_dir / "scifact" / "beir_test")
    rng.shuffle(queries)
    sets = {"voted": queries[: args.voted], "held": queries[args.voted : args.voted + args.held_out]}
    bench = start(DATABASE)
    with bench.admin() as conn:
        print(cpu_reference(conn))
    group, key = create_tenant(bench, "Calibration")
    loaded = load(bench, key, group, passages, uniform=args.uniform, seed=args.seed)
    layout = "one source, one day" if args.uniform else "tiers 1/2 and ages 0-180 days at random"
    print(f"SciFact: {len(passages):,} abstracts loaded in {loaded:.0f} s ({layout}); {args.voted} voted-on"
          f" and {args.held_out} held-out queries; {args.votes} votes, {args.examine} examined per search,"
          f" {args.noise:.0%} flipped; seed {args.seed}", flush=True)  # fmt: skip
    points = grid()
    began = time.perf_counter()
    rows: list[dict[str, Any]] = []
    with VeraClient(bench.server.app_url(bench.database), ApiKey(key)) as vera:
        stream = Stream(vera=vera, group=group, queries=sets["voted"], qrels=qrels,
                        ids=passage_ids(bench, [group]), rng=rng, examine=args.examine,
                        noise=args.noise)  # fmt: skip
        for mark in [0] + [round(args.votes * (i + 1) / args.checkpoints) for i in range(args.checkpoints)]:
            stream.vote_until(mark)
            note = "defaults"
            if mark:
                calibration = vera.calibrate(group)
                note = "kept" if calibration.persisted else f"not kept: {calibration.sample_count} votes"
            row: dict[str, Any] = {"votes": mark, "note": note}
            for name, chosen in sets.items():
                row[name] = measure(stream, chosen, rows[0][name]["per_query"] if rows else None, points)
            rows.append(row)
            print(f"  {mark} votes: {shown(row['voted']['weights'])} ({note}); nDCG@10 voted-on"
                  f" {row['voted']['mean']:.3f}, held-out {row['held']['mean']:.3f}"
                  f" [{time.perf_counter() - began:.0f} s]", flush=True)  # fmt: skip
    report(rows)


if __name__ == "__main__":
    main()
