"""Ingestion of a folder source through the real worker: the SQL functions
it uses (list_sources, source_cursor, advance_source_cursor, request_ingest)
under RLS, and the connector's incremental runs: unchanged files are not
read, changed ones become new versions, deleted ones are retracted, bad ones
are reported without stopping the others."""

from __future__ import annotations

import os
from pathlib import Path
from uuid import UUID

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pg_tests.support.clients import client_for
from pg_tests.support.ingesting import folder_runs, run_worker
from pg_tests.support.seed import World, caller, create_project
from vera_client.adapters.embedders.deterministic import DeterministicEmbedder
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.adapters.postgres.executor import Executor
from vera_client.api.sources import Source
from vera_client.client import VeraClient
from vera_client.domain.errors import (
    PermissionDeniedError,
    ProviderTimeoutError,
    ProviderUnavailableError,
    SourceRootNotAllowedError,
    SourceUnavailableError,
)
from vera_worker.adapters.queue import build_app
from vera_worker.adapters.serving import drain
from vera_worker.connectors.dispatch import IngestRequest, SourceRuns
from vera_worker.connectors.events import IngestReport
from vera_worker.connectors.writing import object_key


def _member_key(world: World, group: str) -> str:
    with caller(world.db, world.a.owner_key) as conn:
        principal = conn.execute(
            "select vera.create_principal(%s, 'service', 'ingest bot', 'member', null)", (group,)
        ).fetchone()[0]  # type: ignore[index]
        key = conn.execute(
            "select api_key from vera.create_api_key('bot', null, %s)", (principal,)
        ).fetchone()[0]  # type: ignore[index]
        conn.commit()
    return str(key)


def _register(world: World, group: str, folder: Path, tier: int = 2) -> Source:
    with client_for(world, world.a.owner_key) as vera:
        return vera.register_folder(group, f"docs {group}", folder, tier=tier, functional=["runs on"])


def _request(world: World, key: str, source: Source, path: str | None = None) -> int:
    with client_for(world, key) as vera:
        return vera.request_ingest(source.group_id, source.source_id, path)


def _texts(world: World, group: str, query: str) -> list[str]:
    with caller(world.db, world.a.owner_key) as conn:
        rows = conn.execute(
            "select text from vera.search(%s, groups => array[%s])", (query, group)
        ).fetchall()
    return [row[0] for row in rows]


def _signed(world: World, group: str, source: UUID) -> list[str]:
    """The records of a source whose live latest version holds the signature of the file read (what
    the next run does not read again)."""
    with world.db.admin() as admin:
        rows = admin.execute(
            """select h.external_id from (select distinct on (e.external_id) e.external_id, e.status, e.signature
                                           from vera.episodes e where e.group_id = %s and e.source_id = %s
                                          order by e.external_id, e.version desc) h
                where h.status <> 'retracted' and h.signature is not null order by 1""",
            (group, source),
        ).fetchall()
    return [row[0] for row in rows]


def _write(path: Path, text: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode() if isinstance(text, str) else text)


