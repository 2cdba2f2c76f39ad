"""Match confidence (issue 28): fits the match model's coefficients and measures them.

Four corpora from ../shared/eval, each in a tenant of its own with the local MiniLM
embedder: SciFact (the abstracts its queries cite plus the first --scifact-docs others),
XQuAD English and Vietnamese (240 paragraphs each), TimeQA train (the paragraphs of the
first --timeqa-pages pages). Each dataset's questions (at most --queries) are asked of
their own corpus (in-corpus: one of the expected documents is the answer) and of another
dataset's corpus (out-of-corpus: nothing there answers), by vera.search as a search runs
by default, with every candidate returned (k = candidates = 40), in three kinds of search:
hybrid (words and vector), lexical (words) and vector (vector).

Fit: the questions of even position; the best hit of each search (as the installed
coefficients rank) a (lexical_match, similarity, answers?) row; one logistic model per kind
of search by maximum likelihood (Newton's method, a small ridge); the hybrid model along a
fixed direction (HYBRID_DIRECTION, below), its free fit printed beside it. The coefficients print as
vera.match_calibration() holds them; the best hit depends a little on them, so a second run
with the printed ones installed checks that they are a fixed point.

Measure: the questions of odd position (held out), with the coefficients the database
runs (sql/functions/171_match_confidence.sql; the script says whether they are the fit):
the AUROC of the top hit's match confidence, in-corpus against out-of-corpus questions;
the reliability of the top hits' confidence (expected calibration error, 10 bins);
precision and recall of no_good_match (the best hit below vera.good_match_threshold())
as a detector of out-of-corpus questions; and how often a top 10 holds tied scores.

    .venv/bin/python benchmarks/confidence.py [--queries N] [--scifact-docs N] [--timeqa-pages N]

Bounded: about 5 minutes with the defaults once the vectors are cached (quality.py's
cache in /tmp); the first run embeds about 3,500 paragraphs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import Bench, start
from quality import (
    Passage,
    VectorCache,
    app,
    create_tenant,
    load,
    passage_ids,
    read_scifact,
    read_timeqa,
    read_xquad,
)
from vera_client.adapters.embedders.local_minilm import MODEL as MINILM_MODEL
from vera_client.adapters.embedders.local_minilm import LocalMiniLMEmbedder
from vera_client.adapters.postgres.provisioning import build_missing_vector_indexes

DATABASE = "vera_bench_confidence"
POOL = 40  # every candidate of a search at its default pool (k = 10: 4 * k, at least 40)
KINDS = ("hybrid", "lexical", "vector")
SEARCH = (
    "select item_id, score, match_confidence, lexical_match, similarity from vera.search(%(query)s,"
    " %(embedding)s::vector, %(k)s, groups => %(groups)s, candidates => %(k)s, embedding_model => %(model)s)"
)
# The hybrid model's direction, (lexical match, similarity): similarity weighs twice the
# lexical match, and only the intercept and the scale along it are fitted (Platt scaling). A
# lexical match reads the searched groups' statistics, which a small group makes unreliable
# (in a memory of 24 facts a question's "which" and "does" are words it never holds and count
# the IDF of the rarest word), while the development corpora are large and their questions
# share many words with their answers: fitted freely, the weights follow the corpora (about
# 8 for the lexical match, 2.7 for similarity) and a small memory's right answers score low.
HYBRID_DIRECTION = (1.0, 2.0)
# which corpus each dataset's questions are asked of when nothing there answers them
# (never the other XQuAD language: its paragraphs are translations, so they do answer)
ELSEWHERE = {"scifact": "timeqa", "timeqa": "xquad_en", "xquad_en": "scifact", "xquad_vi": "timeqa"}


@dataclass(frozen=True)
class Question:
    dataset: str
    text: str
    vector: np.ndarray
    answers: frozenset[str]  # external ids of the passages that answer it in its own corpus


@dataclass(frozen=True)
class Corpus:
    name: str
    group: str
    key: str
    ids: dict[object, str]  # chunk id -> external id


@dataclass(frozen=True)
class Ranked:
    question: Question
    corpus: str
    in_corpus: bool
    hits: list[tuple[str, float, float, float | None, float | None]]  # external id, score, conf, lex, sim

    def answers(self, external_id: str) -> bool:
        return self.in_corpus and external_id in self.question.answers


def build(
    bench: Bench, cache: VectorCache, root: Path, args: argparse.Namespace
) -> tuple[dict[str, Corpus], list[Question]]:
    corpora: dict[str, list[Passage]] = {}
    asked: dict[str, list[tuple[str, frozenset[str]]]] = {}

    passages, queries, qrels = read_scifact(root / "scifact" / "beir_test")
    queries = queries[: args.queries]
    cited = {doc for qid, _ in queries for doc, score in qrels[qid].items() if score > 0}
    others = [p for p in passages if p.external_id not in cited][: args.scifact_docs]
    corpora["scifact"] = [p for p in passages if p.external_id in cited] + others
    asked["scifact"] = [(text, frozenset(d for d, s in qrels[qid].items() if s > 0)) for qid, text in queries]

    for lang in ("en", "vi"):
        paragraphs, questions, home = read_xquad(root / "xquad" / f"xquad.{lang}.json", lang)
        corpora[f"xquad_{lang}"] = paragraphs
        asked[f"xquad_{lang}"] = [
            (questions[q], frozenset({home[q]})) for q in list(questions)[: args.queries]
        ]

    paragraphs, timeqa_questions = read_timeqa(root / "timeqa")
    pages = {p.external_id.split("/")[0] for p in paragraphs}
    kept = {str(i) for i in range(min(args.timeqa_pages, len(pages)))}
    corpora["timeqa"] = [p for p in paragraphs if p.external_id.split("/")[0] in kept]
    within = [(q, frozenset(e)) for q, e in timeqa_questions if next(iter(e)).split("/")[0] in kept]
    asked["timeqa"] = within[: args.queries]

    built: dict[str, Corpus] = {}
    for name, docs in corpora.items():
        vectors = cache.embed([p.embedded_text for p in docs], f"{name} passages").vectors
        group, key = create_tenant(bench, f"confidence {name}")
        load(bench, key, group, docs, vectors)
        built[name] = Corpus(name=name, group=group, key=key, ids=passage_ids(bench, [group]))
        print(f"- {name}: {len(docs):,} passages, {len(asked[name])} questions", flush=True)
    build_missing_vector_indexes(bench.server.admin_url(bench.database))
    questions = []
    for name, pairs in asked.items():
        vectors = cache.embed([text for text, _ in pairs], f"{name} questions").vectors
        questions += [
            Question(name, text, v, answers) for (text, answers), v in zip(pairs, vectors, strict=True)
        ]
    return built, questions


def run(bench: Bench, corpora: dict[str, Corpus], questions: Sequence[Question], kind: str) -> list[Ranked]:
    """Each question asked of its own corpus and of ELSEWHERE's, every candidate returned."""
    ranked = []
    for name, corpus in corpora.items():
        with app(bench, corpus.key) as conn:
            for question in questions:
                if name not in (question.dataset, ELSEWHERE[question.dataset]):
                    continue
                params = {
                    "query": None if kind == "vector" else question.text,
                    "embedding": None if kind == "lexical" else question.vector,
                    "model": None if kind == "lexical" else MINILM_MODEL,
                    "k": POOL,
                    "groups": [corpus.group],
                }
                rows = conn.execute(SEARCH, params).fetchall()
                hits = [(corpus.ids[i], score, conf, lex, sim) for i, score, conf, lex, sim in rows]
                ranked.append(Ranked(question, name, name == question.dataset, hits))
            conn.rollback()
    return ranked


