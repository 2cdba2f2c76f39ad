"""`vera search`, `vera feedback`, `vera calibrate`, `vera eval`: asking the memory, voting on
its answers, deriving a group's blend weights from the votes, and scoring a golden set."""

from __future__ import annotations

import dataclasses
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

import click

from vera_cli.options import ASKED_PERIOD, ISO_INSTANT
from vera_cli.output import echo_json, echo_json_lines, print_hits, signals_line
from vera_cli.plumbing import api_key_option, client_from_env, fail, friendly_errors

if TYPE_CHECKING:
    from vera_client.domain.time_scopes import TimeRange


@click.command("search")
@click.argument("query")
@api_key_option("Key of the principal to search as.")
@click.option("-k", "k", default=10, show_default=True, type=click.IntRange(1, 1000), help="Hits to return.")
@click.option(
    "--as-of",
    type=ISO_INSTANT,
    help="Instant to answer for: ISO 8601 date, or date and time (UTC unless an offset).",
)
@click.option("--group", "groups", multiple=True, help="Search only this group (repeatable).")
# the stage-1 knobs of vera.search, its defaults; vera.search checks them (one line on a bad value)
@click.option(
    "--k-rrf",
    type=int,
    default=1,
    show_default=True,
    help="Kept for old scripts: checked, unused since vera-search/7 (relevance is the match confidence).",
)
@click.option(
    "--candidates",
    type=int,
    default=None,
    help="Candidates each half retrieves.  [default: 4 x k, at least 40; 4 x the reranker's top_n if larger]",
)
@click.option(
    "--ef-search",
    type=int,
    default=None,
    help="HNSW search breadth of the vector half.  [default: max(100, candidates), at most 1000]",
)
@click.option(
    "--during",
    type=ASKED_PERIOD,
    help="The period the query asks about (START..END ISO dates, end exclusive, or words such as"
    " 1811-1827); wins over the one its words state.",
)
@click.option(
    "--no-time-detection",
    "detect_time",
    flag_value=False,
    default=True,
    help="Do not read the period the query asks about from its words (docs/time.md).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per hit.")
@click.option("--explain", is_flag=True, help="Show the signals of each hit.")
@friendly_errors
def search_command(  # noqa: PLR0917 (one parameter per option: click passes them by keyword)
    query: str,
    api_key: str,
    k: int,
    as_of: datetime | None,
    groups: tuple[str, ...],
    k_rrf: int,
    candidates: int | None,
    ef_search: int | None,
    during: TimeRange | None,
    detect_time: bool,
    as_json: bool,
    explain: bool,
) -> None:
    """Ranked, cited hits for QUERY (hybrid when the groups' pinned embedder runs here); a period
    its words state ("from 1811 to 1827") is asked about, and said."""
    with client_from_env(api_key) as vera:
        hits = vera.search(
            query,
            k=k,
            as_of=as_of,
            groups=groups or None,
            k_rrf=k_rrf,
            candidates=candidates,
            ef_search=ef_search,
            during=during,
            detect_time=detect_time,
        )
    if hits.words_only:  # once, on stderr: stdout holds only the hits
        click.echo(f"vera: searched by words only: {hits.words_only}", err=True)
    if as_json:
        echo_json_lines(hits)
    else:
        print_hits(hits, explain=explain)


@click.command("feedback")
@click.argument("kind", type=click.Choice(["fact", "passage"]))
@click.argument("item_id", type=click.UUID)
@click.argument("vote", type=click.Choice(["up", "down"]))
@click.option("--query", "text", required=True, help="The query the hit answered.")
@click.option("--json", "as_json", is_flag=True, help="The recorded vote as one JSON object.")
@api_key_option("Key of the principal who votes.")
@friendly_errors
def feedback_command(  # noqa: PLR0917 (one parameter per option: click passes them by keyword)
    kind: str, item_id: UUID, vote: str, text: str, as_json: bool, api_key: str
) -> None:
    """Vote on a hit (KIND ITEM_ID from `vera search --json`) of a query."""
    with client_from_env(api_key) as vera:
        recorded = vera.feedback(kind, item_id, text, vote)
    if as_json:
        echo_json(dataclasses.asdict(recorded))
        return
    verb = "recorded" if recorded.created else "replaced the earlier vote with"
    click.echo(f"{verb} {vote} on {kind} {item_id} in {recorded.group_id}")
    click.echo("  signals: " + signals_line(recorded.signals))


