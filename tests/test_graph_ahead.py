"""The projection's two-stage pipeline (vera_worker/graph/ahead.py): order, one item worked on
at a time, work ahead overlapping the caller, errors where their item is reached."""

from __future__ import annotations

import threading
import time

import pytest

from vera_worker.graph.ahead import ahead, chained


def test_ahead_keeps_order_and_pairs_each_item_with_its_result() -> None:
    assert list(ahead([3, 1, 2], lambda item: item * 10)) == [(3, 30), (1, 10), (2, 20)]
    assert list(ahead([], lambda item: item)) == []
    # a single item is worked on in the caller's thread
    assert list(ahead([5], lambda _: threading.current_thread().name)) == [
        (5, threading.current_thread().name)
    ]


def test_ahead_works_on_the_next_item_while_the_caller_handles_this_one() -> None:
    started: dict[int, float] = {}
    running = threading.Lock()

    def work(item: int) -> int:
        # never twice at once: the work may use a connection of its own
        assert running.acquire(blocking=False)
        try:
            started[item] = time.monotonic()
            return item
        finally:
            running.release()

    handled_at: dict[int, float] = {}
    for item, _ in ahead(range(4), work):
        handled_at[item] = time.monotonic()
        time.sleep(0.05)
    # item n+1 was worked on before the caller finished with item n
    assert all(started[item + 1] < handled_at[item] + 0.05 for item in range(3))


def test_ahead_raises_a_failure_where_its_item_is_reached() -> None:
    def work(item: int) -> int:
        if item == 2:
            raise ValueError("item 2")
        return item

    pipeline = ahead([0, 1, 2, 3], work)
    assert [next(pipeline)[0], next(pipeline)[0]] == [0, 1]
    with pytest.raises(ValueError, match="item 2"):
        next(pipeline)


def test_chained_pages_until_following_names_nothing() -> None:
    pages = {None: [1, 2], 2: [3, 4], 4: [5]}
    result = list(chained(None, pages.__getitem__, lambda page: page[-1] if len(page) == 2 else None))
    assert result == [[1, 2], [3, 4], [5]]
    assert list(chained(None, lambda _: [], lambda page: None)) == [[]]
