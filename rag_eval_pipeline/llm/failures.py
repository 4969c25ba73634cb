"""Failures by class, and the one retry policy every remote call of the project follows.

`classify` sorts a failed call (an exception, or a bare HTTP status) into a `FailureClass`:

- ``rate_limited``: HTTP 429 or a provider's `RateLimitError`. Back-pressure, not a fault: the
  call waits for the provider's ``Retry-After`` (``retry-after-ms``, seconds or an HTTP date; else
  exponential backoff) and is retried while its waits add up to at most `rate_limit_budget_s`.
  These waits never use up `max_retries` and never count towards a circuit breaker.
- ``connection_refused``: no connection could be made (refused, unreachable, connect timeout).
  Retried like a transient fault, but also the clearest sign of an outage, so a breaker counts
  each one at once.
- ``transient``: 5xx, 408/409, timeouts (`AttemptTimeout` included), connection resets, a
  reply that could not be read. Retried up to `max_retries` times with exponential backoff and
  jitter, never sooner than a ``Retry-After`` the provider sent.
- ``permanent``: everything else: 400 (invalid request, context window exceeded, content
  policy), 401/403, 404, 422, a breaker that is open, an unknown exception. No retry: the call
  becomes an error row at once.

`retry_async` (and `retry_sync`, for blocking HTTP clients) run a callable under a
`RetryPolicy` and return an `Attempted` outcome instead of raising; `observe` sees every failed
attempt with the decision taken, which is where a caller feeds its breaker and its adaptive
concurrency.

Why not litellm's own retries: litellm's Router does offer retries per exception type
(`RetryPolicy(RateLimitErrorRetries=..., ...)`) and honours ``Retry-After``, but (as of litellm
1.110) it counts rate-limit waits as retries instead of bounding them by time, reads
``Retry-After`` only as whole seconds (``0.5`` or ``retry-after-ms`` fall back to its backoff),
hides individual attempts (a breaker and AIMD need each one), and its cooldowns never apply to a
single deployment, which is what a judge is. litellm's exception classes are what this module
classifies, and ``litellm.acompletion(num_retries=0)`` is called once per attempt.
"""

from __future__ import annotations

import asyncio
import email.utils
import enum
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, TypeVar

import httpx

T = TypeVar("T")

MAX_BACKOFF_S = 60.0
RATE_LIMIT_BUDGET_SPENT = "rate-limit budget spent"


class FailureClass(enum.StrEnum):
    """How a failed call is handled (see the module docstring)."""

    TRANSIENT = "transient"
    RATE_LIMITED = "rate_limited"
    PERMANENT = "permanent"
    CONNECTION_REFUSED = "connection_refused"


class AttemptTimeout(TimeoutError):
    """An attempt that got no reply within the policy's `attempt_timeout_s`."""

    def __init__(self, timeout_s: float) -> None:
        super().__init__(f"no reply within {timeout_s:g} s")
        self.timeout_s = timeout_s


class NotCalled(Exception):
    """Raised by an attempt that decided not to call at all (an open breaker, a spent budget):
    permanent, so the call ends at once with this message."""


_CONNECT_FAILURES = (ConnectionRefusedError, httpx.ConnectError, httpx.ConnectTimeout)
_TRANSIENT_ERRORS = (TimeoutError, ConnectionError, httpx.TransportError)
_RATE_LIMIT_NAMES = frozenset({"RateLimitError", "CallerCredentialRateLimitError"})
_TRANSIENT_NAMES = frozenset(
    {"Timeout", "APITimeoutError", "APIConnectionError", "InternalServerError"}
    | {"ServiceUnavailableError", "BadGatewayError", "MidStreamFallbackError"}
    | {"JSONDecodeError", "APIResponseValidationError"}
)


