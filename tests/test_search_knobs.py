"""The stage-1 knobs of search (k_rrf, candidates, ef_search) go to vera.search as
they are: the plan's SQL call, with and without a reranker (which asks SQL for its
whole head). What SQL does with them is in pg_tests/client/test_client.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import SecretStr

from vera_client.api.call import Call
from vera_client.api.operation import Session
from vera_client.api.search import search
from vera_client.bootstrap import build_providers
from vera_client.config import (
    DbSettings,
    EmbedderSettings,
    ObjectStoreSettings,
    RerankerSettings,
    VeraSettings,
)
from vera_client.core import Shared
from vera_client.domain.callers import ApiKey


def _search_call(session: Session, **kwargs: Any) -> Call[Any]:
    """The search call the plan yields (the groups pinned no model: words alone)."""
    plan = search(session, "who owns ledger-db?", **kwargs)
    step = next(plan)
    while isinstance(step, Call) and step.query == "pinned_models":
        step = plan.send([])
    assert isinstance(step, Call) and step.query == "search"
    return step


def _reranking(tmp_path: Path, top_n: int) -> Session:
    settings = VeraSettings(
        db=DbSettings(data_dir=tmp_path / "pg"),
        embedder=EmbedderSettings(provider="deterministic"),
        reranker=RerankerSettings(provider="voyage", api_key=SecretStr("test"), top_n=top_n),
        objects=ObjectStoreSettings(root=tmp_path / "objects"),
    )
    return Session(Shared(build_providers(settings)), ApiKey("vera_test"))


def test_the_knobs_reach_the_call_unchanged_and_default_to_sql_s_defaults() -> None:
    operations = Session(Shared(None), ApiKey("vera_test"))
    defaults = _search_call(operations, k=3).params
    assert (defaults["k"], defaults["k_rrf"], defaults["candidates"], defaults["ef_search"]) == (
        3,
        1,
        None,
        None,
    )
    given = _search_call(operations, k=3, k_rrf=60, candidates=7, ef_search=250).params
    assert (given["k"], given["k_rrf"], given["candidates"], given["ef_search"]) == (3, 60, 7, 250)
    # out of range too: vera.search checks them (one place per rule), the client does not
    odd = _search_call(operations, k_rrf=-1, candidates=0, ef_search=0).params
    assert (odd["k_rrf"], odd["candidates"], odd["ef_search"]) == (-1, 0, 0)


def test_with_a_reranker_sql_is_asked_for_the_head_and_candidates_still_pass_unchanged(
    tmp_path: Path,
) -> None:
    """The reranker re-scores the best top_n hits, so SQL is asked for max(k, top_n) hits;
    left unset, candidates is SQL's default for that many (4 x 20 per half), so the head is
    the same as a search for top_n hits without reranking. Given, it is what SQL gets."""
    operations = _reranking(tmp_path, top_n=20)
    unset = _search_call(operations, k=3).params
    assert (unset["k"], unset["candidates"], unset["ef_search"]) == (20, None, None)
    given = _search_call(operations, k=3, candidates=5, ef_search=40, k_rrf=0).params
    assert (given["k"], given["candidates"], given["ef_search"], given["k_rrf"]) == (20, 5, 40, 0)
    assert _search_call(operations, k=50).params["k"] == 50
    plain = _search_call(operations, k=3, candidates=5, rerank=False).params
    assert (plain["k"], plain["candidates"]) == (3, 5)
