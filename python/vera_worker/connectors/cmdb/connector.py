"""The CMDB connector over HTTP. The server (config "url") answers

    GET {url}/items?updated_since=ISO&cursor=TOKEN&limit=N
        {"items": [{...}, ...], "next_cursor": "TOKEN" | null}
    GET {url}/ids?cursor=TOKEN&limit=N
        {"ids": ["...", ...], "next_cursor": "TOKEN" | null}

with the token (from token_env) as `Authorization: Bearer TOKEN`. The position
is the highest `updated` time read ({"since"}); while a run is under way the
page token of the next page too ({"since", "next", "high"}), so a run that
dies resumes at the page after the last committed one. Items updated at the
very time of the position are read again and found unchanged by their hash."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from vera_client.domain.errors import InvalidArgumentError
from vera_worker.connectors.cmdb.mapping import CmdbMapping, canonical_bytes
from vera_worker.connectors.contract import Item, ItemSkipped, Page, Position, Skip, SourceContext
from vera_worker.connectors.http import SourceAnswerError, SourceHttp
from vera_worker.domain.statements import as_instant

DEFAULT_PAGE_SIZE = 100
MAX_ITEM_BYTES = 1_000_000  # one configuration item; a larger one is skipped, named


class CmdbConnector:
    def __init__(self, context: SourceContext) -> None:
        config = context.config
        url = config.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise InvalidArgumentError(f'source {context.name!r}: config "url" must be an http(s) URL')
        try:
            self._mapping = CmdbMapping.from_config(config)
        except ValueError as exc:
            raise InvalidArgumentError(f"source {context.name!r}: {exc}") from None
        size = config.get("page_size", DEFAULT_PAGE_SIZE)
        self._page_size = size if isinstance(size, int) and 1 <= size <= 1000 else DEFAULT_PAGE_SIZE
        self._url = url.rstrip("/")
        self._item_uri = config.get("item_uri") if isinstance(config.get("item_uri"), str) else None
        self._http = SourceHttp(
            context.name, base_url=self._url, token=context.token, token_env=context.token_env,
            settings=context.resilience, transport=context.transport,
        )  # fmt: skip

    def poll(self, position: Position | None) -> Iterator[Page]:
        since = _text(position, "since")
        token = _text(position, "next")
        high = _text(position, "high") or since
        while True:
            params: dict[str, Any] = {"limit": self._page_size}
            if since:
                params["updated_since"] = since
            if token:
                params["cursor"] = token
            answer = self._http.get_json("/items", params)
            found, token = _listing(answer, "items")
            items: list[Item | Skip] = []
            for raw in found:
                converted = self._convert(raw)
                items.append(converted)
                updated = (
                    as_instant(raw.get(self._mapping.updated_field)) if isinstance(raw, Mapping) else None
                )
                if isinstance(converted, Item) and updated and (high is None or updated > high):
                    high = updated
            if token:
                resume = {"since": since, "next": token, "high": high}
                yield Page(items=tuple(items), position={k: v for k, v in resume.items() if v is not None})
            else:
                yield Page(items=tuple(items), position={"since": high} if high else {})
                return

    def slim(self) -> Iterator[str]:
        token: str | None = None
        while True:
            params: dict[str, Any] = {"limit": 1000}
            if token:
                params["cursor"] = token
            ids, token = _listing(self._http.get_json("/ids", params), "ids")
            yield from (str(i) for i in ids)
            if not token:
                return

    def _convert(self, raw: Any) -> Item | Skip:
        if not isinstance(raw, Mapping):
            return Skip(key="(an item)", reason="not a JSON object")
        try:
            key = self._mapping.key(raw)
        except ItemSkipped as exc:
            return Skip(key="(an item)", reason=str(exc))
        data = canonical_bytes(raw)
        if len(data) > MAX_ITEM_BYTES:
            return Skip(key=key, reason=f"{len(data):,} bytes, over the {MAX_ITEM_BYTES:,} of one item")
        try:
            record = self._mapping.record(raw)
        except ItemSkipped as exc:
            return Skip(key=key, reason=str(exc))
        uri = self._item_uri.replace("{id}", key) if self._item_uri else f"{self._url}/items/{key}"
        updated = as_instant(raw.get(self._mapping.updated_field)) if self._mapping.updated_field else None
        return Item(key=key, raw=data, mime="application/json", record=record, uri=uri, observed_at=updated,
                    version=updated)  # fmt: skip


def _text(position: Position | None, name: str) -> str | None:
    value = position.get(name) if position else None
    return value if isinstance(value, str) and value else None


def _listing(answer: Any, field: str) -> tuple[list[Any], str | None]:
    if not isinstance(answer, Mapping) or not isinstance(answer.get(field), list):
        raise SourceAnswerError(f"the CMDB answered without a {field!r} list")
    token = answer.get("next_cursor")
    return answer[field], token if isinstance(token, str) and token else None
