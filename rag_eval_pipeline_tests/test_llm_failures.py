"""Failures by class against real loopback servers: classification, rate limits that wait,
transient faults retried, permanent errors not retried, hung calls cut off, the breaker that opens
on outages only and closes again, AIMD, and the same policy driving a plain httpx client.

Nothing is patched: litellm (or httpx) talks HTTP to `run_openai_server`.
"""

from __future__ import annotations

import asyncio
import itertools
import random
import socket
import time
from typing import Any

import httpx
import litellm
import pytest

from rag_eval_pipeline.llm import client as client_module
from rag_eval_pipeline.llm.adaptive import AdaptiveLimit
from rag_eval_pipeline.llm.breaker import BreakerState, CircuitBreaker
from rag_eval_pipeline.llm.failures import (
    AttemptTimeout,
    Decision,
    FailureClass,
    NotCalled,
    RetryPolicy,
    classify,
    retry_async,
    retry_sync,
)
from rag_eval_pipeline_tests.openai_server import run_openai_server
from rag_eval_pipeline_tests.test_llm_client import ask, make_client

pytestmark = [pytest.mark.integration]


def first_attempt_fails(body: dict[str, Any], seen: int) -> str:
    return "500" if seen == 0 else "ok"


def closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def litellm_error(api_base: str, timeout_s: float = 2.0) -> BaseException:
    """The exception litellm raises for one call to `api_base`."""

    async def call() -> None:
        await litellm.acompletion(
            model="openai/test-judge",
            messages=ask("classify me"),
            api_base=api_base,
            api_key="sk-test",
            num_retries=0,
            timeout=timeout_s,
        )

    with pytest.raises(Exception) as raised:
        asyncio.run(call())
    return raised.value


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        ("429", FailureClass.RATE_LIMITED),
        ("500", FailureClass.TRANSIENT),
        ("503", FailureClass.TRANSIENT),
        ("400", FailureClass.PERMANENT),
        ("401", FailureClass.PERMANENT),
        ("403", FailureClass.PERMANENT),
        ("404", FailureClass.PERMANENT),
    ],
)
def test_litellm_errors_from_a_real_server_are_classified(
    status: str, expected: FailureClass
) -> None:
    with run_openai_server(faults=[status]) as server:
        error = litellm_error(server.base_url)
    assert classify(error) is expected
    assert classify(int(status)) is expected


def test_refused_connection_and_timeout_are_classified() -> None:
    refused = litellm_error(closed_port_url())
    # litellm reports it as a 500 InternalServerError; the cause chain says what happened.
    assert classify(refused) is FailureClass.CONNECTION_REFUSED
    with run_openai_server(faults=["hang"], hang_s=2.0) as server:
        timed_out = litellm_error(server.base_url, timeout_s=0.3)
    assert classify(timed_out) is FailureClass.TRANSIENT
    assert classify(AttemptTimeout(1.0)) is FailureClass.TRANSIENT
    assert classify(ConnectionResetError()) is FailureClass.TRANSIENT
    assert classify(ValueError("a bug")) is FailureClass.PERMANENT


def test_first_attempt_500s_are_retried_and_never_trip_the_breaker() -> None:
    """The issue's case: 500 to the first attempt of every prompt, 200 to the retry."""
    n = 60
    with run_openai_server(chooser=first_attempt_fails) as server:
        client = make_client(server, max_concurrency=8, breaker_min_calls=5)
        replies = client.complete_many([ask(f"q{i}") for i in range(n)])
    assert [reply.error for reply in replies] == [None] * n
    assert [reply.attempts for reply in replies] == [2] * n
    assert server.request_count == 2 * n
    assert client.breaker.trips == 0 and client.breaker.state is BreakerState.CLOSED


def test_rate_limits_wait_for_retry_after_and_never_fail() -> None:
    rng = random.Random(7)
    n = 40

    def thirty_percent_429(body: dict[str, Any], seen: int) -> str:
        return "429" if rng.random() < 0.3 else "ok"

    with run_openai_server(chooser=thirty_percent_429, retry_after_s=0.2) as server:
        client = make_client(server, max_concurrency=8, max_retries=0, breaker_min_calls=2)
        replies = client.complete_many([ask(f"q{i}") for i in range(n)])
        limited = [r for r in server.requests if r.behaviour == "429"]
    assert [reply.error for reply in replies] == [None] * n
    assert len(limited) == client.usage.rate_limited > 0
    # max_retries=0, yet every 429 was retried: waits are not retries, nor breaker failures.
    assert client.usage.calls == n + len(limited)
    assert client.breaker.trips == 0
    assert client.lowest_concurrency < 8
    # Every retry after a 429 came at least Retry-After (0.2 s) after it.
    by_prompt: dict[str, list[float]] = {}
    for request in sorted(server.requests, key=lambda r: r.started_at):
        by_prompt.setdefault(request.body["messages"][-1]["content"], []).append(request.started_at)
    gaps = [b - a for starts in by_prompt.values() for a, b in itertools.pairwise(starts)]
    assert gaps and min(gaps) >= 0.2


