"""Work on the next item while the caller uses this one: a two-stage pipeline.

The graph projection is three processes taking turns on one piece of work: PostgreSQL
reads the facts, the worker turns them into query parameters, the graph server writes
them. One after the other, two of the three are always idle; on a shared machine they
also get one scheduler share instead of three. With one helper thread, the next piece is
read (or rendered) while the server writes this one. The helper's Python work still takes
the GIL, but waiting on PostgreSQL and on the graph server does not."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

_Item = TypeVar("_Item")
_Result = TypeVar("_Result")


def ahead(items: Iterable[_Item], work: Callable[[_Item], _Result]) -> Iterator[tuple[_Item, _Result]]:
    """Each item with work(item), in order; work on the next item runs in a helper thread
    while the caller handles this one. work never runs on two items at once, so it may use
    a connection of its own (not the caller's). An error in work is raised where its item
    is reached; a consumer that stops early waits for the one item worked on ahead, and no
    other is started. A single item is worked on in the caller's thread. No item may be None."""
    pending_items = iter(items)
    current = next(pending_items, None)
    upcoming = next(pending_items, None) if current is not None else None
    if current is None:
        return
    if upcoming is None:
        yield current, work(current)
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="graph-ahead") as helper:
        pending: Future[_Result] = helper.submit(work, current)
        while current is not None:
            result = pending.result()
            if upcoming is not None:
                pending = helper.submit(work, upcoming)
            yield current, result
            current, upcoming = upcoming, (next(pending_items, None) if upcoming is not None else None)


def chained(
    first: _Item, work: Callable[[_Item], _Result], following: Callable[[_Result], _Item | None]
) -> Iterator[_Result]:
    """work(first), then work(following(result)) for as long as following names an item (a
    keyset pager: the next page starts after the last row of this one); each next item is
    worked on in a helper thread while the caller handles this result. The same rules as
    ahead's: work never runs twice at once, errors surface where their result is reached."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="graph-ahead") as helper:
        pending: Future[_Result] | None = helper.submit(work, first)
        while pending is not None:
            result = pending.result()
            upcoming = following(result)
            pending = None if upcoming is None else helper.submit(work, upcoming)
            yield result
