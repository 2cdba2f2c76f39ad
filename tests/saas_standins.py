"""Local stand-ins of Jira Cloud (REST API v3) and Slack (Web API) on
127.0.0.1, speaking the wire formats their connectors document
(python/vera_worker/connectors/jira/connector.py, slack/connector.py):

Jira  GET /rest/api/3/search/jql?jql=...&fields=...&expand=changelog&maxResults=N&nextPageToken=T
      -> {"issues": [...], "nextPageToken": T (absent on the last page), "isLast": bool}
      JQL understood: project = "KEY" [AND updated >= "yyyy-MM-dd HH:mm"] [ORDER BY ...]
      (ordered by updated, then key; the user's time zone is UTC). Auth: Basic
      base64(email:token) or Bearer token; anything else is a 401 with Jira's
      error shape {"errorMessages": [...], "errors": {}}.
Slack GET /api/conversations.history?channel=C&oldest=TS&limit=N&cursor=C
      GET /api/conversations.replies?channel=C&ts=THREAD_TS&limit=N&cursor=C
      -> {"ok": true, "messages": [...], "has_more": bool,
          "response_metadata": {"next_cursor": C or ""}}, history newest first,
      oldest exclusive; a thread parent carries reply_count and latest_reply,
      computed from its replies as Slack does.
      GET /api/users.info?user=U -> {"ok": true, "user": {"id", "name", "real_name",
          "profile": {"display_name", "real_name"}}}, or {"ok": false, "error": "user_not_found"}.
      Auth: Bearer token; any other is HTTP 200 with
      {"ok": false, "error": "invalid_auth"}; a rate limit is a 429 with
      Retry-After and {"ok": false, "error": "ratelimited"}.

Confluence GET /wiki/api/v2/spaces/{id}/pages?sort=-modified-date|id&limit=N&body-format=storage&cursor=C
      -> {"results": [...], "_links": {"next": "/wiki/api/v2/...?cursor=...", "base": ".../wiki"}}
      (the next link in the `Link` header too; the body only with body-format=storage)
      GET /wiki/api/v2/pages/{id}/labels -> {"results": [{"id", "name", "prefix"}], "_links": {}}
      GET /wiki/api/v2/spaces/{id}/content/labels -> the same shape, the labels of the space's pages
      GET /wiki/api/v2/labels/{label_id}/pages?space-id=S&limit=N&cursor=C -> the pages with
          the label (sorted by id, without bodies), as the pages listing pages them
      (a label's id is the same in every answer; limits: 250)
      Auth: Basic base64(email:token) or Bearer token; else a 401 with
      {"errors": [{"status": 401, "code": "UNAUTHORIZED", "title": "Unauthorized"}]}.

As the CMDB's (source_standins.py): `script(prefix, Reply)` queues an answer
for the next request under a prefix; every request is recorded."""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from tests.source_standins import SeenRequest
from tests.standins import Reply

JIRA_TOKEN = "jira-standin-secret-4b8e21"
JIRA_EMAIL = "bot@example.com"
SLACK_TOKEN = "xoxb-slack-standin-secret-93d1"
CONFLUENCE_TOKEN = "confluence-standin-secret-c51f07"

Answer = tuple[int, dict[str, str], bytes]


@dataclass
class _Standin:
    requests: list[SeenRequest] = field(default_factory=list)
    scripted: list[tuple[str, Reply]] = field(default_factory=list)
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)
    # a test's own hook: (path, query) -> an answer, or None for the normal one
    intercept: Callable[[str, dict[str, str]], Answer | None] | None = None

    def script(self, prefix: str, reply: Reply) -> None:
        with self.lock:
            self.scripted.append((prefix, reply))

    def answer(self, path: str, query: dict[str, str], headers: dict[str, str]) -> Answer:
        self.requests.append(SeenRequest(path, query, headers))
        with self.lock:
            for index, (prefix, reply) in enumerate(self.scripted):
                if path.startswith(prefix):
                    del self.scripted[index]
                    return reply.status, reply.headers, reply.body or b"{}"
        if self.intercept is not None and (found := self.intercept(path, query)) is not None:
            return found
        return self.normal(path, query, headers)

    def normal(self, path: str, query: dict[str, str], headers: dict[str, str]) -> Answer:
        raise NotImplementedError


def _json(status: int, payload: Any, headers: dict[str, str] | None = None) -> Answer:
    return status, headers or {}, json.dumps(payload).encode()


_JQL = re.compile(
    r'project = "(?P<project>[A-Z0-9_]+)"(?: AND updated >= "(?P<since>[0-9-]+ [0-9:]+)")?(?: ORDER BY .*)?'
)


def jira_time(moment: dt.datetime) -> str:
    """A time as Jira writes it: 2026-01-02T10:30:00.000+0000."""
    return moment.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000+0000")


