"""A circuit breaker that opens on outages only: a failure ratio over a sliding window of calls.

It counts *calls*, not attempts: a call whose retries were exhausted is a failure, a call that
succeeded (on any attempt) is a success, and each refused connection is a failure at once (the
clearest sign of a dead endpoint). Rate limits, permanent errors (a bad request, a bad key) and
calls it stopped itself count neither way. `observe(error, decision, description)` is that rule,
the one every caller (the LLM client, the HTTP system under test) feeds its failed attempts to.

Closed, it opens when, among the last `window` outcomes, there are at least `min_calls` and the
share of failures is at least `failure_ratio`. Open, it refuses every call (`allow()` is False)
for `cooldown_s`; then it half-opens and lets exactly one probe through (`probing`: callers may
wait for it rather than fail): the probe's success closes it (with a fresh window), any failure
of the probe's attempt opens it for another cooldown. So a provider that recovers mid-step is
used again, and a dead one costs about `min_calls` failures, then one probe a cooldown.

`min_calls=0` turns it off. Thread-safe (one lock), so a blocking HTTP client may share it.
`shared_breaker(endpoint, make)` gives every client of one endpoint in a process the same breaker,
so the steps of a run after the first do not each pay for finding out that it is down.
"""

from __future__ import annotations

import enum
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Protocol

from rag_eval_pipeline.llm.failures import Decision, FailureClass, NotCalled


class BreakerState(enum.StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class BreakerSettings(Protocol):
    """A configuration holding the breaker settings (the LLM client's, the HTTP system's)."""

    @property
    def breaker_window(self) -> int: ...
    @property
    def breaker_min_calls(self) -> int: ...
    @property
    def breaker_failure_ratio(self) -> float: ...
    @property
    def breaker_cooldown_s(self) -> float: ...


class CircuitBreaker:
    """Failure ratio over the last `window` calls (at least `min_calls`), cooldown, one probe."""

    @classmethod
    def from_settings(cls, settings: BreakerSettings) -> CircuitBreaker:
        """A new breaker with the `breaker_*` settings of a configuration."""
        return cls(
            window=settings.breaker_window,
            min_calls=settings.breaker_min_calls,
            failure_ratio=settings.breaker_failure_ratio,
            cooldown_s=settings.breaker_cooldown_s,
        )

    def __init__(
        self,
        window: int = 20,
        min_calls: int = 10,
        failure_ratio: float = 0.5,
        cooldown_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if min_calls < 0 or window < max(1, min_calls):
            raise ValueError(f"need 0 <= min_calls <= window, got {min_calls} and {window}")
        if not 0 < failure_ratio <= 1:
            raise ValueError(f"failure_ratio must be in (0, 1], got {failure_ratio}")
        if cooldown_s < 0:
            raise ValueError(f"cooldown_s must be >= 0, got {cooldown_s}")
        self.window, self.min_calls = window, min_calls
        self.failure_ratio, self.cooldown_s = failure_ratio, cooldown_s
        self._clock = clock
        self._lock = threading.Lock()
        self._outcomes: deque[bool] = deque(maxlen=window)  # True: failed
        self._state = BreakerState.CLOSED
        self._opened_at = 0.0
        self._probe_out = False
        self.trips = 0  # times it opened
        self.skipped = 0  # calls refused while open
        self.last_error: str | None = None

    @property
    def state(self) -> BreakerState:
        with self._lock:
            return self._state

    @property
    def probing(self) -> bool:
        """Whether a half-open breaker's probe is out (callers may wait for its outcome)."""
        with self._lock:
            return self._state is BreakerState.HALF_OPEN and self._probe_out

    @property
    def is_open(self) -> bool:
        """Whether calls are being refused right now (open, or half-open with its probe out)."""
        return self.state is not BreakerState.CLOSED

    def allow(self) -> bool:
        """Whether a call may go out now; counts the refusal in `skipped` when not."""
        with self._lock:
            if self._state is BreakerState.OPEN and self._clock() >= self._opened_at + (
                self.cooldown_s
            ):
                self._state, self._probe_out = BreakerState.HALF_OPEN, False
            if self._state is BreakerState.CLOSED:
                return True
            if self._state is BreakerState.HALF_OPEN and not self._probe_out:
                self._probe_out = True
                return True
            self.skipped += 1
            return False

    def record_success(self) -> None:
        """A call succeeded: closes a half-open breaker."""
        with self._lock:
            if self._state is BreakerState.HALF_OPEN:
                self._state = BreakerState.CLOSED
                self._outcomes.clear()
            self._outcomes.append(False)

    def record_answered(self) -> None:
        """An attempt got an answer that is no outage (a rate limit, a bad request): closes a
        half-open breaker, whose probe would otherwise stay out for good; else counts nothing."""
        with self._lock:
            if self._state is BreakerState.HALF_OPEN:
                self._state = BreakerState.CLOSED
                self._outcomes.clear()

    def record_attempt_failure(self, error: str) -> bool:
        """An attempt failed with a fault that will be retried: reopens a half-open breaker
        (the probe failed); True exactly when this opened it."""
        with self._lock:
            self.last_error = error
            if self._state is BreakerState.HALF_OPEN:
                self._open()
                return True
            return False

    def record_failure(self, error: str) -> bool:
        """A call failed for good (retries exhausted) or a connection was refused; True exactly
        when this opened the breaker."""
        with self._lock:
            self.last_error = error
            if self._state is BreakerState.HALF_OPEN:
                self._open()
                return True
            if self._state is BreakerState.OPEN or self.min_calls == 0:
                return False
            self._outcomes.append(True)
            failures = sum(self._outcomes)
            count = len(self._outcomes)
            if count >= self.min_calls and failures >= self.failure_ratio * count:
                self._open()
                return True
            return False

    def observe(self, error: BaseException, decision: Decision, description: str) -> bool:
        """Feed one failed attempt, with what the retry policy decided (`llm.failures`); True
        exactly when this opened the breaker. An outage (a refused connection, or a transient
        fault with no retry left) is a failed call (`record_failure`); a transient fault to be
        retried, a failed attempt (`record_attempt_failure`); any other answer (a rate limit, a
        permanent error) shows the endpoint is up (`record_answered`); a call that was never
        sent (`NotCalled`: this breaker open, a spent budget) counts not at all."""
        if isinstance(error, NotCalled):
            return False
        if decision.failure is FailureClass.CONNECTION_REFUSED or (
            decision.failure is FailureClass.TRANSIENT and decision.delay_s is None
        ):
            return self.record_failure(description)
        if decision.failure is FailureClass.TRANSIENT:
            return self.record_attempt_failure(description)
        self.record_answered()
        return False

    def _open(self) -> None:
        self._state, self._opened_at, self._probe_out = BreakerState.OPEN, self._clock(), False
        self.trips += 1

    @property
    def message(self) -> str:
        """The error given to calls the open breaker did not send."""
        return (
            f"circuit breaker open: the endpoint looks down (at least {self.failure_ratio:.0%} "
            f"of its recent calls failed after retries, or it refused connections); not called "
            f"(last error: {self.last_error})"
        )


_SHARED: dict[Hashable, CircuitBreaker] = {}
_SHARED_LOCK = threading.Lock()


def shared_breaker(endpoint: Hashable, make: Callable[[], CircuitBreaker]) -> CircuitBreaker:
    """The process's breaker for `endpoint` (e.g. model and api_base), made on first use."""
    with _SHARED_LOCK:
        if endpoint not in _SHARED:
            _SHARED[endpoint] = make()
        return _SHARED[endpoint]
