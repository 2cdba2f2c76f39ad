"""A hosted provider's JSON API: bearer auth, the resilience chain around each
call, and one meter entry per attempt that reached the network."""

from __future__ import annotations

import json
import math
import ssl
import time
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, TypeVar

import httpx

from vera_client.adapters.providers.bounded import ACCEPT_ENCODING, read_response
from vera_client.adapters.providers.metering import Meter, Usage
from vera_client.adapters.providers.resilience import ResilienceChain
from vera_client.domain.errors import ProviderResponseError

T = TypeVar("T")

# Read from a provider's JSON body: the result and the usage to meter.
Reader = Callable[[Any], tuple[T, Usage]]


class ProviderClient:
    """POSTs JSON to one provider through its resilience chain and meters every attempt.

    Thread-safe: httpx.Client pools connections for concurrent callers.
    """

    def __init__(
        self,
        *,
        provider: str,
        base_url: str,
        api_key: str | None,
        chain: ResilienceChain,
        meter: Meter,
    ) -> None:
        self.provider = provider
        self.chain = chain
        self.meter = meter
        # every answer is read through bounded.read_response, at most this many bytes
        self.max_response_bytes = chain.max_response_bytes
        headers = {"Accept": "application/json", "Accept-Encoding": ACCEPT_ENCODING}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self._http = httpx.Client(
            base_url=base_url, headers=headers, follow_redirects=False, verify=_tls_context()
        )

    def close(self) -> None:
        self._http.close()

    def post(self, path: str, body: Mapping[str, Any], *, model: str, operation: str, read: Reader[T]) -> T:
        """read(the JSON answer) through the chain; ProviderError subclasses when that fails."""

        def attempt(timeout: float) -> T:
            try:
                result, usage = read(self._exchange(path, body, timeout))
            except BaseException:
                self.meter.record(provider=self.provider, model=model, operation=operation, usage=None)
                raise
            self.meter.record(provider=self.provider, model=model, operation=operation, usage=usage)
            return result

        return self.chain.call(attempt)

    def malformed(self, what: str) -> ProviderResponseError:
        """The error for an answer that does not have the shape the API documents."""
        return ProviderResponseError(f"{self.provider}: unusable answer: {what}")

    def _exchange(self, path: str, body: Mapping[str, Any], timeout: float) -> Any:
        # httpx bounds each wait (connect, write, every read) by the timeout; the deadline
        # also bounds a body that trickles in slowly, the chain's cap one that is too large
        deadline = time.monotonic() + timeout
        with self._http.stream("POST", path, json=body, timeout=timeout) as streamed:
            response = read_response(
                streamed, provider=self.provider, limit=self.max_response_bytes, deadline=deadline
            )
        response.raise_for_status()
        try:
            return json.loads(response.content)
        except ValueError as exc:
            raise self.malformed(f"the body is not JSON ({exc})") from exc


@cache
def _tls_context() -> ssl.SSLContext:
    # loading the CA bundle takes tens of milliseconds; one context serves every client
    return httpx.create_ssl_context()


def usage_tokens(payload: Any, field: str) -> int:
    """A token count from payload['usage'][field]; 0 when the provider left it out."""
    usage = payload.get("usage") if isinstance(payload, dict) else None
    value = usage.get(field) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def as_unit_vector(values: Any) -> list[float] | None:
    """values as an L2-normalised list of floats; None unless it is a non-zero vector of finite numbers."""
    if not isinstance(values, list) or not values:
        return None
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in values):
        return None
    vector = [float(x) for x in values]
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if not math.isfinite(norm) or norm == 0.0:
        return None
    return [x / norm for x in vector]