def tie_rates(bench: Bench, corpora: dict[str, Corpus], questions: Sequence[Question]) -> tuple[float, float]:
    """The tie rates of default hybrid searches (k = 10) of each question in its own corpus,
    reading only what every search version returns (item and score): --ties-only runs it
    against another checkout's SQL (PYTHONPATH=<checkout>/python) for the figures before."""
    ranked = []
    for name, corpus in corpora.items():
        with app(bench, corpus.key) as conn:
            for question in (q for q in questions if q.dataset == name):
                rows = conn.execute(
                    "select item_id, score from vera.search(%s, %s::vector, 10, groups => %s,"
                    " embedding_model => %s)",
                    (question.text, question.vector, [corpus.group], MINILM_MODEL),
                ).fetchall()
                hits = [(str(i), score, 0.0, None, None) for i, score in rows]
                ranked.append(Ranked(question, name, True, hits))
            conn.rollback()
    return ties(ranked)


def features(ranked: Sequence[Ranked], kind: str) -> tuple[np.ndarray, np.ndarray]:
    """The best hit of each search: its measures, and whether it answers. The confidence that
    matters is the best hit's (is there a good match at all?); fitted on every candidate, the
    model learnt the share of answers among 40 candidates (about 1 in 80), which squashed the
    relevance of every hit towards 0 and let the other signals decide the order."""
    rows, labels = [], []
    for r in ranked:
        for external_id, _, _, lex, sim in r.hits[:1]:
            if kind == "hybrid" and sim is None:
                continue  # an item without a vector is scored by the lexical model
            rows.append([1.0, lex or 0.0, sim or 0.0])
            labels.append(float(r.answers(external_id)))
    x = np.asarray(rows)
    if kind == "lexical":
        x = x[:, :2]
    elif kind == "vector":
        x = x[:, [0, 2]]
    return x, np.asarray(labels)


