"""Jobs that survive a crash: a `vera worker` process killed (SIGKILL) in the middle
of an ingestion run leaves its job `doing`; another worker finds that the killed
one sends no heartbeat any more, queues the job again and runs it to the end,
and the source ends exactly as a clean run of the same folder leaves it."""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from pg_tests.support.databases import Database
from pg_tests.support.ingesting import worker_process_env
from pg_tests.support.seed import World
from vera_client.adapters.objects.local import LocalObjectStore
from vera_client.client import VeraClient
from vera_worker.adapters.queue import build_app
from vera_worker.adapters.serving import retry_stalled_jobs

FILES = 400
STALLED_AFTER = "2"  # seconds without a heartbeat (VERA_WORKER__STALLED_AFTER); default 30


def _write_folder(folder: Path) -> None:
    for n in range(FILES):
        sub = folder / f"team-{n % 7}"
        sub.mkdir(parents=True, exist_ok=True)
        (sub / f"service-{n:03d}.md").write_text(
            f"---\ntitle: service-{n:03d}\nowner: Team {n % 7}\nruns on: cluster-{n % 3}\n---\n"
            f"# service-{n:03d}\n\nservice-{n:03d} routes parcels for depot {n}.\n\n"
            f"## Runbook\n\nRestart service-{n:03d} after a failed deploy of release {n}.\n",
            encoding="utf-8",
        )


def _status(db: Database, job_id: int) -> str:
    with db.admin() as admin:
        row = admin.execute(
            "select status from procrastinate.procrastinate_jobs where id = %s", (job_id,)
        ).fetchone()
    assert row is not None
    return str(row[0])


def _events(db: Database, job_id: int) -> list[str]:
    """What happened to the job, in order (its scheduling left out)."""
    with db.admin() as admin:
        rows = admin.execute(
            "select type::text from procrastinate.procrastinate_events where job_id = %s and type <> 'scheduled'"
            " order by id",
            (job_id,),
        ).fetchall()
    return [str(event) for (event,) in rows]


def _episodes(db: Database, group: str) -> int:
    with db.admin() as admin:
        row = admin.execute("select count(*) from vera.episodes where group_id = %s", (group,)).fetchone()
    assert row is not None
    return int(row[0])


