"""Per-group model usage: what one job's calls to hosted models used, recorded for its group.

The process's meter counts every request across all tenants (VeraClient.usage, the worker's
log line); a job opens a tally around its work, and when it ends its totals go to the group's
row of the day in one call (vera.record_model_usage, sql/functions/266_model_usage.sql), once
per job rather than per request. Local models (the local and deterministic embedders) make no
request and record nothing; a hosted model without a price counts its calls as unpriced.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from vera_client.adapters.postgres.executor import Executor
from vera_client.adapters.providers.metering import Tally, tally
from vera_client.api import jobs as jobs_api
from vera_client.domain.callers import Operator
from vera_client.domain.errors import VeraError

logger = logging.getLogger(__name__)

# entries per call of vera.record_model_usage (its limit)
MAX_ENTRIES = 100


def usage_entries(counted: Tally) -> list[dict[str, object]]:
    """The tally's totals as vera.record_model_usage takes them (purpose: the meter's operation)."""
    return [
        {
            "provider": key.provider,
            "model": key.model,
            "purpose": key.operation,
            "calls": totals.requests,
            "failed_calls": totals.failed_requests,
            "input_tokens": totals.input_tokens,
            "output_tokens": totals.output_tokens,
            "cost_usd": round(totals.estimated_cost_usd, 8),
            "unpriced_calls": totals.unpriced_requests,
        }
        for key, totals in sorted(
            counted.totals().items(), key=lambda item: (item[0].provider, item[0].model, item[0].operation)
        )
        if totals.requests
    ]


def record_usage(sql: Executor, group_id: str, counted: Tally) -> None:
    """Adds the tally to the group's usage of today; a failure to record is logged, never raised
    (the job's own outcome stands)."""
    entries = usage_entries(counted)
    try:
        for first in range(0, len(entries), MAX_ENTRIES):
            sql.run(Operator(), jobs_api.record_model_usage(group_id, entries[first : first + MAX_ENTRIES]))
    except VeraError as exc:
        logger.warning("model usage of %s not recorded: %s", group_id, exc)


@contextmanager
def metered(sql: Executor, group_id: str) -> Iterator[Tally]:
    """Counts the model requests made inside the block and records them for group_id at its end,
    also when the block raises (what was spent is spent)."""
    with tally() as counted:
        try:
            yield counted
        finally:
            record_usage(sql, group_id, counted)