RUNBOOK = """---
subject: billing-api
runs on: k8s-hanoi-2
---
# Billing runbook

## Restart

Roll the deployment with kubectl rollout restart, then watch the invoices queue.
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    _write(root / "runbooks" / "billing.md", RUNBOOK)
    _write(root / "cmdb.csv", "service,owned by\nledger-db,Data Platform\n")
    _write(root / "notes.txt", "Ledger backups run nightly at two.\n")
    _write(root / ".git" / "HEAD", "ref: refs/heads/main\n")  # hidden: never read
    _write(root / "image.png", b"\x89PNG")  # not a format the connector reads
    return root


def test_a_folder_is_ingested_incrementally(world: World, folder: Path, tmp_path: Path) -> None:
    group = create_project(world, "ingest-incremental")
    source = _register(world, group, folder)
    objects = tmp_path / "objects"
    embedder = DeterministicEmbedder(64)

    _request(world, world.a.owner_key, source)
    [first] = run_worker(world.db, objects, embedder)
    assert (first.scanned, first.ingested, first.failed) == (3, 3, [])
    assert (first.passages, first.claims, first.embeddings) == (2, 2, 4)
    assert "Roll the deployment with kubectl rollout restart, then watch the invoices queue." in _texts(
        world, group, "rollout restart"
    )
    assert "billing-api runs on k8s-hanoi-2" in _texts(world, group, "billing-api k8s-hanoi-2")
    # raw bytes in the object store under the record's key
    sha = __import__("hashlib").sha256(RUNBOOK.encode()).hexdigest()
    assert LocalObjectStore(objects).get(object_key(group, source.source_id, "runbooks/billing.md", sha)) == (
        RUNBOOK.encode()
    )

    # nothing changed: nothing is read
    _request(world, world.a.owner_key, source)
    [second] = run_worker(world.db, objects, embedder)
    assert (second.untouched, second.unchanged, second.ingested) == (3, 0, 0)

    # touched but the same bytes: read once, recorded, and skipped unread after that
    os.utime(folder / "notes.txt", ns=(10**18, 10**18))
    _request(world, world.a.owner_key, source)
    [third] = run_worker(world.db, objects, embedder)
    assert (third.untouched, third.unchanged, third.ingested) == (2, 1, 0)

    # changed: a new version replaces what the old one said
    _write(folder / "runbooks" / "billing.md", RUNBOOK.replace("k8s-hanoi-2", "k8s-hanoi-3"))
    _request(world, world.a.owner_key, source)
    [fourth] = run_worker(world.db, objects, embedder)
    assert fourth.ingested == 1
    found = _texts(world, group, "billing-api k8s-hanoi")
    assert "billing-api runs on k8s-hanoi-3" in found and "billing-api runs on k8s-hanoi-2" not in found

    # deleted: its episode is retracted, its facts leave search
    (folder / "cmdb.csv").unlink()
    _request(world, world.a.owner_key, source)
    [fifth] = run_worker(world.db, objects, embedder)
    assert fifth.retracted == 1
    assert "ledger-db owned by Data Platform" not in _texts(world, group, "ledger-db Data Platform")
    assert _signed(world, group, source.source_id) == ["notes.txt", "runbooks/billing.md"]

    # restored with the same bytes: the record comes back as a new version
    _write(folder / "cmdb.csv", "service,owned by\nledger-db,Data Platform\n")
    _request(world, world.a.owner_key, source)
    [sixth] = run_worker(world.db, objects, embedder)
    assert sixth.ingested == 1
    assert "ledger-db owned by Data Platform" in _texts(world, group, "ledger-db Data Platform")


def test_a_bad_file_is_reported_and_read_again_next_time(world: World, folder: Path, tmp_path: Path) -> None:
    group = create_project(world, "ingest-bad-file")
    source = _register(world, group, folder)
    _write(folder / "broken.md", b"\xef\xbb\xbfcaf\xe9 au lait")  # a UTF-8 mark, then not UTF-8
    _write(folder / "front.md", "---\ntitle: [unclosed\n---\nbody\n")
    events: list = []
    _request(world, world.a.owner_key, source)
    [report] = run_worker(world.db, tmp_path / "objects", None, events)
    assert report.ingested == 3
    assert sorted(report.failed) == [
        # the failure names its file beside the message, which does not name it again
        ("broken.md", "starts with a UTF-8 byte-order mark but is not UTF-8 (byte 6)"),
        ("front.md", report.failed[1][1]),
    ]
    assert "malformed YAML front matter" in report.failed[1][1]
    assert [e.kind for e in events].count("failed") == 2
    _write(folder / "broken.md", "café au lait")
    _request(world, world.a.owner_key, source)
    [again] = run_worker(world.db, tmp_path / "objects", None)
    assert again.ingested == 1 and len(again.failed) == 1  # front.md is still malformed


def test_warnings_are_reported_per_file_and_a_file_that_yields_nothing_fails(
    world: World, folder: Path, tmp_path: Path
) -> None:
    """Before, report.warnings was filled and dropped, and a file that gave nothing counted as ingested."""
    group = create_project(world, "ingest-warnings")
    source = _register(world, group, folder)
    _write(folder / "team.md", "---\n所有者: Payments Team\n---\n")  # no Latin letters: no predicate
    _write(folder / "hosts.csv", 'host,runs on\n"db-1,vm-1\n')  # unterminated on the first row
    _write(folder / "owners.csv", "service;owned by;since\nledger-db;Data Platform;someday\n")
    _write(
        folder / "legacy.txt", "Ledger backups are kept for thirty days in Zoë's bucket.\n".encode("cp1252")
    )
    events: list = []
    _request(world, world.a.owner_key, source)
    [report] = run_worker(world.db, tmp_path / "objects", None, events)
    assert report.ingested == 5  # the fixture's three, owners.csv and legacy.txt
    assert sorted(key for key, _ in report.failed) == ["hosts.csv", "team.md"]
    failed = dict(report.failed)
    assert failed["team.md"] == (
        "nothing read: front matter: key '所有者' cannot be a predicate (it needs letters A-Z)"
    )
    assert failed["hosts.csv"].startswith("nothing read: line 2: a quoted field opened here is never")
    assert report.warnings == [
        ("legacy.txt", "legacy.txt: not UTF-8 (byte 45); read as cp1252"),
        ("owners.csv", "owners.csv row 1: 'since' is not a date: 'someday'"),
    ]
    assert [e.key for e in events if e.kind == "warned"] == ["legacy.txt", "owners.csv"]
    assert "ledger-db owned by Data Platform" in _texts(world, group, "ledger-db Data Platform")
    assert any("Zoë's bucket" in text for text in _texts(world, group, "backups thirty days"))
    # the failed files keep no signature: read (and reported) again until they are fixed
    _request(world, world.a.owner_key, source)
    [again] = run_worker(world.db, tmp_path / "objects", None)
    assert sorted(key for key, _ in again.failed) == ["hosts.csv", "team.md"] and again.ingested == 0


def test_a_run_asked_to_stop_ends_after_the_file_in_hand(
    world: World, worker_sql: Executor, folder: Path, tmp_path: Path
) -> None:
    """The CLI's first Ctrl-C: the run stops between files, keeps what it committed, and the next reads the rest."""
    group = create_project(world, "ingest-stop")
    source = _register(world, group, folder)
    with caller(world.db, world.a.owner_key) as conn:
        principal = conn.execute("select vera.current_principal()").fetchone()[0]  # type: ignore[index]
    request = IngestRequest(group_id=group, source_id=source.source_id, principal_id=principal)
    asked = []

    def stop_after_two() -> bool:
        asked.append(True)
        return len(asked) > 2

    stopped = folder_runs(
        worker_sql, objects=LocalObjectStore(tmp_path / "o"), allowed_roots=[tmp_path],
        embedder_for_model=lambda _: None, should_stop=stop_after_two,
    ).run(request)  # fmt: skip
    assert stopped.stopped and stopped.ingested == 2
    assert len(_signed(world, group, source.source_id)) == 2  # what was committed is known
    rest = folder_runs(
        worker_sql, objects=LocalObjectStore(tmp_path / "o"), allowed_roots=[tmp_path],
        embedder_for_model=lambda _: None,
    ).run(request)  # fmt: skip
    assert (rest.stopped, rest.untouched, rest.ingested) == (False, 2, 1)


