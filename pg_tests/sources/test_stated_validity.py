"""A record whose front matter states its validity dates its passages by it for `as_of`
(issue 29): storm-2019.md, valid from 2019-07-12, is found as of 2019-07-15, text and all."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from pg_tests.support.ingesting import run_worker
from pg_tests.support.seed import World, create_project
from vera_client.client import VeraClient

STORM = """---
title: Storm of July 2019
valid_from: 2019-07-12
status: closed
---
# Storm of July 2019

The storm flooded the Haiphong warehouse; pallets were moved to the mezzanine.
"""


def test_a_stated_validity_dates_the_passages_for_as_of(
    world: World, owner_a: VeraClient, tmp_path: Path
) -> None:
    group = create_project(world, "stated-validity")
    folder = tmp_path / "incidents"
    folder.mkdir()
    (folder / "storm-2019.md").write_text(STORM, encoding="utf-8")
    source = owner_a.register_folder(group, "incidents", folder, tier=1)
    owner_a.request_ingest(group, source.source_id)
    [report] = run_worker(world.db, tmp_path / "objects")
    assert report.failed == [] and report.passages >= 1
    then = datetime(2019, 7, 15, tzinfo=UTC)
    hits = owner_a.search("Haiphong warehouse flooded pallets", groups=[group], as_of=then)
    passages = [hit for hit in hits if hit.kind == "passage"]
    assert passages and "flooded the Haiphong warehouse" in passages[0].text
    # the citation says when it holds from: the stated day, not the day of ingestion
    assert str(passages[0].citation["valid_from"]).startswith("2019-07-1")
    # before it held, the text is not known
    before = owner_a.search(
        "Haiphong warehouse flooded pallets", groups=[group], as_of=datetime(2019, 7, 1, tzinfo=UTC)
    )
    assert [hit for hit in before if hit.kind == "passage"] == []
