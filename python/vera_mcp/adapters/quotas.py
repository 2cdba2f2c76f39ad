"""Quota ledgers: count calls per principal and tool class, in process or in Valkey, and
per organisation (a ceiling every principal of the organisation shares).

Both count in FIXED windows aligned to the epoch (a "120/min" window is one
clock minute). A fixed window needs one counter per principal and class,
one atomic INCR per call, and says exactly when the caller may retry (the
window's end). Its known cost, a burst of up to twice the limit across a
window boundary, is acceptable for quotas whose job is to stop abuse and
runaway agents, not to bill; a sliding log would keep one entry per call
(memory growing with the limit) to remove it.

A refused call still counts in its window: a caller hammering a refusal
gets nothing more when the window ends than one that waited.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from collections.abc import Callable, Collection

import valkey.asyncio as valkey_asyncio
from valkey.exceptions import ValkeyError

from vera_client.domain.errors import InvalidArgumentError
from vera_mcp.domain.access import QuotaExceededError, ToolClass
from vera_mcp.domain.quotas import QuotaLimits, Rate

log = logging.getLogger(__name__)

Clock = Callable[[], float]


def _refusal(
    tool_class: ToolClass, rate: Rate, seconds_left: float, *, shared: bool = False
) -> QuotaExceededError:
    # whole milliseconds, never 0: "retry after 0 s" would invite an immediate retry that fails
    retry_after = max(0.001, math.ceil(seconds_left * 1000) / 1000)
    return QuotaExceededError(tool_class, f"{rate} per organisation" if shared else str(rate), retry_after)


def _counted(
    principal_id: str, organisations: Collection[str], limits: QuotaLimits, tool_class: ToolClass
) -> list[tuple[str, Rate, bool]]:
    """What one call counts against: (the counter's subject, its rate, whether it is an organisation's)."""
    counted = [(principal_id, limits.rate(tool_class), False)]
    counted += [
        (f"org:{org}", limits.organisation_rate(tool_class), True) for org in sorted(set(organisations))
    ]
    return counted


class InProcessQuotaLedger:
    """A QuotaLedger for one server process. Thread- and asyncio-safe (the lock is held
    for a dictionary update only, never across an await).

    Memory stays bounded: a counter lives only while its window is open, and
    windows that ended are swept at most once per `sweep_every_seconds`.
    """

    def __init__(
        self,
        limits: QuotaLimits | None = None,
        *,
        clock: Clock = time.time,
        sweep_every_seconds: float = 10.0,
    ) -> None:
        self._limits = limits or QuotaLimits()
        self._clock = clock
        self._sweep_every = sweep_every_seconds
        self._next_sweep = float("-inf")
        self._lock = threading.Lock()
        # (principal or "org:<id>", class) -> (window index, calls counted in it, window length)
        self._counters: dict[tuple[str, ToolClass], tuple[int, int, int]] = {}

    async def take(
        self, principal_id: str, tool_class: ToolClass, organisations: Collection[str] = ()
    ) -> None:
        self.take_now(principal_id, tool_class, organisations)

    def take_now(self, principal_id: str, tool_class: ToolClass, organisations: Collection[str] = ()) -> None:
        """take() for synchronous callers (and the Valkey ledger's fallback)."""
        now = self._clock()
        refusal: QuotaExceededError | None = None
        with self._lock:
            if now >= self._next_sweep:
                self._sweep(now)
            for subject, rate, shared in _counted(principal_id, organisations, self._limits, tool_class):
                window, seconds_left = rate.window(now)
                key = (subject, tool_class)
                counted_window, calls, _ = self._counters.get(key, (window, 0, rate.window_seconds))
                calls = calls + 1 if counted_window == window else 1
                self._counters[key] = (window, calls, rate.window_seconds)
                if calls > rate.limit and refusal is None:
                    refusal = _refusal(tool_class, rate, seconds_left, shared=shared)
        if refusal is not None:
            raise refusal

    def _sweep(self, now: float) -> None:
        ended = [
            key
            for key, (window, _, seconds) in self._counters.items()
            if window < Rate(1, seconds).window(now)[0]
        ]
        for key in ended:
            del self._counters[key]
        self._next_sweep = now + self._sweep_every

    def __len__(self) -> int:
        """How many counters are held (for tests of the memory bound)."""
        with self._lock:
            return len(self._counters)


def quota_key(prefix: str, principal_id: str, tool_class: ToolClass, window: int) -> str:
    """The Valkey key of one principal's counter for one class and window.

    The principal id is hashed: keys stay short and free of the separator
    whatever a token's subject looks like (ids are opaque, so nothing is lost).
    """
    digest = hashlib.sha256(principal_id.encode("utf-8")).hexdigest()[:32]
    return f"{prefix}:quota:v1:{tool_class.value}:{digest}:{window}"


class ValkeyQuotaLedger:
    """A QuotaLedger that server instances share through Valkey.

    Each take is one MULTI/EXEC round trip: INCR the window's counter and set
    it to expire a little after the window ends, so keys clean themselves up.
    `key_prefix` separates deployments sharing one Valkey.

    When Valkey fails (down, timeout), the call is counted by an in-process
    ledger with the same limits instead, a warning is logged and
    `on_backend_error` is told (the metrics' errors counter), and Valkey is
    left alone for `backoff_seconds`. Neither failing open (no limits at all
    during an outage: the moment an abusive agent would want) nor failing
    closed (a cache outage taking every agent's tools down) is right: each
    instance keeps enforcing the limits on its own, so an outage at worst
    multiplies the allowance by the number of instances.
    """

    def __init__(
        self,
        client: valkey_asyncio.Valkey | str,
        limits: QuotaLimits | None = None,
        *,
        key_prefix: str = "vera",
        timeout_seconds: float = 0.5,
        max_connections: int = 32,
        backoff_seconds: float = 5.0,
        on_backend_error: Callable[[Exception], None] | None = None,
        clock: Clock = time.time,
    ) -> None:
        if not key_prefix or any(c.isspace() for c in key_prefix):
            raise InvalidArgumentError(f"a quota key prefix is a non-empty word, not {key_prefix!r}")
        # a burst of calls waits for one of max_connections (up to the timeout) instead of
        # opening a connection each, which would turn a burst into connect timeouts
        self._own_pool: valkey_asyncio.BlockingConnectionPool | None = None
        self._client: valkey_asyncio.Valkey
        if isinstance(client, str):
            self._own_pool = valkey_asyncio.BlockingConnectionPool.from_url(
                client,
                max_connections=max_connections,
                timeout=timeout_seconds,
                socket_timeout=timeout_seconds,
                socket_connect_timeout=timeout_seconds,
            )
            self._client = valkey_asyncio.Valkey(connection_pool=self._own_pool)
        else:
            self._client = client
        self._limits = limits or QuotaLimits()
        self._prefix = key_prefix
        self._backoff = backoff_seconds
        self._on_backend_error = on_backend_error
        self._clock = clock
        self._fallback = InProcessQuotaLedger(self._limits, clock=clock)
        self._valkey_resumes_at = float("-inf")

    async def take(
        self, principal_id: str, tool_class: ToolClass, organisations: Collection[str] = ()
    ) -> None:
        if time.monotonic() < self._valkey_resumes_at:
            self._fallback.take_now(principal_id, tool_class, organisations)
            return
        now = self._clock()
        counted = _counted(principal_id, organisations, self._limits, tool_class)
        try:
            # one round trip for the principal's counter and its organisations'
            async with self._client.pipeline(transaction=True) as pipe:
                for subject, rate, _ in counted:
                    window, seconds_left = rate.window(now)
                    pipe.incr(quota_key(self._prefix, subject, tool_class, window))
                    # the key outlives its window by a second, whatever the clocks of the instances say
                    pipe.pexpire(quota_key(self._prefix, subject, tool_class, window),
                                 math.ceil((seconds_left + 1) * 1000))  # fmt: skip
                replies = await pipe.execute()
        except (ValkeyError, OSError) as exc:
            self._valkey_failed(exc)
            self._fallback.take_now(principal_id, tool_class, organisations)
            return
        for (_, rate, shared), calls in zip(counted, replies[::2], strict=True):
            if int(calls) > rate.limit:
                raise _refusal(tool_class, rate, rate.window(now)[1], shared=shared)

    def _valkey_failed(self, exc: Exception) -> None:
        now = time.monotonic()
        if now < self._valkey_resumes_at:
            return  # a call in flight when the first failure was reported: one report per outage
        self._valkey_resumes_at = now + self._backoff
        message = " ".join(str(exc).split()) or type(exc).__name__
        log.warning(
            "quota ledger: Valkey failed, counting in this process for %gs: %s", self._backoff, message
        )
        if self._on_backend_error is not None:
            self._on_backend_error(exc)

    async def close(self) -> None:
        """Close the connections (those of a client passed in are its owner's to close)."""
        if self._own_pool is not None:
            await self._client.aclose()
            await self._own_pool.disconnect()
