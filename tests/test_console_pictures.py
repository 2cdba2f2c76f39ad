"""The web console's pictures (vera_mcp.domain.pictures): signal bars, a fact's time line, and
an entity's neighbourhood on rings; and the metrics' route labels for paths with ids."""

from __future__ import annotations

from datetime import UTC, datetime

from vera_mcp.adapters.metrics import McpMetrics
from vera_mcp.domain.pictures import BAR_WIDTH, SIGNALS, neighbourhood, signal_bars, time_line


def test_signal_bars_are_the_seven_signals_clamped() -> None:
    bars = signal_bars({"relevance": 0.5, "authority": 1.4, "verification": -1, "period": None})
    assert [b.name for b in bars] == list(SIGNALS)
    assert bars[0].width == BAR_WIDTH / 2 and bars[1].width == BAR_WIDTH and bars[2].width == 0
    assert bars[-1].value is None and bars[-1].width == 0
    assert bars[3].value is None, "a signal the answer lacks is drawn empty, not as zero"


def test_a_time_line_runs_from_the_first_version_to_now() -> None:
    day = datetime(2026, 1, 1, tzinfo=UTC)
    marks = time_line([("blue", day, day.replace(month=7)), ("green", day.replace(month=7), None)],
                      day.replace(year=2027), width=300)  # fmt: skip
    assert marks[0].x0 == 0 and marks[1].x1 == 300 and marks[1].current and not marks[0].current
    assert marks[0].x1 == marks[1].x0
    assert time_line([], day) == []


def test_the_neighbourhood_puts_each_name_at_its_fewest_hops() -> None:
    facts = [("ledger-db", "OWNED_BY", "team red", 1), ("team red", "PART_OF", "finance", 2),
             ("billing-api", "USES", "ledger-db", 1), ("billing-api", "USES", "ledger-db", 1)]  # fmt: skip
    picture = neighbourhood("Ledger-DB", facts)
    hops = {node.name: node.hop for node in picture.nodes}
    assert hops == {"Ledger-DB": 0, "team red": 1, "billing-api": 1, "finance": 2}
    assert len(picture.edges) == 3, "a fact repeated is one edge"
    centre = next(node for node in picture.nodes if node.hop == 0)
    assert (centre.x, centre.y) == (picture.size / 2, picture.size / 2)
    assert all(0 <= node.x <= picture.size and 0 <= node.y <= picture.size for node in picture.nodes)


def test_paths_with_ids_are_labelled_by_their_route_template() -> None:
    metrics = McpMetrics(
        tools=[], routes={"/v1/facts/{fact_id}", "/v1/facts/{fact_id}/history", "/v1/search"}
    )
    assert metrics.route_label("/v1/facts/0b9e") == "/v1/facts/{fact_id}"
    assert metrics.route_label("/v1/facts/0b9e/history") == "/v1/facts/{fact_id}/history"
    assert metrics.route_label("/v1/search") == "/v1/search"
    for stray in ("/v1/facts/a/b", "/v1/facts/", "/v1/factsX", "/nowhere"):
        assert metrics.route_label(stray) == "other", stray


def test_a_citation_reads_in_one_line() -> None:
    from vera_mcp.adapters.console.formatting import citation  # noqa: PLC0415 - the console's own helper

    line = citation({
        "source": {"name": "engineering wiki", "kind": "markdown", "uri": None},
        "episode": {"external_id": "ledger-db.md", "version": 2, "title": None, "uri": "file:///w/ledger-db.md"},
        "chunk": {"heading": "Owners"}, "valid_from": "2026-09-01T00:00:00+00:00", "tier": 2,
        "verification": "auto",
    })  # fmt: skip
    assert line == (
        "engineering wiki (markdown) · ledger-db.md v2 · § Owners · file:///w/ledger-db.md · from 2026-09-01"
        " · tier 2, auto"
    )
    assert citation({}) == ""
