"""One wrapper for the tool-call path: a span, the metrics and one log line per call.

    with observer.tool_call("search") as call:
        await ledger.take(caller.principal_id, ToolClass.READ)
        ...
        call.outcome = Outcome.TOOL_ERROR  # when the tool answers with an error result

An exception escaping the block sets the outcome (metrics.outcome_of) and is
re-raised; the line is logged at INFO for ok and refusals of the caller's
own making, at WARNING for a server error (with the exception).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

from vera_mcp.adapters.metrics import McpMetrics, Outcome, ToolCallTimer, outcome_of
from vera_mcp.adapters.tracing import Tracing, mark_outcome
from vera_mcp.domain.access import QuotaExceededError

logger = logging.getLogger("vera_mcp.tool_calls")


class ToolCallObserver:
    """Spans (when tracing is on), metrics and a log line for each tool call."""

    def __init__(self, metrics: McpMetrics, tracing: Tracing) -> None:
        self.metrics = metrics
        self.tracing = tracing

    @contextmanager
    def tool_call(self, tool: str) -> Iterator[ToolCallTimer]:
        timer = ToolCallTimer()
        started = time.perf_counter()
        failure: BaseException | None = None
        label = self.metrics.tool_label(tool)
        with self.tracing.tool_span(label) as span:
            try:
                yield timer
            except BaseException as error:
                failure = error
                timer.outcome = outcome_of(error)
                if isinstance(error, QuotaExceededError):
                    self.metrics.observe_quota_refusal(error.tool_class)
                raise
            finally:
                seconds = time.perf_counter() - started
                mark_outcome(span, timer.outcome.value)
                self.metrics.observe_tool_call(tool, timer.outcome, seconds)
                server_fault = timer.outcome is Outcome.ERROR
                logger.log(
                    logging.WARNING if server_fault else logging.INFO,
                    "tool call %s: %s",
                    label,
                    timer.outcome.value,
                    exc_info=failure if server_fault else None,
                    extra={
                        "tool": label,
                        "outcome": timer.outcome.value,
                        "duration_ms": round(seconds * 1000, 3),
                    },
                )
