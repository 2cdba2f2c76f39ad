"""The meter's tallies (vera_client/adapters/providers/metering.py): what the requests made
inside a `tally()` block used, whichever meter recorded them; another thread's requests and
those before or after the block are not in it; nested blocks each count what is inside them.
The worker records a job's tally for its group (pg_tests/jobs/test_model_usage.py)."""

from __future__ import annotations

import threading

from vera_client.adapters.providers.metering import Meter, MeterKey, Price, Usage, tally

KEY = MeterKey(provider="llm", model="m", operation="extract")


def test_a_tally_counts_only_the_requests_inside_its_block_and_thread() -> None:
    first, second = Meter({"m": Price(input_per_million=1.0, output_per_million=2.0)}), Meter()
    first.record(provider="llm", model="m", operation="extract", usage=Usage(input_tokens=5))
    with tally() as outer:
        first.record(
            provider="llm", model="m", operation="extract", usage=Usage(input_tokens=10, output_tokens=4)
        )
        elsewhere = threading.Thread(
            target=lambda: first.record(
                provider="llm", model="m", operation="extract", usage=Usage(input_tokens=99)
            )
        )
        elsewhere.start()
        elsewhere.join()
        with tally() as inner:
            second.record(provider="llm", model="m", operation="extract", usage=None)
    first.record(provider="llm", model="m", operation="extract", usage=Usage(input_tokens=7))
    counted = outer.totals()[KEY]
    assert (counted.requests, counted.failed_requests, counted.input_tokens, counted.output_tokens) == (
        2,
        1,
        10,
        4,
    )
    assert counted.estimated_cost_usd == (10 * 1.0 + 4 * 2.0) / 1_000_000
    assert inner.totals()[KEY].requests == 1 and inner.totals()[KEY].failed_requests == 1
    # the meters' own totals are unchanged by the tallies
    assert first.totals()[KEY].requests == 4 and second.totals()[KEY].requests == 1
