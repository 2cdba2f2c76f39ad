"""A projection job run by a worker without a graph is not done silently: it says, once per
job at WARNING, that the group's graph (if one exists elsewhere) is now behind and how to bring
it in step (docs/graph.md, "A worker without a graph")."""

from __future__ import annotations

import logging
from pathlib import Path
from uuid import uuid4

import pytest

from vera_client.adapters.objects.local import LocalObjectStore
from vera_worker.adapters.queue import build_app
from vera_worker.domain.jobs import JobName


def test_a_projection_job_without_a_graph_says_the_graph_is_behind(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    app = build_app("postgresql://127.0.0.1:1/none", objects=LocalObjectStore(tmp_path), projection=None)
    task = app.tasks[JobName.PROJECT_TO_GRAPH.value]
    with caplog.at_level(logging.INFO):
        task.func(group_id="team-notes", principal_id=None, fact_ids=[str(uuid4())])
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any("team-notes" in line and "vera graph rebuild" in line for line in warnings), warnings
