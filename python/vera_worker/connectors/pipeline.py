"""Ingestion that keeps the embedder busy (issue 31): while the caller writes one
item, a thread prepares the next ones (reads, parses, hashes) and another embeds
them, several items' texts in one call of the embedder's preferred batch size.

    for item, vectors in embedded(items, prepare, embedder): write(item, vectors)

Items come back in their order, one by one, so the caller writes them as it did
before: the same transactions, the same cursor. What was prepared or embedded
ahead but not yet handed back is only dropped when the run ends early (a crash,
a stop): it was never written, so the next run reads it again, and nothing is
lost or written twice.

`prepare(item)` returns (what to hand back, the texts to embed); it reports
nothing itself (the caller does, in order) and should not raise: an exception it
raises ends the run in the caller's thread. A call of the embedder that fails
with a VeraError is tried again item by item, so each item gets its own error
(a bad text fails its item, not its batch): the error is handed back in place of
its vectors, and the caller decides whether it ends the run.

An embedder that names a `batch_size` gets calls of CALL_BATCHES such batches
(whole items; a text repeated among them once), so it can sort a call's texts
by length and pad each batch to similar lengths; with fewer texts ready than
one batch the embedding thread waits for more rather than call short.
An embedder that names no `batch_size` is called once per item, as before; the
pipeline still runs ahead of the writes.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable, Generator, Iterable, Sequence
from typing import Generic, TypeVar, cast

from vera_client.domain.errors import VeraError
from vera_client.domain.ports import Embedder

S = TypeVar("S")
P = TypeVar("P")

# items prepared ahead of the embedder, and embedded ahead of the writer: bounds memory (each
# holds one file's bytes, at most a kind's read limit) and what a crash throws away
DEPTH = 64
# texts a call of the embedder gets, in its batches: enough to sort them by length into batches
# of similar lengths (a claim's text or a subject's name is far shorter than a passage)
CALL_BATCHES = 4
_POLL_S = 0.1  # how often a blocked thread looks whether the run has ended

Vectors = list[list[float]]


class _End:
    """The end of a stage's output."""


class _Raised:
    """An exception of a stage, raised again in the caller's thread."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


class _Prepared(Generic[P]):
    __slots__ = ("payload", "texts")

    def __init__(self, payload: P, texts: Sequence[str]) -> None:
        self.payload, self.texts = payload, list(texts)


def batch_size(embedder: Embedder | None) -> int:
    """How many texts the embedder embeds best in one call; 0 when it names none (one item a call)."""
    size = getattr(embedder, "batch_size", 0)
    return size if isinstance(size, int) and size > 0 else 0


def embedded(
    items: Iterable[S],
    prepare: Callable[[S], tuple[P, Sequence[str]]],
    embedder: Embedder | None,
    *,
    depth: int = DEPTH,
) -> Generator[tuple[P, Vectors | VeraError], None, None]:
    """Each item's payload with the vectors of its texts (or the VeraError that embedding them
    raised), in the items' order. Closing the iterator early stops both threads."""
    stages: _Stages[S, P] = _Stages(items, prepare, embedder, depth)
    # each thread runs in a copy of the caller's context: the job's meter tally (the worker's
    # per-group model usage) and anything else bound to it count the threads' calls too
    threads = [
        threading.Thread(target=contextvars.copy_context().run, args=(stages.produce,),
                         name="vera-ingest-prepare", daemon=True),
        threading.Thread(target=contextvars.copy_context().run, args=(stages.embed,),
                         name="vera-ingest-embed", daemon=True),
    ]  # fmt: skip
    for thread in threads:
        thread.start()
    try:
        while True:
            got = stages.done.get()
            if isinstance(got, _End):
                return
            if isinstance(got, _Raised):
                raise got.error
            yield cast(tuple[P, Vectors | VeraError], got)
    finally:
        stages.ended.set()
        for thread in threads:
            thread.join()