def fit(x: np.ndarray, y: np.ndarray, ridge: float = 1e-3) -> np.ndarray:
    """Logistic regression by Newton's method (IRLS), a small ridge off the intercept."""
    beta = np.zeros(x.shape[1])
    penalty = ridge * np.eye(x.shape[1])
    penalty[0, 0] = 0
    for _ in range(100):
        p = 1 / (1 + np.exp(-np.clip(x @ beta, -50, 50)))
        gradient = x.T @ (y - p) - penalty @ beta
        hessian = (x.T * (p * (1 - p))) @ x + penalty
        step = np.linalg.solve(hessian, gradient)
        beta += step
        if np.max(np.abs(step)) < 1e-9:
            break
    return beta


def auroc(positives: Sequence[float], negatives: Sequence[float]) -> float:
    """The probability that a positive scores above a negative (ties count half)."""
    if not positives or not negatives:
        return float("nan")
    neg = np.asarray(negatives)
    return float(np.mean([np.mean(p > neg) + 0.5 * np.mean(p == neg) for p in positives]))


def reliability(
    confidences: Sequence[float], outcomes: Sequence[bool], bins: int = 10
) -> tuple[float, list[str]]:
    """Expected calibration error over equal-width bins, and the diagram's rows."""
    conf, out = np.asarray(confidences), np.asarray(outcomes, dtype=float)
    error, lines = 0.0, []
    for b in range(bins):
        low, high = b / bins, (b + 1) / bins
        inside = (conf >= low) & ((conf < high) if b < bins - 1 else (conf <= high))
        if not inside.any():
            continue
        mean_conf, accuracy = conf[inside].mean(), out[inside].mean()
        error += inside.mean() * abs(mean_conf - accuracy)
        lines.append(f"| {low:.1f}-{high:.1f} | {int(inside.sum())} | {mean_conf:.3f} | {accuracy:.3f} |")
    return error, lines


def measure(ranked: Sequence[Ranked], threshold: float, label: str) -> None:
    top = [(r, r.hits[0]) for r in ranked if r.hits]
    empty_out = sum(1 for r in ranked if not r.hits and not r.in_corpus)
    inside = [hit[2] for r, hit in top if r.in_corpus]
    outside = [hit[2] for r, hit in top if not r.in_corpus] + [0.0] * empty_out
    area = auroc(inside, outside)
    error, lines = reliability([hit[2] for _, hit in top], [r.answers(hit[0]) for r, hit in top])
    flagged_out = sum(c < threshold for c in outside)
    flagged_in = sum(c < threshold for c in inside) + sum(1 for r in ranked if not r.hits and r.in_corpus)
    precision = flagged_out / (flagged_out + flagged_in) if flagged_out + flagged_in else float("nan")
    recall = flagged_out / len(outside) if outside else float("nan")
    answered = [r.answers(hit[0]) for r, hit in top if r.in_corpus]
    print(f"\n### {label}: {len(inside)} in-corpus, {len(outside)} out-of-corpus questions (held out)")
    print("| AUROC (top hit, in vs out of corpus) | ECE (top hits, 10 bins) | no_good_match precision"
          " | recall | in-corpus top hit answers |")  # fmt: skip
    print("|---|---|---|---|---|")
    print(f"| {area:.3f} | {error:.3f} | {precision:.3f} | {recall:.3f} | {statistics.mean(answered):.3f} |")
    print("\nReliability of the top hits (confidence bin | hits | mean confidence | share that answer):")
    print("| bin | hits | mean confidence | answers |")
    print("|---|---|---|---|")
    print("\n".join(lines))