def test_a_retracted_source_comes_back_when_registered_again(
    world: World, owner_a: VeraClient, folder: Path, tmp_path: Path
) -> None:
    """Before, its cursor survived the retraction: registered again, every file was "unchanged" and
    nothing came back into search."""
    group = create_project(world, "ingest-restore")
    source = _register(world, group, folder)
    _request(world, world.a.owner_key, source)
    [first] = run_worker(world.db, tmp_path / "objects", None)
    assert first.ingested == 3
    owner_a.retract_source(group, source.source_id, "moved")
    [retracted] = [s for s in owner_a.list_sources(group) if s.source_id == source.source_id]
    assert retracted.retracted_at is not None and retracted.tracked_records == 0
    assert "ledger-db owned by Data Platform" not in _texts(world, group, "ledger-db Data Platform")
    restored = _register(world, group, folder)
    assert restored.source_id == source.source_id and restored.retracted_at is None
    _request(world, world.a.owner_key, restored)
    [again] = run_worker(world.db, tmp_path / "objects", None)
    assert (again.ingested, again.unchanged, again.untouched) == (3, 0, 0)
    assert "ledger-db owned by Data Platform" in _texts(world, group, "ledger-db Data Platform")


def test_a_member_ingests_but_only_an_admin_retracts(world: World, folder: Path, tmp_path: Path) -> None:
    group = create_project(world, "ingest-member")
    source = _register(world, group, folder)
    member = _member_key(world, group)
    _request(world, member, source)
    [report] = run_worker(world.db, tmp_path / "objects", None)
    assert report.ingested == 3
    (folder / "notes.txt").unlink()
    _request(world, member, source)
    [after] = run_worker(world.db, tmp_path / "objects", None)
    assert after.retracted == 0
    assert after.failed and after.failed[0][0] == "notes.txt" and "not retracted" in after.failed[0][1]
    _request(world, world.a.owner_key, source)  # an admin's run retracts it
    [admin_run] = run_worker(world.db, tmp_path / "objects", None)
    assert admin_run.retracted == 1


