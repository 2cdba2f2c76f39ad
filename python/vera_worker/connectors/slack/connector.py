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
a heading naming the channel, the author (by name: `users.info`, once per user
and run; the id when the token may not read users) and the time; a thread
parent's replies are read with it, each its own item. The raw bytes hashed
are the message without its thread bookkeeping (reply_count, latest_reply,
reply_users...), so a new reply does not make a new version of its parent.

The position is the newest ts read ({"oldest"}). `conversations.history`
from `oldest` sees only new top-level messages, not an edit of an older one
nor a reply added to an older thread, so an incremental run asks from
`oldest - lookback_s` (config, default a day): the messages of the window are
read again (found unchanged by their hash unless edited), and a thread parent
of the window whose `latest_reply` is newer than the window's start has its
replies read again. While a run is under way the position holds the next
page's cursor too ({"oldest", "next", "high"}). The slim listing is the whole
history with the replies of its threads (Slack has no listing of ids without
the texts).

    GET {url}/users.info?user=U -> {"ok": true, "user": {"id", "name", "real_name",
                                    "profile": {"display_name", "real_name"}}}
listing of ids without the texts)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterator, Mapping
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
DEFAULT_LOOKBACK_S = 86_400  # a day: edits and late replies within it are seen
MAX_LOOKBACK_S = 90 * 86_400
MAX_ITEM_BYTES = 1_000_000  # one message; Slack's own cap on a text is 40,000 characters
_CHANNEL = re.compile(r"[A-Z0-9]{1,40}")
_REFUSED = frozenset({"invalid_auth", "not_authed", "token_expired", "token_revoked", "account_inactive",
                      "missing_scope", "no_permission", "not_allowed_token_type"})  # fmt: skip
_NOISE = frozenset({"channel_join", "channel_leave", "group_join", "group_leave", "channel_purpose",
                    "channel_topic", "channel_name", "bot_add", "bot_remove", "pinned_item"})  # fmt: skip
# a thread parent's bookkeeping, which every new reply changes: not part of the hashed message
_THREAD_STATE = frozenset({"reply_count", "reply_users_count", "latest_reply", "reply_users", "last_read",
                           "unread_count", "subscribed", "is_locked"})  # fmt: skip
