"""The migration runner (vera db migrate / status) against the real server."""

from __future__ import annotations

import io
import shutil
import subprocess
import tarfile
import threading
from pathlib import Path

import psycopg
import pytest

from pg_tests.support.catalogs import assert_same, everything, pre_baseline, snapshot
from pg_tests.support.databases import APP_LOGIN, APP_LOGIN_LIMITS, ROOT, Database
from vera_client.adapters.postgres import bundle, provisioning
from vera_client.adapters.postgres.migrations import MigrationRunner
from vera_client.domain.errors import (
    DatabaseUnavailableError,
    EditedMigrationError,
    JobQueueVersionError,
    MigrationError,
    PreBaselineDatabaseError,
    UnknownMigrationError,
)

BUNDLE = ROOT / "sql"
CURRENT = bundle.migrations(BUNDLE)
NEXT = len(CURRENT) + 1
RELEASED = bundle.released(BUNDLE)
PROBE = """-- a function of the bundle's copy
set role vera_owner;
create or replace function vera.probe() returns {returns} language sql immutable as $$ select {value} $$;
reset role;
"""


@pytest.fixture
def fresh(make_database) -> Database:
    database: Database = make_database(template="template0")
    return database


@pytest.fixture
def bundle_copy(tmp_path: Path) -> Path:
    """A copy of sql/ that a test may change."""
    root = tmp_path / "sql"
    shutil.copytree(BUNDLE, root)
    return root


def _recorded(database: Database) -> list[tuple[int, str, str]]:
    with database.admin() as conn:
        return [
            tuple(row)
            for row in conn.execute("select version, name, sha256 from vera_meta.migrations order by 1")
        ]  # type: ignore[misc]


def _scalar(database: Database, sql: str) -> object:
    with database.admin() as conn:
        row = conn.execute(sql).fetchone()  # type: ignore[call-overload]
        assert row is not None
        return row[0]


def test_migrate_applies_everything_once_then_is_a_no_op(fresh: Database) -> None:
    runner = MigrationRunner(fresh.admin_dsn)
    assert [s.applied for s in runner.states()] == [False] * len(CURRENT)
    applied = runner.migrate()
    assert [m.name for m in applied] == [m.name for m in CURRENT]
    assert runner.migrate() == []
    states = runner.states()
    assert all(s.applied and not s.edited for s in states)
    assert _recorded(fresh) == [(m.version, m.name, m.sha256) for m in CURRENT]


def test_the_baseline_holds_no_function() -> None:
    """Function bodies live in sql/functions only; a migration may create one
    only to replace a signature it drops (tests/test_bundle.py checks that)."""
    baseline = CURRENT[0].path.read_text()
    assert CURRENT[0].name == "0001_baseline.sql"
    assert "create or replace function" not in baseline and "create function" not in baseline


def test_status_does_not_create_the_bookkeeping_table(fresh: Database) -> None:
    MigrationRunner(fresh.admin_dsn).states()
    assert _scalar(fresh, "select to_regclass('vera_meta.migrations')") is None


def test_functions_and_policies_are_reapplied_when_no_migration_is_pending(
    fresh: Database, bundle_copy: Path
) -> None:
    runner = MigrationRunner(fresh.admin_dsn, sql_root=bundle_copy)
    runner.migrate()
    probe = bundle_copy / "functions" / "205_probe.sql"
    probe.write_text(PROBE.format(returns="integer", value="1"))
    assert runner.migrate() == []
    assert _scalar(fresh, "select vera.probe()") == 1
    assert (
        _scalar(fresh, "select pg_get_userbyid(proowner) from pg_proc where proname = 'probe'")
        == "vera_owner"
    )
    probe.write_text(PROBE.format(returns="integer", value="2"))
    facts_policy = (
        "select count(*) from pg_policies where tablename = 'facts' and policyname = 'read_own_groups'"
    )
    with fresh.admin() as conn:
        conn.execute("drop policy read_own_groups on vera.facts")
    assert _scalar(fresh, facts_policy) == 0
    assert runner.migrate() == []
    assert _scalar(fresh, "select vera.probe()") == 2
    assert _scalar(fresh, facts_policy) == 1


