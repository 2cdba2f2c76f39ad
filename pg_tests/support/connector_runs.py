"""What the connector kinds' tests share: asking for a run again, reading what
a group's search finds and its source's status, making the Nth request of a
stand-in fail, and looking for a secret everywhere a run could have left it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pg_tests.support.clients import client_for
from pg_tests.support.seed import World, caller
from vera_client.api import sources as sources_api
from vera_client.api.sources import SourceStatus
from vera_client.config import ResilienceSettings

# fast retries, so a test waits only as long as a Retry-After asks
FAST = ResilienceSettings(retry_base_seconds=0.01, retry_max_seconds=5, max_retries=3, breaker_failures=50)

# where a run's words end up: a secret must be in none of them
RUN_TABLES = ("procrastinate.procrastinate_jobs", "procrastinate.procrastinate_events", "vera.source_runs",
              "vera.sources", "vera.audit_log", "vera.episodes")  # fmt: skip

Answer = tuple[int, dict[str, str], bytes]


def register(world: World, group: str, kind: str, name: str, tier: int, token_env: str,
             config: dict[str, Any]) -> sources_api.Source:  # fmt: skip
    """The source, registered by the group's owner, with its first run asked for."""
    with client_for(world, world.a.owner_key) as vera:
        source_id = vera.register_source(group, kind, name, tier, token_env=token_env, config=config)
        vera.request_ingest(group, source_id)
        return next(s for s in vera.list_sources(group) if s.source_id == source_id)


def ingest_again(world: World, source: sources_api.Source) -> None:
    with client_for(world, world.a.owner_key) as vera:
        vera.request_ingest(source.group_id, source.source_id)


def search_texts(world: World, group: str, query: str) -> list[str]:
    with caller(world.db, world.a.owner_key) as conn:
        rows = conn.execute(
            "select text from vera.search(%s, groups => array[%s])", (query, group)
        ).fetchall()
    return [row[0] for row in rows]


def source_status(world: World, group: str) -> SourceStatus:
    with client_for(world, world.a.owner_key) as vera:
        [found] = vera.source_status(group)
    return found


def episode_versions(world: World, group: str) -> list[tuple[str, int]]:
    """(external id, how many episodes) of the group's records, by id."""
    with world.db.admin() as admin:
        return admin.execute(
            "select external_id, count(*)::int from vera.episodes where group_id = %s group by 1 order by 1",
            (group,),
        ).fetchall()


def failing_request(path: str, nth: int, body: bytes) -> Callable[[str, dict[str, str]], Answer | None]:
    """A stand-in's intercept: the nth request of path answers HTTP 400 with body (not retried)."""
    calls = {"n": 0}

    def intercept(asked: str, _query: dict[str, str]) -> Answer | None:
        if asked == path:
            calls["n"] += 1
            if calls["n"] == nth:
                return 400, {}, body
        return None

    return intercept


def assert_nowhere(world: World, logged: str, *secrets: str) -> None:
    """None of secrets in the captured log nor in any row of RUN_TABLES."""
    for secret in secrets:
        assert secret not in logged
    with world.db.admin() as admin:
        for table in RUN_TABLES:
            dump = admin.execute(f"select coalesce(string_agg(t::text, ' '), '') from {table} t").fetchone()
            assert dump is not None and not any(secret in dump[0] for secret in secrets), table
