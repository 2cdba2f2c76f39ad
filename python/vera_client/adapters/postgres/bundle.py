"""The SQL bundle: sql/{schema,functions,rls,migrations}, in order.

In a source checkout it is read from the repository's sql/ folder; an
installed wheel carries the same files as vera_client/_sql.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from pathlib import Path

from vera_client.domain.errors import MigrationError
from vera_client.domain.models import Migration

DECLARATIVE_PARTS = ("schema", "functions", "rls")
_MIGRATION_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")


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


def bookkeeping_sql(root: Path | None = None) -> bytes:
    """DDL of vera_meta (migrations, components), shared with the container's init script."""
    return ((root or sql_root()) / "meta" / "bookkeeping.sql").read_bytes()


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def migrations(directory: Path | None = None) -> list[Migration]:
    """Numbered migrations in version order; refuses gaps, duplicates and stray names."""
    folder = directory or sql_root() / "migrations"
    found: list[Migration] = []
    for path in sorted(folder.glob("*.sql")):
        match = _MIGRATION_NAME.match(path.name)
        if match is None:
            raise MigrationError(f"{path.name}: migration files are named NNNN_lower_snake.sql")
        found.append(Migration(version=int(match[1]), name=path.name, path=path, sha256=file_sha256(path)))
    for earlier, later in itertools.pairwise(found):
        if earlier.version == later.version:
            raise MigrationError(f"{earlier.name} and {later.name} share version {later.version:04d}")
    for expected, migration in enumerate(found, start=1):
        if migration.version != expected:
            raise MigrationError(
                f"{migration.name}: expected version {expected:04d}; migrations are numbered without gaps"
            )
    return found
