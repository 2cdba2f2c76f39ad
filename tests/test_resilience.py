"""The resilience chain (vera_client.adapters.providers.resilience) on a fake clock:
circuit breaker, token bucket, full-jitter backoff, Retry-After, and how the
chain retries, gives up and names what happened."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import httpx
import pytest

from vera_client.adapters.providers.resilience import (
    Admission,
    Backoff,
    BreakerState,
    CircuitBreaker,
    ResilienceChain,
    TokenBucket,
    retry_after_seconds,
)
from vera_client.config import ResilienceSettings
from vera_client.domain.errors import (
    ProviderError,
    ProviderRateLimitedError,
    ProviderResponseError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)

_REQUEST = httpx.Request("POST", "https://provider.test/v1/embeddings")


class FakeTime:
    """A monotonic clock that only moves when someone sleeps (or a test says so)."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def _highest(low: float, high: float) -> float:
    """A 'random' source that always picks the top of the range, so delays are predictable."""
    return high


def _chain(time: FakeTime, **settings: float) -> ResilienceChain:
    defaults: dict[str, float] = {
        "breaker_failures": 100,
        "rate_per_second": 1000.0,
        "burst": 1000,
        "max_retries": 3,
        "retry_base_seconds": 0.5,
        "retry_max_seconds": 20.0,
        "timeout_seconds": 7.0,
    }
    return ResilienceChain(
        "acme",
        ResilienceSettings.model_validate(defaults | settings),
        clock=time.clock,
        sleep=time.sleep,
        uniform=_highest,
    )


def _status(status: int, headers: dict[str, str] | None = None) -> httpx.HTTPStatusError:
    response = httpx.Response(status, headers=headers, json={"error": {"message": "nope"}}, request=_REQUEST)
    return httpx.HTTPStatusError(f"{status}", request=_REQUEST, response=response)


def _attempts(*outcomes: Exception | str) -> tuple[Callable[[float], str], list[float]]:
    """An attempt function that raises or returns the outcomes in turn, and the timeouts it was given."""
    queue = list(outcomes)
    timeouts: list[float] = []

    def attempt(timeout: float) -> str:
        timeouts.append(timeout)
        outcome = queue.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return attempt, timeouts


# --- circuit breaker -------------------------------------------------------------------------


def test_breaker_opens_after_consecutive_failures_only() -> None:
    time = FakeTime()
    breaker = CircuitBreaker("acme", failures=3, reset_seconds=10, clock=time.clock)
    breaker.record_failure()
    breaker.record_failure()
    breaker.record_success()  # the count is of consecutive failures
    breaker.record_failure()
    breaker.record_failure()
    assert breaker.state is BreakerState.CLOSED
    breaker.record_failure()
    assert breaker.state is BreakerState.OPEN
    assert breaker.admit() is Admission.REFUSED
    message = str(breaker.refusal())
    assert message.startswith("acme: circuit breaker open after 3 consecutive failures")
    assert "10.0s" in message


def test_breaker_lets_one_trial_through_after_the_reset_time() -> None:
    time = FakeTime()
    breaker = CircuitBreaker("acme", failures=1, reset_seconds=10, clock=time.clock)
    breaker.record_failure()
    time.now += 9.9
    assert breaker.admit() is Admission.REFUSED
    time.now += 0.1
    assert breaker.admit() is Admission.TRIAL
    assert breaker.state is BreakerState.HALF_OPEN
    assert breaker.admit() is Admission.REFUSED  # only one trial at a time
    assert "trial call is under way" in str(breaker.refusal())
    breaker.record_success()
    assert breaker.state is BreakerState.CLOSED
    assert breaker.admit() is Admission.NORMAL


def test_a_failed_trial_reopens_the_breaker_for_a_full_reset_time() -> None:
    time = FakeTime()
    breaker = CircuitBreaker("acme", failures=2, reset_seconds=10, clock=time.clock)
    breaker.record_failure()
    breaker.record_failure()
    time.now += 10
    assert breaker.admit() is Admission.TRIAL
    time.now += 3
    breaker.record_failure()
    assert breaker.state is BreakerState.OPEN
    time.now += 9.9
    assert breaker.admit() is Admission.REFUSED
    time.now += 0.1
    assert breaker.admit() is Admission.TRIAL