def test_rate_limit_budget_bounds_the_wait_and_says_so() -> None:
    with run_openai_server(faults=["429"] * 100, retry_after_s=0.2) as server:
        client = make_client(server, rate_limit_budget_s=0.5, breaker_min_calls=1)
        started = time.perf_counter()
        reply = client.complete(ask("never let in"))
        elapsed = time.perf_counter() - started
    assert reply.error is not None and reply.error.startswith("rate limited: ")
    assert "RateLimitError" in reply.error
    assert 0.4 <= elapsed < 1.5 and 2 <= server.request_count <= 4
    assert client.breaker.trips == 0


@pytest.mark.parametrize("status", ["400", "401", "403", "404"])
def test_permanent_errors_are_one_request_and_no_outage(status: str) -> None:
    with run_openai_server(faults=[status] * 20) as server:
        client = make_client(server, breaker_min_calls=2, max_concurrency=4)
        replies = client.complete_many([ask(f"q{i}") for i in range(20)])
    assert all(reply.error and reply.attempts == 1 for reply in replies)
    assert server.request_count == 20
    assert client.breaker.trips == 0


def test_hung_calls_cost_at_most_timeout_times_attempts_and_say_timeout() -> None:
    timeout_s, max_retries = 0.3, 2
    with run_openai_server(faults=["hang"] * 100, hang_s=10.0) as server:
        client = make_client(server, timeout_s=timeout_s, max_retries=max_retries)
        started = time.perf_counter()
        reply = client.complete(ask("anyone?"))
        elapsed = time.perf_counter() - started
        assert server.request_count == max_retries + 1
    attempts = max_retries + 1
    assert reply.error == f"Timeout: no reply within {timeout_s:g} s"
    assert reply.attempts == attempts and client.usage.timeouts == attempts
    # backoff_base_s is 1 ms in these tests; the rest is litellm's per-attempt overhead on a
    # loaded machine (the backstop, 2 × timeout_s + 10 s, would take over 10 s)
    assert timeout_s * attempts <= elapsed < timeout_s * attempts + 2.0


def test_dead_endpoint_opens_the_breaker_quickly() -> None:
    with run_openai_server() as server:
        pass
    client = make_client(server, api_base=closed_port_url(), max_concurrency=8)
    started = time.perf_counter()
    replies = client.complete_many([ask(f"q{i}") for i in range(200)])
    elapsed = time.perf_counter() - started
    assert all(reply.error for reply in replies)
    assert client.breaker.trips == 1
    # refused connections count at once: about min_calls (10) attempts, plus those in flight
    assert client.usage.calls <= 10 + 8 * 2
    assert sum("circuit breaker open" in (reply.error or "") for reply in replies) >= 180
    assert elapsed < 15  # seconds on a loaded machine; the goal is under a minute


def test_breaker_half_opens_and_a_recovered_provider_is_used_again() -> None:
    with run_openai_server(faults=["500"] * 5) as server:
        client = make_client(
            server, max_concurrency=1, max_retries=0, breaker_min_calls=4, breaker_cooldown_s=0.3
        )
        down = client.complete_many([ask(f"down {i}") for i in range(20)])
        assert client.breaker.state is BreakerState.OPEN and server.request_count == 4
        time.sleep(0.35)
        # Half-open: one probe goes out, gets the last scripted 500, and the breaker reopens.
        assert client.complete(ask("probe 1")).error is not None
        assert client.breaker.trips == 2 and server.request_count == 5
        assert client.complete(ask("too early")).error is not None
        assert server.request_count == 5
        time.sleep(0.35)
        # Another client of the endpoint (a later step) shares its breaker. Its first prompt is
        # the probe; the other 9, 8 at once, wait for its outcome instead of failing.
        later_step = make_client(server, max_concurrency=8)
        assert later_step.breaker is client.breaker
        up = later_step.complete_many([ask(f"up {i}") for i in range(10)])
    assert [reply.error is not None for reply in down] == [True] * 20
    assert [reply.text for reply in up] == [f"echo: up {i}" for i in range(10)]
    assert client.breaker.state is BreakerState.CLOSED and server.request_count == 15


