"""The Slack connector over the Web API (config "url", default
https://slack.com/api), one channel per source (config "channel", its id):

    GET {url}/conversations.history?channel=C&oldest=TS&limit=N&cursor=CURSOR
        -> {"ok": true, "messages": [...newest first], "has_more": bool,
            "response_metadata": {"next_cursor": CURSOR or ""}}
    GET {url}/conversations.replies?channel=C&ts=THREAD_TS&limit=N&cursor=CURSOR
        -> the same shape: the thread's parent, then its replies

with `Authorization: Bearer TOKEN` (a bot or user token with the channel's
*:history scope). Slack answers a refused call with HTTP 200 and
{"ok": false, "error": "invalid_auth"}: a refused token (invalid_auth,
token_expired, token_revoked, not_authed, account_inactive, missing_scope) is
one line naming the variable; a rate limit is HTTP 429 with Retry-After
(error "ratelimited"), waited out by the resilience chain.

Each message is one item (external id CHANNEL/TS): its text one passage, under
a heading naming the channel, the author's id and the time; a thread parent's
replies are read with it, each its own item. The position is the newest ts
read ({"oldest"}: `oldest` is exclusive, so nothing is read twice); while a run
is under way the next page's cursor too ({"oldest", "next", "high"}). The slim
listing is the whole history with the replies of its threads (Slack has no
listing of ids without the texts)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from vera_client.domain.errors import InvalidArgumentError
from vera_worker.connectors.cmdb.mapping import canonical_bytes
from vera_worker.connectors.contract import Item, ItemSkipped, Page, Position, Skip, SourceContext
from vera_worker.connectors.http import SourceAnswerError, SourceAuthError, SourceHttp
from vera_worker.connectors.passages import passages_of
from vera_worker.connectors.secrets import redacted
from vera_worker.domain.records import ParsedRecord

DEFAULT_URL = "https://slack.com/api"
DEFAULT_PAGE_SIZE = 200
MAX_ITEM_BYTES = 1_000_000  # one message; Slack's own cap on a text is 40,000 characters
_CHANNEL = re.compile(r"[A-Z0-9]{1,40}")
_REFUSED = frozenset({"invalid_auth", "not_authed", "token_expired", "token_revoked", "account_inactive",
                      "missing_scope", "no_permission", "not_allowed_token_type"})  # fmt: skip
_NOISE = frozenset({"channel_join", "channel_leave", "group_join", "group_leave", "channel_purpose",
                    "channel_topic", "channel_name", "bot_add", "bot_remove", "pinned_item"})  # fmt: skip
_LINK = re.compile(r"<([^<>|]+)\|([^<>]+)>")
_BARE = re.compile(r"<([@#!]?)([^<>|]+)>")


class SlackConnector:
    def __init__(self, context: SourceContext) -> None:
        config = context.config
        url = config.get("url", DEFAULT_URL)
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise InvalidArgumentError(f'source {context.name!r}: config "url" must be an http(s) URL')
        channel = config.get("channel")
        if not isinstance(channel, str) or not _CHANNEL.fullmatch(channel):
            raise InvalidArgumentError(
                f'source {context.name!r}: config "channel" must be a channel id (C0123456789)'
            )
        size = config.get("page_size", DEFAULT_PAGE_SIZE)
        self._page_size = size if isinstance(size, int) and 1 <= size <= 999 else DEFAULT_PAGE_SIZE
        self._name = context.name
        self._token_env = context.token_env
        self._token = context.token
        self._channel = channel
        label = config.get("channel_name")
        self._label = f"#{label}" if isinstance(label, str) and label else channel
        workspace = config.get("workspace_url")
        self._workspace = workspace.rstrip("/") if isinstance(workspace, str) and workspace else None
        self._http = SourceHttp(
            context.name, base_url=url.rstrip("/"), token=context.token, token_env=context.token_env,
            settings=context.resilience, transport=context.transport,
        )  # fmt: skip

    def poll(self, position: Position | None) -> Iterator[Page]:
        oldest = _text(position, "oldest")
        cursor = _text(position, "next")
        high = _text(position, "high") or oldest
        while True:
            params: dict[str, Any] = {"channel": self._channel, "limit": self._page_size}
            if oldest:
                params["oldest"] = oldest
            if cursor:
                params["cursor"] = cursor
            messages, cursor = self._call("conversations.history", params)
            items: list[Item | Skip] = []
            for message in messages:
                items.extend(self._with_replies(message))
                ts = message.get("ts") if isinstance(message, Mapping) else None
                if isinstance(ts, str) and _later(ts, high):
                    high = ts
            if cursor:
                resume = {"oldest": oldest, "next": cursor, "high": high}
                yield Page(items=tuple(items), position={k: v for k, v in resume.items() if v is not None})
            else:
                yield Page(items=tuple(items), position={"oldest": high} if high else {})
                return

    def slim(self) -> Iterator[str]:
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"channel": self._channel, "limit": 999}
            if cursor:
                params["cursor"] = cursor
            messages, cursor = self._call("conversations.history", params)
            for message in messages:
                if not isinstance(message, Mapping) or not isinstance(message.get("ts"), str):
                    continue
                yield f"{self._channel}/{message['ts']}"
                if _is_parent(message):
                    for reply in self._replies(message["ts"], limit=999):
                        if isinstance(reply, Mapping) and isinstance(reply.get("ts"), str):
                            yield f"{self._channel}/{reply['ts']}"
            if not cursor:
                return

    def _with_replies(self, message: Any) -> list[Item | Skip]:
        found: list[Item | Skip] = []
        if (converted := self._convert(message)) is not None:
            found.append(converted)
        if isinstance(message, Mapping) and _is_parent(message):
            for reply in self._replies(message["ts"]):
                is_reply = isinstance(reply, Mapping) and reply.get("ts") != message["ts"]
                if is_reply and (converted := self._convert(reply)) is not None:
                    found.append(converted)
        return found

    def _replies(self, thread_ts: str, *, limit: int | None = None) -> Iterator[Any]:
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {
                "channel": self._channel,
                "ts": thread_ts,
                "limit": limit or self._page_size,
            }
            if cursor:
                params["cursor"] = cursor
            messages, cursor = self._call("conversations.replies", params)
            yield from messages
            if not cursor:
                return

    def _call(self, method: str, params: Mapping[str, Any]) -> tuple[list[Any], str | None]:
        answer = self._http.get_json(f"/{method}", params)
        if not isinstance(answer, Mapping):
            raise SourceAnswerError(f"source {self._name!r}: Slack answered {method} with no JSON object")
        if answer.get("ok") is not True:
            # redacted before it is cut: a cut could leave a piece of an echoed token unmatched
            error = redacted(str(answer.get("error") or "an unnamed error"), self._token)[:100]
            if error in _REFUSED:
                who = f"the token in ${self._token_env}" if self._token_env else "a request without a token"
                raise SourceAuthError(
                    f"source {self._name!r}: Slack refused {who} ({error}): renew it or check its permissions"
                )
            raise SourceAnswerError(f"source {self._name!r}: Slack answered {method}: {error}")
        messages = answer.get("messages")
        if not isinstance(messages, list):
            raise SourceAnswerError(f"source {self._name!r}: Slack answered {method} without 'messages'")
        metadata = answer.get("response_metadata")
        cursor = metadata.get("next_cursor") if isinstance(metadata, Mapping) else None
        return messages, cursor if isinstance(cursor, str) and cursor else None

    def _convert(self, message: Any) -> Item | Skip | None:
        """The message as an item; None for what is not a message of people (a join, a topic)."""
        if not isinstance(message, Mapping):
            return Skip(key="(a message)", reason="not a JSON object")
        ts = message.get("ts")
        if not isinstance(ts, str) or _number(ts) is None:
            return Skip(key="(a message)", reason="a message without a usable 'ts'")
        key = f"{self._channel}/{ts}"
        data = canonical_bytes(message)
        text = message.get("text")
        reason = (
            f"{len(data):,} bytes, over the {MAX_ITEM_BYTES:,} of one message" if len(data) > MAX_ITEM_BYTES
            else "its 'text' is not a string" if not isinstance(text, str)
            else None
        )  # fmt: skip
        if reason is not None:
            return Skip(key=key, reason=reason)
        if message.get("subtype") in _NOISE or not str(text).strip():
            return None  # a join, a topic; a file or an attachment alone: nothing to read
        try:
            return self._item(message, key, ts, str(text), data)
        except ItemSkipped as exc:
            return Skip(key=key, reason=str(exc))

    def _item(self, message: Mapping[str, Any], key: str, ts: str, text: str, data: bytes) -> Item:
        author = next((str(message[f]) for f in ("user", "username", "bot_id") if message.get(f)), "someone")
        when = _iso(ts)
        thread = message.get("thread_ts")
        place = f"{self._label}, thread {thread}" if isinstance(thread, str) and thread != ts else self._label
        heading = f"{place}: {author} at {when}"
        passages = passages_of([(heading, _plain(text))], what="its text")
        record = ParsedRecord(title=heading[:500], passages=passages, observed_at=when)
        uri = (f"{self._workspace}/archives/{self._channel}/p{ts.replace('.', '')}" if self._workspace
               else f"slack://channel?id={self._channel}&message={ts}")  # fmt: skip
        edited = message.get("edited")
        version = str(edited.get("ts") or ts) if isinstance(edited, Mapping) else ts
        return Item(key=key, raw=data, mime="application/json", record=record, uri=uri, observed_at=when,
                    version=version)  # fmt: skip


def _is_parent(message: Mapping[str, Any]) -> bool:
    count = message.get("reply_count")
    return message.get("thread_ts") == message.get("ts") and isinstance(count, int) and count > 0


def _plain(text: str) -> str:
    """Slack's mrkdwn links and mentions as text: <url|label> reads label, <@U1> reads @U1."""
    text = _LINK.sub(lambda m: m.group(2), text)
    text = _BARE.sub(lambda m: m.group(1) + m.group(2) if m.group(1) in ("@", "#") else m.group(2), text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _number(ts: str) -> Decimal | None:
    try:
        value = Decimal(ts)
    except InvalidOperation:
        return None
    return value if value.is_finite() and value >= 0 else None


def _later(ts: str, than: str | None) -> bool:
    value = _number(ts)
    return value is not None and (than is None or (_number(than) or Decimal(0)) < value)


def _iso(ts: str) -> str:
    seconds = _number(ts) or Decimal(0)
    return dt.datetime.fromtimestamp(float(seconds), dt.UTC).isoformat()


def _text(position: Position | None, name: str) -> str | None:
    value = position.get(name) if position else None
    return value if isinstance(value, str) and value else None
