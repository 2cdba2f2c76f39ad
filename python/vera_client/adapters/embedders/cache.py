"""An embedding cache in front of any Embedder: an in-process LRU with a TTL,
optionally backed by a Valkey that several processes share.

Vectors are kept as little-endian float32 (1.5 KB for 384 dimensions, where a
list of Python floats takes about eight times that). pgvector stores float4,
so the rounding loses nothing the database would keep; every answer, hit or
miss, is rounded the same way so that it never depends on which tier answered.
"""

from __future__ import annotations

import hashlib
import logging
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from vera_client.adapters.optional import require
from vera_client.domain.errors import InvalidArgumentError, ProviderResponseError
from vera_client.domain.ports import Embedder

if TYPE_CHECKING:  # the [cache] extra installs it; imported when a shared cache is configured
    import valkey

log = logging.getLogger(__name__)

KEY_PREFIX = "vera:emb:v1"


def _packed(vector: Sequence[float]) -> bytes:
    """A vector as little-endian float32."""
    return struct.pack(f"<{len(vector)}f", *vector)


def _unpacked(data: bytes) -> list[float]:
    return list(struct.unpack(f"<{len(data) // 4}f", data))


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheStats:
    """What the cache did since it was built; each distinct text of a call counts once."""

    hits_local: int = 0
    hits_shared: int = 0
    misses: int = 0
    errors: int = 0