@dataclass
class JiraStandin(_Standin):
    """Issues keyed by key, each as the search returns it (fields, changelog)."""

    token: str = JIRA_TOKEN
    email: str = JIRA_EMAIL
    issues: dict[str, dict[str, Any]] = field(default_factory=dict)

    def normal(self, path: str, query: dict[str, str], headers: dict[str, str]) -> Answer:
        basic = base64.b64encode(f"{self.email}:{self.token}".encode()).decode()
        if headers.get("authorization") not in (f"Basic {basic}", f"Bearer {self.token}"):
            return _json(401, {"errorMessages": ["You are not authenticated. Authentication required."],
                               "errors": {}})  # fmt: skip
        if path != "/rest/api/3/search/jql":
            return _json(404, {"errorMessages": [f"no route {path}"], "errors": {}})
        found = _JQL.fullmatch(query.get("jql", ""))
        if found is None:
            return _json(400, {"errorMessages": ["Error in the JQL Query"], "errors": {}})
        since = (
            dt.datetime.strptime(found["since"], "%Y-%m-%d %H:%M").replace(tzinfo=dt.UTC)
            if found["since"] else None
        )  # fmt: skip
        matching = sorted(
            (
                issue for issue in self.issues.values()
                if issue["key"].startswith(found["project"] + "-")
                and (since is None or _updated(issue) >= since)
            ),
            key=lambda issue: (_updated(issue), _number(issue["key"])),
        )  # fmt: skip
        limit = max(1, min(int(query.get("maxResults", "50")), 5000))
        start = int(base64.b64decode(query["nextPageToken"]).decode()) if query.get("nextPageToken") else 0
        page = matching[start : start + limit]
        wanted = set(query.get("fields", "").split(","))
        shaped = []
        for issue in page:
            if wanted <= {"key", "id", ""}:
                shaped.append({"id": issue["id"], "key": issue["key"]})
                continue
            one = {
                "id": issue["id"],
                "key": issue["key"],
                "self": f"{self.url}/rest/api/3/issue/{issue['id']}",
            }
            fields = issue["fields"]  # a broken issue's (not an object) is served as it is
            one["fields"] = (
                {k: v for k, v in fields.items() if k in wanted} if isinstance(fields, dict) else fields
            )
            if "changelog" in query.get("expand", "") and "changelog" in issue:
                one["changelog"] = issue["changelog"]
            shaped.append(one)
        payload: dict[str, Any] = {"issues": shaped, "isLast": start + limit >= len(matching)}
        if start + limit < len(matching):
            payload["nextPageToken"] = base64.b64encode(str(start + limit).encode()).decode()
        return _json(200, payload)


def _updated(issue: dict[str, Any]) -> dt.datetime:
    fields = issue.get("fields")
    if not isinstance(fields, dict):
        return dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return dt.datetime.fromisoformat(fields["updated"]).astimezone(dt.UTC)


def _number(key: str) -> int:
    return int(key.rsplit("-", 1)[1])


@dataclass
class SlackStandin(_Standin):
    """Messages per channel (top-level, any order) and the replies of each thread by its ts."""

    token: str = SLACK_TOKEN
    channels: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    replies: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # thread_ts -> replies
    users: dict[str, dict[str, Any]] = field(default_factory=dict)  # user id -> users.info's "user"

    def normal(self, path: str, query: dict[str, str], headers: dict[str, str]) -> Answer:
        if headers.get("authorization") != f"Bearer {self.token}":
            return _json(200, {"ok": False, "error": "invalid_auth"})
        if path == "/api/users.info":
            user = self.users.get(query.get("user", ""))
            found = {"ok": True, "user": user} if user else {"ok": False, "error": "user_not_found"}
            return _json(200, found)
        channel = query.get("channel", "")
        if channel not in self.channels:
            return _json(200, {"ok": False, "error": "channel_not_found"})
        limit = max(1, min(int(query.get("limit", "100")), 999))
        if path == "/api/conversations.history":
            oldest = Decimal(query.get("oldest", "0"))
            found = sorted(
                (m for m in self.channels[channel] if _ts(m) is None or (_ts(m) or 0) > oldest),
                key=lambda m: _ts(m) or Decimal(0), reverse=True,
            )  # fmt: skip
        elif path == "/api/conversations.replies":
            parent = next((m for m in self.channels[channel] if m["ts"] == query.get("ts")), None)
            if parent is None:
                return _json(200, {"ok": False, "error": "thread_not_found"})
            found = [parent, *sorted(self.replies.get(parent["ts"], []), key=lambda m: _ts(m) or Decimal(0))]
        else:
            return _json(404, {"ok": False, "error": "unknown_method"})
        start = (
            int(base64.b64decode(query["cursor"]).decode().removeprefix("next_ts:"))
            if query.get("cursor")
            else 0
        )
        page = [self._with_thread_state(m) for m in found[start : start + limit]]
        following = (
            base64.b64encode(f"next_ts:{start + limit}".encode()).decode()
            if start + limit < len(found)
            else ""
        )
        return _json(200, {"ok": True, "messages": page, "has_more": bool(following), "pin_count": 0,
                           "response_metadata": {"next_cursor": following}})  # fmt: skip

    def _with_thread_state(self, message: dict[str, Any]) -> dict[str, Any]:
        """A thread parent as Slack serves it: its replies' count and the newest one's ts."""
        replies = self.replies.get(str(message.get("ts")))
        if not replies:
            return message
        latest = max(replies, key=lambda m: _ts(m) or Decimal(0))["ts"]
        return {**message, "thread_ts": message["ts"], "reply_count": len(replies), "latest_reply": latest}


