"""Sources and ingestion: registering sources, the episodes (versions of a source's
records) and passages they bring, requests for the worker to ingest or extract, and
each source's incremental cursor (sql/functions/110_sources.sql, 115_ingestion.sql,
240_extraction.sql, 245_extraction_backlog.sql; queries in sources.sql; tests in pg_tests/sources/)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from vera_client.api.call import Call, Json, Rows, column, nothing, record, records, scalar
from vera_client.api.jobs import passages_to_time_scope, set_time_scopes
from vera_client.api.operation import Plan, Session, ask, operation, plan
from vera_client.domain.errors import InvalidArgumentError, NotFoundError
from vera_client.domain.time_scopes import EXTRACTION_VERSION, stated_scope, with_time_scope


@dataclass(frozen=True, kw_only=True, slots=True)
class Source:
    """A registered source: where knowledge comes from and how far it is trusted."""

    group_id: str
    source_id: UUID
    kind: str
    name: str
    uri: str | None
    trust_tier: int
    config: dict[str, object]
    created_at: datetime
    retracted_at: datetime | None
    tracked_records: int


@dataclass(frozen=True, kw_only=True, slots=True)
class EpisodeVersion:
    """What record_episode made of a record: created is False when its content was unchanged."""

    episode_id: UUID
    version: int
    created: bool


@dataclass(frozen=True, kw_only=True, slots=True)
class StoredChunk:
    ordinal: int
    chunk_id: UUID


def register_source(
    group: str,
    kind: str,
    name: str,
    tier: int,
    *,
    token_env: str | None = None,
    config: Mapping[str, Any] | None = None,
    uri: str | None = None,
) -> Call[UUID]:
    """Register (or update, by name) a source with its trust tier 1-4 (admins); its id."""
    params = {"group": group, "kind": kind, "name": name, "tier": tier, "token_env": token_env,
              "config": Json(dict(config or {})), "uri": uri}  # fmt: skip
    return Call("register_source", params, scalar)


def list_sources(group: str | None = None) -> Call[list[Source]]:
    """The sources of a group (or of every readable group), by name."""
    return Call("list_sources", {"group": group}, records(Source))


def request_ingest(group: str, source: UUID, path: str | None = None) -> Call[int]:
    """Queue an ingestion run of a source for the worker, on behalf of the caller; the job id."""
    return Call("request_ingest", {"group": group, "source": source, "path": path}, scalar)


def request_extraction(group: str, *, redo: bool = False) -> Call[int]:
    """Queue an extract job over the group's passages for the worker, on behalf of the caller; the
    job id. redo: also passages an earlier model or prompt version extracted (`vera reprocess`)."""
    return Call("request_extraction", {"group": group, "redo": redo}, scalar)


def request_episode_extraction(group: str, episodes: Sequence[UUID]) -> Call[int]:
    """Queue an extract job over the passages of those episodes only (what an ingestion run wrote;
    at most 1,000 episodes), on behalf of the caller; the job id. The group's older backlog waits
    for request_extraction (`vera extract --backlog`)."""
    return Call("request_episode_extraction", {"group": group, "episodes": list(episodes)}, scalar)


@dataclass(frozen=True, kw_only=True, slots=True)
class ExtractionBacklog:
    """What an extract job over a group would send to a model: passages and their characters."""

    passages: int
    characters: int


def extraction_backlog(group: str, model_version: str, *, redo: bool = False) -> Call[ExtractionBacklog]:
    """How many passages of the group an extract job would send to model_version (redo as in
    request_extraction), and their characters: what an estimate of tokens and cost starts from."""
    params = {"group": group, "model_version": model_version, "redo": redo}
    return Call("extraction_backlog", params, record(ExtractionBacklog))


def source_roots(group: str) -> Call[list[str]]:
    """The folders the group's folder sources may lie in: its organisation's, as operators set
    them (`vera tenant roots add`); the worker keeps within them and its own roots."""
    return Call("source_roots", {"group": group}, column)


def source_cursor(group: str, source: UUID) -> Call[dict[str, Any]]:
    """A source's incremental cursor ({} before the first run)."""

    def read(columns: Sequence[str], rows: Rows) -> dict[str, Any]:
        value = scalar(columns, rows)
        return dict(value) if value else {}

    return Call("source_cursor", {"group": group, "source": source}, read)


def advance_source_cursor(group: str, source: UUID, changes: Mapping[str, Any]) -> Call[int]:
    """Merges per-record cursor entries (None removes one); how many records are tracked."""
    params = {"group": group, "source": source, "changes": Json(dict(changes))}
    return Call("advance_source_cursor", params, scalar)