def cache_key(model: str, dim: int, text: str) -> str:
    """The shared cache's key of one text's vector."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return f"{KEY_PREFIX}:{model}:{dim}:{digest}"


class CachedEmbedder:
    """An Embedder with the inner embedder's model and dimension that asks it only for texts not cached.

    max_entries=0 turns the in-process tier off. `shared` is a Valkey client
    (built with decode_responses=False) or a valkey:// URL; when it fails, the
    call goes on without it, the error is counted, and it is left alone for
    `shared_backoff_seconds` so that an outage costs one timeout, not one per call.
    """

    def __init__(
        self,
        inner: Embedder,
        *,
        max_entries: int = 10_000,
        ttl_seconds: float = 7 * 24 * 3600,
        shared: valkey.Valkey | str | None = None,
        shared_timeout_seconds: float = 0.5,
        shared_backoff_seconds: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_entries < 0:
            raise InvalidArgumentError("max_entries must be 0 (off) or more")
        if ttl_seconds <= 0:
            raise InvalidArgumentError("ttl_seconds must be positive")
        self._inner = inner
        self._model = inner.model
        self._dim = inner.dim
        self._max_entries = max_entries
        self._ttl = ttl_seconds
        # Valkey's expiry has millisecond resolution; at least 1 ms, or SET refuses it
        self._ttl_ms = max(1, round(ttl_seconds * 1000))
        # without a shared tier no Valkey call is made, and none of its errors can occur
        self._shared_errors: tuple[type[Exception], ...] = (OSError,)
        self._shared: valkey.Valkey | None = None
        if shared is not None:
            client = require("valkey", extra="cache", needed_for="the shared embedding cache (Valkey)")
            self._shared_errors = (client.exceptions.ValkeyError, OSError)
            self._shared = (
                client.Valkey.from_url(
                    shared,
                    socket_timeout=shared_timeout_seconds,
                    socket_connect_timeout=shared_timeout_seconds,
                )
                if isinstance(shared, str)
                else shared
            )
        self._backoff = shared_backoff_seconds
        self._shared_resumes_at = float("-inf")
        self._clock = clock
        self._lock = threading.Lock()
        self._local: OrderedDict[str, tuple[float, bytes]] = OrderedDict()
        self._stats = CacheStats()

    @property
    def model(self) -> str:
        return self._model

    @property
    def dim(self) -> int:
        return self._dim

    @property
    def batch_size(self) -> int:
        """The inner embedder's, 0 when it names none (ingestion batches several items' texts, issue 31)."""
        size = getattr(self._inner, "batch_size", 0)
        return size if isinstance(size, int) else 0

    def stats(self) -> CacheStats:
        """The counters so far."""
        with self._lock:
            return self._stats

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        # each distinct text is looked up and embedded once, however often it repeats
        unique = list(dict.fromkeys(texts))
        keys = {text: cache_key(self._model, self._dim, text) for text in unique}
        found = self._local_lookup([keys[t] for t in unique])
        local_hits = len(found)

        wanted = [keys[t] for t in unique if keys[t] not in found]
        from_shared = self._shared_lookup(wanted) if wanted else {}
        found.update(from_shared)

        missing = [t for t in unique if keys[t] not in found]
        computed = self._compute(missing) if missing else {}
        found.update(computed)

        self._local_store({**from_shared, **computed})
        if computed:
            self._shared_store(computed)
        self._count(hits_local=local_hits, hits_shared=len(from_shared), misses=len(missing))
        return [_unpacked(found[keys[t]]) for t in texts]

    def _compute(self, texts: list[str]) -> dict[str, bytes]:
        vectors = self._inner.embed(texts)
        if len(vectors) != len(texts):
            raise ProviderResponseError(
                f"embedder {self._model} returned {len(vectors)} vectors for {len(texts)} texts"
            )
        packed: dict[str, bytes] = {}
        for text, vector in zip(texts, vectors, strict=True):
            if len(vector) != self._dim:
                raise ProviderResponseError(
                    f"embedder {self._model} returned {len(vector)} dimensions instead of {self._dim}"
                )
            packed[cache_key(self._model, self._dim, text)] = _packed(vector)
        return packed

    # -- in-process tier ---------------------------------------------------

    def _local_lookup(self, keys: list[str]) -> dict[str, bytes]:
        if self._max_entries == 0:
            return {}
        now = self._clock()
        found: dict[str, bytes] = {}
        with self._lock:
            for key in keys:
                entry = self._local.get(key)
                if entry is None:
                    continue
                expires_at, blob = entry
                if expires_at <= now:
                    del self._local[key]
                    continue
                self._local.move_to_end(key)
                found[key] = blob
        return found

    def _local_store(self, blobs: dict[str, bytes]) -> None:
        if self._max_entries == 0 or not blobs:
            return
        expires_at = self._clock() + self._ttl
        with self._lock:
            for key, blob in blobs.items():
                self._local[key] = (expires_at, blob)
                self._local.move_to_end(key)
            while len(self._local) > self._max_entries:
                self._local.popitem(last=False)

    # -- shared tier ---------------------------------------------------------

    def _backing_off(self) -> bool:
        return self._clock() < self._shared_resumes_at

    def _shared_lookup(self, keys: list[str]) -> dict[str, bytes]:
        if self._shared is None or self._backing_off():
            return {}
        try:
            # the client's stubs cover its async twin too; this one answers a list
            values = cast("list[bytes | None]", self._shared.mget(keys))
        except self._shared_errors as exc:
            self._shared_failed("read", exc)
            return {}
        expected = self._dim * 4  # float32
        found: dict[str, bytes] = {}
        for key, value in zip(keys, values, strict=True):
            if isinstance(value, bytes) and len(value) == expected:
                found[key] = value
            elif value is not None:
                # not a vector of this dimension (another writer, or decoded responses): recompute it
                self._count(errors=1)
        return found

    def _shared_store(self, blobs: dict[str, bytes]) -> None:
        if self._shared is None or self._backing_off():
            return
        try:
            # one round trip for the whole batch; not a transaction, each SET stands alone
            pipe: Any = self._shared.pipeline(transaction=False)  # its execute() is untyped
            for key, blob in blobs.items():
                pipe.set(key, blob, px=self._ttl_ms)
            pipe.execute()
        except self._shared_errors as exc:
            self._shared_failed("write", exc)

    def _shared_failed(self, action: str, exc: Exception) -> None:
        self._shared_resumes_at = self._clock() + self._backoff
        self._count(errors=1)
        message = " ".join(str(exc).split()) or type(exc).__name__
        log.warning("shared embedding cache %s failed, going on without it: %s", action, message)

    def _count(self, *, hits_local: int = 0, hits_shared: int = 0, misses: int = 0, errors: int = 0) -> None:
        with self._lock:
            s = self._stats
            self._stats = CacheStats(
                hits_local=s.hits_local + hits_local,
                hits_shared=s.hits_shared + hits_shared,
                misses=s.misses + misses,
                errors=s.errors + errors,
            )
