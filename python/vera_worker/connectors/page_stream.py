"""A run's pages as one stream for the pipeline (pipeline.py): each page's start, its items
with VERA's heads of the page's records, and its end, in order. One pipeline runs through
every page, so the next page is fetched, read and embedded while the writer (runner.py)
writes this one; the markers tell the writer where a page begins (its plan, its untouched
records) and where it ends (its position is due once its items are committed)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from vera_client.domain.ports import Embedder
from vera_worker.connectors.contract import Item, Page, Pending, Skip
from vera_worker.connectors.preparing import Ready, prepare


@dataclass(frozen=True, slots=True)
class PageStart:
    """A page begins (its count, its untouched records)."""

    page: Page


@dataclass(frozen=True, slots=True)
class PageItem:
    """An item with VERA's heads of its page's records."""

    item: Item | Skip | Pending
    heads: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class PageEnd:
    """A page's items are all handed back; its position is due."""

    page: Page


Entry = PageStart | PageItem | PageEnd


def page_stream(pages: Iterable[Page], heads_of: Callable[[Page], Mapping[str, Any]]) -> Iterator[Entry]:
    """Every page's start, items (with the page's heads, asked of heads_of in the pipeline's
    thread, before its items are read) and end, in order."""
    for page in pages:
        yield PageStart(page)
        heads = heads_of(page)
        for item in page.items:
            yield PageItem(item, heads)
        yield PageEnd(page)


def prepared(entry: Entry, embedder: Embedder | None) -> tuple[PageStart | PageEnd | Ready, list[str]]:
    """An item read, hashed and shaped with its texts to embed (preparing.py); a page's markers
    pass through with nothing to embed."""
    if isinstance(entry, PageItem):
        return prepare(entry.item, entry.heads, embedder)
    return entry, []
