"""The SQL bundle as files: sql/{schema,functions,rls,migrations,meta}.

In a source checkout it is read from the repository's sql/ folder; an
installed wheel carries the same files as vera_client/_sql.

migrations/ holds the numbered, run-once files; functions/ and rls/ are
idempotent and re-applied after them on every migrate; schema/ is the
current state that schema + functions + rls must match (pg_tests).
migrations/RELEASED lists the released migrations, one `<sha256>  <file>`
line each (sha256sum's format): those are frozen.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from pathlib import Path

from vera_client.domain.deployment import Migration
from vera_client.domain.errors import MigrationError

DECLARATIVE_PARTS = ("schema", "functions", "rls")
IDEMPOTENT_PARTS = ("functions", "rls")
RELEASED_LIST = "RELEASED"
_MIGRATION_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_RELEASED_LINE = re.compile(r"^([0-9a-f]{64}) [ *]?(\S+)$")


def sql_root() -> Path:
    here = Path(__file__).resolve()
    for candidate in (here.parents[2] / "_sql", here.parents[4] / "sql"):
        if (candidate / "migrations").is_dir():
            return candidate
    raise MigrationError("the SQL bundle was not found next to the vera_client package")


def declarative_files(root: Path | None = None) -> list[Path]:
    """schema, then functions, then rls; each folder in file-name order."""
    base = root or sql_root()
    return [path for part in DECLARATIVE_PARTS for path in sorted((base / part).glob("*.sql"))]


def idempotent_files(root: Path | None = None) -> list[Path]:
    """functions, then rls, in file-name order: what every migrate re-applies."""
    base = root or sql_root()
    return [path for part in IDEMPOTENT_PARTS for path in sorted((base / part).glob("*.sql"))]


def meta_file(name: str, root: Path | None = None) -> Path:
    """A file of sql/meta: the bookkeeping tables, the refusal check, the queue's wrapping."""
    return (root or sql_root()) / "meta" / name


def bookkeeping_sql(root: Path | None = None) -> bytes:
    """DDL of vera_meta (migrations, components), shared with the container's init script."""
    return meta_file("bookkeeping.sql", root).read_bytes()


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def released(root: Path | None = None) -> dict[str, str]:
    """The released migrations by file name, with the SHA-256 each was released with."""
    path = (root or sql_root()) / "migrations" / RELEASED_LIST
    listed: dict[str, str] = {}
    if not path.exists():
        return listed
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip() or line.startswith("#"):
            continue
        match = _RELEASED_LINE.match(line)
        if match is None:
            raise MigrationError(
                f"{path.name} line {number}: expected '<sha256>  <file>' (sha256sum's format)"
            )
        listed[match[2]] = match[1]
    return listed


def migrations(root: Path | None = None) -> list[Migration]:
    """Numbered migrations in version order; refuses gaps, duplicates and stray names."""
    base = root or sql_root()
    frozen = released(base)
    found: list[Migration] = []
    for path in sorted((base / "migrations").glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if match is None:
            raise MigrationError(f"{path.name}: migration files are named NNNN_lower_snake.sql")
        found.append(
            Migration(
                version=int(match[1]),
                name=path.name,
                path=path,
                sha256=file_sha256(path),
                released=path.name in frozen,
            )
        )
    for earlier, later in itertools.pairwise(found):
        if earlier.version == later.version:
            raise MigrationError(f"{earlier.name} and {later.name} share version {later.version:04d}")
    for expected, migration in enumerate(found, start=1):
        if migration.version != expected:
            raise MigrationError(
                f"{migration.name}: expected version {expected:04d}; migrations are numbered without gaps"
            )
    return found
