"""Adaptive concurrency (AIMD): an in-flight limit that halves on rate limits and grows on success.

`AdaptiveLimit` bounds the requests in flight at once, between 1 and `maximum` (the configured
`max_concurrency`, where it starts). A rate-limited request multiplies the limit by `decrease`
(0.5); each successful request adds `increase` (one) back, up to `maximum`. Only one decrease
happens per round trip: a 429 counts only if its request was sent after the last decrease, since
the requests already in flight when the provider started refusing say nothing new; and only one
per ``Retry-After`` the provider asked for: 429s within that window say nothing new either.
(Without that hold, a provider refusing a steady share of requests whatever the load, say 30%,
would halve the limit every round trip, down to 3 of 32 in the benchmark; with it, to 13.) A call
waiting out a ``Retry-After`` or a backoff holds no slot, so the slots keep the provider busy with
other prompts meanwhile.

A freed slot is handed to the longest-waiting request directly (first in, first out, as
`asyncio.Semaphore` does): one wake-up per slot, not one per waiter, so a long queue of prompts
costs the event loop nothing while it waits.

Used from one event loop (the LLM client's); not thread-safe.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress


class AdaptiveLimit:
    """At most `limit` holders of a slot at once; AIMD between 1 and `maximum`."""

    def __init__(self, maximum: int, decrease: float = 0.5, increase: float = 1.0) -> None:
        if maximum < 1:
            raise ValueError(f"maximum must be >= 1, got {maximum}")
        if not 0 < decrease < 1:
            raise ValueError(f"decrease must be in (0, 1), got {decrease}")
        self.maximum, self.decrease, self.increase = maximum, decrease, increase
        self._limit = float(maximum)
        self._in_flight = 0
        self._epoch = 0  # decreases so far
        self._hold_until = 0.0  # no decrease before this time (monotonic seconds)
        self._waiters: deque[asyncio.Future[None]] = deque()
        self.lowest = maximum  # the lowest limit reached, for metadata
        self.peak_in_flight = 0

    @property
    def limit(self) -> int:
        """The current in-flight limit."""
        return max(1, math.floor(self._limit))

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[int]:
        """Hold one slot for the block; yields the epoch to pass to `rate_limited`."""
        if self._waiters or self._in_flight >= self.limit:
            granted = asyncio.get_running_loop().create_future()
            self._waiters.append(granted)
            try:
                await granted
            except asyncio.CancelledError:
                if granted.cancelled():
                    with suppress(ValueError):
                        self._waiters.remove(granted)
                else:  # the slot was handed over just before the cancellation
                    self._release()
                raise
        else:
            self._take()
        try:
            yield self._epoch
        finally:
            self._release()

    def _take(self) -> None:
        self._in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self._in_flight)

    def _release(self) -> None:
        self._in_flight -= 1
        self._hand_over()

    def _hand_over(self) -> None:
        """Give the free slots to the longest-waiting requests."""
        while self._waiters and self._in_flight < self.limit:
            granted = self._waiters.popleft()
            if not granted.done():
                self._take()
                granted.set_result(None)

    def succeeded(self) -> None:
        """A request got its reply: additive increase, which may free a slot for a waiter."""
        self._limit = min(float(self.maximum), self._limit + self.increase)
        self._hand_over()

    def rate_limited(self, epoch: int, hold_s: float = 0.0) -> None:
        """A request sent in `epoch` was rate limited and asked to wait `hold_s`: multiplicative
        decrease, at most once per epoch and once per `hold_s`."""
        now = time.monotonic()
        if epoch != self._epoch or now < self._hold_until:
            return
        self._epoch += 1
        self._hold_until = now + hold_s
        self._limit = max(1.0, self._limit * self.decrease)
        self.lowest = min(self.lowest, self.limit)