_UNKNOWN_USER = frozenset({"user_not_found", "user_not_visible", "missing_scope", "no_permission"})
_USER = re.compile(r"[UWB][A-Z0-9]{1,40}")
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
        lookback = config.get("lookback_s", DEFAULT_LOOKBACK_S)
        if isinstance(lookback, bool) or not isinstance(lookback, int) or not 0 <= lookback <= MAX_LOOKBACK_S:
            raise InvalidArgumentError(
                f'source {context.name!r}: config "lookback_s" must be 0 to {MAX_LOOKBACK_S} s (90 days)'
            )
        self._lookback = Decimal(lookback)
        self._resolve_users = config.get("user_names", True) is not False
        self._names: dict[str, str] = {}  # user id -> name, for this run
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
        start = self._window_start(oldest)
        while True:
            params: dict[str, Any] = {"channel": self._channel, "limit": self._page_size}
            if start is not None:
                params["oldest"] = _ts_text(start)
            if cursor:
                params["cursor"] = cursor
            messages, cursor = self._call("conversations.history", params)
            items: list[Item | Skip] = []
            for message in messages:
                items.extend(self._with_replies(message, start))
                ts = message.get("ts") if isinstance(message, Mapping) else None
                if isinstance(ts, str) and _later(ts, high):
                    high = ts
            if cursor:
                resume = {"oldest": oldest, "next": cursor, "high": high}
                yield Page(items=tuple(items), position={k: v for k, v in resume.items() if v is not None})
            else:
                yield Page(items=tuple(items), position={"oldest": high} if high else {})
                return

    def _window_start(self, oldest: str | None) -> Decimal | None:
        """Where an incremental run reads history from: the position less the look-back window
        (None: a first run, everything)."""
        position = _number(oldest) if oldest else None
        if position is None:
            return None
        return max(position - self._lookback, Decimal(0))

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

    def _with_replies(self, message: Any, start: Decimal | None) -> list[Item | Skip]:
        """The message, and a thread parent's replies when the thread may have changed: on a first
        run always, else when its latest reply is newer than the window's start."""
        found: list[Item | Skip] = []
        if (converted := self._convert(message)) is not None:
            found.append(converted)
        if isinstance(message, Mapping) and _is_parent(message) and _active(message, start):
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
        answer = self._answer(method, params)
        messages = answer.get("messages")
        if not isinstance(messages, list):
            raise SourceAnswerError(f"source {self._name!r}: Slack answered {method} without 'messages'")
        metadata = answer.get("response_metadata")
        cursor = metadata.get("next_cursor") if isinstance(metadata, Mapping) else None
        return messages, cursor if isinstance(cursor, str) and cursor else None

    def _answer(
        self, method: str, params: Mapping[str, Any], *, tolerated: frozenset[str] = frozenset()
    ) -> Any:
        """Slack's answer to a method, `ok: true`; an error in tolerated comes back as the answer."""
        answer = self._http.get_json(f"/{method}", params)
        if not isinstance(answer, Mapping):
            raise SourceAnswerError(f"source {self._name!r}: Slack answered {method} with no JSON object")
        if answer.get("ok") is not True:
            # redacted before it is cut: a cut could leave a piece of an echoed token unmatched
            error = redacted(str(answer.get("error") or "an unnamed error"), self._token)[:100]
            if error in tolerated:
                return answer
            if error in _REFUSED:
                who = f"the token in ${self._token_env}" if self._token_env else "a request without a token"
                raise SourceAuthError(
                    f"source {self._name!r}: Slack refused {who} ({error}): renew it or check its permissions"
                )
            raise SourceAnswerError(f"source {self._name!r}: Slack answered {method}: {error}")
        return answer

    def _user_name(self, user: str) -> str:
        """A user id's name (profile display name, else real name, else the handle), asked once per
        run; the id itself when Slack will not say (an unknown user, a token without users:read)."""
        if not self._resolve_users or not _USER.fullmatch(user):
            return user
        if user not in self._names:
            answer = self._answer("users.info", {"user": user}, tolerated=_UNKNOWN_USER)
            if answer.get("error") in ("missing_scope", "no_permission"):
                self._resolve_users = False  # the token may not read users: no more asking this run
            found = answer.get("user") if answer.get("ok") is True else None
            found = found if isinstance(found, Mapping) else {}
            profile = found.get("profile")
            profile = profile if isinstance(profile, Mapping) else {}
            names = [profile.get("display_name"), profile.get("real_name"), found.get("real_name"),
                     found.get("name")]  # fmt: skip
            name = next((n.strip() for n in names if isinstance(n, str) and n.strip()), None)
            self._names[user] = name[:200] if name else user
        return self._names[user]

    def _convert(self, message: Any) -> Item | Skip | None:
        """The message as an item; None for what is not a message of people (a join, a topic)."""
        if not isinstance(message, Mapping):
            return Skip(key="(a message)", reason="not a JSON object")
        ts = message.get("ts")
        if not isinstance(ts, str) or _number(ts) is None:
            return Skip(key="(a message)", reason="a message without a usable 'ts'")
        key = f"{self._channel}/{ts}"
        data = canonical_bytes({k: v for k, v in message.items() if k not in _THREAD_STATE})
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
        user = message.get("user")
        author = (
            self._user_name(user) if isinstance(user, str) and user
            else next((str(message[f]) for f in ("username", "bot_id") if message.get(f)), "someone")
        )  # fmt: skip
        when = _iso(ts)
        thread = message.get("thread_ts")
        place = f"{self._label}, thread {thread}" if isinstance(thread, str) and thread != ts else self._label
        heading = f"{place}: {author} at {when}"
        passages = passages_of([(heading, _plain(text, self._user_name))], what="its text")
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


def _active(parent: Mapping[str, Any], start: Decimal | None) -> bool:
    """Whether a thread's replies are read: always on a first run, else when its latest reply is
    newer than the window's start (or Slack does not say when it was)."""
    if start is None:
        return True
    latest = parent.get("latest_reply")
    value = _number(latest) if isinstance(latest, str) else None
    return value is None or value > start


def _plain(text: str, name: Callable[[str], str] | None = None) -> str:
    """Slack's mrkdwn links and mentions as text: <url|label> reads label, <@U1> reads @ and the
    user's name (name(U1); the id without it)."""

    def bare(found: re.Match[str]) -> str:
        sign, target = found.group(1), found.group(2)
        if sign == "@" and name is not None:
            return "@" + name(target)
        return sign + target if sign in ("@", "#") else target

    text = _LINK.sub(lambda m: m.group(2), text)
    text = _BARE.sub(bare, text)
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


def _ts_text(value: Decimal) -> str:
    return f"{value:.6f}"


def _iso(ts: str) -> str:
    seconds = _number(ts) or Decimal(0)
    return dt.datetime.fromtimestamp(float(seconds), dt.UTC).isoformat()


def _text(position: Position | None, name: str) -> str | None:
    value = position.get(name) if position else None
    return value if isinstance(value, str) and value else None
