"""The chain every call to one hosted provider goes through.

Outermost first: a circuit breaker (refuses at once while the provider keeps
failing), retries with full-jitter backoff, a token bucket, and a per-attempt
timeout. The breaker is asked again before every retry and the bucket gives
a token to every attempt, not only to the first: a retry is a request the
provider counts against our limits too, and a breaker opened by our own
failures should stop our retries rather than wait for the next call.

Clock, sleep and the random source are injected so tests run on a fake clock.
"""

from __future__ import annotations

import enum
import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TypeVar

import httpx

from vera_client.config import ResilienceSettings
from vera_client.domain.errors import (
    ProviderError,
    ProviderRateLimitedError,
    ProviderResponseError,
    ProviderTimeoutError,
    ProviderUnavailableError,
)

T = TypeVar("T")

Clock = Callable[[], float]
Sleep = Callable[[float], None]
Uniform = Callable[[float, float], float]

# The provider's error text is quoted in messages up to this length, on one line.
_DETAIL_CHARS = 200


class BreakerState(enum.Enum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half-open"


class Admission(enum.Enum):
    """The breaker's answer to one attempt."""

    REFUSED = "refused"
    NORMAL = "normal"
    TRIAL = "trial"  # the one attempt let through after the reset time


class CircuitBreaker:
    """Opens after `failures` consecutive failed attempts and refuses for `reset_seconds`;
    then lets one trial attempt through, which closes it again or reopens it."""

    def __init__(self, provider: str, *, failures: int, reset_seconds: float, clock: Clock) -> None:
        if failures < 1 or reset_seconds <= 0:
            raise ValueError("failures must be at least 1 and reset_seconds positive")
        self._provider = provider
        self._threshold = failures
        self._reset_seconds = reset_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._state = BreakerState.CLOSED
        self._consecutive_failures = 0
        self._opened_at = 0.0
        self._trial_in_flight = False

    @property
    def state(self) -> BreakerState:
        with self._lock:
            return self._state

    def admit(self) -> Admission:
        """Whether an attempt may go out now."""
        with self._lock:
            if self._state is BreakerState.CLOSED:
                return Admission.NORMAL
            if self._state is BreakerState.OPEN:
                if self._clock() - self._opened_at < self._reset_seconds:
                    return Admission.REFUSED
                self._state = BreakerState.HALF_OPEN
            if self._trial_in_flight:
                return Admission.REFUSED
            self._trial_in_flight = True
            return Admission.TRIAL

    def refusal(self) -> ProviderUnavailableError:
        """The error a refused call raises."""
        with self._lock:
            if self._state is BreakerState.OPEN:
                wait = max(0.0, self._reset_seconds - (self._clock() - self._opened_at))
                when = f"a trial call goes through in {wait:.1f}s"
            else:
                when = "a trial call is under way"
        return ProviderUnavailableError(
            f"{self._provider}: circuit breaker open after {self._threshold} consecutive failures; {when}"
        )

    def record_success(self) -> None:
        """The provider answered (even with a client error): it is up."""
        with self._lock:
            self._state = BreakerState.CLOSED
            self._consecutive_failures = 0
            self._trial_in_flight = False

    def record_failure(self) -> None:
        """An attempt failed in a way that says the provider is down or overloaded."""
        with self._lock:
            self._consecutive_failures += 1
            if self._state is BreakerState.CLOSED and self._consecutive_failures < self._threshold:
                return
            self._state = BreakerState.OPEN
            self._opened_at = self._clock()
            self._trial_in_flight = False

    def release(self, admission: Admission) -> None:
        """An attempt ended without saying anything about the provider (our own bug, an interrupt)."""
        if admission is Admission.TRIAL:
            with self._lock:
                self._trial_in_flight = False


class TokenBucket:
    """Paces attempts to `rate` per second with bursts of up to `burst`.

    A caller takes its token at once, even into debt, and sleeps until the debt
    would have been refilled: waiting callers are served in the order they came.
    """

    def __init__(self, *, rate: float, burst: int, clock: Clock, sleep: Sleep) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("rate must be positive and burst at least 1")
        self._rate = rate
        self._burst = float(burst)
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._updated = clock()

    def take(self) -> float:
        """Wait for a token; return how long that took."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self._burst, self._tokens + (now - self._updated) * self._rate)
            self._updated = now
            self._tokens -= 1.0
            wait = -self._tokens / self._rate if self._tokens < 0 else 0.0
        if wait > 0:
            self._sleep(wait)
        return wait


@dataclass(frozen=True, kw_only=True, slots=True)
class Backoff:
    """Full jitter: the n-th retry (n = 0 first) waits uniform(0, min(cap, base * 2**n)).

    A Retry-After from the provider is a lower bound; one longer than the cap
    is not waited for (the call gives up), so a thread never hangs for minutes.
    """

    base_seconds: float
    cap_seconds: float
    uniform: Uniform

    def delay(self, retry: int, retry_after: float | None = None) -> float | None:
        """Seconds to wait before this retry, or None when the provider asks for longer than the cap."""
        if retry_after is not None and retry_after > self.cap_seconds:
            return None
        # the exponent is bounded so a large retry count cannot overflow the float
        ceiling = min(self.cap_seconds, self.base_seconds * 2.0 ** min(retry, 64))
        delay = self.uniform(0.0, ceiling)
        return delay if retry_after is None else max(delay, retry_after)


def retry_after_seconds(headers: Mapping[str, str], *, now: datetime | None = None) -> float | None:
    """The wait a response asks for: retry-after-ms (OpenAI), else Retry-After in seconds or as a date."""
    milliseconds = headers.get("retry-after-ms")
    if milliseconds is not None:
        try:
            return max(0.0, float(milliseconds) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


def is_retryable_status(status: int) -> bool:
    """429, 408 and 5xx are worth another try; other 4xx say the request itself is wrong."""
    return status in (408, 429) or status >= 500


def provider_detail(response: httpx.Response) -> str:
    """The provider's own error text (OpenAI's error.message, Voyage's detail), on one line."""
    try:
        payload = response.json()
    except ValueError:
        text = response.text
    else:
        text = response.text
        if isinstance(payload, dict):
            error = payload.get("error")
            if isinstance(error, dict) and isinstance(error.get("message"), str):
                text = error["message"]
            elif isinstance(error, str):
                text = error
            elif isinstance(payload.get("detail"), str):
                text = payload["detail"]
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 3] + "..."


