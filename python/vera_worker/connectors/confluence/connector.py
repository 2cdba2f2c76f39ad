"""The Confluence connector over Confluence Cloud's REST API v2 (config "url",
the site: https://SITE.atlassian.net; config "space_id", the space's numeric id):

    GET {url}/wiki/api/v2/spaces/{space_id}/pages?sort=-modified-date&limit=N
        &body-format=storage&cursor=CURSOR
        -> {"results": [{"id", "title", "parentId", "authorId", "version":
               {"number", "createdAt", "authorId"}, "body": {"storage": {"value"}},
               "_links": {"webui"}}],
            "_links": {"next": "/wiki/api/v2/spaces/.../pages?cursor=...", "base": ...}}
        (the same next link is in the `Link` header; the connector follows
        `_links.next`, which must be a path on the same site)
    GET {url}/wiki/api/v2/pages/{id}/labels -> {"results": [{"id", "name", "prefix"}], "_links": {...}}
    GET {url}/wiki/api/v2/spaces/{space_id}/content/labels -> the same shape: the labels of
        the space's content
    GET {url}/wiki/api/v2/labels/{label_id}/pages?space-id={space_id}&limit=250
        -> {"results": [{"id", "title", ...}], "_links": {"next"}}: the pages with a label

with, given config "email", `Authorization: Basic base64(email:token)` (an
Atlassian API token), else `Bearer TOKEN`. The token bucket allows config
"requests_per_second" (default: the worker's, 10).

Labels: the v2 listings of pages carry none (`include-labels` is a parameter of
one page's GET only), so a page's labels cost a request of their own. A run
asks them page by page for its first 25 changed pages (a small incremental
run); past that it lists the space's labels once (one request per 250), and
when they are fewer than the pages it has asked labels for, it reads each
label's pages instead (about one request per label) and asks no more page by
page. A space without labels costs that one request. Label names are sorted.

Incremental by version: the position is the newest version time read
({"since"}). A run first asks for the one most recently modified page without
its body; when its version is no newer than the position, nothing changed and
no body is read. Otherwise it reads the listing, newest version first, with the
bodies, down to the first page whose version is no newer than the position.
While a run is under way the position also holds the next link and the newest
time seen ({"since", "next", "high"}), so a run that dies resumes at the page
after the last committed one. The slim listing is the space's page ids,
without bodies."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import partial
from typing import Any

from vera_client.domain.errors import InvalidArgumentError
from vera_worker.connectors.cmdb.mapping import canonical_bytes
from vera_worker.connectors.confluence.storage import storage_markdown
from vera_worker.connectors.contract import Item, Page, Pending, Position, Skip, SourceContext
from vera_worker.connectors.http import SourceAnswerError, rate_limited
from vera_worker.connectors.jira.connector import atlassian_http, site_url
from vera_worker.connectors.jira.mapping import utc_instant
from vera_worker.domain.markdown import parse_markdown
from vera_worker.domain.records import Claim, ParsedRecord
from vera_worker.domain.statements import MAX_OBJECT_CHARS, MAX_SUBJECT_CHARS, looks_like_entity

DEFAULT_PAGE_SIZE = 25
DIRECT_LABEL_LOOKUPS = 25  # a run's first pages ask their labels one by one (a small run's cheapest)
_LABEL_ID = re.compile(r"[0-9]{1,30}")
MAX_ITEM_BYTES = 1_000_000  # one page with its body; a larger one is skipped, named
_SPACE = re.compile(r"[0-9]{1,30}")  # a space's, a page's or a label's id


class ConfluenceConnector:
    def __init__(self, context: SourceContext) -> None:
        config = context.config
        url = site_url(context)
        space = config.get("space_id")
        if not isinstance(space, str) or not _SPACE.fullmatch(space):
            raise InvalidArgumentError(
                f'source {context.name!r}: config "space_id" must be a space\'s numeric id'
            )
        size = config.get("page_size", DEFAULT_PAGE_SIZE)
        self._page_size = size if isinstance(size, int) and 1 <= size <= 250 else DEFAULT_PAGE_SIZE
        self._labels = config.get("labels", True) is not False
        self._name = context.name
        self._url = url
        self._space = space
        self._pages = f"/wiki/api/v2/spaces/{space}/pages"
        self._http = atlassian_http(context, url, rate_limited(context.name, config, context.resilience))
        # this run's labels: page by page, then (past DIRECT_LABEL_LOOKUPS) by label
        self._asked_one_by_one = 0
        self._space_labels: list[tuple[str, str]] | None = None  # (label id, name)
        self._labels_by_page: dict[str, list[str]] | None = None

    def poll(self, position: Position | None) -> Iterator[Page]:
        since = _text(position, "since")
        following = _text(position, "next")
        high = _text(position, "high") or since
        if since and not following and not self._changed_since(since):
            yield Page(items=(), position={"since": since})
            return
        path: str | None = following or self._pages
        params: dict[str, Any] = (
            {}
            if following
            else {"sort": "-modified-date", "limit": self._page_size, "body-format": "storage"}
        )
        while path:
            results, path = self._listing(path, params)
            params = {}
            changed: list[Any] = []
            reached = False
            for raw in results:
                version = _version_time(raw)
                if since and version is not None and version <= since:
                    reached = True  # older than the position: read by an earlier run
                    break
                changed.append(raw)
                if version and (high is None or version > high):
                    high = version
            labels = self._labels_of([_page_id(raw) for raw in changed]) if self._labels else {}
            items = [self._item(raw, labels) for raw in changed]
            if path and not reached:
                resume = {"since": since, "next": path, "high": high}
                yield Page(items=tuple(items), position={k: v for k, v in resume.items() if v is not None})
            else:
                yield Page(items=tuple(items), position={"since": high} if high else {})
                return

    def slim(self) -> Iterator[str]:
        path: str | None = self._pages
        params: dict[str, Any] = {"limit": 250, "sort": "id"}
        while path:
            results, path = self._listing(path, params)
            params = {}
            yield from (str(r["id"]) for r in results if isinstance(r, Mapping) and r.get("id") is not None)

    def _changed_since(self, since: str) -> bool:
        """Whether the most recently modified page is newer than since (one request, no body)."""
        results, _next = self._listing(self._pages, {"sort": "-modified-date", "limit": 1})
        newest = _version_time(results[0]) if results else None
        return newest is None or newest > since

    def _listing(self, path: str, params: Mapping[str, Any]) -> tuple[list[Any], str | None]:
        """One page of a listing at path (a next link, query and all)."""
        answer = self._http.get_json(path, params)
        if not isinstance(answer, Mapping) or not isinstance(answer.get("results"), list):
            raise SourceAnswerError(f"source {self._name!r}: Confluence answered without a 'results' list")
        links = answer.get("_links")
        following = links.get("next") if isinstance(links, Mapping) else None
        if not isinstance(following, str) or not following:
            return answer["results"], None
        if not following.startswith("/") or following.startswith("//"):
            # the token goes only to the configured site
            raise SourceAnswerError(
                f"source {self._name!r}: Confluence's next link is not a path on its site"
            )
        return answer["results"], following

    def _labels_of(self, page_ids: list[str | None]) -> dict[str, list[str]]:
        """The labels of these pages (sorted names), at the fewest requests this run can tell."""
        wanted = [page for page in page_ids if page is not None]
        if not wanted:
            return {}
        if self._labels_by_page is None and self._asked_one_by_one + len(wanted) > DIRECT_LABEL_LOOKUPS:
            if self._space_labels is None:
                self._space_labels = self._listed_labels(f"/wiki/api/v2/spaces/{self._space}/content/labels")
            if len(self._space_labels) <= self._asked_one_by_one + len(wanted):
                self._labels_by_page = self._label_index(self._space_labels)
        if self._labels_by_page is not None:
            return {page: self._labels_by_page.get(page, []) for page in wanted}
        self._asked_one_by_one += len(wanted)
        return {
            page: sorted({name for _id, name in self._listed_labels(f"/wiki/api/v2/pages/{page}/labels")})
            for page in wanted
        }

    def _label_index(self, labels: list[tuple[str, str]]) -> dict[str, list[str]]:
        """Every labelled page of the space and its labels: each label's pages, without bodies."""
        found: dict[str, set[str]] = {}
        for label_id, name in labels:
            path: str | None = f"/wiki/api/v2/labels/{label_id}/pages"
            params: dict[str, Any] = {"space-id": self._space, "limit": 250}
            while path:
                results, path = self._listing(path, params)
                params = {}
                for page in results:
                    if (page_id := _page_id(page)) is not None:
                        found.setdefault(page_id, set()).add(name)
        return {page: sorted(names) for page, names in found.items()}

    def _listed_labels(self, path: str | None) -> list[tuple[str, str]]:
        """(id, name) of a listing of labels, every page of it (the space's: each with an id, as
        it goes in a path)."""
        path_of_space = path is not None and path.endswith("/content/labels")
        found: list[tuple[str, str]] = []
        params: dict[str, Any] = {"limit": 250}
        while path:
            results, path = self._listing(path, params)
            params = {}
            for label in results:
                if not isinstance(label, Mapping) or not isinstance(label.get("name"), str):
                    continue
                label_id = str(label.get("id"))
                if not _LABEL_ID.fullmatch(label_id) and path_of_space:
                    raise SourceAnswerError(f"source {self._name!r}: Confluence named a label without an id")
                found.append((label_id, label["name"]))
        return found

    def _item(self, raw: Any, labelled: Mapping[str, list[str]]) -> Pending | Skip:
        """A page as its raw bytes (its JSON with its labels), converted by the runner's pipeline
        (Pending) ahead of the writes, and only when those bytes changed."""
        if not isinstance(raw, Mapping) or raw.get("id") is None:
            return Skip(key="(a page)", reason="a page without an id")
        key = _page_id(raw)
        if key is None:  # it names the page's entity and goes in paths: digits, as Confluence's are
            return Skip(key=str(raw["id"])[:40], reason="an id that is not a page's (1 to 30 digits)")
        labels = list(labelled.get(key, []))
        data = canonical_bytes({**raw, "labels": labels})
        if len(data) > MAX_ITEM_BYTES:
            return Skip(key=key, reason=f"{len(data):,} bytes, over the {MAX_ITEM_BYTES:,} of one page")
        convert = partial(self._convert, raw, labels)
        return Pending(key=key, signature=None, read=partial(_fetched, data), convert=convert)

    def _convert(self, raw: Mapping[str, Any], labels: list[str], data: bytes) -> Item | Skip:
        """A page as an Item: its body's passages, its key-value lines' claims (about what its title
        names) and its metadata's claims (about the page itself)."""
        key = str(raw["id"])
        title = str(raw.get("title") or key)
        body = raw.get("body")
        storage = body.get("storage") if isinstance(body, Mapping) else None
        xhtml = storage.get("value") if isinstance(storage, Mapping) else None
        if not isinstance(xhtml, str):
            return Skip(key=key, reason="no storage-format body")
        try:
            markdown = storage_markdown(xhtml)
        except (ValueError, RecursionError) as exc:
            return Skip(key=key, reason=f"its body cannot be read as XHTML ({type(exc).__name__})")
        parsed = parse_markdown(f"# {title}\n\n{markdown}", name=title)
        version = _mapping(raw.get("version"))
        claims = [*parsed.claims, *_metadata_claims(key, title, raw, version, labels)]
        record = ParsedRecord(
            title=title, passages=parsed.passages, claims=tuple(claims), warnings=parsed.warnings,
            observed_at=_version_time(raw),
        )  # fmt: skip
        webui = _mapping(raw.get("_links")).get("webui")
        uri = f"{self._url}/wiki{webui}" if isinstance(webui, str) and webui.startswith("/") else (
            f"{self._url}/wiki/pages/{key}"
        )  # fmt: skip
        number = None if version.get("number") is None else str(version.get("number"))
        return Item(key=key, raw=data, mime="application/json", record=record, uri=uri,
                    observed_at=record.observed_at, version=number)  # fmt: skip


