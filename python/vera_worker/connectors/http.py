"""How an HTTP connector reaches its server: one GET of JSON at a time through
the resilience chain every hosted provider uses (circuit breaker, token bucket,
full-jitter retry, per-attempt timeout), which waits as a 429 or 503 asks
(Retry-After) and gives up when it asks for longer than the retry cap.

The secret goes in a header only (never in a URL, where logs and errors would
carry it). A refused token (401, 403) is one line naming the variable to renew,
not a retry; an answer over the size cap is refused before it is parsed."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx

from vera_client.adapters.providers.resilience import ResilienceChain
from vera_client.config import ResilienceSettings
from vera_client.domain.errors import InvalidArgumentError, ProviderError, SourceUnavailableError
from vera_worker.connectors.secrets import redacted


class SourceAuthError(SourceUnavailableError):
    """The source's server refused the token: it expired, was revoked or lacks a permission."""


class SourceAnswerError(SourceUnavailableError):
    """The source's server answered with something the connector cannot use."""


RATE_KEY = "requests_per_second"
MIN_RATE, MAX_RATE = 0.1, 1000.0


def rate_limited(name: str, config: Mapping[str, Any], settings: ResilienceSettings) -> ResilienceSettings:
    """settings with the token bucket's rate that the source's config asks for (config
    "requests_per_second", 0.1 to 1,000; the worker's when it names none); InvalidArgumentError,
    one line, for anything else. The same range is checked when the source is registered."""
    if RATE_KEY not in config:
        return settings
    rate = config[RATE_KEY]
    if isinstance(rate, bool) or not isinstance(rate, int | float) or not MIN_RATE <= rate <= MAX_RATE:
        raise InvalidArgumentError(
            f'source {name!r}: config "{RATE_KEY}" must be a number from {MIN_RATE:g} to {MAX_RATE:,.0f}, '
            f"not {str(rate)[:40]}"
        )
    return settings.model_copy(update={"rate_per_second": float(rate)})


class SourceHttp:
    """GETs of JSON from one source's server, as one provider of the resilience chain."""

    def __init__(
        self,
        source: str,
        *,
        base_url: str,
        token: str | None,
        token_env: str | None,
        auth_header: str = "Authorization",
        auth_scheme: str = "Bearer",
        settings: ResilienceSettings | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._source = source
        self._token = token
        self._token_env = token_env
        headers = {"Accept": "application/json"}
        if token is not None:
            headers[auth_header] = f"{auth_scheme} {token}".strip()
        self._chain = ResilienceChain(f"source {source!r}", settings or ResilienceSettings())
        self._max_bytes = self._chain.max_response_bytes
        self._client = httpx.Client(base_url=base_url, headers=headers, transport=transport)

    def close(self) -> None:
        self._client.close()

    def get_json(self, path: str, params: Mapping[str, Any] | None = None) -> Any:
        """The JSON answer to GET path?params; SourceAuthError, SourceAnswerError or the chain's
        ProviderError (after its retries), each one line without the secret. A query in path (a
        server's "next" link) is kept: httpx drops it when parameters are passed too, so it is
        sent as parameters, params winning. Only a link's path is followed, never its host: the
        token goes to the source's own URL alone."""
        parts = urlsplit(path)
        if parts.query:
            linked = dict(parse_qsl(parts.query, keep_blank_values=True))
            path, params = parts.path, {**linked, **(params or {})}
        try:
            return self._chain.call(lambda timeout: self._attempt(path, params, timeout))
        except ProviderError as exc:
            # the chain's message names the status and the server's own words: never the token
            raise SourceUnavailableError(redacted(str(exc), self._token)) from None

    def _attempt(self, path: str, params: Mapping[str, Any] | None, timeout: float) -> Any:
        with self._client.stream("GET", path, params=dict(params or {}), timeout=timeout) as response:
            if response.status_code in (401, 403):
                who = f"the token in ${self._token_env}" if self._token_env else "a request without a token"
                raise SourceAuthError(
                    f"source {self._source!r}: the server refused {who} (HTTP {response.status_code}): "
                    "renew it or check its permissions"
                )
            if response.status_code >= 400:
                response.read()
                _without_secret(response, self._token).raise_for_status()  # the chain retries 429, 408, 5xx
            body = bytearray()
            for piece in response.iter_bytes():
                body += piece
                if len(body) > self._max_bytes:
                    raise SourceAnswerError(
                        f"source {self._source!r}: an answer of {path} is over {self._max_bytes:,} bytes"
                    )
        try:
            return json.loads(body)
        except ValueError:
            raise SourceAnswerError(f"source {self._source!r}: the answer of {path} is not JSON") from None


def _without_secret(response: httpx.Response, secret: str | None) -> httpx.Response:
    """response, or a copy whose body no longer holds the secret: the chain quotes the server's
    own words cut to 200 characters, and a cut could leave a piece of an echoed token that
    `redacted` no longer matches, so the body is redacted before anything cuts it."""
    if not secret or secret not in response.text:
        return response
    kept = {
        name: value
        for name, value in response.headers.items()
        if name.lower() in {"retry-after", "content-type"}
    }
    return httpx.Response(
        response.status_code,
        headers=kept,
        content=redacted(response.text, secret).encode(),
        request=response.request,
    )