def test_a_changed_signature_needs_a_migration_that_drops_the_old_one(
    fresh: Database, bundle_copy: Path
) -> None:
    """create or replace cannot change a return type: the migration drops the
    old function (if exists: a new database has none while migrations run),
    the function file then creates the new one, in one transaction."""
    probe = bundle_copy / "functions" / "205_probe.sql"
    probe.write_text(PROBE.format(returns="integer", value="1"))
    runner = MigrationRunner(fresh.admin_dsn, sql_root=bundle_copy)
    runner.migrate()
    probe.write_text(PROBE.format(returns="text", value="'one'"))
    with pytest.raises(
        MigrationError, match=r"functions/205_probe\.sql failed and was rolled back: cannot change"
    ):
        runner.migrate()
    assert _scalar(fresh, "select vera.probe()") == 1
    (bundle_copy / "migrations" / f"{NEXT:04d}_probe_returns_text.sql").write_text(
        "-- vera.probe() returns text now\ndrop function if exists vera.probe();\n"
    )
    assert [m.version for m in runner.migrate()] == [NEXT]
    assert _scalar(fresh, "select vera.probe()") == "one"


def test_migrations_functions_and_the_queue_commit_or_roll_back_together(
    fresh: Database, bundle_copy: Path
) -> None:
    before = everything(fresh)
    (bundle_copy / "rls" / "990_broken.sql").write_text("-- breaks the last step\nselect 1/0;\n")
    with pytest.raises(
        MigrationError, match=r"rls/990_broken\.sql failed and was rolled back: division by zero"
    ):
        MigrationRunner(fresh.admin_dsn, sql_root=bundle_copy).migrate()
    assert everything(fresh) == before  # no baseline, no vera_meta, no functions, no queue


def test_failing_migration_rolls_back_whole(fresh: Database, bundle_copy: Path) -> None:
    runner = MigrationRunner(fresh.admin_dsn, sql_root=bundle_copy)
    runner.migrate()
    (bundle_copy / "migrations" / f"{NEXT:04d}_broken.sql").write_text(
        "-- broken\ncreate table vera.half_done (id int);\nselect 1/0;\n"
    )
    with pytest.raises(
        MigrationError, match=rf"{NEXT:04d}_broken.sql failed and was rolled back: division by zero"
    ):
        runner.migrate()
    assert _scalar(fresh, "select to_regclass('vera.half_done')") is None
    assert [v for v, _, _ in _recorded(fresh)] == list(range(1, NEXT))


def test_a_database_of_the_pre_baseline_migrations_is_refused_and_left_alone(fresh: Database) -> None:
    pre_baseline(fresh)
    before = everything(fresh)
    embedded = MigrationRunner(fresh.admin_dsn, data_dir=Path("/var/lib/vera/postgres"))
    with pytest.raises(PreBaselineDatabaseError) as refused:
        embedded.migrate()
    assert str(refused.value) == (
        "this database was built by VERA's pre-baseline migrations (0001_initial … 0004_ingestion); "
        "nothing was changed: export what you need, recreate it (stop the server and remove "
        "/var/lib/vera/postgres, the embedded server's data directory), then run vera db migrate"
    )
    with pytest.raises(PreBaselineDatabaseError, match="drop the database and create it empty"):
        MigrationRunner(fresh.admin_dsn).migrate()
    with pytest.raises(PreBaselineDatabaseError):
        embedded.states()
    assert everything(fresh) == before


def test_edited_released_migration_is_refused_by_name_and_nothing_runs(
    fresh: Database, bundle_copy: Path
) -> None:
    baseline = bundle_copy / "migrations" / CURRENT[0].name
    (bundle_copy / "migrations" / "RELEASED").write_text(f"{CURRENT[0].sha256}  {CURRENT[0].name}\n")
    runner = MigrationRunner(fresh.admin_dsn, sql_root=bundle_copy)
    runner.migrate()
    baseline.write_text(baseline.read_text() + "\n-- a harmless-looking edit\n")
    (bundle_copy / "migrations" / f"{NEXT:04d}_next.sql").write_text(
        "-- next\ncreate table vera.should_not_exist (id int);\n"
    )
    with pytest.raises(
        EditedMigrationError,
        match=r"^0001_baseline\.sql was edited after it was applied \(recorded sha256 \w{12}, file \w{12}\): "
        r"restore it and put the change in a new migration$",
    ):
        runner.migrate()
    assert _scalar(fresh, "select to_regclass('vera.should_not_exist')") is None
    assert [s.edited for s in runner.states()] == [True] + [False] * (NEXT - 1)


