"""The stage-1 knobs of vera.search (k_rrf, candidates, ef_search) through the
Python client: they reach SQL unchanged (their effect on a small corpus is
predictable), SQL alone checks them (22023, typed InvalidArgumentError), and the
client's and the command line's defaults are the SQL functions' own, read from
the catalog, so the two cannot drift."""

from __future__ import annotations

import hashlib
import inspect
import re
from collections.abc import Callable
from typing import Any

import click
import psycopg
import pytest

from pg_tests.support.databases import APP_LOGIN
from pg_tests.support.seed import World
from vera_cli.commands.search import search_command
from vera_client.api.hits import Hit
from vera_client.api.search import search as search_plan
from vera_client.api.snapshots import search_snapshot as search_snapshot_plan
from vera_client.client import AsyncVeraClient, VeraClient
from vera_client.domain.errors import InvalidArgumentError

# three passages that match "ledger" once, twice and four times: lexical ranks 3, 2, 1
PASSAGES = ["ledger backups restore nightly", "ledger ledger backups nightly", "ledger ledger ledger ledger"]


@pytest.fixture(scope="module")
def ledger(owner_a: VeraClient, world: World) -> str:
    """The three passages in a project of tenant A. owner_a has no providers: it searches by words
    alone, so only the lexical half answers."""
    group = owner_a.create_group(world.a.organisation, "project", "knobs")
    source = owner_a.register_source(group, "markdown", "runbooks", 2)
    episode = owner_a.record_episode(group, source, "ledger.md", hashlib.sha256(b"ledger").digest())
    owner_a.store_chunks(group, episode.episode_id, [{"text": text} for text in PASSAGES])
    return group


def _middle_relevance(hits: list[Hit]) -> float:
    [middle] = [h for h in hits if h.text == PASSAGES[1]]
    return float(middle.signals.relevance)


def test_relevance_is_the_hits_own_match_at_any_k_rrf(owner_a: VeraClient, ledger: str) -> None:
    """Since vera-search/7 relevance is the hit's own match confidence (171_match_confidence.sql),
    not its fused rank min-max normalised over the batch (which made the middle one's relevance
    1/3 at k_rrf 1 and 1/4 at 0): k_rrf is still checked but changes no score, and the middle
    passage's relevance is what its own lexical match gives, alone in its group or not."""
    by_default = owner_a.search("ledger", groups=[ledger])
    assert [h.text for h in by_default] == PASSAGES[::-1]
    [middle] = [h for h in by_default if h.text == PASSAGES[1]]
    assert middle.signals.relevance == pytest.approx(middle.confidence)
    assert 0 < middle.confidence < 1 and middle.similarity is None and middle.lexical_match is not None
    for k_rrf in (0, 1, 60):
        hits = owner_a.search("ledger", groups=[ledger], k_rrf=k_rrf)
        assert _middle_relevance(hits) == pytest.approx(middle.signals.relevance), k_rrf


def test_candidates_cut_what_each_half_retrieves(owner_a: VeraClient, ledger: str) -> None:
    assert len(owner_a.search("ledger", groups=[ledger])) == 3  # 4 x k candidates: all three
    for candidates in (1, 2, 3, 10):
        hits = owner_a.search("ledger", groups=[ledger], k=10, candidates=candidates)
        assert [h.text for h in hits] == PASSAGES[::-1][:candidates], candidates
    # fewer candidates than k: the fusion sees only them
    assert len(owner_a.search("ledger", groups=[ledger], k=3, candidates=1)) == 1


def test_ef_search_is_accepted_within_its_range(owner_a: VeraClient, ledger: str) -> None:
    """ef_search sizes the HNSW scan of the vector half; these groups are searched exactly, so
    the answer is the same at any breadth."""
    expected = [h.item_id for h in owner_a.search("ledger", groups=[ledger])]
    for ef_search in (1, 40, 1000):
        assert [h.item_id for h in owner_a.search("ledger", groups=[ledger], ef_search=ef_search)] == expected