def ties(ranked: Sequence[Ranked]) -> tuple[float, float]:
    """Shares of searches whose top 10 holds two equal scores, and whose first two are equal."""
    tops = [[hit[1] for hit in r.hits[:10]] for r in ranked if len(r.hits) >= 2]
    any_tie = statistics.mean(float(len(set(s)) < len(s)) for s in tops)
    first_tie = statistics.mean(float(s[0] == s[1]) for s in tops)
    return any_tie, first_tie


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--queries", type=int, default=200, help="questions per dataset (half fit, half measure)"
    )
    parser.add_argument(
        "--scifact-docs", type=int, default=1000, help="SciFact abstracts beside the cited ones"
    )
    parser.add_argument(
        "--timeqa-pages", type=int, default=30, help="TimeQA pages whose paragraphs are loaded"
    )
    parser.add_argument("--ties-only", action="store_true", help="only the tie rates (any search version)")
    parser.add_argument(
        "--eval-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "eval"
    )
    args = parser.parse_args()
    started = time.perf_counter()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    bench = start(DATABASE)
    cache = VectorCache(LocalMiniLMEmbedder())
    if args.ties_only:
        with bench.admin() as conn:
            print(conn.execute("select vera.search_version()").fetchone()[0])  # type: ignore[index]
        corpora, questions = build(bench, cache, args.eval_dir, args)
        any_tie, first_tie = tie_rates(bench, corpora, [q for i, q in enumerate(questions) if i % 2 == 1])
        print(f"ties (hybrid, k = 10): a tie in the top 10 in {any_tie:.1%} of searches,"
              f" for first in {first_tie:.1%}")  # fmt: skip
        return
    with bench.admin() as conn:
        version, installed, threshold = conn.execute(
            "select vera.search_version(), vera.match_calibration(), vera.good_match_threshold()"
        ).fetchone()  # type: ignore[misc]
    print(f"{version}; match model installed: {json.dumps(installed)}; threshold {threshold}")
    corpora, questions = build(bench, cache, args.eval_dir, args)
    fitting = [q for i, q in enumerate(questions) if i % 2 == 0]
    held_out = [q for i, q in enumerate(questions) if i % 2 == 1]

    fitted: dict[str, dict[str, float]] = {}
    print("\n## Fit (questions of even position, the best hit of each search)")
    print("| kind of search | rows | answering | intercept | lexical | similarity |")
    print("|---|---|---|---|---|---|")
    for kind in KINDS:
        x, y = features(run(bench, corpora, fitting, kind), kind)
        beta = fit(x, y)
        if kind == "hybrid":
            free = beta
            # Platt scaling of the fixed direction: intercept and scale fitted on one score
            beta = fit(np.column_stack([x[:, 0], x[:, 1:] @ np.asarray(HYBRID_DIRECTION)]), y)
            beta = np.asarray([beta[0], beta[1] * HYBRID_DIRECTION[0], beta[1] * HYBRID_DIRECTION[1]])
            print(f"| hybrid, both weights free (for the record) | {len(y):,} | {int(y.sum()):,} |"
                  f" {free[0]:.2f} | {free[1]:.2f} | {free[2]:.2f} |")  # fmt: skip
        lexical = beta[1] if kind != "vector" else 0.0
        similarity = beta[-1] if kind != "lexical" else 0.0
        fitted[kind] = {"intercept": round(float(beta[0]), 2), "lexical": round(float(lexical), 2),
                        "similarity": round(float(similarity), 2)}  # fmt: skip
        print(
            f"| {kind} | {len(y):,} | {int(y.sum()):,} | {beta[0]:.2f} | {lexical:.2f} | {similarity:.2f} |"
        )
    same = fitted == installed
    print(f"\nvera.match_calibration() to hold: {json.dumps(fitted)}")
    print(
        "the database runs exactly these"
        if same
        else "the database runs OTHER coefficients: paste these and rerun"
    )

    print("\n## Measured (questions of odd position, the installed coefficients)")
    for kind in KINDS:
        ranked = run(bench, corpora, held_out, kind)
        measure(ranked, threshold, f"{kind} search")
        if kind == "hybrid":
            any_tie, first_tie = tie_rates(bench, corpora, held_out)
            print(f"\nties (hybrid): a tie in the top 10 in {any_tie:.1%} of searches,"
                  f" for first in {first_tie:.1%}")  # fmt: skip
    print(f"\nrun time {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