def test_a_released_trial_lets_the_next_caller_try() -> None:
    time = FakeTime()
    breaker = CircuitBreaker("acme", failures=1, reset_seconds=1, clock=time.clock)
    breaker.record_failure()
    time.now += 1
    trial = breaker.admit()
    breaker.release(trial)
    assert breaker.admit() is Admission.TRIAL


# --- token bucket ----------------------------------------------------------------------------


def test_bucket_allows_a_burst_then_paces_at_the_rate() -> None:
    time = FakeTime()
    bucket = TokenBucket(rate=4.0, burst=3, clock=time.clock, sleep=time.sleep)
    assert [bucket.take() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert time.sleeps == []
    assert bucket.take() == pytest.approx(0.25)
    assert bucket.take() == pytest.approx(0.25)
    time.now += 10  # idle: refills, but only up to the burst
    assert [bucket.take() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.take() == pytest.approx(0.25)


def test_bucket_queues_callers_that_arrive_together() -> None:
    time = FakeTime()
    bucket = TokenBucket(rate=2.0, burst=1, clock=time.clock, sleep=lambda seconds: None)
    # nobody sleeps on this clock, so each caller's wait shows its place in the queue
    assert [bucket.take() for _ in range(4)] == pytest.approx([0.0, 0.5, 1.0, 1.5])


# --- backoff and Retry-After -----------------------------------------------------------------


def test_full_jitter_draws_below_an_exponential_ceiling_up_to_the_cap() -> None:
    drawn: list[tuple[float, float]] = []

    def uniform(low: float, high: float) -> float:
        drawn.append((low, high))
        return high / 2

    backoff = Backoff(base_seconds=0.5, cap_seconds=3.0, uniform=uniform)
    assert [backoff.delay(n) for n in range(5)] == [0.25, 0.5, 1.0, 1.5, 1.5]
    assert drawn == [(0.0, 0.5), (0.0, 1.0), (0.0, 2.0), (0.0, 3.0), (0.0, 3.0)]
    assert backoff.delay(10_000) == 1.5  # no overflow however many retries


def test_retry_after_is_a_lower_bound_and_a_wait_past_the_cap_is_refused() -> None:
    backoff = Backoff(base_seconds=0.5, cap_seconds=3.0, uniform=_highest)
    assert backoff.delay(0, retry_after=2.0) == 2.0
    assert backoff.delay(3, retry_after=0.1) == 3.0
    assert backoff.delay(0, retry_after=3.5) is None


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"retry-after": "-4"}, 0.0),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "Wed, 21 Oct 2026 07:28:30 GMT"}, 30.0),
        ({"retry-after": "Wed, 21 Oct 2026 07:27:00 GMT"}, 0.0),
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_header_forms(headers: dict[str, str], expected: float | None) -> None:
    now = datetime(2026, 10, 21, 7, 28, 0, tzinfo=UTC)
    assert retry_after_seconds(httpx.Headers(headers), now=now) == expected


# --- the chain -------------------------------------------------------------------------------


def test_chain_returns_the_first_success_and_passes_the_timeout_to_each_attempt() -> None:
    time = FakeTime()
    attempt, timeouts = _attempts(_status(503), httpx.ConnectError("refused"), "ok")
    assert _chain(time).call(attempt) == "ok"
    assert timeouts == [7.0, 7.0, 7.0]
    assert time.sleeps == [0.5, 1.0]


def test_chain_honours_retry_after_on_429() -> None:
    time = FakeTime()
    attempt, _ = _attempts(_status(429, {"Retry-After": "4"}), _status(429, {"Retry-After": "0"}), "ok")
    assert _chain(time).call(attempt) == "ok"
    assert time.sleeps == [4.0, 1.0]


