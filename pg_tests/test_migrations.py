"""The migration runner (vera db migrate / status) against the real server."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import psycopg
import pytest

from pg_tests.conftest import ROOT, Database
from vera_client.adapters.postgres import bundle
from vera_client.adapters.postgres.migrations import MigrationRunner
from vera_client.domain.errors import (
    DatabaseUnavailableError,
    EditedMigrationError,
    MigrationError,
    UnknownMigrationError,
)

RELEASED = ROOT / "sql" / "migrations"
NEXT = len(bundle.migrations(RELEASED)) + 1


@pytest.fixture
def fresh(make_database) -> Database:
    database: Database = make_database(template="template0")
    return database


@pytest.fixture
def migrations_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "migrations"
    shutil.copytree(RELEASED, folder)
    return folder


def _recorded(database: Database) -> list[tuple[int, str, str]]:
    with database.admin() as conn:
        return [
            tuple(row)
            for row in conn.execute("select version, name, sha256 from vera_meta.migrations order by 1")
        ]  # type: ignore[misc]


def test_migrate_applies_everything_once_then_is_a_no_op(fresh: Database) -> None:
    runner = MigrationRunner(fresh.admin_dsn)
    assert [s.applied for s in runner.states()] == [False] * len(bundle.migrations())
    applied = runner.migrate()
    assert [m.name for m in applied] == [m.name for m in bundle.migrations()]
    assert runner.migrate() == []
    states = runner.states()
    assert all(s.applied and not s.edited for s in states)
    assert [(v, n, s) for v, n, s in _recorded(fresh)] == [
        (m.version, m.name, m.sha256) for m in bundle.migrations()
    ]


def test_status_does_not_create_the_bookkeeping_table(fresh: Database) -> None:
    MigrationRunner(fresh.admin_dsn).states()
    with fresh.admin() as conn:
        assert conn.execute("select to_regclass('vera_meta.migrations')").fetchone() == (None,)


def test_edited_migration_is_refused_by_name_and_nothing_runs(fresh: Database, migrations_copy: Path) -> None:
    runner = MigrationRunner(fresh.admin_dsn, migrations_dir=migrations_copy)
    runner.migrate()
    edited = migrations_copy / "0001_initial.sql"
    edited.write_text(edited.read_text() + "\n-- a harmless-looking edit\n")
    (migrations_copy / f"{NEXT:04d}_next.sql").write_text("create table vera.should_not_exist (id int);\n")
    with pytest.raises(EditedMigrationError, match=r"0001_initial\.sql"):
        runner.migrate()
    with fresh.admin() as conn:
        assert conn.execute("select to_regclass('vera.should_not_exist')").fetchone() == (None,)
    assert [s.edited for s in runner.states()] == [True] + [False] * (NEXT - 1)


def test_failing_migration_rolls_back_whole(fresh: Database, migrations_copy: Path) -> None:
    (migrations_copy / f"{NEXT:04d}_broken.sql").write_text(
        "create table vera.half_done (id int);\nselect 1/0;\n"
    )
    runner = MigrationRunner(fresh.admin_dsn, migrations_dir=migrations_copy)
    with pytest.raises(
        MigrationError, match=rf"{NEXT:04d}_broken.sql failed and was rolled back: division by zero"
    ):
        runner.migrate()
    with fresh.admin() as conn:
        assert conn.execute("select to_regclass('vera.half_done')").fetchone() == (None,)
    assert [v for v, _, _ in _recorded(fresh)] == list(range(1, NEXT))


def test_database_newer_than_the_code_is_refused(fresh: Database, migrations_copy: Path) -> None:
    (migrations_copy / f"{NEXT:04d}_future.sql").write_text("select 1;\n")
    MigrationRunner(fresh.admin_dsn, migrations_dir=migrations_copy).migrate()
    with pytest.raises(UnknownMigrationError, match=rf"{NEXT:04d}_future\.sql"):
        MigrationRunner(fresh.admin_dsn).migrate()


def test_gaps_in_numbering_are_refused(migrations_copy: Path) -> None:
    (migrations_copy / f"{NEXT + 1:04d}_skipped_one.sql").write_text("select 1;\n")
    with pytest.raises(MigrationError, match=f"expected version {NEXT:04d}"):
        bundle.migrations(migrations_copy)


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
    assert [v for v, _, _ in _recorded(fresh)] == [m.version for m in bundle.migrations()]


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
    with psycopg.connect(fresh.dsn("vera_app")) as conn:
        conn.execute("select vera.authenticate(%s)", (key,))
        assert conn.execute("select count(*) from vera.whoami()").fetchone() == (2,)


def test_upgrading_a_database_with_vectors_from_0002_keeps_its_data(fresh: Database, tmp_path: Path) -> None:
    """0003 replaces the shared HNSW and full-text indexes 0002 built; rows and search survive."""
    only_two = tmp_path / "upto2"
    only_two.mkdir()
    for migration in bundle.migrations(RELEASED)[:2]:
        shutil.copy(migration.path, only_two / migration.name)
    MigrationRunner(fresh.admin_dsn, migrations_dir=only_two).migrate()
    with fresh.admin() as conn:
        org, _, key = conn.execute("select * from vera.create_tenant('Old', 'Owner')").fetchone()  # type: ignore[misc]
    with fresh.connect() as conn:
        conn.execute("select vera.authenticate(%s)", (key,))
        conn.execute(
            "select vera.publish_claims(%s, null, %s::jsonb, 'm')",
            (org, '[{"subject": "api", "predicate": "runs on", "object": "blue", "embedding": [1, 0, 0]}]'),
        )
        conn.commit()
    with fresh.admin() as conn:
        assert conn.execute(
            "select to_regclass('vera.facts_embedding_3_hnsw_idx') is not null"
        ).fetchone() == (True,)
    MigrationRunner(fresh.admin_dsn).migrate()
    with fresh.admin() as conn:
        indexes = {
            row[0] for row in conn.execute("select indexname from pg_indexes where schemaname = 'vera'")
        }
    assert "facts_embedding_3_hnsw_idx" not in indexes and "facts_tsv_idx" not in indexes
    assert {"facts_group_tsv_idx", "chunks_group_tsv_idx", "entities_name_embedding_3_hnsw_idx"} <= indexes
    with fresh.connect() as conn:
        conn.execute("select vera.authenticate(%s)", (key,))
        hits = conn.execute("select text from vera.search(query_embedding => '[1,0,0]'::vector)").fetchall()
        assert len(hits) == 1
        conn.rollback()


def test_upgrading_from_0003_retires_snapshots_of_the_old_ranking(fresh: Database, tmp_path: Path) -> None:
    """0004 changes what search returns (vera-search/2): a snapshot taken before
    fails closed afterwards instead of answering with other rules; facts keep searching."""
    only_three = tmp_path / "upto3"
    only_three.mkdir()
    for migration in bundle.migrations(RELEASED)[:3]:
        shutil.copy(migration.path, only_three / migration.name)
    MigrationRunner(fresh.admin_dsn, migrations_dir=only_three).migrate()
    with fresh.admin() as conn:
        org, _, key = conn.execute("select * from vera.create_tenant('Old', 'Owner')").fetchone()  # type: ignore[misc]
    with fresh.connect() as conn:
        conn.execute("select vera.authenticate(%s)", (key,))
        conn.execute(
            "select vera.publish_claims(%s, null, %s::jsonb)",
            (org, '[{"subject": "api", "predicate": "runs on", "object": "blue"}]'),
        )
        conn.commit()
        conn.execute("begin isolation level repeatable read")
        conn.execute("select vera.authenticate(%s)", (key,))
        conn.execute("select vera.create_snapshot(%s, 'before')", (org,))
        conn.commit()
    MigrationRunner(fresh.admin_dsn).migrate()
    with fresh.connect() as conn:
        conn.execute("select vera.authenticate(%s)", (key,))
        assert conn.execute("select text from vera.search('api blue')").fetchall() == [("api runs on blue",)]
        with pytest.raises(psycopg.Error) as stale:
            conn.execute("select * from vera.search_snapshot(%s, 'before', 'api')", (org,))
        assert stale.value.sqlstate == "VS001"
        conn.rollback()


def test_upgrading_from_0004_grades_existing_passages_by_their_sources_tier(
    fresh: Database, tmp_path: Path
) -> None:
    """0005 extends the contamination guard to passages: those already stored are graded as
    store_chunks grades new ones; a tier-4 one has no known proposer, so until an admin
    approves it, only the review queue shows it."""
    before = tmp_path / "before0005"
    before.mkdir()
    for migration in bundle.migrations(RELEASED):
        if migration.name < "0005":
            shutil.copy(migration.path, before / migration.name)
    MigrationRunner(fresh.admin_dsn, migrations_dir=before).migrate()
    with fresh.admin() as conn:
        org, owner, key = conn.execute("select * from vera.create_tenant('Old', 'Owner')").fetchone()  # type: ignore[misc]
        viewer = conn.execute("select vera.insert_principal('user', 'Viewer', null)").fetchone()[0]  # type: ignore[index]
        conn.execute("insert into vera.memberships (group_id, principal_id, role) values (%s, %s, 'viewer')",
                     (org, viewer))  # fmt: skip
        viewer_key = conn.execute(
            "select api_key from vera.issue_api_key(%s, 'k', null)", (viewer,)
        ).fetchone()[0]  # type: ignore[index]
        personal = conn.execute("select personal_group_id from vera.principals where principal_id = %s",
                                (owner,)).fetchone()[0]  # type: ignore[index]  # fmt: skip
    with fresh.connect() as conn:
        conn.execute("select vera.authenticate(%s)", (key,))
        for group, tiers in ((org, (1, 2, 3, 4)), (personal, (4,))):
            for tier in tiers:
                source = conn.execute("select vera.register_source(%s, 'markdown', %s, %s)",
                                      (group, f"tier {tier}", tier)).fetchone()[0]  # type: ignore[index]  # fmt: skip
                episode = conn.execute(
                    "select episode_id from vera.record_episode(%s, %s, 'page', sha256(%s::bytea))",
                    (group, source, f"{group} {tier}".encode()),
                ).fetchone()[0]  # type: ignore[index]
                conn.execute("select vera.store_chunks(%s, %s, %s::jsonb)",
                             (group, episode, f'[{{"text": "walrus of tier {tier}"}}]'))  # fmt: skip
        conn.commit()
    MigrationRunner(fresh.admin_dsn).migrate()
    with fresh.admin() as conn:
        graded = conn.execute(
            "select c.group_id = %s, s.trust_tier, c.lifecycle::text, c.verification::text, c.proposed, c.proposed_by"
            " from vera.chunks c join vera.episodes e using (group_id, episode_id)"
            " join vera.sources s on s.group_id = e.group_id and s.source_id = e.source_id order by 1, 2",
            (personal,),
        ).fetchall()
    assert graded == [
        (False, 1, "published", "auto", False, None),
        (False, 2, "published", "auto", False, None),
        (False, 3, "pending_review", "pending", False, None),
        (False, 4, "proposal", "pending", True, None),
        (True, 4, "published", "pending", False, None),
    ]
    for who, expected in ((viewer_key, ["walrus of tier 1", "walrus of tier 2"]),
                          (key, ["walrus of tier 1", "walrus of tier 2", "walrus of tier 4"])):  # fmt: skip
        with fresh.connect() as conn:
            conn.execute("select vera.authenticate(%s)", (who,))
            found = conn.execute("select text, group_id from vera.search('walrus')").fetchall()
            conn.rollback()
        assert sorted(text for text, _ in found) == expected
    # the owner's tier-4 hit is the one in its own u: scope; the organisation's waits for review
    assert [group for text, group in found if text.endswith("4")] == [personal]
    with fresh.connect() as conn:
        conn.execute("select vera.authenticate(%s)", (key,))
        waiting = conn.execute(
            "select text, lifecycle::text from vera.pending_passages(%s)", (org,)
        ).fetchall()
        conn.rollback()
    assert waiting == [("walrus of tier 3", "pending_review"), ("walrus of tier 4", "proposal")]
