"""Snapshots: a named, sealed copy of what a group's searches see, so an answer can be given
again as it was (sql/functions/200_snapshots.sql; queries in snapshots.sql; tests in
pg_tests/search/)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any
from uuid import UUID

from vera_client.api.call import Call, embedding, nothing, period, record, records
from vera_client.api.hits import Hit, Hits, hits
from vera_client.api.operation import Plan, Session, Work, ask, check_k, operation, plan
from vera_client.api.search import asked_period, pins
from vera_client.domain.time_scopes import TimeRange


@dataclass(frozen=True, kw_only=True, slots=True)
class SnapshotTaken:
    snapshot_id: UUID
    item_count: int
    created_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class SnapshotInfo:
    snapshot_id: UUID
    name: str
    created_at: datetime
    sealed: bool
    item_count: int
    embedding_model: str | None
    embedding_dim: int | None
    search_version: str
    weights: dict[str, Any]
    pins: dict[str, Any] = field(
        metadata={"description": "its pins: search_version, embedding, ontology, policy, assembler"}
    )
    stale_pins: list[str] = field(
        metadata={"description": "pins that no longer hold (empty: it answers; else a search of it fails)"}
    )


def create_snapshot(group: str, name: str) -> Call[SnapshotTaken]:
    """A named, sealed copy of what the group's searches see now (admins)."""
    # one view of the data for the pins and every copied row
    return Call(
        "create_snapshot", {"group": group, "name": name}, record(SnapshotTaken), repeatable_read=True
    )


def list_snapshots(group: str) -> Call[list[SnapshotInfo]]:
    """The group's snapshots."""
    return Call("list_snapshots", {"group": group}, records(SnapshotInfo))


def drop_snapshot(group: str, name: str) -> Call[None]:
    """Drop one of the group's snapshots (admins)."""
    return Call("drop_snapshot", {"group": group, "name": name}, nothing)


def snapshot_pin(group: str, name: str) -> Call[list[tuple[str, int]]]:
    """The snapshot's embedding pin ([] without vectors, or for a snapshot the caller cannot see)."""
    return Call("snapshot_pin", {"group": group, "name": name}, pins)


def search_snapshot_call(
    group: str,
    name: str,
    text: str | None,
    *,
    vector: Sequence[float] | None,
    embedding_model: str | None,
    k: int,
    k_rrf: int,
    candidates: int | None,
    during: TimeRange | None = None,
) -> Call[list[Hit]]:
    params = {"during": period(during), "group": group, "name": name, "query": text,
              "embedding": embedding(vector), "embedding_model": embedding_model, "k": k,
              "k_rrf": k_rrf, "candidates": candidates}  # fmt: skip
    return Call("search_snapshot", params, hits)


def search_snapshot(
    session: Session,
    group: str,
    name: str,
    text: str,
    *,
    k: int = 10,
    k_rrf: int = 1,
    candidates: int | None = None,
    during: TimeRange | tuple[date | None, date | None] | None = None,
    detect_time: bool = True,
) -> Plan[Hits]:
    """The snapshot's answer, as search gave it when it was taken (with the same k_rrf,
    candidates and period; vera.search_snapshot's defaults and checks, as in search)."""
    check_k(k)
    asked = asked_period(text, during, detect_time)
    pinned = yield from ask(snapshot_pin(group, name))
    vector, model = None, None
    chosen = session.services.embedder_for(pinned, text) if text.strip() else None
    if chosen is not None:
        embedder, model = chosen
        vector = (yield from ask(Work(lambda: embedder.embed([text]))))[0]
    call = search_snapshot_call(
        group, name, text, vector=vector, embedding_model=model, k=k, k_rrf=k_rrf,
        candidates=candidates, during=asked,
    )  # fmt: skip
    return Hits((yield from ask(call)), asked)


class Snapshots:
    """The snapshot operations of a client face."""

    create_snapshot = operation(create_snapshot)
    list_snapshots = operation(list_snapshots)
    drop_snapshot = operation(drop_snapshot)
    search_snapshot = plan(search_snapshot)