def test_a_path_limits_the_run_to_part_of_the_source(world: World, folder: Path, tmp_path: Path) -> None:
    group = create_project(world, "ingest-scope")
    source = _register(world, group, folder)
    _request(world, world.a.owner_key, source, "runbooks")
    [report] = run_worker(world.db, tmp_path / "objects", None)
    assert (report.scanned, report.ingested) == (1, 1)
    # deletions outside the scope are not judged by a scoped run
    _request(world, world.a.owner_key, source)
    [full] = run_worker(world.db, tmp_path / "objects", None)
    assert (full.scanned, full.untouched, full.ingested, full.retracted) == (3, 1, 2, 0)


def test_a_missing_folder_fails_the_run_with_one_clear_error(
    world: World, worker_sql: Executor, tmp_path: Path
) -> None:
    group = create_project(world, "ingest-missing")
    folder = tmp_path / "gone"
    folder.mkdir()
    source = _register(world, group, folder)
    folder.rmdir()
    with caller(world.db, world.a.owner_key) as conn:
        principal = conn.execute("select vera.current_principal()").fetchone()[0]  # type: ignore[index]
    ingestion = folder_runs(worker_sql, objects=LocalObjectStore(tmp_path / "o"), allowed_roots=[tmp_path],
                                embedder_for_model=lambda _: None)  # fmt: skip
    request = IngestRequest(group_id=group, source_id=source.source_id, principal_id=principal)
    with pytest.raises(SourceUnavailableError, match="does not exist or is not a folder"):
        ingestion.run(request)


def test_the_worker_cannot_read_another_tenants_source_for_a_principal(
    world: World, worker_sql: Executor, folder: Path, tmp_path: Path
) -> None:
    group = create_project(world, "ingest-tenancy")
    source = _register(world, group, folder)
    with caller(world.db, world.b.owner_key) as conn:
        intruder = conn.execute("select vera.current_principal()").fetchone()[0]  # type: ignore[index]
    ingestion = folder_runs(worker_sql, objects=LocalObjectStore(tmp_path / "o"), allowed_roots=[tmp_path],
                                embedder_for_model=lambda _: None)  # fmt: skip
    with pytest.raises(PermissionDeniedError, match="not readable"):
        ingestion.run(IngestRequest(group_id=group, source_id=source.source_id, principal_id=intruder))


# --- the SQL functions, as vera_app under RLS -------------------------------------------------------