def page_entity(page_id: object) -> str:
    """The name of a page as an entity: its id, which outlives a rename and is what a child page
    names as its parent (a title is neither unique nor stable)."""
    return f"Confluence page {page_id}"


def _metadata_claims(
    key: str, title: str, raw: Mapping[str, Any], version: Mapping[str, Any], labels: list[str]
) -> list[Claim]:
    """The page's own claims, its entity (page_entity) their subject: TITLE (functional, the title
    as text), PARENT_PAGE (the parent page's entity), HAS_LABEL (each label), LAST_MODIFIED_BY (the
    account id of the version's author, functional). Their texts name the page by its entity, as a
    Jira issue's by its key; the title's own claim names it to a question."""
    subject = page_entity(key)
    found = [("TITLE", "is titled", title[:MAX_OBJECT_CHARS], True, False)]
    parent = raw.get("parentId")
    if _SPACE.fullmatch(str(parent)) and raw.get("parentType", "page") == "page":
        found.append(("PARENT_PAGE", "has parent page", page_entity(parent), True, True))
    # a label and an account id name entities: at most an entity's name long
    found.extend(("HAS_LABEL", "has label", label[:MAX_SUBJECT_CHARS], False, looks_like_entity(label))
                 for label in labels)  # fmt: skip
    author = version.get("authorId") or raw.get("authorId")
    if author:
        value = str(author)[:MAX_SUBJECT_CHARS]
        found.append(("LAST_MODIFIED_BY", "was last modified by", value, True, looks_like_entity(value)))
    return [
        Claim(
            subject=subject,
            predicate=predicate,
            object=value,
            object_is_entity=is_entity,
            fact_text=f"{subject} {phrase} {value}",
            functional=functional,
        )
        for predicate, phrase, value, functional, is_entity in found
    ]


def _fetched(data: bytes) -> bytes:
    """A page's bytes, already fetched with its listing."""
    return data


def _page_id(raw: Any) -> str | None:
    """A page's id, when it is one (digits: it goes in a path)."""
    value = raw.get("id") if isinstance(raw, Mapping) else None
    return str(value) if value is not None and _SPACE.fullmatch(str(value)) else None


def _version_time(raw: Any) -> str | None:
    version = raw.get("version") if isinstance(raw, Mapping) else None
    return utc_instant(version.get("createdAt")) if isinstance(version, Mapping) else None


def _text(position: Position | None, name: str) -> str | None:
    value = position.get(name) if position else None
    return value if isinstance(value, str) and value else None


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
