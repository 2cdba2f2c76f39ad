"""The outbox's jobs: SQL and Python name the same jobs, every job names the
principal whose request deferred it, and a real `vera worker --once` process
runs one job of every kind SQL defers (embed included: a fact published
without a vector gets one)."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from pg_tests.support.databases import ROOT
from pg_tests.support.ingesting import worker_process_env
from pg_tests.support.seed import World, caller
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.adapters.postgres.executor import Executor
from vera_client.client import VeraClient
from vera_worker.adapters.embedding import FactEmbedding
from vera_worker.adapters.queue import SERVED_QUEUES, build_app
from vera_worker.domain.jobs import JobName

SQL = ROOT / "sql"


def _claim(subject: str, predicate: str, obj: str, **extra: object) -> dict[str, object]:
    return {"subject": subject, "predicate": predicate, "object": obj, **extra}


def _unit(*values: float) -> list[float]:
    norm = sum(v * v for v in values) ** 0.5
    return [v / norm for v in values]


def test_sql_and_python_name_the_same_jobs(tmp_path: Path) -> None:
    deferred = set()
    for path in sorted((SQL / "functions").glob("*.sql")):
        deferred |= set(re.findall(r"enqueue_job\(\s*'(vera\.[a-z_]+)'", path.read_text(encoding="utf-8")))
    assert deferred == {job.value for job in JobName}
    app = build_app("postgresql://unused@/x", objects=LocalObjectStore(tmp_path))
    assert {name for name in app.tasks if name.startswith("vera.")} == {job.value for job in JobName}
    assert set(SERVED_QUEUES) == {job.queue for job in JobName}


def test_a_real_worker_process_runs_every_kind_of_job_sql_defers(
    world: World, owner_a: VeraClient, tmp_path: Path
) -> None:
    org = world.a.organisation
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "queues.md").write_text("# Queues\n\nScale parcel-router when the queue backs up.\n")
    plain = owner_a.create_group(org, "project", "jobs-plain")
    judged = owner_a.create_group(org, "project", "jobs-judged")
    owner_a.set_setting(plain, "judge.contradiction", True)
    source = owner_a.register_source(plain, "markdown", "notes", 1)
    first = owner_a.record_episode(plain, source, "a.md", hashlib.sha256(b"a").digest())
    # no vectors: an embed job and a projection; a second owner of the same subject: a contradiction to judge
    published = owner_a.publish(plain, first.episode_id, [_claim("billing-api", "owned by", "team red")])
    second = owner_a.record_episode(plain, source, "b.md", hashlib.sha256(b"b").digest())
    owner_a.publish(plain, second.episode_id, [_claim("billing-api", "owned by", "team blue")])
    # a loose name match: a provisional entity for the equivalence judge (vectors given: no embed job)
    vectors = {"embedding": _unit(0, 0, 1)}
    cmdb = owner_a.register_source(judged, "cmdb", "cmdb", 1)
    export = owner_a.record_episode(judged, cmdb, "export.csv", hashlib.sha256(b"x").digest()).episode_id
    owner_a.publish(judged, export, [_claim("Postgres", "kind", "database", subject_embedding=_unit(1, 0, 0),
                                       **vectors)], "toy-3")  # fmt: skip
    loose = owner_a.publish(judged, export, [_claim("primary db", "kind", "database",
                                               subject_embedding=_unit(1, 1, 0), **vectors)], "toy-3")  # fmt: skip
    assert loose[0].resolution == "provisional"
    # an ingestion run, and a retraction's cleanup
    notes = owner_a.register_folder(plain, "folder", folder, tier=2)
    owner_a.request_ingest(plain, notes.source_id)
    owner_a.request_extraction(plain)  # no model configured in the process: extraction is off, the job done
    owner_a.retract_episode(plain, second.episode_id, "wrong page")
    fact_id = published[0].fact_id

    with world.db.admin() as admin:
        # the cleanup is scheduled a little ahead: let it fall due now (Procrastinate's
        # triggers use unqualified names, hence its schema on the path)
        admin.execute("set search_path = procrastinate, public")
        admin.execute(
            "update procrastinate.procrastinate_jobs set scheduled_at = now() where status = 'todo'"
        )
        jobs = admin.execute(
            "select task_name, args from procrastinate.procrastinate_jobs"
            " where args ->> 'group_id' = any (%s)",
            ([plain, judged],),
        ).fetchall()
    assert {task for task, _ in jobs} == {job.value for job in JobName}
    # every job names the principal whose request deferred it
    assert {args["principal_id"] for _, args in jobs} == {str(world.a.owner)}

    vera_command = Path(sys.executable).with_name("vera")
    worker = subprocess.run(  # noqa: S603
        [str(vera_command), "worker", "--once"], env=worker_process_env(world.db, tmp_path / "objects"),
        capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert worker.returncode == 0, worker.stderr

    with world.db.admin() as admin:
        statuses = admin.execute(
            "select task_name, status from procrastinate.procrastinate_jobs where args ->> 'group_id' = any (%s)",
            ([plain, judged],),
        ).fetchall()
        embedded = admin.execute(
            "select vector_dims(embedding), (select embedding_model from vera.groups where group_id = %s)"
            " from vera.facts where fact_id = %s",
            (plain, fact_id),
        ).fetchone()
    assert {status for _, status in statuses} == {"succeeded"}, (statuses, worker.stderr[-3000:])
    assert {task for task, _ in statuses} == {job.value for job in JobName}
    assert embedded is not None and embedded[0] is not None and embedded[1] is not None  # pinned by the job
    assert "ingest folder: 1 scanned" in worker.stderr


def test_set_fact_embeddings_is_for_members_of_the_group_and_idempotent(
    world: World, owner_a: VeraClient
) -> None:
    group = owner_a.create_group(world.a.organisation, "project", "jobs-embed")
    source = owner_a.register_source(group, "cmdb", "cmdb", 1)
    export = owner_a.record_episode(group, source, "export.csv", hashlib.sha256(b"e").digest())
    [fact] = owner_a.publish(group, export.episode_id, [_claim("ledger-db", "runs on", "pg-7")])
    with (
        caller(world.db, world.b.owner_key) as conn,
        pytest.raises(psycopg.Error, match="permission denied") as raised,
    ):
        conn.execute("select vera.set_fact_embeddings(%s, %s, array['[1,0,0]']::vector[], 'toy-3')",
                     (group, [fact.fact_id]))  # fmt: skip
    assert raised.value.sqlstate == "42501"
    with caller(world.db, world.a.owner_key) as conn:
        assert conn.execute(
            "select count(*) from vera.facts_to_embed(%s, %s)", (group, [fact.fact_id])
        ).fetchone() == (1,)
        stored = "select vera.set_fact_embeddings(%s, %s, array['[1,0,0]']::vector[], 'toy-3')"
        assert conn.execute(stored, (group, [fact.fact_id])).fetchone() == (1,)
        assert conn.execute(stored, (group, [fact.fact_id])).fetchone() == (
            0,
        )  # a replayed job writes nothing
        assert conn.execute(
            "select count(*) from vera.facts_to_embed(%s, %s)", (group, [fact.fact_id])
        ).fetchone() == (0,)
        with pytest.raises(psycopg.Error, match="pinned to embedding model toy-3"):
            conn.execute("select vera.set_fact_embeddings(%s, %s, array['[1,0]']::vector[], 'other')",
                         (group, [fact.fact_id]))  # fmt: skip
        conn.rollback()


def test_an_embed_job_no_embedder_here_can_serve_is_retried_later(
    world: World, owner_a: VeraClient, worker_sql: Executor, tmp_path: Path
) -> None:
    """A group pinned to a model this worker lacks (or a hosted model that is down): the job
    is scheduled again with a growing wait instead of failing, so its facts get vectors later."""
    group = owner_a.create_group(world.a.organisation, "project", "jobs-retry")
    source = owner_a.register_source(group, "cmdb", "cmdb", 1)
    export = owner_a.record_episode(group, source, "export.csv", hashlib.sha256(b"r").digest())
    [fact] = owner_a.publish(group, export.episode_id, [_claim("ledger-db", "owned by", "team green")])
    embedding = FactEmbedding(worker_sql, embedder_for_model=lambda _pinned: None)
    app = build_app(world.db.dsn("vera_worker"), objects=LocalObjectStore(tmp_path), embedding=embedding)
    app.run_worker(queues=[JobName.EMBED.queue], wait=False, concurrency=1, install_signal_handlers=False)
    with world.db.admin() as admin:
        status, attempts, later = admin.execute(
            "select status::text, attempts, scheduled_at > now() from procrastinate.procrastinate_jobs"
            " where task_name = 'vera.embed' and args ->> 'group_id' = %s",
            (group,),
        ).fetchone()  # type: ignore[misc]
        vector = admin.execute(
            "select embedding from vera.facts where fact_id = %s", (fact.fact_id,)
        ).fetchone()
    assert (status, attempts, later) == ("todo", 1, True)
    assert vector == (None,)
