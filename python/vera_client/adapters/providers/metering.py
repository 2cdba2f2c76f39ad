"""What calls to hosted providers used and roughly cost, per (provider, model, operation).

Adapters record one entry per network attempt, so anything placed above an
adapter (an embedding cache) costs nothing when it answers by itself. Token
counts come from the providers' own `usage`; the cost is an estimate from list
prices, which change and ignore free tiers, batch discounts and negotiated rates.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True, slots=True)
class Price:
    """A model's list price in USD per million tokens."""

    input_per_million: float
    output_per_million: float = 0.0


# List prices as the providers published them when this was written; they are
# estimates for budgeting, not invoices. Callers pass `prices=` to correct them.
LIST_PRICES: Mapping[str, Price] = {
    # OpenAI embeddings
    "text-embedding-3-small": Price(input_per_million=0.02),
    "text-embedding-3-large": Price(input_per_million=0.13),
    "text-embedding-ada-002": Price(input_per_million=0.10),
    # Voyage embeddings
    "voyage-3.5": Price(input_per_million=0.06),
    "voyage-3.5-lite": Price(input_per_million=0.02),
    "voyage-3-large": Price(input_per_million=0.18),
    "voyage-4": Price(input_per_million=0.06),
    "voyage-4-lite": Price(input_per_million=0.02),
    "voyage-4-large": Price(input_per_million=0.12),
    # Voyage rerankers
    "rerank-2.5": Price(input_per_million=0.05),
    "rerank-2.5-lite": Price(input_per_million=0.02),
    # OpenAI chat models an LLM reranker is likely to use
    "gpt-4o-mini": Price(input_per_million=0.15, output_per_million=0.60),
    "gpt-4.1-mini": Price(input_per_million=0.40, output_per_million=1.60),
    "gpt-4.1-nano": Price(input_per_million=0.10, output_per_million=0.40),
    "gpt-5-mini": Price(input_per_million=0.25, output_per_million=2.00),
    "gpt-5-nano": Price(input_per_million=0.05, output_per_million=0.40),
}


@dataclass(frozen=True, kw_only=True, slots=True)
class Usage:
    """The tokens one successful request used, as the provider reported them."""

    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, kw_only=True, slots=True)
class MeterKey:
    """What a total is kept for."""

    provider: str
    model: str
    operation: str


@dataclass(frozen=True, kw_only=True, slots=True)
class Totals:
    """Requests that reached the network and what the successful ones used.

    A failed request (an error status, a timeout, an unusable answer) counts in
    `requests` and `failed_requests` but adds no tokens: providers report usage
    only with an answer. `unpriced_requests` are successful requests of models
    without a price, so `estimated_cost_usd` understates them.
    """

    requests: int = 0
    failed_requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    estimated_cost_usd: float = 0.0
    unpriced_requests: int = 0

    def __add__(self, other: Totals) -> Totals:
        return Totals(
            requests=self.requests + other.requests,
            failed_requests=self.failed_requests + other.failed_requests,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            estimated_cost_usd=self.estimated_cost_usd + other.estimated_cost_usd,
            unpriced_requests=self.unpriced_requests + other.unpriced_requests,
        )


class Tally:
    """What the requests recorded inside one `tally()` block used, per key: one job's share of a
    meter that every job of the process shares (the worker records it per group)."""

    def __init__(self) -> None:
        self._totals: dict[MeterKey, Totals] = {}
        self._lock = threading.Lock()

    def add(self, key: MeterKey, entry: Totals) -> None:
        with self._lock:
            self._totals[key] = self._totals.get(key, Totals()) + entry

    def totals(self) -> dict[MeterKey, Totals]:
        """A snapshot of the totals per key."""
        with self._lock:
            return dict(self._totals)


# the tallies open in this context (thread or task): every meter adds each request to them
_TALLIES: ContextVar[tuple[Tally, ...]] = ContextVar("vera_meter_tallies", default=())


@contextmanager
def tally() -> Iterator[Tally]:
    """Count, besides the meters' own totals, the requests this thread (or task) makes inside the
    block, whichever meter records them; blocks nest (each counts what is inside it)."""
    opened = Tally()
    token = _TALLIES.set((*_TALLIES.get(), opened))
    try:
        yield opened
    finally:
        _TALLIES.reset(token)


class Meter:
    """Thread-safe running totals; one meter is usually shared by all adapters of a process."""

    def __init__(self, prices: Mapping[str, Price] | None = None) -> None:
        self._prices: dict[str, Price] = {**LIST_PRICES, **(prices or {})}
        self._totals: dict[MeterKey, Totals] = {}
        self._lock = threading.Lock()

    def price(self, model: str) -> Price | None:
        """The price used for model, or None when it has none."""
        return self._prices.get(model)

    def record(self, *, provider: str, model: str, operation: str, usage: Usage | None) -> None:
        """Count one request that reached the network; usage is None when it failed."""
        key = MeterKey(provider=provider, model=model, operation=operation)
        entry = self._entry(model, usage)
        with self._lock:
            self._totals[key] = self._totals.get(key, Totals()) + entry
        for open_tally in _TALLIES.get():
            open_tally.add(key, entry)

    def totals(self) -> dict[MeterKey, Totals]:
        """A snapshot of the totals per key."""
        with self._lock:
            return dict(self._totals)

    def grand_total(self) -> Totals:
        """Everything recorded, all keys together."""
        total = Totals()
        for entry in self.totals().values():
            total += entry
        return total

    def _entry(self, model: str, usage: Usage | None) -> Totals:
        if usage is None:
            return Totals(requests=1, failed_requests=1)
        price = self._prices.get(model)
        cost = (
            0.0
            if price is None
            else (
                usage.input_tokens * price.input_per_million + usage.output_tokens * price.output_per_million
            )
            / 1_000_000
        )
        return Totals(
            requests=1,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            estimated_cost_usd=cost,
            unpriced_requests=1 if price is None else 0,
        )
