"""The worker's log lines carry job ids and counts, never thousands of ids."""

from __future__ import annotations

import io
import logging
from uuid import uuid4

from vera_worker.entrypoints.logs import ShortLists, shorten_lists


def test_long_lists_become_their_count() -> None:
    ids = [str(uuid4()) for _ in range(3000)]
    line = f"Starting job vera.embed[42](group_id='o:1', fact_ids={ids!r})"
    assert shorten_lists(line) == "Starting job vera.embed[42](group_id='o:1', fact_ids=[3000 items])"
    short = "Job vera.embed[42](group_id='o:1', fact_ids=['a', 'b']) ended with status: Success"
    assert shorten_lists(short) == short
    assert shorten_lists("[" + "x," * 100_000) == "[" + "x," * 100_000  # unclosed: left as it is, in one pass


def test_the_filter_rewrites_what_a_handler_emits() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(ShortLists())
    logger = logging.getLogger("vera_tests.worker_logs")  # its own level: none set elsewhere applies
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("Starting job %s", "vera.retract_cleanup[7](edge_ids=[1, 2, 3, 4, 5, 6, 7, 8])")
    finally:
        logger.removeHandler(handler)
    assert stream.getvalue() == "Starting job vera.retract_cleanup[7](edge_ids=[8 items])\n"