@dataclass(frozen=True, kw_only=True, slots=True)
class _Failure:
    """A failed attempt worth retrying."""

    error: type[ProviderError]
    what: str
    retry_after: float | None
    cause: Exception


def _status_line(response: httpx.Response) -> str:
    detail = provider_detail(response)
    reason = response.reason_phrase or "error"
    return f"HTTP {response.status_code} {reason}" + (f": {detail}" if detail else "")


def _classify(exc: Exception, timeout: float) -> _Failure | None:
    """The retryable failure exc stands for, or None when it is not one."""
    if isinstance(exc, httpx.HTTPStatusError):
        response = exc.response
        status = response.status_code
        if not is_retryable_status(status):
            return None
        error: type[ProviderError]
        if status == 429:
            error = ProviderRateLimitedError
        elif status == 408:
            error = ProviderTimeoutError
        else:
            error = ProviderResponseError
        return _Failure(
            error=error,
            what=_status_line(response),
            retry_after=retry_after_seconds(response.headers),
            cause=exc,
        )
    if isinstance(exc, httpx.TimeoutException):
        return _Failure(
            error=ProviderTimeoutError,
            what=f"no answer within {timeout:g}s ({type(exc).__name__})",
            retry_after=None,
            cause=exc,
        )
    if isinstance(exc, ProviderRateLimitedError | ProviderTimeoutError) or type(exc) is ProviderError:
        # an adapter that does not speak httpx (S3 through botocore) already said
        # what failed and that it may pass: too many requests, too slow, unreachable
        return _Failure(error=type(exc), what=str(exc), retry_after=None, cause=exc)
    if isinstance(exc, httpx.TransportError):
        # no subclass fits "could not connect"; the root provider error says it plainly
        return _Failure(
            error=ProviderError,
            what=f"cannot reach it ({type(exc).__name__}: {' '.join(str(exc).split())})",
            retry_after=None,
            cause=exc,
        )
    return None


class ResilienceChain:
    """Breaker, retry, bucket and timeout for one provider; safe to share between threads.

    `call(attempt)` runs attempt(timeout_seconds) until it returns. The attempt
    must bound its own network waits by the timeout it is given and signal
    failures as httpx does: HTTPStatusError (from raise_for_status),
    TimeoutException, TransportError. Any other exception (a ProviderError for
    an unusable answer) ends the call at once without a retry.
    """

    def __init__(
        self,
        provider: str,
        settings: ResilienceSettings,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = time.sleep,
        uniform: Uniform = random.uniform,
    ) -> None:
        self.provider = provider
        self.breaker = CircuitBreaker(
            provider,
            failures=settings.breaker_failures,
            reset_seconds=settings.breaker_reset_seconds,
            clock=clock,
        )
        self.bucket = TokenBucket(
            rate=settings.rate_per_second, burst=settings.burst, clock=clock, sleep=sleep
        )
        self.backoff = Backoff(
            base_seconds=settings.retry_base_seconds,
            cap_seconds=settings.retry_max_seconds,
            uniform=uniform,
        )
        self.max_retries = settings.max_retries
        self.timeout_seconds = settings.timeout_seconds
        # the attempt's own business, carried here so that every provider of this chain reads it
        self.max_response_bytes = settings.max_response_bytes
        self._sleep = sleep

    def call(self, attempt: Callable[[float], T]) -> T:
        """attempt's result; the specific ProviderError when retries run out or the breaker refuses."""
        failure: _Failure | None = None
        attempts = 0
        stopped = ""
        while attempts <= self.max_retries:
            if failure is not None:
                delay = self.backoff.delay(attempts - 1, failure.retry_after)
                if delay is None:
                    stopped = f"; it asked to wait {failure.retry_after:g}s, longer than the retry cap"
                    break
                self._sleep(delay)
            admission = self.breaker.admit()
            if admission is Admission.REFUSED:
                if failure is None:
                    raise self.breaker.refusal()
                stopped = "; the circuit breaker is now open"
                break
            self.bucket.take()
            attempts += 1
            try:
                result = attempt(self.timeout_seconds)
            except Exception as exc:
                failure = _classify(exc, self.timeout_seconds)
                if failure is None:
                    if isinstance(exc, httpx.HTTPStatusError | ProviderError):
                        # the provider answered, if not usefully (a 4xx, an unusable body): it is up
                        self.breaker.record_success()
                    else:
                        self.breaker.release(admission)
                    if isinstance(exc, httpx.HTTPStatusError):
                        raise ProviderResponseError(
                            f"{self.provider}: {_status_line(exc.response)} (not retried)"
                        ) from exc
                    raise
                self.breaker.record_failure()
                if self.breaker.state is BreakerState.OPEN:
                    stopped = "; the circuit breaker is now open"
                    break
                continue
            except BaseException:
                self.breaker.release(admission)
                raise
            self.breaker.record_success()
            return result
        assert failure is not None  # the loop returns, raises, or leaves after a failure
        tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
        raise failure.error(f"{self.provider}: {failure.what} after {tries}{stopped}") from failure.cause