@click.command("calibrate")
@click.argument("group")
@click.option("--min-samples", type=click.IntRange(min=1), help="Votes needed to keep the weights.")
@click.option("--json", "as_json", is_flag=True, help="The calibration as one JSON object.")
@api_key_option("Key of an admin of GROUP.")
@friendly_errors
def calibrate_command(group: str, min_samples: int | None, as_json: bool, api_key: str) -> None:
    """Derive GROUP's blend weights from its votes (the mean-difference rule)."""
    with client_from_env(api_key) as vera:
        result = vera.calibrate(group, min_samples)
    if as_json:
        echo_json(dataclasses.asdict(result))
        return
    click.echo(f"votes: {result.sample_count} ({result.helpful} up, {result.unhelpful} down)")
    if result.separation:
        # a signal no vote tells about (period, without votes on searches that asked a period) is "-"
        gaps = (f"{n} {v:+.3f}" if v is not None else f"{n} -" for n, v in result.separation.items())
        click.echo("separation: " + "  ".join(gaps))
    if result.weights:
        shown = {n: v for n, v in result.weights.items() if n != "half_life"}
        click.echo("weights:    " + "  ".join(f"{n} {float(v):.3f}" for n, v in shown.items()))
    if result.persisted:
        click.echo(f"kept as the active weight set {result.weight_set_id}: search uses it from now on")
    else:
        click.echo("not kept: it needs both kinds of vote, a separating signal and enough votes")


@click.command("eval")
@click.argument("golden_file", type=click.Path(path_type=Path))
@click.option(
    "--json", "as_json", is_flag=True, help="One JSON object: each query's verdict and the figures."
)
@api_key_option("Key of the principal to search as.")
@friendly_errors
def eval_command(golden_file: Path, as_json: bool, api_key: str) -> None:
    """Score a golden set with the real vera.search: hit@k, MRR, nDCG@10.

    Exits 1 when a figure is below the file's thresholds.
    """
    from vera_client.domain.golden import evaluate, load_golden_set, score_query

    golden = load_golden_set(golden_file)
    with client_from_env(api_key) as vera:
        scores = []
        for item in golden.queries:
            hits = vera.search(item.text, k=max(golden.k, 10), as_of=item.as_of, groups=item.groups)
            scores.append(score_query(item, hits, golden.k))
    result = evaluate(golden, scores)
    if as_json:
        echo_json({
            "queries": [
                {"query": score.query.text, "as_of": score.query.as_of, "hit": score.hit,
                 "first_right": score.first_right, "rejected_first": score.rejected_first}
                for score in result.scores
            ],
            "k": golden.k,
            "figures": result.figures,
            "passed": result.passed,
            "failures": list(result.failures),
        })  # fmt: skip
        if not result.passed:
            sys.exit(1)
        return
    click.echo(f"{'':>3} {'right':>5} {'rank':>4}  query")
    for position, score in enumerate(result.scores, start=1):
        verdict = "yes" if score.hit else ("WRONG" if score.rejected_first else "no")
        rank = str(score.first_right) if score.first_right else "-"
        as_of = f"  (as of {score.query.as_of:%Y-%m-%d})" if score.query.as_of else ""
        click.echo(f"{position:>3} {verdict:>5} {rank:>4}  {score.query.text}{as_of}")
    figures = result.figures
    click.echo(
        f"hit@{golden.k} {figures['hit_at_k']:.3f}   MRR {figures['mrr']:.3f}   "
        f"nDCG@10 {figures['ndcg_at_10']:.3f}   ({len(result.scores)} queries)"
    )
    if not result.passed:
        fail("below threshold: " + ", ".join(result.failures))