def test_breaker_counts_a_failure_ratio_not_a_streak() -> None:
    now = [0.0]
    breaker = CircuitBreaker(window=10, min_calls=4, failure_ratio=0.5, clock=lambda: now[0])
    for _ in range(3):
        assert not breaker.record_failure("500")  # fewer than min_calls outcomes
    for _ in range(10):
        breaker.record_success()
    for _ in range(4):
        assert not breaker.record_failure("500")  # 4 in a row, but 4 of the last 10 calls
    assert breaker.record_failure("500")  # 5 of 10: opens
    assert not breaker.allow() and breaker.skipped == 1
    now[0] = 30.0
    assert breaker.allow() and breaker.state is BreakerState.HALF_OPEN  # the probe
    assert not breaker.allow()  # only one probe at a time
    breaker.record_success()
    assert breaker.state is BreakerState.CLOSED and breaker.allow()
    for _ in range(10):
        breaker.record_failure("500")
    now[0] = 60.0
    assert breaker.allow() and not breaker.allow()  # a probe is out ...
    breaker.record_answered()  # ... and got a 400 or a 429: the endpoint is up
    assert breaker.state is BreakerState.CLOSED and breaker.allow()
    assert CircuitBreaker(min_calls=0).record_failure("x") is False  # off


def test_observe_is_the_one_rule_of_which_attempt_feeds_the_breaker() -> None:
    """Outages (a refused connection, a transient fault with no retry left) are failed calls; a
    transient fault to be retried fails only a half-open probe; rate limits and permanent errors
    show the endpoint is up; a call never sent counts not at all."""

    def opens(failure: FailureClass, delay_s: float | None, error: Exception) -> bool:
        breaker = CircuitBreaker(window=1, min_calls=1, failure_ratio=1.0)
        return breaker.observe(error, Decision(failure, 1, delay_s, "x"), "described")

    error = RuntimeError("any")
    assert opens(FailureClass.CONNECTION_REFUSED, 0.5, error)
    assert opens(FailureClass.TRANSIENT, None, error)  # retries exhausted
    assert not opens(FailureClass.TRANSIENT, 0.5, error)  # to be retried
    assert not opens(FailureClass.RATE_LIMITED, 1.0, error)
    assert not opens(FailureClass.PERMANENT, None, error)
    assert not opens(FailureClass.CONNECTION_REFUSED, None, NotCalled("breaker open"))
    probing = CircuitBreaker(window=1, min_calls=1, failure_ratio=1.0, cooldown_s=0)
    probing.record_failure("down")
    assert probing.allow() and probing.probing
    retried = Decision(FailureClass.TRANSIENT, 1, 0.5, "retry")
    assert probing.observe(RuntimeError("500"), retried, "500")  # the probe failed: reopens
    probing.allow()
    probing.observe(RuntimeError("429"), Decision(FailureClass.RATE_LIMITED, 1, 1.0, "retry"), "")
    assert probing.state is BreakerState.CLOSED  # the probe got an answer: the endpoint is up


def test_aimd_halves_once_per_round_trip_and_grows_back_by_one() -> None:
    async def scenario() -> list[int]:
        limit = AdaptiveLimit(16)
        seen = []
        async with limit.slot() as first_epoch, limit.slot() as second_epoch:
            assert first_epoch == second_epoch == 0
        limit.rate_limited(first_epoch)
        limit.rate_limited(second_epoch)  # sent before the decrease: ignored
        seen.append(limit.limit)
        async with limit.slot() as epoch:
            limit.rate_limited(epoch)
        seen.append(limit.limit)
        for _ in range(3):
            limit.succeeded()
        seen.append(limit.limit)
        for _ in range(100):
            limit.succeeded()
        seen.append(limit.limit)
        return seen

    assert asyncio.run(scenario()) == [8, 4, 7, 16]


def test_aimd_halves_at_most_once_per_retry_after() -> None:
    async def scenario() -> list[int]:
        limit = AdaptiveLimit(16)
        limit.rate_limited(0, hold_s=60.0)
        async with limit.slot() as epoch:
            limit.rate_limited(epoch, hold_s=60.0)  # within the provider's Retry-After: no news
        return [limit.limit]

    assert asyncio.run(scenario()) == [8]


def test_aimd_converges_to_a_providers_concurrency_limit() -> None:
    """A provider that answers 429 beyond 4 requests in flight, a client allowed 16: the client
    comes down towards the provider's limit (4-5 in flight at the lowest) and meets about half
    the 429s it would at a fixed 16 in flight (measured: 64-81 against 145-149 for 60 prompts)."""
    n = 60
    with run_openai_server(latency_s=0.1, retry_after_s=0.1, concurrency_limit=4) as server:
        client = make_client(server, max_concurrency=16, breaker_min_calls=0)
        replies = client.complete_many([ask(f"q{i}") for i in range(n)])
    assert [reply.error for reply in replies] == [None] * n
    assert client.lowest_concurrency <= 8
    assert 0 < client.usage.rate_limited < 110