def record_episode(
    group: str,
    source: UUID,
    external_id: str,
    sha256: bytes,
    *,
    object_key: str | None = None,
    mime: str | None = None,
    observed_at: datetime | str | None = None,  # a string is parsed by PostgreSQL
    title: str | None = None,
    uri: str | None = None,
) -> Call[EpisodeVersion]:
    """One version of a source record; created is False when its content is unchanged."""
    params = {"group": group, "source": source, "external_id": external_id, "sha256": sha256,
              "object_key": object_key, "mime": mime, "observed_at": observed_at, "title": title,
              "uri": uri}  # fmt: skip
    return Call("record_episode", params, record(EpisodeVersion))


def store_chunks_call(
    group: str, episode: UUID, chunks: Sequence[Mapping[str, Any]], embedding_model: str | None = None
) -> Call[list[StoredChunk]]:
    """vera.store_chunks as it is: each chunk's time scope, if any, already read."""
    params = {"group": group, "episode": episode, "chunks": Json([dict(c) for c in chunks]),
              "embedding_model": embedding_model}  # fmt: skip
    return Call("store_chunks", params, records(StoredChunk))


def store_chunks(
    session: Session,
    group: str,
    episode: UUID,
    chunks: Sequence[Mapping[str, Any]],
    embedding_model: str | None = None,
) -> Plan[list[StoredChunk]]:
    """An episode's passages, in order (graded by the source's tier like its claims). Each
    chunk ({"text", "heading"?, "char_start"?, "char_end"?, "embedding"?}) gets the time scope
    its words state, as remember's passages and ingested files do (docs/time.md), unless it
    carries a "time_scope" of its own (kept: the caller's statement)."""
    scoped = [with_time_scope(chunk) for chunk in chunks]
    return (yield from ask(store_chunks_call(group, episode, scoped, embedding_model)))


def register_folder(
    session: Session,
    group: str,
    name: str,
    folder: Path,
    *,
    tier: int,
    kind: str = "markdown",
    uri: str | None = None,
    functional: Sequence[str] = (),
) -> Plan[Source]:
    """Register (or update, by name) a folder of Markdown/CSV/text files as a source (admins)."""
    root = folder.expanduser().resolve()
    if not root.is_dir():
        raise InvalidArgumentError(f"{folder} is not a folder")
    config: dict[str, Any] = {"root": str(root)}
    if functional:
        config["functional"] = list(functional)
    source_id = yield from ask(register_source(group, kind, name, tier, config=config, uri=uri))
    found = yield from ask(list_sources(group))
    return next(s for s in found if s.source_id == source_id)


def pick_source(candidates: Iterable[Source], name_or_id: str, group_id: str | None = None) -> Source:
    """The one source named (or with the id) name_or_id: NotFoundError, or InvalidArgumentError
    when the name is used in several groups."""
    matches = [s for s in candidates if name_or_id in (s.name, str(s.source_id))]
    if not matches:
        raise NotFoundError(f"no source {name_or_id!r}" + (f" in {group_id}" if group_id else ""))
    if len(matches) > 1:
        groups = ", ".join(s.group_id for s in matches)
        raise InvalidArgumentError(f"source {name_or_id!r} exists in several groups ({groups}): pass --group")
    return matches[0]


def find_source(session: Session, name_or_id: str, group: str | None = None) -> Plan[Source]:
    """A source by name or id (NotFoundError; InvalidArgumentError when the name is in several groups)."""
    found = yield from ask(list_sources(group))
    return pick_source(found, name_or_id, group)


def source_for_path(
    session: Session, path: Path, group: str | None = None
) -> Plan[tuple[Source, str | None]]:
    """The folder source whose root holds path, and path relative to that root (None for the root)."""
    target = path.expanduser().resolve()
    best: tuple[Source, str | None] | None = None
    for source in (yield from ask(list_sources(group))):
        root = source.config.get("root")
        if not isinstance(root, str) or source.retracted_at is not None:
            continue
        folder = Path(root)
        if target == folder or folder in target.parents:
            relative = None if target == folder else target.relative_to(folder).as_posix()
            if best is None or len(root) > len(str(best[0].config["root"])):
                best = (source, relative)
    if best is None:
        raise NotFoundError(f"no registered source holds {path}: register its folder with `vera source add`")
    return best


def read_time_scopes(session: Session, group: str, *, batch: int = 500) -> Plan[int]:
    """Read the time scopes of the group's passages that VERA's reader has not read, or read
    with an older version (`vera reprocess --time-scopes`), batch by batch, each batch in a
    transaction of its own; how many were read. A scope its caller or its front matter
    stated stays. Admins of the group only."""
    read = 0
    after: UUID | None = None
    while True:
        passages = yield from ask(passages_to_time_scope(group, EXTRACTION_VERSION, after, batch))
        if not passages:
            return read
        scopes = [{"chunk_id": str(p.chunk_id), **stated_scope(p.text, p.heading)} for p in passages]
        read += yield from ask(set_time_scopes(group, scopes))
        after = passages[-1].chunk_id


