"""The one capped read of a provider's answer: every HTTP provider (chat, embedders,
rerankers, any future connector) and the S3 object store read bodies through it.

A body is counted twice while it streams in: the bytes received (what crossed the
network) and the bytes they decode to (after Content-Encoding: gzip, br, deflate).
Reading stops at the first chunk that takes either count past the limit, so an
answer gzipped to a few hundred kilobytes that would expand to gigabytes costs at
most the limit in memory, and a server that trickles garbage cannot hold the
reader past its deadline.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import httpx

from vera_client.domain.errors import ProviderAnswerTooLargeError, ProviderResponseError

# what a provider's answer may weigh unless configured otherwise (ResilienceSettings.max_response_bytes):
# 64 MiB holds a 2048-text batch of 1536-dimension embeddings as JSON with room to spare
DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
# headers that describe the encoded body, which the rebuilt response no longer has
_DECODED_AWAY = frozenset({"content-encoding", "content-length", "transfer-encoding"})
# the encodings a provider may use (sent as Accept-Encoding): the ones read here step by step
ACCEPT_ENCODING = "gzip, deflate"
_RAW_CHUNK = 16 * 1024  # network bytes handed to the inflater at once
_BLOCK = 256 * 1024  # decoded bytes one inflater step may produce


def too_large(provider: str, limit: int, setting: str = "max_response_bytes") -> ProviderAnswerTooLargeError:
    """The error for a body past the limit, naming the provider, the limit and its setting."""
    return ProviderAnswerTooLargeError(
        f"{provider}: the answer is larger than the {limit}-byte limit ({setting}); reading stopped"
    )


def read_bounded(
    chunks: Iterable[bytes],
    *,
    provider: str,
    limit: int,
    received: Callable[[], int] | None = None,
    deadline: float | None = None,
    on_deadline: Callable[[], BaseException] | None = None,
    setting: str = "max_response_bytes",
) -> bytes:
    """The chunks joined, refused with ProviderAnswerTooLargeError past `limit` bytes.

    chunks are the decoded bytes; received(), when given, counts the bytes that came
    over the network (they differ under Content-Encoding). Past `deadline` (a
    time.monotonic() value) on_deadline() is raised.
    """
    body = bytearray()
    for chunk in chunks:
        body += chunk
        if len(body) > limit or (received is not None and received() > limit):
            raise too_large(provider, limit, setting)
        if deadline is not None and time.monotonic() > deadline:
            raise on_deadline() if on_deadline is not None else TimeoutError("the answer took too long")
    return bytes(body)


def read_response(streamed: httpx.Response, *, provider: str, limit: int, deadline: float) -> httpx.Response:
    """A streamed httpx response read in full within limit and deadline, as a response whose content
    is the decoded body (its Content-Encoding dropped, since the bytes are decoded already).

    httpx's own decoders inflate a whole network read at once (64 KiB of a bomb is 64 MiB);
    this one inflates at most _BLOCK bytes a step, so the cap is checked before memory grows.
    """
    declared = streamed.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large(provider, limit)  # refused before a byte of the body is read
    decoder = _Decoder(provider, streamed.headers.get("content-encoding"))
    received = 0

    def decoded() -> Iterator[bytes]:
        nonlocal received
        for raw in streamed.iter_raw(_RAW_CHUNK):
            received += len(raw)
            yield from decoder.feed(raw)
        yield decoder.flush()

    content = read_bounded(
        decoded(),
        provider=provider,
        limit=limit,
        received=lambda: received,
        deadline=deadline,
        on_deadline=lambda: httpx.ReadTimeout("the answer took too long", request=streamed.request),
    )
    kept = [(k, v) for k, v in streamed.headers.multi_items() if k.lower() not in _DECODED_AWAY]
    return httpx.Response(
        streamed.status_code, headers=httpx.Headers(kept), content=content, request=streamed.request
    )


class _Decoder:
    """Inflates gzip or deflate a bounded step at a time; identity passes through.

    Other encodings are refused: ACCEPT_ENCODING asks for none of them."""

    def __init__(self, provider: str, encoding: str | None) -> None:
        self._provider = provider
        self._encoding = (encoding or "identity").strip().lower()
        self._inflater: Any = None
        self._raw_deflate_tried = False
        if self._encoding in ("gzip", "x-gzip"):
            self._inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif self._encoding == "deflate":
            self._inflater = zlib.decompressobj()
        elif self._encoding != "identity":
            raise ProviderResponseError(
                f"{provider}: unusable answer: content-encoding {encoding!r} was not asked for"
            )

    def feed(self, data: bytes) -> Iterator[bytes]:
        if self._inflater is None:
            yield data
            return
        yield self._inflate(data)  # at least one (maybe empty) chunk a read, so the received count is checked
        while self._inflater.unconsumed_tail:
            yield self._inflate(self._inflater.unconsumed_tail)

    def flush(self) -> bytes:
        return self._inflate(b"", flush=True) if self._inflater is not None else b""

    def _inflate(self, data: bytes, *, flush: bool = False) -> bytes:
        try:
            return bytes(self._inflater.flush(_BLOCK) if flush else self._inflater.decompress(data, _BLOCK))
        except zlib.error as exc:
            if self._encoding == "deflate" and not self._raw_deflate_tried:
                # servers send raw deflate under "deflate" as often as the zlib format it names
                self._raw_deflate_tried = True
                self._inflater = zlib.decompressobj(-zlib.MAX_WBITS)
                return self._inflate(data, flush=flush)
            raise ProviderResponseError(
                f"{self._provider}: unusable answer: its {self._encoding} encoding is corrupt ({exc})"
            ) from exc