def test_list_sources_and_cursor_stay_inside_the_tenant(world: World, folder: Path) -> None:
    group = create_project(world, "ingest-sql-list")
    source = _register(world, group, folder)
    with caller(world.db, world.a.owner_key) as conn:
        listed = conn.execute(
            "select name, trust_tier, tracked_records from vera.list_sources(%s)", (group,)
        ).fetchall()
        assert listed == [(source.name, 2, 0)]
        assert conn.execute("select vera.source_cursor(%s, %s)", (group, source.source_id)).fetchone() == (
            {},
        )
    with caller(world.db, world.b.owner_key) as conn:
        assert all(
            row[0] != group for row in conn.execute("select group_id from vera.list_sources()").fetchall()
        )
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("select * from vera.list_sources(%s)", (group,))
    with caller(world.db, world.b.owner_key) as conn, pytest.raises(psycopg.Error) as caught:
        conn.execute("select vera.source_cursor(%s, %s)", (group, source.source_id))
    assert caught.value.sqlstate == "VN001"
    with caller(world.db, None) as conn, pytest.raises(psycopg.Error) as unauthenticated:
        conn.execute("select * from vera.list_sources()")
    assert unauthenticated.value.sqlstate == "VA005"


def test_advance_source_cursor_merges_removes_and_checks(world: World, folder: Path) -> None:
    group = create_project(world, "ingest-sql-cursor")
    source = _register(world, group, folder)
    entry = {"mtime_ns": 1, "size": 2, "sha256": "ab", "episode_id": str(UUID(int=1))}
    with caller(world.db, world.a.owner_key) as conn:
        advance = "select vera.advance_source_cursor(%s, %s, %s)"
        assert conn.execute(
            advance, (group, source.source_id, Jsonb({"a.md": entry, "b.md": entry}))
        ).fetchone() == (2,)
        assert conn.execute(advance, (group, source.source_id, Jsonb({"a.md": None}))).fetchone() == (1,)
        cursor = conn.execute("select vera.source_cursor(%s, %s)", (group, source.source_id)).fetchone()[0]  # type: ignore[index]
        assert cursor == {"b.md": entry}
        for bad in ([1, 2], {"x.md": 5}, {"": entry}):
            conn.execute("savepoint s")
            with pytest.raises(psycopg.Error) as caught:
                conn.execute(advance, (group, source.source_id, Jsonb(bad)))
            assert caught.value.sqlstate == "22023", bad
            conn.execute("rollback to savepoint s")
    with caller(world.db, world.a.viewer_key) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("select vera.advance_source_cursor(%s, %s, '{}')", (group, source.source_id))
    with caller(world.db, world.b.owner_key) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("select vera.advance_source_cursor(%s, %s, '{}')", (group, source.source_id))


def test_request_ingest_defers_a_job_carrying_the_caller(world: World, folder: Path) -> None:
    group = create_project(world, "ingest-sql-request")
    source = _register(world, group, folder)
    job = _request(world, world.a.owner_key, source, "runbooks")
    with world.db.admin() as admin:
        queue, args = admin.execute(
            "select queue_name, args from procrastinate.procrastinate_jobs where id = %s", (job,)
        ).fetchone()  # type: ignore[misc]
        owner = admin.execute(
            "select principal_id from vera.principals where principal_id = %s", (str(world.a.owner),)
        ).fetchone()
        # (Procrastinate's triggers use unqualified names)
        admin.execute("set search_path = procrastinate")
        admin.execute("delete from procrastinate_jobs where id = %s", (job,))
    assert queue == "ingest_source"
    assert args == {"group_id": group, "source_id": str(source.source_id),
                    "principal_id": str(owner[0]), "path": "runbooks"}  # type: ignore[index]  # fmt: skip
    with caller(world.db, world.a.viewer_key) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("select vera.request_ingest(%s, %s)", (group, source.source_id))
    for escaping in ("../etc", "runbooks/../../etc", "/etc"):
        with caller(world.db, world.a.owner_key) as conn, pytest.raises(psycopg.Error) as escape:
            conn.execute("select vera.request_ingest(%s, %s, %s)", (group, source.source_id, escaping))
        assert escape.value.sqlstate == "22023"
    with caller(world.db, world.a.owner_key) as conn:
        conn.execute("select vera.retract_source(%s, %s)", (group, source.source_id))
        with pytest.raises(psycopg.Error, match="was retracted") as retracted:
            conn.execute("select vera.request_ingest(%s, %s)", (group, source.source_id))
    assert retracted.value.sqlstate == "22023"