def test_aimd_limit_bounds_requests_in_flight() -> None:
    async def scenario() -> int:
        limit = AdaptiveLimit(4)
        limit.rate_limited(0)  # down to 2
        in_flight, peak = 0, 0

        async def work() -> None:
            nonlocal in_flight, peak
            async with limit.slot():
                in_flight += 1
                peak = max(peak, in_flight)
                await asyncio.sleep(0.01)
                in_flight -= 1

        await asyncio.gather(*(work() for _ in range(10)))
        return peak

    assert asyncio.run(scenario()) == 2


def test_aimd_slots_go_first_in_first_out_and_cancelled_waiters_lose_none() -> None:
    """A freed slot goes to the longest waiter; a waiter cancelled in the queue, or just after
    its slot was handed over, leaves every slot free again; an increase wakes a waiter."""

    async def scenario() -> tuple[list[int], int, int]:
        limit = AdaptiveLimit(2)
        limit.rate_limited(0)  # down to 1
        order: list[int] = []
        release = asyncio.Event()

        async def work(i: int) -> None:
            async with limit.slot():
                order.append(i)
                await release.wait()

        holder = asyncio.create_task(work(0))
        await asyncio.sleep(0)
        waiters = [asyncio.create_task(work(i)) for i in range(1, 5)]
        await asyncio.sleep(0)
        waiters[1].cancel()  # cancelled while queued
        release.set()
        await asyncio.sleep(0)  # the holder leaves; its slot is handed to waiter 1
        waiters[0].cancel()  # cancelled after the hand-over, before it ran
        await asyncio.wait_for(asyncio.gather(holder, *waiters, return_exceptions=True), 5.0)
        limit.succeeded()  # back to 2: nothing waits, nothing is held
        return order, limit.in_flight, limit.peak_in_flight

    order, in_flight, peak = asyncio.run(scenario())
    assert order == [0, 3, 4] and in_flight == 0 and peak == 1


def test_a_prompt_queued_for_a_slot_longer_than_the_backstop_is_not_a_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The backstop times the request alone: at one request in flight, the fifth prompt waits
    3.2 s for its slot, longer than the backstop (2 × timeout_s = 3 s here), and still gets its
    reply (before, it became `Timeout: no reply within 3 s` without ever being sent)."""
    with run_openai_server(latency_s=0.8) as server:
        make_client(server).complete(ask("warm-up"))  # litellm's first-call setup, not timed
        monkeypatch.setattr(client_module, "BACKSTOP_SLACK_S", 0.0)
        client = make_client(server, max_concurrency=1, timeout_s=1.5, max_retries=0)
        replies = client.complete_many([ask(f"queued {i}") for i in range(5)])
    assert [reply.error for reply in replies] == [None] * 5
    assert client.usage.timeouts == 0 and client.usage.calls == 5


def test_the_same_policy_drives_a_plain_httpx_client() -> None:
    """What an HTTP system under test reuses: `retry_sync` around any blocking call."""
    policy = RetryPolicy(max_retries=2, backoff_base_s=0.001, rate_limit_budget_s=5.0)
    server_running = run_openai_server(faults=["503", "429"], retry_after_s=0.2)
    with server_running as server, httpx.Client(timeout=2.0) as http:

        def post() -> dict[str, Any]:
            response = http.post(
                f"{server.base_url}/chat/completions",
                json={"model": "m", "messages": ask("hello")},
            )
            response.raise_for_status()
            return response.json()

        decisions: list[str] = []
        outcome = retry_sync(post, policy, lambda error, d: decisions.append(d.failure))
        refused = retry_sync(lambda: http.get(closed_port_url()).raise_for_status(), policy)
    assert outcome.value is not None and outcome.attempts == 3
    assert decisions == [FailureClass.TRANSIENT, FailureClass.RATE_LIMITED]
    assert outcome.rate_limited == 1 and outcome.elapsed_s >= 0.2
    assert refused.failure is FailureClass.CONNECTION_REFUSED and refused.exhausted
    assert refused.attempts == 3


def test_retry_async_cuts_off_a_hung_attempt() -> None:
    async def hang() -> None:
        await asyncio.sleep(10)

    policy = RetryPolicy(max_retries=1, backoff_base_s=0.001, attempt_timeout_s=0.1)
    outcome = asyncio.run(retry_async(hang, policy))
    assert isinstance(outcome.error, AttemptTimeout) and outcome.attempts == 2
    assert outcome.reason == "retries exhausted" and outcome.elapsed_s < 1
