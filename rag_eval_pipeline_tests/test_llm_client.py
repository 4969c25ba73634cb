"""LLMClient against a real loopback OpenAI-compatible server: order, concurrency, retries, cache.

Nothing is patched: litellm talks HTTP to `run_openai_server`, which scripts faults and records
every request it receives.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import litellm
import pytest

from rag_eval_pipeline.llm.cache import CACHE_FILENAME, ReplyCache
from rag_eval_pipeline.llm.client import LLMClient, LLMConfig, LLMReply
from rag_eval_pipeline.llm.failures import MAX_BACKOFF_S, backoff_delay, retry_after_s
from rag_eval_pipeline_tests.openai_server import OpenAIServer, count_tokens, run_openai_server

pytestmark = [pytest.mark.integration]

API_KEY = "sk-test-SECRET-0123456789"
MODEL = "openai/test-judge"


def ask(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "You are a judge."}, {"role": "user", "content": text}]


def make_client(server: OpenAIServer, **overrides: Any) -> LLMClient:
    settings: dict[str, Any] = {
        "model": MODEL,
        "api_base": server.base_url,
        "api_key": API_KEY,
        "timeout_s": 2.0,
        "backoff_base_s": 0.001,
        **overrides,
    }
    return LLMClient(LLMConfig(**settings))


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with run_openai_server() as running:
        yield running


def test_replies_keep_prompt_order_when_completions_finish_out_of_order() -> None:
    def slow_for_early_prompts(request: dict[str, Any]) -> str:
        number = int(request["messages"][-1]["content"].split()[-1])
        time.sleep((12 - number) * 0.01)
        return f"answer {number}"

    with run_openai_server(responder=slow_for_early_prompts) as server:
        replies = make_client(server, max_concurrency=12).complete_many(
            [ask(f"question {i}") for i in range(12)]
        )
    assert [reply.text for reply in replies] == [f"answer {i}" for i in range(12)]
    assert all(reply.error is None and reply.attempts == 1 for reply in replies)
    finish_order = sorted(server.requests, key=lambda request: request.finished_at or 0.0)
    assert finish_order[0].body["messages"][-1]["content"] != "question 0"


def test_requests_overlap_up_to_max_concurrency() -> None:
    n, latency_s, concurrency = 8, 0.5, 4
    with run_openai_server(latency_s=latency_s) as server:
        client = make_client(server, max_concurrency=concurrency, timeout_s=5.0)
        client.complete(ask("warm up litellm"))
        server.reset()
        started = time.perf_counter()
        replies = client.complete_many([ask(f"q{i}") for i in range(n)])
        elapsed = time.perf_counter() - started
    ideal = n * latency_s / concurrency
    assert all(reply.text == f"echo: q{i}" for i, reply in enumerate(replies))
    assert server.max_in_flight == concurrency
    # The bound leaves room for litellm's ~10-20 ms of CPU per call on a busy CI machine, while
    # still excluding anything that overlaps only two requests at a time.
    assert ideal <= elapsed < ideal * 2


def test_max_concurrency_holds_across_calls_from_several_threads() -> None:
    concurrency, per_thread = 3, 4
    with run_openai_server(latency_s=0.3) as server:
        client = make_client(server, max_concurrency=concurrency, timeout_s=5.0)
        client.complete(ask("warm up litellm"))
        server.reset()
        results: dict[int, list[str | None]] = {}

        def batch(thread: int) -> None:
            prompts = [ask(f"t{thread} q{i}") for i in range(per_thread)]
            results[thread] = [reply.text for reply in client.complete_many(prompts)]

        threads = [threading.Thread(target=batch, args=(t,)) for t in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert results == {t: [f"echo: t{t} q{i}" for i in range(per_thread)] for t in range(3)}
    assert server.request_count == 3 * per_thread
    assert server.max_in_flight == concurrency


def test_rate_limit_then_server_error_then_success(server: OpenAIServer) -> None:
    server.script("429", "500")
    client = make_client(server)
    reply = client.complete(ask("retry me"))
    assert (reply.text, reply.error, reply.attempts) == ("echo: retry me", None, 3)
    assert [request.behaviour for request in server.requests] == ["429", "500", "ok"]
    assert (client.usage.calls, client.usage.retries, client.usage.errors) == (3, 2, 0)


def test_retry_after_is_honoured() -> None:
    """A 429 with `Retry-After: 0.6` delays the retry by at least 0.6 s, although the client's
    own backoff would retry after about a millisecond."""
    with run_openai_server(faults=["429"], retry_after_s=0.6) as server:
        reply = make_client(server).complete(ask("wait for me"))
        first, second = server.requests
    assert (reply.text, reply.attempts) == ("echo: wait for me", 2)
    assert 0.6 <= second.started_at - first.started_at < 2.0


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0.0),  # a date in the past
        ({"retry-after": "soon"}, None),
        ({}, None),
    ],
)
def test_retry_after_forms(headers: dict[str, str], expected: float | None) -> None:
    error = RuntimeError("429")
    error.litellm_response_headers = headers  # type: ignore[attr-defined]
    assert retry_after_s(error) == expected


def test_hung_request_times_out_and_is_retried(server: OpenAIServer) -> None:
    server.script("hang")
    started = time.perf_counter()
    reply = make_client(server, timeout_s=0.5).complete(ask("are you there?"))
    assert time.perf_counter() - started >= 0.5
    assert (reply.text, reply.attempts) == ("echo: are you there?", 2)
    assert [request.behaviour for request in server.requests] == ["hang", "ok"]
    assert reply.latency_ms < 500


def test_exhausted_retries_give_an_error_reply_not_an_exception(server: OpenAIServer) -> None:
    server.script("500", "garbage", "429", "503", "502")
    client = make_client(server, max_retries=3)
    failed, fine = client.complete(ask("doomed")), client.complete(ask("fine"))
    assert failed.text is None
    assert failed.error is not None and failed.error.startswith("BadGatewayError: ")
    # The 429 is waited out without using up one of the 3 retries.
    assert (failed.attempts, failed.cached, failed.cost_usd) == (5, False, 0.0)
    assert fine.text == "echo: fine"
    assert server.request_count == 6
    assert (client.usage.calls, client.usage.retries, client.usage.errors) == (6, 4, 1)
    assert client.usage.rate_limited == 1


def test_unreachable_server_gives_an_error_reply(server: OpenAIServer) -> None:
    with run_openai_server() as closed:
        dead_base_url = closed.base_url
    reply = make_client(server, api_base=dead_base_url, max_retries=1).complete(ask("hello?"))
    assert reply.text is None
    assert reply.error is not None and "Connection error" in reply.error
    assert reply.attempts == 2


@pytest.mark.parametrize(("status", "error_class"), [("400", "BadRequestError"), ("401", "Auth")])
def test_client_errors_are_not_retried(server: OpenAIServer, status: str, error_class: str) -> None:
    server.script(status)
    reply = make_client(server).complete(ask("bad"))
    assert reply.text is None and reply.attempts == 1
    assert reply.error is not None and reply.error.startswith(error_class)
    assert server.request_count == 1


def test_cache_serves_repeats_without_calls_even_from_a_new_client(
    server: OpenAIServer, tmp_path: Path
) -> None:
    prompts = [ask(f"cached {i}") for i in range(5)]
    first = make_client(server, cache_dir=tmp_path)
    originals = first.complete_many(prompts)
    assert server.request_count == 5
    assert not any(reply.cached for reply in originals)

    progress: list[tuple[int, int]] = []
    again = first.complete_many(
        prompts, on_progress=lambda done, total: progress.append((done, total))
    )
    fresh = make_client(server, cache_dir=tmp_path)
    from_disk = fresh.complete_many(prompts)

    assert server.request_count == 5
    assert (tmp_path / CACHE_FILENAME).exists()
    assert progress == [(5, 5)]
    for original, *repeats in zip(originals, again, from_disk, strict=True):
        for repeat in repeats:
            assert repeat.cached and repeat.attempts == 0
            assert (repeat.text, repeat.latency_ms, repeat.prompt_tokens) == (
                original.text,
                original.latency_ms,
                original.prompt_tokens,
            )
    assert (fresh.usage.calls, fresh.usage.cache_hits, fresh.usage.prompt_tokens) == (0, 5, 0)


def test_cache_file_is_shared_safely_by_concurrent_processes(tmp_path: Path) -> None:
    writer = (
        "import sys\n"
        "from pathlib import Path\n"
        "from rag_eval_pipeline.llm.cache import CachedReply, ReplyCache\n"
        "cache = ReplyCache(Path(sys.argv[1]))\n"
        "for i in range(300):\n"
        "    cache.put(f'key-{i}', CachedReply(sys.argv[2], 1, 2, 0.5, 9.0), model='m')\n"
        "    cache.get_many([f'key-{i}', f'key-{i + 1}'])\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    processes = [
        subprocess.Popen([sys.executable, "-c", writer, str(tmp_path), f"writer {n}"], env=env)
        for n in range(4)
    ]
    assert [process.wait(timeout=60) for process in processes] == [0, 0, 0, 0]
    cache = ReplyCache(tmp_path)
    stored = cache.get_many([f"key-{i}" for i in range(300)])
    cache.close()
    assert len(stored) == 300
    assert {reply.text for reply in stored.values()} <= {f"writer {n}" for n in range(4)}


def test_use_cache_false_calls_again_and_the_first_answer_stays_cached(tmp_path: Path) -> None:
    counter = itertools.count(1)
    with run_openai_server(responder=lambda request: f"sample {next(counter)}") as server:
        client = make_client(server, cache_dir=tmp_path)
        first = client.complete(ask("judge this"))
        repeats = client.complete_many([ask("judge this")] * 2, use_cache=False)
        cached = client.complete(ask("judge this"))
    assert first.text == "sample 1"
    assert sorted(reply.text or "" for reply in repeats) == ["sample 2", "sample 3"]
    assert not any(reply.cached for reply in repeats)
    assert (cached.text, cached.cached) == ("sample 1", True)
    assert server.request_count == 3


def test_identical_prompts_in_one_batch_are_sent_once(server: OpenAIServer) -> None:
    client = make_client(server)
    progress: list[tuple[int, int]] = []
    replies = client.complete_many(
        [ask("same"), ask("same"), ask("other")],
        on_progress=lambda done, total: progress.append((done, total)),
    )
    assert [reply.text for reply in replies] == ["echo: same", "echo: same", "echo: other"]
    assert [reply.cached for reply in replies] == [False, True, False]
    assert server.request_count == 2
    assert progress[-1] == (3, 3)
    assert (client.usage.calls, client.usage.cache_hits) == (2, 1)


def test_tokens_and_cost_are_recorded(server: OpenAIServer) -> None:
    input_price, output_price = 1e-6, 3e-6
    litellm.register_model(
        {
            "openai/test-judge-priced": {
                "input_cost_per_token": input_price,
                "output_cost_per_token": output_price,
                "litellm_provider": "openai",
                "mode": "chat",
            }
        }
    )
    client = make_client(server, model="openai/test-judge-priced")
    replies = client.complete_many([ask("one two three"), ask("four")])
    for reply, words in zip(replies, ["one two three", "four"], strict=True):
        assert reply.prompt_tokens == count_tokens("You are a judge.") + count_tokens(words)
        assert reply.completion_tokens == count_tokens(f"echo: {words}")
        expected = reply.prompt_tokens * input_price + reply.completion_tokens * output_price
        assert reply.cost_usd == pytest.approx(expected)
    assert client.usage.prompt_tokens == sum(reply.prompt_tokens for reply in replies)
    assert client.usage.completion_tokens == sum(reply.completion_tokens for reply in replies)
    assert client.usage.cost_usd == pytest.approx(sum(reply.cost_usd for reply in replies))
    assert client.usage.cost_usd > 0
    assert client.usage.as_metadata() == {
        "calls": 2,
        "retries": 0,
        "rate_limited": 0,
        "timeouts": 0,
        "breaker_skipped": 0,
        "budget_refused": 0,
        "cache_hits": 0,
        "errors": 0,
        "prompt_tokens": client.usage.prompt_tokens,
        "completion_tokens": client.usage.completion_tokens,
        "cost_usd": client.usage.cost_usd,
    }


def test_unpriced_model_costs_zero(server: OpenAIServer) -> None:
    reply = make_client(server).complete(ask("free"))
    assert (reply.cost_usd, reply.prompt_tokens > 0) == (0.0, True)


def test_api_key_never_appears_in_errors_logs_repr_or_cache(
    server: OpenAIServer,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    server.script("401")
    client = make_client(server, cache_dir=tmp_path, max_concurrency=1)
    rejected, accepted = client.complete_many([ask("who am I"), ask("fine")])
    client.close()

    assert server.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    assert rejected.error is not None and "***" in rejected.error
    assert accepted.text == "echo: fine"
    captured = capfd.readouterr()
    cache_bytes = b"".join(path.read_bytes() for path in tmp_path.iterdir())
    for text in (rejected.error, caplog.text, repr(client), repr(client.config), *captured):
        assert API_KEY not in text
    assert API_KEY.encode() not in cache_bytes


def test_key_from_the_environment_is_redacted_too(
    server: OpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_key = "sk-env-SECRET-9876543210"
    monkeypatch.setenv("OPENAI_API_KEY", env_key)
    server.script("401")
    reply = make_client(server, api_key=None).complete(ask("who am I"))
    assert server.requests[0].headers["authorization"] == f"Bearer {env_key}"
    assert reply.error is not None and env_key not in reply.error


def test_usable_from_a_plain_thread_and_from_inside_a_running_loop(server: OpenAIServer) -> None:
    client = make_client(server)
    from_thread: list[LLMReply] = []
    worker = threading.Thread(target=lambda: from_thread.append(client.complete(ask("thread"))))
    worker.start()
    worker.join()

    async def inside_a_loop() -> LLMReply:
        return client.complete(ask("loop"))

    assert from_thread[0].text == "echo: thread"
    assert asyncio.run(inside_a_loop()).text == "echo: loop"


def test_many_calls_reuse_one_http_client_and_leak_no_sockets(server: OpenAIServer) -> None:
    client = make_client(server)
    client.complete(ask("first"))
    open_files = len(os.listdir("/proc/self/fd"))
    for i in range(15):
        client.complete(ask(f"call {i}"))
    assert len(os.listdir("/proc/self/fd")) <= open_files + 2


def test_calling_the_client_from_its_own_progress_callback_fails_fast(server: OpenAIServer) -> None:
    client = make_client(server)
    with pytest.raises(RuntimeError, match="own callbacks"):
        client.complete_many([ask("outer")], on_progress=lambda *_: client.complete(ask("inner")))


def test_server_rejects_unknown_scripted_behaviours(server: OpenAIServer) -> None:
    with pytest.raises(ValueError, match="unknown behaviours"):
        server.script("explode")


def test_empty_batch_makes_no_calls(server: OpenAIServer) -> None:
    assert make_client(server).complete_many([]) == []
    assert server.request_count == 0


def test_backoff_grows_exponentially_with_jitter_and_is_capped() -> None:
    for retry in (1, 2, 3):
        ceiling = 0.5 * 2 ** (retry - 1)
        delays = [backoff_delay(retry, 0.5) for _ in range(200)]
        assert all(ceiling / 2 <= delay <= ceiling for delay in delays)
        assert len(set(delays)) > 1
    assert backoff_delay(30, 1.0) <= MAX_BACKOFF_S


@pytest.mark.parametrize(
    "bad", [{"max_concurrency": 0}, {"max_retries": -1}, {"timeout_s": 0}, {"backoff_base_s": -1}]
)
def test_config_rejects_impossible_settings(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        LLMConfig(model=MODEL, **bad)
