"""Sources through psycopg: register a folder, list sources, ask the worker to read one."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from uuid import UUID

import psycopg
from psycopg.types.json import Jsonb

from vera_client.adapters.postgres.errors import translated_errors
from vera_client.adapters.postgres.queries import query
from vera_client.domain.errors import InvalidArgumentError, NotFoundError
from vera_client.domain.models import Source
from vera_client.domain.sources import pick_source


def register_folder(
    conn: psycopg.Connection,
    group_id: str,
    name: str,
    root: Path,
    *,
    tier: int,
    kind: str = "markdown",
    uri: str | None = None,
    functional: Sequence[str] = (),
) -> UUID:
    """Register (or update, by name) a folder of Markdown/CSV/text files as a source (admins)."""
    folder = root.expanduser().resolve()
    if not folder.is_dir():
        raise InvalidArgumentError(f"{root} is not a folder")
    config: dict[str, object] = {"root": str(folder)}
    if functional:
        config["functional"] = list(functional)
    with translated_errors():
        row = conn.execute(
            query("register_source_with_config"),
            {"group": group_id, "kind": kind, "name": name, "tier": tier, "config": Jsonb(config),
             "uri": uri},
        ).fetchone()  # fmt: skip
    assert row is not None
    return UUID(str(row[0]))


def list_sources(conn: psycopg.Connection, group_id: str | None = None) -> list[Source]:
    with translated_errors():
        rows = conn.execute(query("list_sources"), {"group": group_id}).fetchall()
    return [
        Source(
            group_id=r[0],
            source_id=r[1],
            kind=r[2],
            name=r[3],
            uri=r[4],
            trust_tier=r[5],
            config=dict(r[6]),
            created_at=r[7],
            retracted_at=r[8],
            tracked_records=r[9],
        )
        for r in rows
    ]


def find_source(conn: psycopg.Connection, name_or_id: str, group_id: str | None = None) -> Source:
    """A source by name or id among the caller's (NotFoundError, or InvalidArgumentError when ambiguous)."""
    return pick_source(list_sources(conn, group_id), name_or_id, group_id)


def source_for_path(
    conn: psycopg.Connection, path: Path, group_id: str | None = None
) -> tuple[Source, str | None]:
    """The folder source whose root holds path, and path relative to that root (None for the root)."""
    target = path.expanduser().resolve()
    best: tuple[Source, str | None] | None = None
    for source in list_sources(conn, group_id):
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


def request_ingest(conn: psycopg.Connection, source: Source, path: str | None = None) -> int:
    """Defer an ingestion run for the worker; returns the job id (commit to hand it over)."""
    with translated_errors():
        row = conn.execute(
            query("request_ingest"), {"group": source.group_id, "source": source.source_id, "path": path}
        ).fetchone()
    assert row is not None
    return int(row[0])