def test_snapshot_search_takes_k_rrf_and_candidates(owner_a: VeraClient, ledger: str) -> None:
    owner_a.create_snapshot(ledger, "knobs-snap")
    try:
        frozen = owner_a.search_snapshot(ledger, "knobs-snap", "ledger")
        live = _middle_relevance(owner_a.search("ledger", groups=[ledger]))
        assert [h.text for h in frozen] == PASSAGES[::-1] and _middle_relevance(frozen) == pytest.approx(live)
        assert _middle_relevance(owner_a.search_snapshot(ledger, "knobs-snap", "ledger", k_rrf=0)) == (
            pytest.approx(live)
        )
        assert len(owner_a.search_snapshot(ledger, "knobs-snap", "ledger", candidates=1)) == 1
        with pytest.raises(InvalidArgumentError, match="k_rrf must be between 0 and 10000, got -1"):
            owner_a.search_snapshot(ledger, "knobs-snap", "ledger", k_rrf=-1)
        with pytest.raises(InvalidArgumentError, match="candidates must be between 1 and 10000, got 0"):
            owner_a.search_snapshot(ledger, "knobs-snap", "ledger", candidates=0)
    finally:
        owner_a.drop_snapshot(ledger, "knobs-snap")


@pytest.mark.parametrize(
    ("knob", "value", "message"),
    [
        ("k_rrf", -1, "k_rrf must be between 0 and 10000, got -1"),
        ("k_rrf", 10001, "k_rrf must be between 0 and 10000, got 10001"),
        ("candidates", 0, "candidates must be between 1 and 10000, got 0"),
        ("candidates", 10001, "candidates must be between 1 and 10000, got 10001"),
        ("ef_search", 0, "ef_search must be between 1 and 1000, got 0"),
        ("ef_search", 1001, "ef_search must be between 1 and 1000, got 1001"),
    ],
)
def test_bad_knobs_are_refused_by_vera_search(
    owner_a: VeraClient, ledger: str, knob: str, value: int, message: str
) -> None:
    """One place per rule: vera.search refuses them (22023), the executor types the error."""
    with pytest.raises(InvalidArgumentError, match=re.escape(message)) as refused:
        owner_a.search("ledger", groups=[ledger], **{knob: value})
    cause = refused.value.__cause__
    assert isinstance(cause, psycopg.Error) and cause.sqlstate == "22023"


def test_a_knob_beyond_integer_is_an_invalid_argument_too(owner_a: VeraClient, ledger: str) -> None:
    with pytest.raises(InvalidArgumentError, match="out of range"):
        owner_a.search("ledger", groups=[ledger], candidates=2**40)


def _sql_defaults(world: World, function: str) -> dict[str, object]:
    """Each argument of a SQL function and its default (None for null), from the catalog."""
    with psycopg.connect(world.db.dsn(APP_LOGIN)) as conn:
        row = conn.execute("select pg_get_function_arguments(%s::regproc)", (function,)).fetchone()
    assert row is not None
    defaults: dict[str, object] = {}
    # "k integer DEFAULT 10, as_of timestamp with time zone DEFAULT NULL::timestamp with time zone, ..."
    for argument in row[0].split(", "):
        match = re.fullmatch(r"(\w+) (.+?)(?: DEFAULT (.+))?", argument)
        assert match is not None, argument
        name, _type, default = match.groups()
        if default is None:
            defaults[name] = inspect.Parameter.empty
        elif default.startswith("NULL::"):
            defaults[name] = None
        else:
            defaults[name] = float(default.split("::")[0].strip("'"))
    return defaults


@pytest.mark.parametrize(
    ("function", "operation", "knobs"),
    [
        ("vera.search", search_plan, {"k", "k_rrf", "candidates", "ef_search", "lexical_weight"}),
        ("vera.search_snapshot", search_snapshot_plan, {"k", "k_rrf", "candidates"}),
    ],
)
def test_the_clients_defaults_are_the_sql_functions_defaults(
    world: World, function: str, operation: Callable[..., Any], knobs: set[str]
) -> None:
    """Every keyword the client shares with the SQL function defaults to the same value, in
    both faces (a SQL default changed without the client, or the other way, fails here)."""
    sql = _sql_defaults(world, function)
    faces = [getattr(object.__new__(face), operation.__name__) for face in (VeraClient, AsyncVeraClient)]
    for face in [operation, *faces]:
        python = {
            name: parameter.default
            for name, parameter in inspect.signature(face).parameters.items()
            if parameter.kind is inspect.Parameter.KEYWORD_ONLY
        }
        shared = python.keys() & sql.keys()
        assert knobs <= shared, knobs - shared
        assert {name: python[name] for name in shared} == {name: sql[name] for name in shared}, face


def test_the_command_line_defaults_are_vera_search_s(world: World) -> None:
    sql = _sql_defaults(world, "vera.search")
    options = {p.name: p.default for p in search_command.params if isinstance(p, click.Option)}
    knobs = {"k", "k_rrf", "candidates", "ef_search"}
    assert {name: options[name] for name in knobs} == {name: sql[name] for name in knobs}