def _causes(error: BaseException) -> list[BaseException]:
    """`error` and the exceptions it was raised from or during, outermost first."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def classify_status(status: int) -> FailureClass:
    """The class of an HTTP status that is not a success (2xx/3xx are not failures)."""
    if status == 429:
        return FailureClass.RATE_LIMITED
    if status in (408, 409) or status >= 500:
        return FailureClass.TRANSIENT
    return FailureClass.PERMANENT


def classify(failure: BaseException | int) -> FailureClass:
    """The class of a failed call: an exception (litellm's, openai's, httpx's, the standard
    library's, or any with an HTTP `status_code`, on itself or on its `response` as
    `httpx.HTTPStatusError` has it) or an HTTP status code."""
    if isinstance(failure, int):
        return classify_status(failure)
    if isinstance(failure, NotCalled):
        return FailureClass.PERMANENT
    chain = _causes(failure)
    if any(type(error).__name__ in _RATE_LIMIT_NAMES for error in chain):
        return FailureClass.RATE_LIMITED
    # litellm reports a refused connection as an InternalServerError (500) raised from it.
    if any(isinstance(error, _CONNECT_FAILURES) for error in chain):
        return FailureClass.CONNECTION_REFUSED
    status = getattr(failure, "status_code", None)
    if status is None:
        status = getattr(getattr(failure, "response", None), "status_code", None)
    if isinstance(status, int) and status >= 400:
        return classify_status(status)
    if isinstance(failure, _TRANSIENT_ERRORS) or type(failure).__name__ in _TRANSIENT_NAMES:
        return FailureClass.TRANSIENT
    return FailureClass.PERMANENT


def _headers(error: BaseException) -> list[Mapping[str, str]]:
    candidates = (
        getattr(error, "litellm_response_headers", None),
        getattr(error, "headers", None),
        getattr(getattr(error, "response", None), "headers", None),
    )
    return [headers for headers in candidates if headers]


def retry_after_s(error: BaseException) -> float | None:
    """The wait a provider asked for with the error: ``retry-after-ms``, or ``Retry-After`` in
    (possibly fractional) seconds or as an HTTP date; None when it sent neither (or nothing
    readable). Read from the first headers found: litellm's, the exception's, its response's."""
    for headers in _headers(error):
        milliseconds = headers.get("retry-after-ms")
        value = headers.get("retry-after")
        try:
            if milliseconds is not None:
                return max(0.0, float(milliseconds) / 1000)
            if value is not None:
                return max(0.0, float(value))
        except ValueError:
            try:
                moment = email.utils.parsedate_to_datetime(value)
            except (TypeError, ValueError):
                return None
            return max(0.0, (moment - datetime.now(UTC)).total_seconds())
    return None


def backoff_delay(retry: int, base_s: float) -> float:
    """Seconds before retry number `retry` (1-based): base·2^(retry-1) capped at
    `MAX_BACKOFF_S`, its upper half jittered (so concurrent callers do not retry in step)."""
    ceiling = min(MAX_BACKOFF_S, base_s * 2 ** (retry - 1))
    return ceiling / 2 + random.uniform(0, ceiling / 2)


@dataclass(frozen=True)
class RetryPolicy:
    """How one call is retried.

    `max_retries` bounds retries of transient faults and refused connections;
    `rate_limit_budget_s` bounds the total time one call may spend waiting out rate limits (its
    time queued for a slot or in flight is not counted); `attempt_timeout_s` (None: no limit)
    cancels an attempt that gets no reply, so a hung call costs at most about
    `attempt_timeout_s × (max_retries + 1)` plus backoff.
    """

    max_retries: int = 3
    backoff_base_s: float = 1.0
    rate_limit_budget_s: float = 300.0
    attempt_timeout_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_retries", "backoff_base_s", "rate_limit_budget_s"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.attempt_timeout_s is not None and self.attempt_timeout_s <= 0:
            raise ValueError(f"attempt_timeout_s must be > 0, got {self.attempt_timeout_s}")


@dataclass(frozen=True)
class Decision:
    """What follows one failed attempt: wait `delay_s` and retry, or stop (`delay_s` None)."""

    failure: FailureClass
    attempt: int
    delay_s: float | None
    reason: str  # why it stops, or "retry"


@dataclass(frozen=True)
class Attempted(Generic[T]):
    """The outcome of a call run under a `RetryPolicy`: its value, or its last error, how that
    error was classed and why retrying stopped."""

    value: T | None
    error: BaseException | None
    failure: FailureClass | None
    attempts: int
    rate_limited: int
    elapsed_s: float
    reason: str | None  # None on success

    @property
    def exhausted(self) -> bool:
        """Whether the call failed although retried (the sign of an outage a breaker counts)."""
        return self.failure in (FailureClass.TRANSIENT, FailureClass.CONNECTION_REFUSED)

    def explained(self, description: str, policy: RetryPolicy) -> str:
        """`description` (of the last error), led, when the call stopped because its rate-limit
        budget was spent, by how many rate limits it waited out and that budget."""
        if self.reason != RATE_LIMIT_BUDGET_SPENT:
            return description
        return (
            f"rate limited: still refused after {self.rate_limited} rate limit(s) waited out "
            f"(rate_limit_budget_s={policy.rate_limit_budget_s:g}): {description}"
        )