def _signed(db: Database, group: str) -> int:
    """The files whose version holds their change signature: what a run does not read again."""
    with db.admin() as admin:
        row = admin.execute(
            "select count(*) from vera.episodes where group_id = %s and signature is not null", (group,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def _wait(condition: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def _state(db: Database, group: str, source_id: str) -> dict[str, Any]:
    """What a run leaves of a source, without ids or times: episodes, passages, facts, and what the
    next run knows (the records' signatures, the cursor's position)."""
    with db.admin() as admin:
        episodes = admin.execute(
            "select external_id, version, encode(content_sha256, 'hex'), status::text, title, object_key is null"
            " from vera.episodes where group_id = %s order by 1, 2",
            (group,),
        ).fetchall()
        passages = admin.execute(
            "select e.external_id, c.ordinal, c.heading, c.text, c.char_start, c.char_end, c.embedding is null"
            " from vera.chunks c join vera.episodes e using (group_id, episode_id)"
            " where c.group_id = %s order by 1, 2",
            (group,),
        ).fetchall()
        facts = admin.execute(
            "select e.external_id, s.canonical_name, f.predicate, f.object_value, f.lifecycle::text,"
            " f.verification::text, f.retired_at is null, f.embedding is null"
            " from vera.facts f join vera.entities s on s.group_id = f.group_id and s.entity_id = f.subject_entity_id"
            " join vera.episodes e on e.group_id = f.group_id and e.episode_id = f.episode_id"
            " where f.group_id = %s order by 1, 2, 3, 4",
            (group,),
        ).fetchall()
        # what the next run skips unread: each record's signature (its size; times differ) and content
        signed = admin.execute(
            "select external_id, split_part(signature, ':', 2), encode(content_sha256, 'hex')"
            " from vera.episodes where group_id = %s and signature is not null",
            (group,),
        ).fetchall()
        row = admin.execute(
            "select cursor from vera.sources where group_id = %s and source_id = %s", (group, source_id)
        ).fetchone()
    assert row is not None and row[0] is not None
    cursor = {key: (size, sha256) for key, size, sha256 in signed} | {"@position": row[0].get("@position")}
    return {"episodes": episodes, "passages": passages, "facts": facts, "cursor": cursor}


def test_a_job_of_a_killed_worker_runs_again_and_ends_as_a_clean_run(
    world: World, owner_a: VeraClient, tmp_path: Path
) -> None:
    crashed_folder, clean_folder = tmp_path / "crashed", tmp_path / "clean"
    _write_folder(crashed_folder)
    shutil.copytree(crashed_folder, clean_folder)  # copy2: same times and sizes
    crashed = owner_a.create_group(world.a.organisation, "project", "stalled-crashed")
    clean = owner_a.create_group(world.a.organisation, "project", "stalled-clean")
    crashed_source = owner_a.register_folder(crashed, "services", crashed_folder, tier=2)
    clean_source = owner_a.register_folder(clean, "services", clean_folder, tier=2)
    job = owner_a.request_ingest(crashed, crashed_source.source_id)
    env = worker_process_env(
        world.db, tmp_path / "objects", VERA_WORKER__STALLED_AFTER=STALLED_AFTER, VERA_WORKER__CONCURRENCY="1"
    )
    vera_command = Path(sys.executable).with_name("vera")

    # the first worker is killed with SIGKILL while its ingestion job is `doing`, part way through:
    # after its first page of signatures (200 files), so the run again skips those unread,
    # finds the files committed since by their hash, and reads the rest
    first = subprocess.Popen(  # noqa: S603
        [str(vera_command), "worker"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        _wait(
            lambda: _status(world.db, job) == "doing" and _signed(world.db, crashed) > 0,
            90,  # a worker's start and first batch; a loaded 2-core machine took over 30 s
            "a run half-way",
        )
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(10)
    assert _status(world.db, job) == "doing"
    at_kill = _episodes(world.db, crashed)
    assert 200 <= at_kill < FILES and _signed(world.db, crashed) == 200, at_kill

    # a second worker finds the job's worker silent, queues the job again and finishes it (its
    # log goes to a file: a pipe nobody reads while it runs would fill up and block it)
    log_path = tmp_path / "second-worker.log"
    with log_path.open("w", encoding="utf-8") as log_file:
        second = subprocess.Popen(  # noqa: S603
            [str(vera_command), "worker"], env=env, stdout=subprocess.DEVNULL, stderr=log_file
        )
        try:
            _wait(lambda: _status(world.db, job) in {"succeeded", "failed"}, 120, "the job run again")
        finally:
            second.send_signal(signal.SIGTERM)
            second.wait(20)
    log = log_path.read_text(encoding="utf-8")
    assert _status(world.db, job) == "succeeded", log[-3000:]
    assert second.returncode == 0, log[-3000:]
    assert (
        f"job {job} (vera.ingest_source) was left doing by a worker silent for over 2s: queued again" in log
    )
    # started by the killed worker, queued again once, started and finished by the second
    assert _events(world.db, job) == ["deferred", "started", "deferred_for_retry", "started", "succeeded"]

    # a clean run of the same folder in another group
    clean_job = owner_a.request_ingest(clean, clean_source.source_id)
    once = subprocess.run(  # noqa: S603
        [str(vera_command), "worker", "--once"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert once.returncode == 0, once.stderr[-3000:]
    assert _status(world.db, clean_job) == "succeeded"

    after_crash = _state(world.db, crashed, str(crashed_source.source_id))
    after_clean = _state(world.db, clean, str(clean_source.source_id))
    assert len(after_clean["episodes"]) == FILES and len(after_clean["cursor"]) == FILES + 1
    assert len(after_clean["facts"]) == 2 * FILES and len(after_clean["passages"]) >= 2 * FILES
    for part in ("episodes", "passages", "facts", "cursor"):
        assert after_crash[part] == after_clean[part], part


def test_only_the_jobs_of_a_silent_worker_are_queued_again_and_only_once(
    world: World, owner_a: VeraClient, tmp_path: Path
) -> None:
    group = owner_a.create_group(world.a.organisation, "project", "stalled-check")
    for name in ("left", "running"):
        (tmp_path / name).mkdir()
        source = owner_a.register_folder(group, name, tmp_path / name, tier=2)
        owner_a.request_ingest(group, source.source_id)
    app = build_app(world.db.dsn("vera_worker"), objects=LocalObjectStore(tmp_path / "objects"))

    async def scenario() -> tuple[int | None, int | None, list[int], list[int]]:
        async with app.open_async():
            jobs = app.job_manager
            silent, alive = await jobs.register_worker(), await jobs.register_worker()
            left = await jobs.fetch_job(["ingest_source"], silent)
            running = await jobs.fetch_job(["ingest_source"], alive)
            assert left is not None and running is not None
            with world.db.admin() as admin:
                admin.execute(
                    "update procrastinate.procrastinate_workers set last_heartbeat = now() - interval '1 minute'"
                    " where id = %s",
                    (silent,),
                )
            return (
                left.id,
                running.id,
                await retry_stalled_jobs(app, 30),
                await retry_stalled_jobs(app, 30),
            )

    left, running, first, second = asyncio.run(scenario())
    assert first == [left] and second == []
    with world.db.admin() as admin:
        statuses = dict(
            admin.execute(
                "select id, status::text from procrastinate.procrastinate_jobs where id = any (%s)",
                ([left, running],),
            ).fetchall()
        )
        # leave nothing `doing` behind for other tests of this module's database (Procrastinate's
        # triggers use unqualified names, hence its schema on the path)
        admin.execute("set search_path = procrastinate, public")
        admin.execute("update procrastinate.procrastinate_jobs set status = 'todo' where id = %s", (running,))
    assert statuses == {left: "todo", running: "doing"}


def test_a_worker_told_to_stop_ends_its_ingest_after_the_file_in_hand_and_the_job_runs_again(
    world: World, owner_a: VeraClient, tmp_path: Path
) -> None:
    """SIGTERM (or Ctrl-C) to a `vera worker` mid-ingest: the run ends after the file in hand
    instead of reading the whole folder first, the job is queued again, and a later worker
    reads the rest."""
    folder = tmp_path / "stopped"
    _write_folder(folder)
    group = owner_a.create_group(world.a.organisation, "project", "stalled-stopped")
    source = owner_a.register_folder(group, "services", folder, tier=2)
    job = owner_a.request_ingest(group, source.source_id)
    env = worker_process_env(world.db, tmp_path / "objects", VERA_WORKER__CONCURRENCY="1")
    vera_command = Path(sys.executable).with_name("vera")
    log_path = tmp_path / "stopped-worker.log"
    with log_path.open("w", encoding="utf-8") as log_file:
        worker = subprocess.Popen(  # noqa: S603
            [str(vera_command), "worker"], env=env, stdout=subprocess.DEVNULL, stderr=log_file
        )
        try:
            _wait(lambda: _episodes(world.db, group) >= 10, 60, "a run under way")
            worker.send_signal(signal.SIGTERM)
            worker.wait(60)
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait(10)
    log = log_path.read_text(encoding="utf-8")
    assert worker.returncode == 0, log[-3000:]
    assert _episodes(world.db, group) < FILES, "the run read the whole folder before stopping"
    assert _status(world.db, job) == "todo", log[-3000:]  # queued again, for a worker that runs

    def run_once() -> bool:
        subprocess.run(  # noqa: S603
            [str(vera_command), "worker", "--once"], env=env, capture_output=True, timeout=120, check=False
        )
        return _status(world.db, job) == "succeeded"

    _wait(run_once, 60, "the job run again to the end")
    assert _episodes(world.db, group) == FILES and _signed(world.db, group) == FILES
    assert _events(world.db, job) == ["deferred", "started", "deferred_for_retry", "started", "succeeded"]
