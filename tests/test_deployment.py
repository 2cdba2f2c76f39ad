"""The steps of a migrate, and the psql script rendered from them, without a database."""

from __future__ import annotations

from pathlib import Path

import pytest

from vera_client.adapters.postgres import bundle, deployment
from vera_client.domain.errors import MigrationError

ROOT = Path(__file__).resolve().parents[1]


def _labels(script: str) -> list[str]:
    return [line.removeprefix("-- ---- ") for line in script.splitlines() if line.startswith("-- ---- ")]


def test_the_script_runs_the_files_in_the_runner_s_order() -> None:
    """bookkeeping, check, every migration, every function file, every rls file, then the queue."""
    files = [step.label for step in deployment.steps() if isinstance(step, deployment.File)]
    migrations = [f"migrations/{m.name}" for m in bundle.migrations()]
    idempotent = [f"{path.parent.name}/{path.name}" for path in bundle.idempotent_files()]
    assert files == ["meta/bookkeeping.sql", "meta/check.sql", *idempotent]
    labels = _labels(deployment.psql_script())
    assert labels[: 2 + len(migrations) + len(idempotent)] == [
        "meta/bookkeeping.sql",
        "meta/check.sql",
        *migrations,
        *idempotent,
    ]
    assert labels[-3] == "meta/procrastinate_before.sql" and labels[-1] == "meta/procrastinate_after.sql"


def test_each_migration_is_guarded_by_its_version_and_recorded() -> None:
    script = deployment.psql_script()
    for migration in bundle.migrations():
        guard = f"select not exists (select from vera_meta.migrations where version = {migration.version})"
        record = f"values ({migration.version}, '{migration.name}', '{migration.sha256}');"
        at = script.index(f"-- ---- migrations/{migration.name}")
        assert script.rindex(guard, 0, at) < at < script.index(record, at)


def test_a_psql_command_in_a_bundle_file_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "sql"
    for part in ("migrations", "functions", "rls", "meta"):
        (root / part).mkdir(parents=True)
    for meta in (ROOT / "sql" / "meta").iterdir():
        (root / "meta" / meta.name).write_bytes(meta.read_bytes())
    (root / "migrations" / "0001_baseline.sql").write_text("-- sneaky\n\\! echo from a migration\n")
    with pytest.raises(MigrationError, match=r"migrations/0001_baseline\.sql line 2: .* no psql commands"):
        deployment.psql_script(root)