def test_edited_unreleased_migration_asks_to_recreate_the_development_database(
    fresh: Database, bundle_copy: Path
) -> None:
    (bundle_copy / "migrations" / "RELEASED").write_text("# nothing released\n")
    assert not bundle.migrations(bundle_copy)[0].released
    runner = MigrationRunner(fresh.admin_dsn, sql_root=bundle_copy)
    runner.migrate()
    baseline = bundle_copy / "migrations" / CURRENT[0].name
    baseline.write_text(baseline.read_text() + "\n-- still a draft\n")
    with pytest.raises(EditedMigrationError) as refused:
        runner.migrate()
    message = str(refused.value)
    assert message.startswith("0001_baseline.sql was edited after this database applied it")
    assert message.endswith(
        "and is not released: recreate this development database "
        "(drop the database and create it empty), then run vera db migrate"
    )


def test_database_newer_than_the_code_is_refused(fresh: Database, bundle_copy: Path) -> None:
    (bundle_copy / "migrations" / f"{NEXT:04d}_future.sql").write_text("-- from the future\nselect 1;\n")
    MigrationRunner(fresh.admin_dsn, sql_root=bundle_copy).migrate()
    with pytest.raises(
        UnknownMigrationError, match=rf"does not know \({NEXT:04d}_future\.sql\): upgrade VERA"
    ):
        MigrationRunner(fresh.admin_dsn).migrate()
    with pytest.raises(UnknownMigrationError):
        MigrationRunner(fresh.admin_dsn).states()


def test_another_job_queue_version_is_refused_but_shown_by_status(fresh: Database) -> None:
    runner = MigrationRunner(fresh.admin_dsn)
    runner.migrate()
    with fresh.admin() as conn:
        conn.execute("update vera_meta.components set version = '3.9.0' where name = 'procrastinate'")
    with pytest.raises(JobQueueVersionError, match=r"the job queue schema is Procrastinate 3\.9\.0 but"):
        runner.migrate()
    assert all(state.applied for state in runner.states())
    assert runner.job_queue_version() == "3.9.0"


def test_gaps_in_numbering_are_refused(bundle_copy: Path) -> None:
    (bundle_copy / "migrations" / f"{NEXT + 1:04d}_skipped_one.sql").write_text("-- gap\nselect 1;\n")
    with pytest.raises(MigrationError, match=f"expected version {NEXT:04d}"):
        bundle.migrations(bundle_copy)


def test_concurrent_runs_apply_each_migration_once(fresh: Database) -> None:
    failures: list[BaseException] = []

    def run() -> None:
        try:
            MigrationRunner(fresh.admin_dsn).migrate()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=run) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert [v for v, _, _ in _recorded(fresh)] == [m.version for m in CURRENT]


def test_wrong_dsn_is_one_clear_line(tmp_path: Path) -> None:
    runner = MigrationRunner(f"postgresql://vera_app@/vera?host={tmp_path}&port=1", connect_timeout=2)
    with pytest.raises(DatabaseUnavailableError) as raised:
        runner.migrate()
    message = str(raised.value)
    assert message.startswith("cannot connect to postgresql://vera_app@/vera")
    assert "\n" not in message


def test_password_never_appears_in_errors() -> None:
    runner = MigrationRunner("postgresql://dba:hunter2@127.0.0.1:1/vera", connect_timeout=2)
    with pytest.raises(DatabaseUnavailableError) as raised:
        runner.migrate()
    assert "hunter2" not in str(raised.value) and "dba:***@" in str(raised.value)


def test_migrated_database_is_usable_by_the_application_role(fresh: Database) -> None:
    MigrationRunner(fresh.admin_dsn).migrate()
    with fresh.admin() as admin:
        key = admin.execute("select api_key from vera.create_tenant('T', 'O')").fetchone()[0]  # type: ignore[index]
    # a login connects to the databases it was made for (CONNECT is not PUBLIC's on VERA's databases)
    provisioning.create_app_login(fresh.admin_dsn, APP_LOGIN, APP_LOGIN_LIMITS, exists_ok=True)
    with psycopg.connect(fresh.dsn(APP_LOGIN)) as conn:
        conn.execute("select vera.authenticate(%s)", (key,))
        assert conn.execute("select count(*) from vera.whoami()").fetchone() == (2,)


def _bundle_before(folder: Path, migration: str) -> Path:
    """sql/ as the commit before the one that added a migration had it."""
    log = [
        "git",
        "-C",
        str(ROOT),
        "log",
        "--diff-filter=A",
        "--format=%H",
        "--",
        f"sql/migrations/{migration}",
    ]
    added = subprocess.run(log, capture_output=True, text=True, check=True).stdout.split()  # noqa: S603
    assert added, f"no commit added {migration}"
    archive = subprocess.run(  # noqa: S603
        ["git", "-C", str(ROOT), "archive", f"{added[-1]}^", "sql"],  # noqa: S607
        capture_output=True,
        check=True,
    )
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(folder, filter="data")
    return folder / "sql"