class _FailingEmbedder:
    """An embedder whose provider fails the way the resilience chain reports it."""

    model, dim = "failing-model", 8

    def __init__(self, error: Exception) -> None:
        self.error = error

    def embed(self, texts: object) -> list[list[float]]:
        raise self.error


def test_a_provider_failure_fails_the_file_and_an_open_circuit_stops_the_run(
    world: World, worker_sql: Executor, folder: Path, tmp_path: Path
) -> None:
    group = create_project(world, "ingest-provider-down")
    source = _register(world, group, folder)
    with caller(world.db, world.a.owner_key) as conn:
        principal = conn.execute("select vera.current_principal()").fetchone()[0]  # type: ignore[index]
    request = IngestRequest(group_id=group, source_id=source.source_id, principal_id=principal)

    def ingestion(error: Exception) -> SourceRuns:
        return folder_runs(worker_sql, objects=LocalObjectStore(tmp_path / "o"), allowed_roots=[tmp_path],
                               embedder_for_model=lambda _: _FailingEmbedder(error))  # fmt: skip

    slow = ingestion(ProviderTimeoutError("openai: no answer within 30s after 5 attempts")).run(request)
    assert slow.ingested == 0 and len(slow.failed) == 3
    assert all("no answer within 30s" in message for _, message in slow.failed)
    with pytest.raises(ProviderUnavailableError):
        ingestion(ProviderUnavailableError("openai: the circuit breaker is open")).run(request)


def test_an_emptied_folder_does_not_retract_everything(
    world: World, worker_sql: Executor, folder: Path, tmp_path: Path
) -> None:
    group = create_project(world, "ingest-emptied")
    source = _register(world, group, folder)
    _request(world, world.a.owner_key, source)
    assert run_worker(world.db, tmp_path / "objects", None)[0].ingested == 3
    for path in [p for p in folder.rglob("*") if p.is_file()]:
        path.unlink()  # as an unmounted share looks
    with caller(world.db, world.a.owner_key) as conn:
        principal = conn.execute("select vera.current_principal()").fetchone()[0]  # type: ignore[index]
    ingestion = folder_runs(worker_sql, objects=LocalObjectStore(tmp_path / "o"), allowed_roots=[tmp_path],
                                embedder_for_model=lambda _: None)  # fmt: skip
    request = IngestRequest(group_id=group, source_id=source.source_id, principal_id=principal)
    with pytest.raises(SourceUnavailableError, match="not retracting them all"):
        ingestion.run(request)
    assert "ledger-db owned by Data Platform" in _texts(world, group, "ledger-db Data Platform")


class _BreaksAfter:
    """Embeds n texts' worth of calls, then its circuit is open."""

    model, dim = "deterministic-hash-16", 16

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.inner = DeterministicEmbedder(16)

    def embed(self, texts: list[str]) -> list[list[float]]:
        self.calls -= 1
        if self.calls < 0:
            raise ProviderUnavailableError("embedder: the circuit breaker is open")
        return self.inner.embed(texts)


