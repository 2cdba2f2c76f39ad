"""A group's health for its admins: its jobs in the queue (depth per queue and state, the
stalled ones) and the last check of its graph (sql/functions/265_group_health.sql; queries
in health.sql; tests in pg_tests/jobs/test_group_health.py). The console's Health page and
GET /v1/health show it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from vera_client.api.call import Call, records
from vera_client.api.jobs import GraphCheckResult
from vera_client.api.operation import Plan, Session, ask, operation, plan

DEFAULT_STALLED_AFTER = 30.0  # the worker's default (VERA_WORKER__STALLED_AFTER)


@dataclass(frozen=True, kw_only=True, slots=True)
class GroupJobs:
    """The jobs of one group in one queue and state: 'todo' (due, waiting), 'scheduled' (for a
    later time) or 'doing' (running; `stalled` of them with no heartbeat from their worker)."""

    group_id: str
    queue: str
    state: str
    jobs: int
    stalled: int
    oldest_due: datetime | None


@dataclass(frozen=True, kw_only=True, slots=True)
class GroupHealth:
    """The jobs and graph checks of the groups the caller administers (or of one)."""

    jobs: list[GroupJobs]
    graph_checks: list[GraphCheckResult]  # the rows vera.graph_check_results gives the operator


def group_jobs(
    group: str | None = None, stalled_after: float = DEFAULT_STALLED_AFTER
) -> Call[list[GroupJobs]]:
    """The jobs queued or running for the groups the caller administers (or one); admins."""
    return Call("group_jobs", {"group": group, "stalled_after": stalled_after}, records(GroupJobs))


def group_graph_checks(group: str | None = None) -> Call[list[GraphCheckResult]]:
    """The last graph check of each group the caller administers (or one), drift first; admins."""
    return Call("group_graph_checks", {"group": group}, records(GraphCheckResult))


def group_health(
    session: Session, group: str | None = None, stalled_after: float = DEFAULT_STALLED_AFTER
) -> Plan[GroupHealth]:
    """The jobs and graph checks of the groups the caller administers (or of one); admins."""
    jobs = yield from ask(group_jobs(group, stalled_after))
    checks = yield from ask(group_graph_checks(group))
    return GroupHealth(jobs=jobs, graph_checks=checks)


class Health:
    """The health operations of a client face."""

    group_jobs = operation(group_jobs)
    group_graph_checks = operation(group_graph_checks)
    group_health = plan(group_health)