class _Stages(Generic[S, P]):
    """The two threads' work: prepare the items, embed them in batches."""

    def __init__(
        self, items: Iterable[S], prepare: Callable[[S], tuple[P, Sequence[str]]], embedder: Embedder | None,
        depth: int,
    ) -> None:  # fmt: skip
        self.items, self.prepare, self.embedder, self.depth = items, prepare, embedder, depth
        self.ended = threading.Event()  # the caller is done: the threads stop
        self.prepared: queue.Queue[object] = queue.Queue(maxsize=depth)
        self.done: queue.Queue[object] = queue.Queue(maxsize=depth)

    def put(self, into: queue.Queue[object], value: object) -> bool:
        """Waits for room, unless the caller is done (False)."""
        while not self.ended.is_set():
            try:
                into.put(value, timeout=_POLL_S)
                return True
            except queue.Full:
                continue
        return False

    def produce(self) -> None:
        try:
            for item in self.items:
                payload, texts = self.prepare(item)
                if not self.put(self.prepared, _Prepared(payload, texts)):
                    return
            self.put(self.prepared, _End())
        except BaseException as exc:  # handed to the caller's thread
            self.put(self.prepared, _Raised(exc))

    def embed(self) -> None:
        try:
            while not self.ended.is_set():
                try:
                    first = self.prepared.get(timeout=_POLL_S)
                except queue.Empty:
                    continue
                batch, last = self._batch(first)
                for item, outcome in zip(batch, _vectors(self.embedder, batch), strict=True):
                    if not self.put(self.done, (item.payload, outcome)):
                        return
                if last is not None:  # the end, or an exception of prepare
                    self.put(self.done, last)
                    return
        except BaseException as exc:  # handed to the caller's thread
            self.put(self.done, _Raised(exc))

    def _batch(self, first: object) -> tuple[list[_Prepared[P]], object | None]:
        """Items from first on until their texts fill a call (CALL_BATCHES of the embedder's
        batches, so it can sort them by length against padding), or the items end; and the end,
        when it came; at most `depth` items. With fewer texts than one batch it waits for the next
        item: reading and parsing are far quicker than the model, and a batch of one wastes its
        call."""
        size = batch_size(self.embedder)
        batch: list[_Prepared[P]] = []
        texts = 0
        last: object = first
        while isinstance(last, _Prepared):
            batch.append(last)
            texts += len(last.texts)
            if texts >= size * CALL_BATCHES or len(batch) >= self.depth:
                return batch, None
            try:
                last = self.prepared.get_nowait()
            except queue.Empty:
                if not 0 < texts < size:  # a full batch (or nothing to embed): no waiting
                    return batch, None
                got = self._next()
                if got is None:  # the caller is done
                    return batch, None
                last = got
        return batch, last

    def _next(self) -> object | None:
        """The next prepared item, waiting for it; None when the caller is done."""
        while not self.ended.is_set():
            try:
                return self.prepared.get(timeout=_POLL_S)
            except queue.Empty:
                continue
        return None


def _vectors(embedder: Embedder | None, batch: list[_Prepared[P]]) -> list[Vectors | VeraError]:
    """Each item's vectors, from one call for the whole batch; item by item when that call fails."""
    if embedder is None:
        return [[] for _ in batch]
    # a text repeated in the batch (a subject's name in several claims) is embedded once
    texts = list(dict.fromkeys(text for item in batch for text in item.texts))
    if not texts:
        return [[] for _ in batch]
    try:
        vectors = dict(zip(texts, embedder.embed(texts), strict=True))
    except VeraError as exc:
        if len(batch) == 1:
            return [exc]
        return [_alone(embedder, item.texts) for item in batch]
    return [[vectors[text] for text in item.texts] for item in batch]


def _alone(embedder: Embedder, texts: list[str]) -> Vectors | VeraError:
    if not texts:
        return []
    try:
        return embedder.embed(texts)
    except VeraError as exc:
        return exc