@dataclass
class ConfluenceStandin(_Standin):
    """Pages of one space keyed by id, each as the v2 API gives it plus its "labels" (names)."""

    token: str = CONFLUENCE_TOKEN
    email: str = JIRA_EMAIL
    space_id: str = "98304"
    pages: dict[str, dict[str, Any]] = field(default_factory=dict)
    label_ids: dict[str, str] = field(default_factory=dict)  # name -> id, given when first served

    def _label(self, name: str) -> dict[str, str]:
        label_id = self.label_ids.setdefault(name, str(9000 + len(self.label_ids)))
        return {"id": label_id, "name": name, "prefix": "global"}

    def normal(self, path: str, query: dict[str, str], headers: dict[str, str]) -> Answer:
        basic = base64.b64encode(f"{self.email}:{self.token}".encode()).decode()
        if headers.get("authorization") not in (f"Basic {basic}", f"Bearer {self.token}"):
            return _json(401, {"errors": [{"status": 401, "code": "UNAUTHORIZED", "title": "Unauthorized",
                                           "detail": None}]})  # fmt: skip
        start = int(base64.b64decode(query["cursor"]).decode()) if query.get("cursor") else 0
        limit = max(1, min(int(query.get("limit", "25")), 250))
        if (labels := self._labels(path, query, start, limit)) is not None:
            return labels
        if path != f"/wiki/api/v2/spaces/{self.space_id}/pages":
            return _json(404, {"errors": [{"status": 404, "code": "NOT_FOUND", "title": "Not Found"}]})
        if query.get("sort") == "-modified-date":
            ordered = sorted(
                self.pages.values(), key=lambda p: (p["version"]["createdAt"], p["id"]), reverse=True
            )
        else:
            ordered = sorted(self.pages.values(), key=lambda p: int(p["id"]))
        shaped = []
        for page in ordered:
            one = {k: v for k, v in page.items() if k not in ("labels", "body")}
            if query.get("body-format") == "storage":
                one["body"] = page.get("body", {})
            shaped.append(one)
        return self._page_of(path, query, shaped, start, limit)

    def _labels(self, path: str, query: dict[str, str], start: int, limit: int) -> Answer | None:
        """The label routes' answers; None for another path."""
        not_found = _json(404, {"errors": [{"status": 404, "code": "NOT_FOUND", "title": "Not Found"}]})
        labels = re.fullmatch(r"/wiki/api/v2/pages/([0-9]+)/labels", path)
        if labels is not None:
            page = self.pages.get(labels[1])
            if page is None:
                return not_found
            found = [self._label(name) for name in page.get("labels", [])]
            return self._page_of(path, query, found, start, limit)
        if path == f"/wiki/api/v2/spaces/{self.space_id}/content/labels":
            names = sorted({name for page in self.pages.values() for name in page.get("labels", [])})
            return self._page_of(path, query, [self._label(name) for name in names], start, limit)
        labelled = re.fullmatch(r"/wiki/api/v2/labels/([0-9]+)/pages", path)
        if labelled is not None:
            name = next((n for n, i in self.label_ids.items() if i == labelled[1]), None)
            if name is None:
                return not_found
            found = [
                {k: v for k, v in page.items() if k not in ("labels", "body")}
                for page in sorted(self.pages.values(), key=lambda p: int(p["id"]))
                if name in page.get("labels", []) and query.get("space-id", self.space_id) == self.space_id
            ]
            return self._page_of(path, query, found, start, limit)
        return None

    def _page_of(self, path: str, query: dict[str, str], found: list[Any], start: int, limit: int) -> Answer:
        links: dict[str, str] = {"base": f"{self.url}/wiki"}
        headers: dict[str, str] = {}
        if start + limit < len(found):
            rest = {k: v for k, v in query.items() if k != "cursor"}
            rest["cursor"] = base64.b64encode(str(start + limit).encode()).decode()
            links["next"] = path + "?" + "&".join(f"{k}={v}" for k, v in rest.items())
            headers["Link"] = f'<{links["next"]}>; rel="next"'
        return _json(200, {"results": found[start : start + limit], "_links": links}, headers)


def _ts(message: dict[str, Any]) -> Decimal | None:
    """A message's ts as a number; None for a broken one (which the stand-in serves anyway)."""
    try:
        return Decimal(str(message.get("ts")))
    except ArithmeticError:
        return None
