"""The client's operations composed from the areas of the SQL API (vera_client/api/),
and what every caller's view of one client shares.

Each area module holds its rows, its calls and its plans, and lists its operations
in a class (`Access`, `Sources`, ...); `Operations` is all of them, and both faces
(client.py) inherit it, so an operation is named once for both. `Shared` is what
plans use of the client they run in (api/operation.py's `Services`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from vera_client.adapters.embedders import model_languages
from vera_client.adapters.providers.metering import MeterKey, Totals
from vera_client.adapters.tokenizers.minilm import MiniLMTokenCounter
from vera_client.api.access import Access
from vera_client.api.context import Context
from vera_client.api.curation import Curation
from vera_client.api.health import Health
from vera_client.api.idempotency import Idempotency
from vera_client.api.reads import Reads
from vera_client.api.search import Search
from vera_client.api.snapshots import Snapshots
from vera_client.api.sources import Sources
from vera_client.bootstrap import Providers
from vera_client.domain.callers import Caller
from vera_client.domain.languages import model_reads
from vera_client.domain.ports import Embedder, ObjectStore, Reranker


class Operations(Access, Sources, Curation, Search, Snapshots, Reads, Context, Idempotency, Health):
    """Every operation of the client, from the areas of the SQL API."""


class Shared:
    """What every caller's view of one client shares: providers (embedders behind
    their cache, the reranker, the meter) and a short memo of embedding pins."""

    # a group pins its model with its first vector and keeps it: remembering the pins
    # for a while saves every search a round trip (a group pinned meanwhile is searched
    # by words alone until then)
    PINS_TTL_SECONDS = 30.0
    # groups with no pin at all (searched by words only) are remembered for less: their
    # first vector may come with any write, and their searches then want it soon
    NO_PINS_TTL_SECONDS = 5.0
    PINS_MAX_ENTRIES = 10_000  # callers x group sets remembered at once

    def __init__(self, providers: Providers | None) -> None:
        self.providers = providers
        self._pins: dict[tuple[str, tuple[str, ...] | None], tuple[float, list[tuple[str, int]]]] = {}
        self._lock = threading.Lock()
        settings = providers.settings.reranker if providers is not None else None
        self.rerank_weight = settings.weight if settings is not None else 0.0
        self.rerank_top_n = settings.top_n if settings is not None else 0
        # context packs count their budget in the MiniLM tokenizer's word pieces
        self.token_counter = MiniLMTokenCounter()

    def known_pins(self, caller: Caller, groups: Sequence[str] | None) -> list[tuple[str, int]] | None:
        """The pins this caller read lately for these groups, else None. Keyed by caller:
        'every readable group' and what row-level security lets through differ per caller."""
        with self._lock:
            entry = self._pins.get(self._key(caller, groups))
        return entry[1] if entry is not None and entry[0] > time.monotonic() else None

    def remember_pins(
        self, caller: Caller, groups: Sequence[str] | None, pins: list[tuple[str, int]]
    ) -> None:
        now = time.monotonic()
        ttl = self.PINS_TTL_SECONDS if pins else self.NO_PINS_TTL_SECONDS
        with self._lock:
            if len(self._pins) >= self.PINS_MAX_ENTRIES:
                # a server sees many callers: forget the expired, and if that is not enough, all
                self._pins = {k: v for k, v in self._pins.items() if v[0] > now}
                if len(self._pins) >= self.PINS_MAX_ENTRIES:
                    self._pins.clear()
            self._pins[self._key(caller, groups)] = (now + ttl, pins)

    @staticmethod
    def _key(caller: Caller, groups: Sequence[str] | None) -> tuple[str, tuple[str, ...] | None]:
        return caller.identity, tuple(sorted(groups)) if groups is not None else None

    def embedder_for(self, pins: Sequence[tuple[str, int]], text: str) -> tuple[Embedder, str] | None:
        """The embedder of the first pinned model that runs here and reads the query's language;
        None means the search goes by words alone (a wrong vector would only drag it down)."""
        if self.providers is None:
            return None
        for model, dim in pins:
            if not model_reads(model_languages(model), text):
                continue
            embedder = self.providers.embedder_for_model(model)
            if embedder is not None and embedder.dim == dim:
                return embedder, model
        return None

    def words_only(self, pins: Sequence[tuple[str, int]]) -> str | None:
        """Why a query to groups with these pins goes by words alone although they hold vectors
        (embedder_for found none): no embedder here, or none of their models runs here. None
        when nothing is lost: no pins, no providers (a client built without them), or a model
        that runs here but does not read the query's language."""
        if self.providers is None or not pins:
            return None
        if not self.providers.embeds:
            return "no embedder is configured here (VERA_EMBEDDER__PROVIDER=none)"
        if any(self._runs_here(model, dim) for model, dim in pins):
            return None
        models = ", ".join(sorted({model for model, _ in pins}))
        return f"the groups' embedding model ({models}) does not run here"

    def _runs_here(self, model: str, dim: int) -> bool:
        embedder = self.providers.embedder_for_model(model) if self.providers is not None else None
        return embedder is not None and embedder.dim == dim

    def embedder_for_model(self, model: str | None) -> Embedder | None:
        """The embedder of a group's pinned model (the configured one before it has a pin); None
        without providers, or when that model does not run here."""
        return self.providers.embedder_for_model(model) if self.providers is not None else None

    @property
    def reranker(self) -> Reranker | None:
        return self.providers.reranker if self.providers is not None else None

    def count_tokens(self, text: str) -> int:
        return self.token_counter.count(text)

    @property
    def objects(self) -> ObjectStore | None:
        return self.providers.objects if self.providers is not None else None

    def usage(self) -> dict[MeterKey, Totals]:
        return self.providers.meter.totals() if self.providers is not None else {}
