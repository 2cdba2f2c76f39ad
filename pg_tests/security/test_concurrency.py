"""Concurrent writers (issue 11): one lock order everywhere, so that
retraction, publishing and review never deadlock (entity names, then the
per-history advisory locks, then fact rows), and the write functions refuse
a transaction that is not READ COMMITTED (VT001), since they rely on seeing
what the writers they waited for committed. Every test uses real, separate
connections."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from uuid import UUID

import psycopg
import pytest

from pg_tests.support.seed import World, caller
from pg_tests.support.writes import SQL_ERRORS, claim, publish, record_episode, register_source


def _group(world: World, name: str) -> tuple[str, UUID, UUID, UUID]:
    """A project group with a functional RUNS_ON, a tier-1 source and two episodes."""
    with caller(world.db, world.a.owner_key) as conn:
        row = conn.execute(
            "select vera.create_group(%s, 'project', %s)", (world.a.organisation, name)
        ).fetchone()
        assert row is not None
        group = row[0]
        conn.execute("select vera.declare_predicate(%s, 'runs on', 'functional')", (group,))
        source = register_source(conn, group, "cmdb", 1, kind="cmdb")
        first, _, _ = record_episode(conn, group, source, "first", "1")
        second, _, _ = record_episode(conn, group, source, "second", "2")
        conn.commit()
    return group, source, first, second


def _connect(world: World, isolation: psycopg.IsolationLevel | None = None) -> psycopg.Connection:
    conn = world.db.connect()
    if isolation is not None:
        conn.isolation_level = isolation
    conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
    return conn


def _wait_until_blocked(world: World, pid: int, timeout: float = 10) -> None:
    """Until backend `pid` waits on a lock (a row's or an advisory one)."""
    deadline = time.monotonic() + timeout
    with world.db.admin() as admin:
        while time.monotonic() < deadline:
            row = admin.execute(
                "select wait_event_type from pg_stat_activity where pid = %s", (pid,)
            ).fetchone()
            if row is not None and row[0] == "Lock":
                return
            time.sleep(0.02)
    raise AssertionError(f"backend {pid} never waited on a lock")


def _in_thread(work: Callable[[], None], errors: list[BaseException]) -> threading.Thread:
    def run() -> None:
        try:
            work()
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def _sqlstates(errors: list[BaseException]) -> list[str | None]:
    return [getattr(error, "sqlstate", None) for error in errors]


def test_retraction_and_publishing_of_one_history_do_not_deadlock(world: World) -> None:
    """The interleaving that deadlocked: a publisher holds a history's lock, a
    retraction of the episode behind its current value starts, then the
    publisher supersedes that value. Retraction used to lock the value's row
    first and wait for the history; the publisher then waited for the row."""
    group, _, first, second = _group(world, "deadlock")
    with caller(world.db, world.a.owner_key) as conn:
        publish(conn, group, first, [claim("api", "runs on", "blue", valid_from="2026-01-01")])
        conn.commit()
    publisher = _connect(world)
    retractor = _connect(world)
    errors: list[BaseException] = []
    try:
        # an earlier value slots in before blue: the publisher holds the history, not blue's row
        publish(publisher, group, second, [claim("api", "runs on", "red", valid_from="2020-01-01")])

        def retract() -> None:
            retractor.execute("select vera.retract_episode(%s, %s, 'gone')", (group, first))
            retractor.commit()

        racer = _in_thread(retract, errors)
        _wait_until_blocked(world, retractor.info.backend_pid)
        try:
            # now supersede blue (the deadlock detector fires after deadlock_timeout, 1 s)
            now = datetime.now(UTC).isoformat()
            publish(publisher, group, second, [claim("api", "runs on", "green", valid_from=now)])
            publisher.commit()
        except SQL_ERRORS as exc:
            errors.append(exc)
            publisher.rollback()
        racer.join(timeout=30)
        assert not racer.is_alive()
    finally:
        publisher.close()
        retractor.close()
    assert _sqlstates(errors) == []
    with world.db.admin() as admin:
        rows = admin.execute(
            "select object_value, lifecycle from vera.facts where group_id = %s order by valid_from", (group,)
        ).fetchall()
    assert rows == [("red", "superseded"), ("blue", "retracted"), ("green", "published")]


def _race_to_publish(
    world: World, group: str, episode: UUID, isolation: psycopg.IsolationLevel, clients: int = 8
) -> list[BaseException]:
    """`clients` connections publish a value of one new subject's functional RUNS_ON at once."""
    start = threading.Barrier(clients)
    errors: list[BaseException] = []
    connections = [_connect(world, isolation) for _ in range(clients)]

    def writer(conn: psycopg.Connection, value: str) -> Callable[[], None]:
        def work() -> None:
            start.wait(timeout=30)
            try:
                publish(conn, group, episode, [claim("ledger", "runs on", value)])
                conn.commit()
            except BaseException:
                conn.rollback()
                raise

        return work

    try:
        threads = [_in_thread(writer(conn, f"dc-{i}"), errors) for i, conn in enumerate(connections)]
        for thread in threads:
            thread.join(timeout=60)
            assert not thread.is_alive()
    finally:
        for conn in connections:
            conn.close()
    return errors


def _runs_on(world: World, group: str) -> tuple[int, list[str]]:
    with world.db.admin() as admin:
        row = admin.execute(
            "select count(*) from vera.entities where group_id = %s and canonical_name = 'ledger'", (group,)
        ).fetchone()
        lifecycles = admin.execute(
            "select lifecycle::text from vera.facts where group_id = %s and predicate = 'RUNS_ON' order by 1",
            (group,),
        ).fetchall()
    assert row is not None
    return row[0], [lifecycle for (lifecycle,) in lifecycles]


def test_concurrent_publishers_under_read_committed_keep_one_entity_and_one_current_value(
    world: World,
) -> None:
    group, _, episode, _ = _group(world, "race-rc")
    errors = _race_to_publish(world, group, episode, psycopg.IsolationLevel.READ_COMMITTED)
    assert errors == []
    entities, lifecycles = _runs_on(world, group)
    assert entities == 1
    assert lifecycles == ["published"] + ["superseded"] * 7


@pytest.mark.parametrize(
    "isolation",
    [psycopg.IsolationLevel.REPEATABLE_READ, psycopg.IsolationLevel.SERIALIZABLE],
    ids=["repeatable_read", "serializable"],
)
def test_publishing_refuses_a_transaction_that_is_not_read_committed(
    world: World, isolation: psycopg.IsolationLevel
) -> None:
    """Under REPEATABLE READ, 8 racers used to create 8 entities and 8 current values."""
    group, _, episode, _ = _group(world, f"race-{isolation.name.lower()}")
    errors = _race_to_publish(world, group, episode, isolation)
    assert _sqlstates(errors) == ["VT001"] * 8
    assert "READ COMMITTED" in str(errors[0])
    assert _runs_on(world, group) == (0, [])


def test_the_other_writes_refuse_repeatable_read_too(world: World) -> None:
    group, source, first, _ = _group(world, "refusals")
    with caller(world.db, world.a.owner_key) as conn:
        publish(conn, group, first, [claim("api", "runs on", "blue")])
        conn.commit()
    refused = {
        "retract_episode": ("select vera.retract_episode(%s, %s)", (group, first)),
        "record_episode": (
            "select * from vera.record_episode(%s, %s, 'third', sha256('3'), 'objects/3', 'text/markdown', "
            "null, null, null)",
            (group, source),
        ),
    }
    for name, (sql, params) in refused.items():
        conn = _connect(world, psycopg.IsolationLevel.REPEATABLE_READ)
        try:
            with pytest.raises(psycopg.Error) as error:
                conn.execute(sql, params)  # type: ignore[arg-type]
            assert error.value.sqlstate == "VT001", name
        finally:
            conn.close()


def test_a_mix_of_writers_on_hot_histories_never_deadlocks(world: World) -> None:
    """Bounded stress (4 s, 8 connections): publishing (trusted and for review), review and
    retraction of episodes on two hot subjects; no 40P01, one current value per history."""
    group, source, _, _ = _group(world, "stress")
    with caller(world.db, world.a.owner_key) as conn:
        wiki = register_source(conn, group, "wiki", 3)
        conn.commit()
    episodes: list[UUID] = []
    lock = threading.Lock()
    deadline = time.monotonic() + 4
    errors: list[BaseException] = []

    def worker(number: int) -> Callable[[], None]:
        def work() -> None:
            rng = random.Random(number)  # noqa: S311 (test data)
            conn = _connect(world)
            try:
                turn = 0
                while time.monotonic() < deadline:
                    turn += 1
                    if turn > 1:
                        conn.execute("select vera.authenticate(%s)", (world.a.owner_key,))
                    try:
                        choice = rng.random()
                        if choice < 0.5:
                            episode, _, _ = record_episode(
                                conn,
                                group,
                                rng.choice([source, wiki]),
                                f"r{number}-{turn}",
                                f"{number}-{turn}",
                            )
                            now = datetime.now(UTC).isoformat()
                            claims = [claim(s, "runs on", rng.choice(["a", "b", "c"]), valid_from=now)
                                      for s in rng.sample(["api", "db"], 2)]  # fmt: skip
                            publish(conn, group, episode, claims)
                            conn.commit()
                            with lock:
                                episodes.append(episode)
                        elif choice < 0.75:
                            with lock:
                                target = rng.choice(episodes) if episodes else None
                            if target is not None:
                                conn.execute("select vera.retract_episode(%s, %s)", (group, target))
                            conn.commit()
                        else:
                            row = conn.execute(
                                "select fact_id from vera.pending_reviews(%s) order by random() limit 1",
                                (group,),
                            ).fetchone()
                            if row is not None:
                                conn.execute(
                                    "select * from vera.review_claim(%s, %s, 'approve')", (group, row[0])
                                )
                            conn.commit()
                    except SQL_ERRORS as exc:
                        conn.rollback()
                        if exc.sqlstate != "VN001":  # a claim reviewed or retracted meanwhile
                            raise
            finally:
                conn.close()

        return work

    threads = [_in_thread(worker(number), errors) for number in range(8)]
    for thread in threads:
        thread.join(timeout=60)
        assert not thread.is_alive()
    assert _sqlstates(errors) == []
    assert len(episodes) > 8
    with world.db.admin() as admin:
        current = admin.execute(
            "select count(*) from vera.facts where group_id = %s and lifecycle = 'published' "
            "group by subject_entity_id having count(*) > 1",
            (group,),
        ).fetchall()
    assert current == []