def test_a_stopped_run_keeps_what_it_committed_and_lost_signatures_lose_nothing(
    world: World, worker_sql: Executor, folder: Path, tmp_path: Path
) -> None:
    group = create_project(world, "ingest-resume")
    source = _register(world, group, folder)
    with caller(world.db, world.a.owner_key) as conn:
        principal = conn.execute("select vera.current_principal()").fetchone()[0]  # type: ignore[index]
    request = IngestRequest(group_id=group, source_id=source.source_id, principal_id=principal)

    def ingestion(embedder: object) -> SourceRuns:
        return folder_runs(worker_sql, objects=LocalObjectStore(tmp_path / "o"), allowed_roots=[tmp_path],
                               embedder_for_model=lambda _: embedder)  # type: ignore[arg-type,return-value]  # fmt: skip

    with pytest.raises(ProviderUnavailableError):
        ingestion(_BreaksAfter(2)).run(request)  # two files committed, then the circuit opens
    resumed = ingestion(DeterministicEmbedder(16)).run(request)
    assert (resumed.untouched, resumed.ingested) == (2, 1)
    # the signatures are lost, and the cursor holds a folder's entries of before 0014 (one a file,
    # which a run now ignores): as a source upgraded without them
    with world.db.admin() as admin:
        admin.execute("update vera.episodes set signature = null where group_id = %s", (group,))
    with caller(world.db, world.a.owner_key) as conn:
        conn.execute("select vera.advance_source_cursor(%s, %s, %s)", (group, source.source_id, Jsonb(
            {key: {"mtime_ns": 1, "size": 1, "sha256": "00" * 32, "episode_id": str(UUID(int=0))}
             for key in ("cmdb.csv", "notes.txt", "runbooks/billing.md")})))  # fmt: skip
        conn.commit()
    again = ingestion(DeterministicEmbedder(16)).run(request)
    assert (again.ingested, again.unchanged) == (0, 3)  # read, hashed, found known: nothing twice
    assert _texts(world, group, "ledger-db Data Platform").count("ledger-db owned by Data Platform") == 1
    third = ingestion(DeterministicEmbedder(16)).run(request)
    assert (third.untouched, third.unchanged, third.ingested) == (3, 0, 0)  # their signatures noted


def test_the_worker_reads_only_below_the_folders_the_operator_allows(
    world: World, worker_sql: Executor, tmp_path: Path
) -> None:
    """A tenant names its source's root within its organisation's folders (say, another tenant's
    share below them, or /etc outside them, refused at registration): the worker reads it only
    when it lies within VERA_WORKER__SOURCE_ROOTS too, symbolic links resolved."""
    allowed, elsewhere = tmp_path / "tenant-a", tmp_path / "tenant-b"
    for folder in (allowed, elsewhere):
        folder.mkdir()
        (folder / "secret.md").write_text("# Secret\n\nThe launch code is 0000.\n", encoding="utf-8")
    (allowed / "link").symlink_to(elsewhere, target_is_directory=True)
    with caller(world.db, world.a.owner_key) as conn:
        principal = conn.execute("select vera.current_principal()").fetchone()[0]  # type: ignore[index]
    ingestion = folder_runs(worker_sql, objects=LocalObjectStore(tmp_path / "o"),
                                embedder_for_model=lambda _: None, allowed_roots=[allowed])  # fmt: skip
    with pytest.raises(
        SourceRootNotAllowedError
    ):  # outside the organisation's folders (/tmp): refused at once
        _register(world, create_project(world, "ingest-roots-etc"), Path("/etc"))
    for name, root in (("outside", elsewhere), ("through a link", allowed / "link")):
        group = create_project(world, f"ingest-roots-{name}")
        source = _register(world, group, root)
        request = IngestRequest(group_id=group, source_id=source.source_id, principal_id=principal)
        with pytest.raises(SourceUnavailableError, match="outside the folders this worker may read"):
            ingestion.run(request)
        assert _texts(world, group, "launch code") == []
    inside = create_project(world, "ingest-roots-inside")
    source = _register(world, inside, allowed)
    report = ingestion.run(IngestRequest(group_id=inside, source_id=source.source_id, principal_id=principal))
    assert report.ingested == 1  # secret.md; the link inside leads out and is not followed
    assert _texts(world, inside, "launch code") == ["The launch code is 0000."]