class _RetryState:
    """The bookkeeping of one call: attempts, retries used, rate-limit waits, the clock."""

    def __init__(self, policy: RetryPolicy) -> None:
        self.policy = policy
        self.started = time.monotonic()
        self.attempts = 0
        self.retries = 0
        self.rate_limited = 0
        self.rate_limit_waited_s = 0.0

    def begin(self) -> int:
        self.attempts += 1
        return self.attempts

    def decide(self, error: BaseException) -> Decision:
        policy, failure = self.policy, classify(error)
        asked = retry_after_s(error)
        if failure is FailureClass.PERMANENT:
            return Decision(failure, self.attempts, None, "permanent")
        if failure is FailureClass.RATE_LIMITED:
            self.rate_limited += 1
            wait = (
                asked
                if asked is not None
                else backoff_delay(self.rate_limited, policy.backoff_base_s)
            )
            wait = min(MAX_BACKOFF_S, wait)
            if self.rate_limit_waited_s + wait > policy.rate_limit_budget_s + 1e-9:
                return Decision(failure, self.attempts, None, RATE_LIMIT_BUDGET_SPENT)
            self.rate_limit_waited_s += wait
            return Decision(failure, self.attempts, wait, "retry")
        if self.retries >= policy.max_retries:
            return Decision(failure, self.attempts, None, "retries exhausted")
        self.retries += 1
        wait = backoff_delay(self.retries, policy.backoff_base_s)
        wait = max(wait, min(MAX_BACKOFF_S, asked or 0.0))
        return Decision(failure, self.attempts, wait, "retry")

    def result(
        self, value: T, error: BaseException | None, decision: Decision | None
    ) -> Attempted[T]:
        return Attempted(
            value=value,
            error=error,
            failure=None if decision is None else decision.failure,
            attempts=self.attempts,
            rate_limited=self.rate_limited,
            elapsed_s=time.monotonic() - self.started,
            reason=None if decision is None else decision.reason,
        )


Observer = Callable[[BaseException, Decision], None]


async def within(timeout_s: float | None, awaitable: Awaitable[T]) -> T:
    """`awaitable`'s result, cancelled with `AttemptTimeout` after `timeout_s` (None: no limit);
    other `TimeoutError`s (the awaited call's own) pass unchanged."""
    try:
        async with asyncio.timeout(timeout_s):
            return await awaitable
    except TimeoutError as timed_out:
        if timeout_s is not None and not str(timed_out):
            raise AttemptTimeout(timeout_s) from None
        raise


async def retry_async(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    observe: Observer | None = None,
) -> Attempted[T]:
    """Await `attempt()` until it succeeds or the policy stops; never raises `Exception`s.

    Each attempt is cancelled after `policy.attempt_timeout_s` (an `AttemptTimeout`);
    `observe(error, decision)` is called after every failed attempt, before any wait.
    """
    state = _RetryState(policy)
    while True:
        state.begin()
        try:
            value = await within(policy.attempt_timeout_s, attempt())
        except Exception as failed:
            error: BaseException = failed
        else:
            return state.result(value, None, None)
        decision = state.decide(error)
        if observe is not None:
            observe(error, decision)
        if decision.delay_s is None:
            return state.result(None, error, decision)
        await asyncio.sleep(decision.delay_s)


def retry_sync(
    attempt: Callable[[], T],
    policy: RetryPolicy,
    observe: Observer | None = None,
) -> Attempted[T]:
    """`retry_async` for a blocking callable (e.g. an HTTP request through `httpx.Client`).

    `policy.attempt_timeout_s` is not enforced here: give the blocking client that timeout.
    """
    state = _RetryState(policy)
    while True:
        state.begin()
        try:
            value = attempt()
        except Exception as error:
            decision = state.decide(error)
            if observe is not None:
                observe(error, decision)
            if decision.delay_s is None:
                return state.result(None, error, decision)
            time.sleep(decision.delay_s)
        else:
            return state.result(value, None, None)
