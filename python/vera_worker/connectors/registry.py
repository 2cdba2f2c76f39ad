"""The kinds of source a connector reads, each with its default trust tier and
how to build its connector for one source. Adding a kind is one folder
(connectors/<kind>/) and one entry here. A folder source (its config names a
root) is read by the folder connector whatever its kind label says: its
sources are added by `vera source add folder` (or a manifest), not as a kind
of KINDS."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from vera_client.domain.errors import InvalidArgumentError
from vera_worker.connectors.cmdb.connector import CmdbConnector
from vera_worker.connectors.confluence.connector import ConfluenceConnector
from vera_worker.connectors.contract import Connector, SourceContext
from vera_worker.connectors.folder.connector import FolderConnector
from vera_worker.connectors.git.connector import GitConnector
from vera_worker.connectors.jira.connector import JiraConnector
from vera_worker.connectors.slack.connector import SlackConnector


@dataclass(frozen=True, kw_only=True, slots=True)
class Kind:
    name: str
    tier: int  # the default trust tier of its sources (`vera source add --tier` overrides)
    summary: str  # one line for `vera source add --help`
    build: Callable[[SourceContext], Connector]
    # how often a run compares the slim listing with what VERA holds, when the source's config
    # names no prune_interval_s; None: DEFAULT_PRUNE_INTERVAL_S
    prune_interval_s: int | None = None

    def prune_due(self, config: Mapping[str, Any], pruned_at: dt.datetime | None, now: dt.datetime) -> bool:
        """Whether a run compares the listing now: never pruned, or longer ago than the source's
        prune_interval_s (a whole number of seconds, not negative), else the kind's, else an hour."""
        default = self.prune_interval_s if self.prune_interval_s is not None else DEFAULT_PRUNE_INTERVAL_S
        interval = config.get("prune_interval_s", default)
        if not isinstance(interval, int) or isinstance(interval, bool) or interval < 0:
            interval = default
        return pruned_at is None or now - pruned_at >= dt.timedelta(seconds=interval)


DEFAULT_PRUNE_INTERVAL_S = 3600


KINDS: Mapping[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind(
            name="cmdb",
            tier=1,
            summary="configuration items as JSON over HTTP, fields mapped to claims",
            build=CmdbConnector,
        ),
        Kind(
            name="confluence",
            tier=2,
            summary="a Confluence Cloud space's pages (REST API v2), storage format made Markdown",
            build=ConfluenceConnector,
        ),
        Kind(
            name="jira",
            tier=2,
            summary="a Jira Cloud project's issues (REST API v3): fields as claims, text as passages",
            build=JiraConnector,
        ),
        Kind(
            name="slack",
            tier=4,
            summary="a Slack channel's messages and threads (Web API), each a passage",
            build=SlackConnector,
        ),
        Kind(
            name="git",
            tier=2,
            summary="a git repository by path or URL: files changed since the last commit read",
            build=GitConnector,
            prune_interval_s=0,  # deletions and renames on every run: listing a tree reads no bodies
        ),
    )
}


FOLDER = Kind(
    name="folder",
    tier=2,  # a folder's tier is asked for when it is added (`vera source add folder --tier`)
    summary="a folder of Markdown, CSV, text and documents below the worker's allowed roots",
    build=FolderConnector,
    prune_interval_s=0,  # deletions on every run: the scan lists the paths without reading a body
)


def connector_kind(kind: str, config: Mapping[str, Any]) -> Kind:
    """The connector kind that reads a source: the folder connector for a source whose config names
    a root, whatever its kind label says (as the demo's "cmdb" folder)."""
    if "root" in config:
        return FOLDER
    found = KINDS.get(kind)
    if found is None:
        raise InvalidArgumentError(
            f"no connector reads sources of kind {kind!r} (known: folder, {', '.join(sorted(KINDS))})"
        )
    return found
