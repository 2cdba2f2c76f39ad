"""A group's health for its admins: its jobs in the queue (depth per queue and state, the
stalled ones), the last check of its graph and what the worker's model calls for it used and
cost (sql/functions/265_group_health.sql, 266_model_usage.sql; queries
in health.sql; tests in pg_tests/jobs/test_group_health.py). The console's Health page and
GET /v1/health show it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from vera_client.api.call import Call, records
from vera_client.api.jobs import GraphCheckResult
from vera_client.api.operation import Plan, Session, ask, operation, plan

DEFAULT_STALLED_AFTER = 30.0  # the worker's default (VERA_WORKER__STALLED_AFTER)
DEFAULT_USAGE_DAYS = 30  # the model usage read: today (UTC) and the days before it


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
class ModelUsage:
    """What the worker's calls to one model for one group and purpose ('extract', 'embed',
    'equivalence', 'contradiction') used over the period: calls (failed_calls of them failed),
    tokens, and the cost estimated from the worker's configured prices (unpriced_calls: of a
    model without a price, which add nothing to it); first_day and last_day: the UTC days with
    calls."""

    group_id: str
    provider: str
    model: str
    purpose: str
    calls: int
    failed_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    unpriced_calls: int
    first_day: date
    last_day: date


@dataclass(frozen=True, kw_only=True, slots=True)
class GroupHealth:
    """The jobs, graph checks and model usage of the groups the caller administers (or of one)."""

    jobs: list[GroupJobs]
    graph_checks: list[GraphCheckResult]  # the rows vera.graph_check_results gives the operator
    model_usage: list[ModelUsage]  # over the last usage_days days, the largest cost first
    usage_days: int


def group_jobs(
    group: str | None = None, stalled_after: float = DEFAULT_STALLED_AFTER
) -> Call[list[GroupJobs]]:
    """The jobs queued or running for the groups the caller administers (or one); admins."""
    return Call("group_jobs", {"group": group, "stalled_after": stalled_after}, records(GroupJobs))


def group_graph_checks(group: str | None = None) -> Call[list[GraphCheckResult]]:
    """The last graph check of each group the caller administers (or one), drift first; admins."""
    return Call("group_graph_checks", {"group": group}, records(GraphCheckResult))


def group_model_usage(group: str | None = None, days: int = DEFAULT_USAGE_DAYS) -> Call[list[ModelUsage]]:
    """The model calls, tokens and estimated cost of the groups the caller administers (or one)
    over the last days (1 to 366), the largest cost first; admins."""
    return Call("group_model_usage", {"group": group, "days": days}, records(ModelUsage))


def group_health(
    session: Session,
    group: str | None = None,
    stalled_after: float = DEFAULT_STALLED_AFTER,
    usage_days: int = DEFAULT_USAGE_DAYS,
) -> Plan[GroupHealth]:
    """The jobs, graph checks and model usage of the groups the caller administers (or of one);
    admins."""
    jobs = yield from ask(group_jobs(group, stalled_after))
    checks = yield from ask(group_graph_checks(group))
    usage = yield from ask(group_model_usage(group, usage_days))
    return GroupHealth(jobs=jobs, graph_checks=checks, model_usage=usage, usage_days=usage_days)


class Health:
    """The health operations of a client face."""

    group_jobs = operation(group_jobs)
    group_graph_checks = operation(group_graph_checks)
    group_model_usage = operation(group_model_usage)
    group_health = plan(group_health)