@dataclass(frozen=True, kw_only=True, slots=True)
class SourceStatus:
    """A source with its connector's state: the cursor's position, the schedule, the last run."""

    group_id: str
    source_id: UUID
    name: str
    kind: str
    interval_s: int | None
    cursor_position: dict[str, Any] | None
    tracked_records: int
    last_started: datetime | None
    last_finished: datetime | None
    last_status: str | None
    items: int | None
    unchanged: int | None
    retracted: int | None
    skipped: int | None
    error: str | None


@dataclass(frozen=True, kw_only=True, slots=True)
class SourceRunSettings:
    """What a connector's run reads beside the config: the secret's variable name, never the secret."""

    token_env: str | None
    pruned_at: datetime | None
    interval_s: int | None


@dataclass(frozen=True, kw_only=True, slots=True)
class RecordHead:
    """The latest version VERA holds of one record of a source."""

    external_id: str
    content_sha256: bytes
    episode_id: UUID
    live: bool
    signature: str | None  # what the connector saw of it without reading it (None: nothing noted)


@dataclass(frozen=True, kw_only=True, slots=True)
class LiveRecord:
    external_id: str
    episode_id: UUID


@dataclass(frozen=True, kw_only=True, slots=True)
class ScheduledIngest:
    group_id: str
    source_id: UUID
    job_id: int


def source_status(group: str | None = None) -> Call[list[SourceStatus]]:
    """The sources of a group (or of every readable group) with cursor position, schedule and last run."""
    return Call("source_status", {"group": group}, records(SourceStatus))


def set_source_interval(group: str, source: UUID, interval_s: int | None) -> Call[None]:
    """How often the schedule reads a source, in seconds (None: only when asked); admins."""
    return Call("set_source_interval", {"group": group, "source": source, "interval_s": interval_s}, nothing)


def request_due_ingests() -> Call[list[ScheduledIngest]]:
    """The schedule (no caller: the worker): queue a run of every source whose interval has passed."""
    return Call("request_due_ingests", {}, records(ScheduledIngest))


def begin_source_run(group: str, source: UUID) -> Call[UUID]:
    """Record the start of a connector run; its id (an unfinished earlier run becomes interrupted)."""
    return Call("begin_source_run", {"group": group, "source": source}, scalar)


def end_source_run(
    group: str,
    run: UUID,
    status: str,
    counts: Mapping[str, int],
    *,
    error: str | None = None,
    pruned: bool = False,
) -> Call[None]:
    """Record how a connector run ended: done, stopped or failed, its counts, its error, whether it pruned."""
    params = {"group": group, "run": run, "status": status, "counts": Json(dict(counts)), "error": error,
              "pruned": pruned}  # fmt: skip
    return Call("end_source_run", params, nothing)


def source_run_settings(group: str, source: UUID) -> Call[SourceRunSettings]:
    """A source's token_env (the variable's name), last prune and interval."""
    return Call("source_run_settings", {"group": group, "source": source}, record(SourceRunSettings))


def record_heads(group: str, source: UUID, external_ids: Sequence[str]) -> Call[list[RecordHead]]:
    """The latest version held of each named record (at most 10,000); unknown ids are left out."""
    return Call(
        "record_heads", {"group": group, "source": source, "ids": list(external_ids)}, records(RecordHead)
    )


@dataclass(frozen=True, kw_only=True, slots=True)
class NotedSignature:
    """A change signature a connector saw of a record whose content (read) hashes to sha256."""

    external_id: str
    sha256: str  # hex
    signature: str


def note_record_signatures(group: str, source: UUID, noted: Sequence[NotedSignature]) -> Call[int]:
    """Store each signature on its record's live latest version holding that content (at most
    10,000); how many changed."""
    signatures = [{"external_id": n.external_id, "sha256": n.sha256, "signature": n.signature} for n in noted]
    return Call("note_record_signatures", {"group": group, "source": source, "signatures": Json(signatures)},
                scalar)  # fmt: skip


def live_records(group: str, source: UUID) -> Call[list[LiveRecord]]:
    """The records of a source whose latest version is live (what a prune compares with)."""
    return Call("live_records", {"group": group, "source": source}, records(LiveRecord))


class Sources:
    """The source and ingestion operations of a client face."""

    register_source = operation(register_source)
    register_folder = plan(register_folder)
    list_sources = operation(list_sources)
    source_status = operation(source_status)
    set_source_interval = operation(set_source_interval)
    find_source = plan(find_source)
    source_for_path = plan(source_for_path)
    request_ingest = operation(request_ingest)
    request_extraction = operation(request_extraction)
    request_episode_extraction = operation(request_episode_extraction)
    extraction_backlog = operation(extraction_backlog)
    read_time_scopes = plan(read_time_scopes)
    record_episode = operation(record_episode)
    store_chunks = plan(store_chunks)
