"""Source roots are per organisation (issue 27): an operator lists the folders each tenant's
folder sources may lie in (`vera tenant roots add|remove|list`); vera.register_source refuses
a root outside them (VR001, one line at `vera source add`), an organisation with none may
register no folder source, and a worker serving several tenants reads each one's files only
within that tenant's folders, links resolved, even for a source that slipped past the check."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import psycopg
import pytest
from psycopg.types.json import Jsonb

from pg_tests.support.cli import one_line_error, run_vera, vera_env
from pg_tests.support.clients import client_for
from pg_tests.support.databases import Database
from pg_tests.support.ingesting import folder_runs
from pg_tests.support.seed import caller
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.adapters.postgres.executor import Executor
from vera_client.api.sources import source_roots
from vera_client.domain.callers import Principal
from vera_client.domain.errors import (
    InvalidArgumentError,
    PermissionDeniedError,
    SourceRootNotAllowedError,
    SourceUnavailableError,
)
from vera_worker.connectors.dispatch import IngestRequest, SourceRuns
from vera_worker.connectors.events import IngestReport


@dataclass(frozen=True)
class Tenant:
    organisation: str
    principal: UUID
    key: str
    share: Path


def _tenant(db: Database, name: str, share: Path | None) -> Tenant:
    with db.admin() as admin:
        org, owner, key = admin.execute(
            "select * from vera.create_tenant(%s, 'Owner of ' || %s)", (name, name)
        ).fetchone()  # type: ignore[misc]
        if share is not None:
            admin.execute("select vera.add_source_root(%s, %s)", (org, str(share)))
    return Tenant(str(org), owner, str(key), share or Path("/nonexistent"))


@pytest.fixture(scope="module")
def tenants(db: Database, tmp_path_factory: pytest.TempPathFactory) -> tuple[Tenant, Tenant]:
    """Two tenants whose shares both lie below one folder a shared worker reads."""
    shares = tmp_path_factory.mktemp("shares").resolve()
    for name in ("a", "b"):
        (shares / name).mkdir()
        (shares / name / "notes.md").write_text(
            f"# Notes\n\nTenant {name} keeps its ledger.\n", encoding="utf-8"
        )
    (shares / "b" / "secret.md").write_text("# Secret\n\nThe launch code is 0000.\n", encoding="utf-8")
    (shares / "a" / "to-b").symlink_to(shares / "b", target_is_directory=True)
    (shares / "a" / "b-secret.md").symlink_to(shares / "b" / "secret.md")
    return _tenant(db, "Share A", shares / "a"), _tenant(db, "Share B", shares / "b")


def _worker(db: Database, sql: Executor, tmp_path: Path, roots: list[Path]) -> SourceRuns:
    return folder_runs(sql, objects=LocalObjectStore(tmp_path / "objects"),
                           embedder_for_model=lambda _: None, allowed_roots=roots)  # fmt: skip


def _run(worker: SourceRuns, tenant: Tenant, source: UUID) -> IngestReport:
    return worker.run(
        IngestRequest(group_id=tenant.organisation, source_id=source, principal_id=tenant.principal)
    )


def _texts(db: Database, tenant: Tenant, query: str) -> list[str]:
    with caller(db, tenant.key) as conn:
        rows = conn.execute("select text from vera.search(%s, k => 20)", (query,)).fetchall()
    return [row[0] for row in rows]


def test_a_tenant_cannot_register_another_tenants_share(db: Database, tenants: tuple[Tenant, Tenant]) -> None:
    a, b = tenants
    with client_for(db, a.key) as vera:
        with pytest.raises(
            SourceRootNotAllowedError, match=f"outside the folders allowed for {a.organisation}"
        ):
            vera.register_folder(a.organisation, "stolen", b.share, tier=2)
        with pytest.raises(SourceRootNotAllowedError):  # the client resolves the link: it is B's share
            vera.register_folder(a.organisation, "linked", a.share / "to-b", tier=2)
        with pytest.raises(InvalidArgumentError, match="not a normalised path"):
            vera.register_source(a.organisation, "markdown", "dotted", 2, config={"root": f"{a.share}/../b"})
        with pytest.raises(SourceRootNotAllowedError):  # a prefix of the text is not a folder
            vera.register_source(a.organisation, "markdown", "prefix", 2, config={"root": f"{a.share}b"})
        assert vera.register_folder(a.organisation, "own", a.share, tier=2).config["root"] == str(a.share)
    env = vera_env(db.server, db.name) | {"VERA_API_KEY": a.key}
    assert run_vera(["db", "migrate"], env).exit_code == 0  # the embedded server's application login
    line = one_line_error(run_vera(["source", "add", "stolen", str(b.share), "--tier", "2"], env))
    assert line.startswith(
        f"vera: error: folder {b.share} is outside the folders allowed for {a.organisation}"
    )


def test_an_organisation_without_folders_may_register_none(db: Database, tmp_path: Path) -> None:
    bare = _tenant(db, "No Folders", None)
    with client_for(db, bare.key) as vera:
        with pytest.raises(
            SourceRootNotAllowedError, match=f"vera tenant roots add {bare.organisation} PATH"
        ):
            vera.register_folder(bare.organisation, "notes", tmp_path, tier=2)
        # a source without a folder (remember, a SQL writer's) needs none
        assert vera.register_source(bare.organisation, "cmdb", "asset register", 1)


def test_a_link_in_a_tenants_share_to_another_share_is_not_followed(
    db: Database, worker_sql: Executor, tenants: tuple[Tenant, Tenant], tmp_path: Path
) -> None:
    a, _ = tenants
    worker = _worker(db, worker_sql, tmp_path, [a.share.parent])  # a worker serving both tenants
    with client_for(db, a.key) as vera:
        own = vera.register_folder(a.organisation, "a notes", a.share, tier=2)
        # the link's own path, unresolved, passes the text check in SQL: the worker resolves it
        through = vera.register_source(
            a.organisation, "markdown", "through", 2, config={"root": str(a.share / "to-b")}
        )
    report = _run(worker, a, own.source_id)
    assert (report.ingested, report.skipped, report.failed) == (1, [], [])  # notes.md; no link followed
    with pytest.raises(SourceUnavailableError, match="outside the folders its organisation may read"):
        _run(worker, a, through)
    assert _texts(db, a, "launch code") == []


def test_a_worker_serving_both_reads_each_tenants_files_only_from_its_own_roots(
    db: Database, worker_sql: Executor, tenants: tuple[Tenant, Tenant], tmp_path: Path
) -> None:
    a, b = tenants
    worker = _worker(db, worker_sql, tmp_path, [a.share.parent])
    sources = {}
    for tenant in (a, b):
        with client_for(db, tenant.key) as vera:
            sources[tenant.organisation] = vera.register_folder(
                tenant.organisation, "share", tenant.share, tier=2
            )
        assert _run(worker, tenant, sources[tenant.organisation].source_id).failed == []
    assert set(_texts(db, a, "ledger")) == {"Tenant a keeps its ledger."}
    assert sorted(_texts(db, b, "ledger launch code")) == [
        "Tenant b keeps its ledger.",
        "The launch code is 0000.",
    ]
    # a source that names B's share without the check (registered before the roots existed)
    with db.admin() as admin:
        sneaked = admin.execute(
            "insert into vera.sources (group_id, kind, name, trust_tier, config) "
            "values (%s, 'markdown', 'sneaked', 2, %s) returning source_id",
            (a.organisation, Jsonb({"root": str(b.share)})),
        ).fetchone()[0]  # type: ignore[index]
    with pytest.raises(SourceUnavailableError, match="outside the folders its organisation may read"):
        _run(worker, a, sneaked)
    assert _texts(db, a, "launch code") == []


def test_operators_manage_the_folders_and_only_operators(
    db: Database, worker_sql: Executor, tenants: tuple[Tenant, Tenant], tmp_path: Path
) -> None:
    a, b = tenants
    env = vera_env(db.server, db.name)
    extra = tmp_path / "extra"
    extra.mkdir()
    added = run_vera(["tenant", "roots", "add", "Share A", str(extra)], env)
    assert added.exit_code == 0 and f"{a.organisation}: folder sources may lie below {extra}" in added.output
    listed = [
        json.loads(line)
        for line in run_vera(["tenant", "roots", "list", a.organisation, "--json"], env).output.splitlines()
    ]
    assert [item["root"] for item in listed] == sorted([str(a.share), str(extra)])
    with client_for(db, a.key) as vera:
        assert vera.register_folder(a.organisation, "extra", extra, tier=2)
    assert run_vera(["tenant", "roots", "remove", a.organisation, str(extra)], env).exit_code == 0
    line = one_line_error(run_vera(["tenant", "roots", "remove", a.organisation, str(extra)], env))
    assert "is not among the folders" in line
    # no login role may change them, nor read another tenant's
    with caller(db, a.key) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("select vera.add_source_root(%s, '/')", (a.organisation,))
    with worker_sql.transaction(Principal(b.principal)) as tx, pytest.raises(PermissionDeniedError):
        tx.run(source_roots(a.organisation))