def test_a_run_stopped_by_an_open_circuit_is_queued_again_and_a_missing_folder_is_not(
    world: World, worker_sql: Executor, folder: Path, tmp_path: Path
) -> None:
    """Through the worker's queue: an outage (the embedder's circuit open) schedules the run
    again with a growing wait; a run that failed for its own reasons fails for good."""
    outage = create_project(world, "ingest-retry-outage")
    gone = create_project(world, "ingest-retry-gone")
    missing = tmp_path / "missing"
    missing.mkdir()
    out_source, gone_source = _register(world, outage, folder), _register(world, gone, missing)
    missing.rmdir()
    _request(world, world.a.owner_key, out_source)
    _request(world, world.a.owner_key, gone_source)
    ingestion = folder_runs(
        worker_sql, objects=LocalObjectStore(tmp_path / "o"), allowed_roots=[tmp_path],
        embedder_for_model=lambda _: _FailingEmbedder(ProviderUnavailableError("embedder: the circuit breaker is open")),
    )  # fmt: skip
    drain(
        build_app(world.db.dsn("vera_worker"), objects=LocalObjectStore(tmp_path / "o"), ingestion=ingestion)
    )
    with world.db.admin() as admin:
        states = dict(admin.execute(
            "select args ->> 'group_id', status::text || '/' || attempts || '/' || coalesce((scheduled_at > now())::text, 'now')"
            " from procrastinate.procrastinate_jobs where task_name = 'vera.ingest_source'"
            " and args ->> 'group_id' = any (%s)", ([outage, gone],)).fetchall())  # fmt: skip
    assert states == {outage: "todo/1/true", gone: "failed/1/now"}


def test_migration_0014_turns_a_folders_per_file_cursor_into_signatures(
    world: World, worker_sql: Executor, folder: Path, tmp_path: Path
) -> None:
    """A folder source of before 0014 kept an entry per file in its cursor; the migration's
    statements make each matching entry its version's signature and clear the entries, so the
    first run after the upgrade reads no file (one whose entry does not match is read once)."""
    group = create_project(world, "ingest-upgrade")
    source = _register(world, group, folder)
    with caller(world.db, world.a.owner_key) as conn:
        principal = conn.execute("select vera.current_principal()").fetchone()[0]  # type: ignore[index]
    request = IngestRequest(group_id=group, source_id=source.source_id, principal_id=principal)

    def run() -> IngestReport:
        return folder_runs(worker_sql, objects=LocalObjectStore(tmp_path / "o"), allowed_roots=[tmp_path],
                           embedder_for_model=lambda _: None).run(request)  # fmt: skip

    assert run().ingested == 3
    with world.db.admin() as admin:  # as a database of before 0014 held it
        episodes = dict(admin.execute(
            "select external_id, episode_id::text from vera.episodes where group_id = %s", (group,)).fetchall())  # fmt: skip
        admin.execute("update vera.episodes set signature = null where group_id = %s", (group,))
        old = {}
        for key, episode in episodes.items():
            found = (folder / key).stat()
            digest = __import__("hashlib").sha256((folder / key).read_bytes()).hexdigest()
            old[key] = {"mtime_ns": found.st_mtime_ns, "size": found.st_size, "episode_id": episode,
                        "sha256": digest if key != "notes.txt" else "00" * 32}  # fmt: skip
        admin.execute("update vera.sources set cursor = %s where group_id = %s and source_id = %s",
                      (Jsonb({**old, "@position": {}}), group, source.source_id))  # fmt: skip
        migration = (Path(__file__).parents[2] / "sql/migrations/0014_record_signatures.sql").read_text()
        for statement in migration.split(";\n"):
            body = "\n".join(line for line in statement.splitlines() if not line.startswith("--")).strip()
            if body.startswith("update "):
                admin.execute(body)
        cursor = admin.execute("select cursor from vera.sources where source_id = %s", (source.source_id,))
        assert cursor.fetchone() == ({"@position": {}},)
    assert _signed(world, group, source.source_id) == ["cmdb.csv", "runbooks/billing.md"]
    after = run()
    assert (after.untouched, after.unchanged, after.ingested) == (2, 1, 0)  # notes.txt's entry did not match
    final = run()
    assert (final.untouched, final.ingested) == (3, 0)