@pytest.mark.parametrize(
    ("failure", "error", "what"),
    [
        (_status(429), ProviderRateLimitedError, "HTTP 429 Too Many Requests: nope"),
        (_status(503), ProviderResponseError, "HTTP 503 Service Unavailable: nope"),
        (_status(500), ProviderResponseError, "HTTP 500 Internal Server Error: nope"),
        (_status(408), ProviderTimeoutError, "HTTP 408 Request Timeout: nope"),
        (httpx.ReadTimeout("slow"), ProviderTimeoutError, "no answer within 7s (ReadTimeout)"),
        (httpx.ConnectError("refused"), ProviderError, "cannot reach it (ConnectError: refused)"),
    ],
)
def test_chain_retries_then_raises_the_specific_error(
    failure: Exception, error: type[ProviderError], what: str
) -> None:
    time = FakeTime()
    attempt, timeouts = _attempts(*[failure] * 4)
    with pytest.raises(error) as raised:
        _chain(time, max_retries=3).call(attempt)
    assert type(raised.value) is error
    assert str(raised.value) == f"acme: {what} after 4 attempts"
    assert raised.value.__cause__ is failure
    assert len(timeouts) == 4
    assert time.sleeps == [0.5, 1.0, 2.0]


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 422])
def test_chain_never_retries_other_client_errors(status: int) -> None:
    time = FakeTime()
    chain = _chain(time, breaker_failures=1)
    attempt, timeouts = _attempts(_status(status))
    with pytest.raises(ProviderResponseError, match=rf"^acme: HTTP {status} .*: nope \(not retried\)$"):
        chain.call(attempt)
    assert len(timeouts) == 1 and time.sleeps == []
    assert chain.breaker.state is BreakerState.CLOSED  # the provider answered: it is up


def test_an_unusable_answer_ends_the_call_without_retry() -> None:
    time = FakeTime()
    attempt, timeouts = _attempts(ProviderResponseError("acme: unusable answer: 2 embeddings for 3 texts"))
    with pytest.raises(ProviderResponseError, match="2 embeddings for 3 texts"):
        _chain(time).call(attempt)
    assert len(timeouts) == 1


def test_a_retry_after_longer_than_the_cap_gives_up_at_once() -> None:
    time = FakeTime()
    attempt, timeouts = _attempts(_status(429, {"Retry-After": "120"}), "ok")
    with pytest.raises(ProviderRateLimitedError, match=r"after 1 attempt; it asked to wait 120s"):
        _chain(time, retry_max_seconds=20).call(attempt)
    assert len(timeouts) == 1 and time.sleeps == []


def test_breaker_opened_by_our_own_failures_stops_the_retries_and_refuses_the_next_call() -> None:
    time = FakeTime()
    chain = _chain(time, breaker_failures=2, max_retries=5, breaker_reset_seconds=30)
    attempt, timeouts = _attempts(*[_status(503)] * 6)
    with pytest.raises(ProviderResponseError, match=r"after 2 attempts; the circuit breaker is now open$"):
        chain.call(attempt)
    assert len(timeouts) == 2
    untouched, never = _attempts("ok")
    with pytest.raises(ProviderUnavailableError, match=r"^acme: circuit breaker open"):
        chain.call(untouched)
    assert never == []
    time.now += 30
    assert chain.call(untouched) == "ok"  # the trial call closes it
    assert chain.breaker.state is BreakerState.CLOSED


def test_every_attempt_takes_a_token() -> None:
    time = FakeTime()
    chain = _chain(time, rate_per_second=1.0, burst=1, retry_base_seconds=0.0)
    attempt, _ = _attempts(_status(500), _status(500), "ok")
    chain.call(attempt)
    # backoff is zero here, so the waits are the bucket's: one token a second
    assert time.sleeps == [0.0, 1.0, 0.0, 1.0]


def test_an_interrupted_trial_does_not_leave_the_breaker_stuck() -> None:
    time = FakeTime()
    chain = _chain(time, breaker_failures=1, max_retries=0)
    attempt, _ = _attempts(_status(500), RuntimeError("a bug of ours"), "ok")
    with pytest.raises(ProviderResponseError):
        chain.call(attempt)
    time.now += 60
    with pytest.raises(RuntimeError):
        chain.call(attempt)
    assert chain.call(attempt) == "ok"
