"""The Jira connector over Jira Cloud's REST API v3. It asks the enhanced JQL
search (the successor of the retired /rest/api/3/search with its startAt
offsets), paged by nextPageToken:

    GET {url}/rest/api/3/search/jql?jql=...&fields=...&expand=changelog
        &maxResults=N&nextPageToken=TOKEN
        -> {"issues": [{"id", "key", "fields": {...}, "changelog": {"histories": [...]}}],
            "nextPageToken": TOKEN (absent or null on the last page), "isLast": bool}

with `project = "KEY" AND updated >= "yyyy-MM-dd HH:mm" ORDER BY updated ASC,
key ASC` from the cursor's position (JQL times have minute precision and are
read in the Jira user's time zone, config "time_zone", default UTC: the issues
of the position's own minute are read again and found unchanged by their
hash). Auth: with config "email", `Authorization: Basic base64(email:token)`
(an Atlassian API token); without, `Authorization: Bearer TOKEN` (a personal
access token). The slim listing is the same search with only the issue keys.

The position is the highest `updated` read ({"since"}); while a run is under
way the next page's token too ({"since", "next", "high"}), so a run that dies
resumes at the page after the last committed one."""

from __future__ import annotations

import base64
import datetime as dt
import re
from collections.abc import Iterator, Mapping
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from vera_client.config import ResilienceSettings
from vera_client.domain.errors import InvalidArgumentError
from vera_worker.connectors.cmdb.mapping import canonical_bytes
from vera_worker.connectors.contract import Item, ItemSkipped, Page, Position, Skip, SourceContext
from vera_worker.connectors.http import SourceAnswerError, SourceHttp
from vera_worker.connectors.jira.mapping import FIELDS, issue_key, issue_record, utc_instant

SEARCH = "/rest/api/3/search/jql"
DEFAULT_PAGE_SIZE = 50
MAX_ITEM_BYTES = 1_000_000  # one issue with its comments and changelog; a larger one is skipped, named
_PROJECT = re.compile(r"[A-Z][A-Z0-9_]{0,254}")


class JiraConnector:
    def __init__(self, context: SourceContext) -> None:
        config = context.config
        url = site_url(context)
        project = config.get("project")
        if not isinstance(project, str) or not _PROJECT.fullmatch(project):
            raise InvalidArgumentError(
                f'source {context.name!r}: config "project" must be a Jira project key (PROJ)'
            )
        try:
            self._zone = ZoneInfo(str(config.get("time_zone") or "UTC"))
        except (ZoneInfoNotFoundError, ValueError):
            raise InvalidArgumentError(
                f'source {context.name!r}: config "time_zone" is not a time zone (Europe/Paris)'
            ) from None
        size = config.get("page_size", DEFAULT_PAGE_SIZE)
        self._page_size = size if isinstance(size, int) and 1 <= size <= 100 else DEFAULT_PAGE_SIZE
        self._url = url
        self._project = project
        self._http = atlassian_http(context, url)

    def poll(self, position: Position | None) -> Iterator[Page]:
        since = _text(position, "since")
        token = _text(position, "next")
        high = _text(position, "high") or since
        jql = f'project = "{self._project}"'
        if since:
            jql += f' AND updated >= "{self._jql_time(since)}"'
        jql += " ORDER BY updated ASC, key ASC"
        while True:
            params: dict[str, Any] = {
                "jql": jql, "fields": ",".join(FIELDS), "expand": "changelog", "maxResults": self._page_size,
            }  # fmt: skip
            if token:
                params["nextPageToken"] = token
            issues, token = _listing(self._http.get_json(SEARCH, params))
            items: list[Item | Skip] = []
            for raw in issues:
                converted = self._convert(raw)
                items.append(converted)
                updated = converted.observed_at if isinstance(converted, Item) else None
                if updated and (high is None or updated > high):
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
            params: dict[str, Any] = {
                "jql": f'project = "{self._project}"',
                "fields": "key",
                "maxResults": 1000,
            }
            if token:
                params["nextPageToken"] = token
            issues, token = _listing(self._http.get_json(SEARCH, params))
            yield from (str(i["key"]) for i in issues if isinstance(i, Mapping) and i.get("key"))
            if not token:
                return

    def _jql_time(self, since: str) -> str:
        """The position's time as JQL reads it: minutes, in the Jira user's time zone (floored)."""
        moment = dt.datetime.fromisoformat(since).astimezone(self._zone)
        return moment.strftime("%Y-%m-%d %H:%M")

    def _convert(self, raw: Any) -> Item | Skip:
        try:
            key = issue_key(raw)
        except ItemSkipped as exc:
            return Skip(key="(an issue)", reason=str(exc))
        data = canonical_bytes(raw)
        if len(data) > MAX_ITEM_BYTES:
            return Skip(key=key, reason=f"{len(data):,} bytes, over the {MAX_ITEM_BYTES:,} of one issue")
        try:
            record = issue_record(raw, key)
        except ItemSkipped as exc:
            return Skip(key=key, reason=str(exc))
        fields = raw.get("fields") or {}
        updated = utc_instant(fields.get("updated"))
        uri = f"{self._url}/browse/{key}"
        return Item(key=key, raw=data, mime="application/json", record=record, uri=uri, observed_at=updated,
                    version=updated)  # fmt: skip


def site_url(context: SourceContext) -> str:
    """An Atlassian source's config "url" (its site), without a trailing slash."""
    url = context.config.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise InvalidArgumentError(f'source {context.name!r}: config "url" must be an http(s) URL')
    return url.rstrip("/")


def atlassian_http(
    context: SourceContext, url: str, settings: ResilienceSettings | None = None
) -> SourceHttp:
    """The client of an Atlassian Cloud site (Jira, Confluence): with config "email", Basic auth of
    email:token (an Atlassian API token), else the token as Bearer (a personal access token).
    settings: the resilience chain's (default: the worker's)."""
    email = context.config.get("email")
    token, scheme = context.token, "Bearer"
    if isinstance(email, str) and email and token is not None:
        # the encoded pair is as secret as the token: SourceHttp redacts it from its errors
        token, scheme = base64.b64encode(f"{email}:{token}".encode()).decode(), "Basic"
    return SourceHttp(
        context.name, base_url=url, token=token, token_env=context.token_env, auth_scheme=scheme,
        settings=settings or context.resilience, transport=context.transport,
    )  # fmt: skip


def _text(position: Position | None, name: str) -> str | None:
    value = position.get(name) if position else None
    return value if isinstance(value, str) and value else None


def _listing(answer: Any) -> tuple[list[Any], str | None]:
    if not isinstance(answer, Mapping) or not isinstance(answer.get("issues"), list):
        raise SourceAnswerError("Jira answered a search without an 'issues' list")
    token = answer.get("nextPageToken")
    if answer.get("isLast") is True:
        token = None
    return answer["issues"], token if isinstance(token, str) and token else None