def _released_bundle(folder: Path) -> Path:
    """sql/ as the commit that released the last released migration had it,
    with only the migrations it released."""
    name, digest = max(RELEASED.items())
    line = f"{digest}  {name}"
    log = subprocess.run(  # noqa: S603
        ["git", "-C", str(ROOT), "log", "--format=%H", "-S", line, "--", "sql/migrations/RELEASED"],  # noqa: S607
        capture_output=True,
        text=True,
        check=True,
    )
    commits = log.stdout.split()
    assert commits, f"RELEASED lists {name} but no commit added that line: commit the release first"
    archive = subprocess.run(  # noqa: S603
        ["git", "-C", str(ROOT), "archive", commits[-1], "sql"],  # noqa: S607
        capture_output=True,
        check=True,
    )
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(folder, filter="data")
    root = folder / "sql"
    for path in (root / "migrations").glob("*.sql"):
        if path.name not in RELEASED:
            path.unlink()
    return root


@pytest.mark.skipif(
    not RELEASED,
    reason="nothing is released yet (sql/migrations/RELEASED lists no migration): no released state to upgrade from",
)
def test_upgrading_from_the_last_release_gives_the_catalog_of_a_new_database(
    make_database, tmp_path: Path
) -> None:
    """A database built and used by the last release, migrated by this code,
    equals a new one: the later migrations reach the baseline's state, and
    drop what the release had that this code no longer has."""
    released_root = _released_bundle(tmp_path)
    upgraded: Database = make_database(template="template0")
    MigrationRunner(upgraded.admin_dsn, sql_root=released_root).migrate()
    with upgraded.admin() as conn:
        conn.execute("select * from vera.create_tenant('Released', 'Owner')")
    applied = MigrationRunner(upgraded.admin_dsn).migrate()
    assert [m.name for m in applied] == [m.name for m in CURRENT if m.name not in RELEASED]
    new: Database = make_database(template="template0")
    MigrationRunner(new.admin_dsn).migrate()
    assert_same(snapshot(new), snapshot(upgraded), "upgraded from the last release vs new")
    assert _scalar(upgraded, "select count(*) from vera.groups where name = 'Released'") == 1


def test_time_scopes_upgrade_keeps_votes_and_gives_calibrated_weights_the_period_share(
    fresh: Database, tmp_path: Path
) -> None:
    """0002 on a database that has votes and a calibrated weight set: each vote's six signals
    gain a null seventh (no period was asked about), and the active set is replaced by one giving
    period 0.20 and the six others 0.80 of theirs; the old set stays, inactive (history)."""
    MigrationRunner(fresh.admin_dsn, sql_root=_bundle_before(tmp_path, "0002_time_scopes.sql")).migrate()
    with fresh.admin() as conn:
        group, principal = conn.execute(
            "select group_id, principal_id from vera.create_tenant('Voted', 'Owner')"
        ).fetchone()  # type: ignore[misc]
        conn.execute(
            "insert into vera.feedback (group_id, principal_id, item_kind, item_id, query_text, query_sha256,"
            " vote, signals) values (%s, %s, 'fact', gen_random_uuid(), 'q', sha256('q'), 1,"
            " array[0.9, 0.5, 0.5, 0.5, 0.5, 0.5])",
            (group, principal),
        )
        conn.execute(
            "insert into vera.ranking_weights (group_id, relevance, authority, verification, recency,"
            " feedback, confidence, sample_count, active) values (%s, 0.5, 0.1, 0.1, 0.1, 0.1, 0.1, 120, true)",
            (group,),
        )
    MigrationRunner(fresh.admin_dsn).migrate()
    with fresh.admin() as conn:
        signals = conn.execute("select signals from vera.feedback").fetchall()
        sets = conn.execute(
            "select active, relevance, authority, period, sample_count from vera.ranking_weights"
        ).fetchall()
    assert [[round(x, 4) if x is not None else None for x in row[0]] for row in signals] == [
        [0.9, 0.5, 0.5, 0.5, 0.5, 0.5, None]
    ]
    assert sorted((a, round(r, 4), round(au, 4), round(p, 4), n) for a, r, au, p, n in sets) == [
        (False, 0.5, 0.1, 0.0, 120),
        (True, 0.4, 0.08, 0.2, 120),
    ]
