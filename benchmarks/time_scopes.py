"""What VERA's time-scope reader (vera_client/domain/time_scopes.py, docs/time.md) makes of
TimeQA (../shared/eval/timeqa, the human-annotated train split): how fast it reads passages,
how many state a time, how many questions it finds a time in, and how well the question's time
singles out the paragraphs that answer it: the share of answering paragraphs whose scope
overlaps the question's time, beside the share of the page's other paragraphs that overlap it
too (the lower, the more the time signal of search can tell them apart).

    .venv/bin/python benchmarks/time_scopes.py [--eval-dir DIR] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from vera_client.domain.time_scopes import EXTRACTION_VERSION, TimeRange, query_time, read_times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--eval-dir", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "eval"
    )
    parser.add_argument("--repeat", type=int, default=3, help="reads of the whole corpus timed")
    args = parser.parse_args()
    pages = json.loads((args.eval_dir / "timeqa" / "human_annotated_train.json").read_text())
    paragraphs = [p for page in pages for p in page["paras"]]
    characters = sum(len(p) for p in paragraphs)

    rates = []
    for _ in range(args.repeat):
        started = time.perf_counter()
        for paragraph in paragraphs:
            read_times(paragraph)
        rates.append(len(paragraphs) / (time.perf_counter() - started))
    stated = sum(1 for p in paragraphs if read_times(p))

    questions = detected = answered_in_time = 0
    others: list[float] = []
    for page in pages:
        scopes = [read_times(p) for p in page["paras"]]
        for question, given in page["questions"]:
            # answerable questions, as quality.py's read_timeqa counts them (975 of 1,164)
            answers = [a for a in given if a.get("answer", "").strip()]
            if not answers:
                continue
            questions += 1
            asked = query_time(question)
            if asked is None:
                continue
            detected += 1
            gold = {answer["para"] for answer in answers}
            answered_in_time += any(_overlaps(scopes[i], asked) for i in gold)
            rest = [i for i in range(len(scopes)) if i not in gold]
            others.append(sum(_overlaps(scopes[i], asked) for i in rest) / max(1, len(rest)))

    mean = characters / len(paragraphs)
    print(f"TimeQA train (human-annotated): {len(pages)} pages, {len(paragraphs)} paragraphs")
    print(f"  ({mean:.0f} characters on average), {questions} answerable questions")
    print(f"reader version {EXTRACTION_VERSION}, one core:")
    print(f"  paragraphs read per second      {statistics.median(rates):,.0f} (median of {args.repeat})")
    print(f"  paragraphs stating a time       {stated / len(paragraphs):.3f}")
    print(f"  questions with a time found     {detected / questions:.3f}")
    answered = answered_in_time / detected
    print(f"  answered by a paragraph whose scope overlaps the question's time  {answered:.3f}")
    print(
        f"  the page's other paragraphs overlapping it too (mean share)       {statistics.fmean(others):.3f}"
    )


def _overlaps(scope: list[TimeRange], asked: TimeRange) -> bool:
    return any(r.overlaps(asked) for r in scope)


if __name__ == "__main__":
    main()
