"""The LLM client every judge and generator goes through: litellm, concurrency, retries, caching.

`LLMClient.complete_many` sends a batch of chat prompts to any litellm-supported model
("gpt-4o-mini", "openai/<name>" with an `api_base`, "ollama/llama3.2", ...) with at most
`max_concurrency` requests of the client in flight (across all of its calls, from any thread),
and returns one `LLMReply` per prompt, in order. It is a
plain synchronous call, usable from any thread, including one that runs an event loop of its own:
the requests run on one long-lived event loop per process, in a daemon thread. A long-lived loop
matters because litellm caches one HTTP client (with open connections) per event loop; a fresh
loop per call would leak a client and its sockets on every call, and lose connection reuse.

Failures never escape as exceptions. Rate limits, timeouts, connection errors and 5xx replies are
retried up to `max_retries` times with exponential backoff and jitter, waiting at least as long
as the provider's ``Retry-After`` / ``retry-after-ms`` asks (capped at 60 s; the retry loop lives
here, litellm's own is disabled so attempts are counted); anything else, or a call still
failing after its retries, becomes a reply with `error` set. Error texts never contain the API
key.

A circuit breaker stops a client from hammering an endpoint that is down: after
`breaker_failures` failed attempts in a row (5 by default; any success resets the count) the
client makes no more calls for the rest of its life (one asset step): every prompt not answered
yet, including those waiting to retry, gets the error `circuit breaker open ...` at once, and
one warning is logged instead of one per prompt. `breaker_failures=0` turns it off.

Successful replies are stored in the reply cache (`llm.cache`, local or on an object store) when
`cache_dir` is set; identical prompts (same model, api_base, messages, temperature and
max_tokens) are then answered from it without a provider call, and identical prompts within one
batch are sent once. `use_cache=False` forces fresh calls (for judge-consistency repeats) and
still records replies for prompts not cached yet.

The first call imports litellm (not the import of this module: it takes seconds) and sets
``litellm.suppress_debug_info`` so litellm does not print its "Give Feedback / Get Help" banner
on every failed call.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import os
import random
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from functools import cache
from types import ModuleType
from typing import Any, TypeVar, cast

from rag_eval_pipeline.llm.cache import CachedReply, cache_key, open_reply_cache
from rag_eval_pipeline.llm.secrets import RedactingFilter, redact

Messages = Sequence[Mapping[str, str]]
ProgressCallback = Callable[[int, int], None]
T = TypeVar("T")

logger = logging.getLogger(__name__)

MAX_BACKOFF_S = 60.0
MAX_ERROR_CHARS = 500
# litellm's loggers and its HTTP client's, which may log request headers and provider errors
REDACTED_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "httpx", "httpcore", __name__)


@cache
def _litellm() -> ModuleType:
    """litellm, imported on first use (its import takes seconds and fetches nothing offline)."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    for name in REDACTED_LOGGERS:
        logging.getLogger(name).addFilter(RedactingFilter())
    return litellm


def _retryable_errors() -> tuple[type[BaseException], ...]:
    litellm = _litellm()
    return (
        litellm.RateLimitError,
        litellm.Timeout,
        litellm.APIConnectionError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
        litellm.BadGatewayError,
    )


@dataclass(frozen=True)
class LLMConfig:
    """Which model to call and how; `api_key` is excluded from repr, logs and the cache key."""

    model: str
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    temperature: float = 0.0
    max_tokens: int | None = 512
    max_concurrency: int = 8
    timeout_s: float = 60.0
    max_retries: int = 3
    backoff_base_s: float = 1.0
    cache_dir: str | os.PathLike[str] | None = None
    breaker_failures: int = 5

    def __post_init__(self) -> None:
        if self.breaker_failures < 0:
            raise ValueError(f"breaker_failures must be >= 0, got {self.breaker_failures}")
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {self.max_concurrency}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s}")
        if self.backoff_base_s < 0:
            raise ValueError(f"backoff_base_s must be >= 0, got {self.backoff_base_s}")


@dataclass(frozen=True)
class LLMReply:
    """The outcome of one prompt.

    `text` is None exactly when `error` is set. Cache hits carry the tokens, cost and latency of
    the call that produced them, with `cached=True` and `attempts=0`; `LLMUsage` counts only what
    was actually spent.
    """

    text: str | None
    error: str | None
    latency_ms: float
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    cached: bool
    attempts: int
    model: str


@dataclass
class LLMUsage:
    """Cumulative usage of one client.

    `calls` counts requests actually sent to the provider, retries included (`retries` of them
    were retries); `cache_hits` counts replies served without a call; `errors` counts replies
    returned with an error (prompts the open circuit breaker never sent included: see
    `CircuitBreaker.skipped`); tokens and cost are those of the provider calls only.
    """

    calls: int = 0
    retries: int = 0
    cache_hits: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def as_metadata(self) -> dict[str, float | int]:
        """The counters as a flat dict, e.g. for Dagster output metadata."""
        return asdict(self)


def is_retryable(error: BaseException) -> bool:
    """Whether a failed call may succeed if repeated: rate limits, timeouts, connection, 5xx."""
    if isinstance(error, _retryable_errors()):
        return True
    status = getattr(error, "status_code", None)
    return isinstance(status, int) and (status in (408, 429) or status >= 500)


def retry_after_s(error: BaseException) -> float | None:
    """The wait a provider asked for with the error: ``retry-after-ms``, or ``Retry-After`` in
    seconds or as an HTTP date; None when it sent neither (or nothing readable)."""
    for headers in (
        getattr(error, "litellm_response_headers", None),
        getattr(error, "headers", None),
        getattr(getattr(error, "response", None), "headers", None),
    ):
        if not headers:
            continue
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
    """Seconds before retry number `retry` (1-based): base·2^(retry-1), its upper half jittered."""
    ceiling = min(MAX_BACKOFF_S, base_s * 2 ** (retry - 1))
    return ceiling / 2 + random.uniform(0, ceiling / 2)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class _BackgroundLoop:
    """One event loop per process, running forever in a daemon thread, started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0

    def get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="llm-client", daemon=True)
                thread.start()
                self._loop, self._pid = loop, os.getpid()
            return self._loop

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run `coroutine` on the loop and wait for it; interrupting the wait cancels it."""
        loop = self.get()
        if _running_loop() is loop:
            coroutine.close()
            raise RuntimeError("LLMClient cannot be called from its own callbacks (on_progress)")
        future = asyncio.run_coroutine_threadsafe(coroutine, loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise


_BACKGROUND_LOOP = _BackgroundLoop()


class CircuitBreaker:
    """Opens after `threshold` failed attempts in a row (0: never); a success resets the count.

    Only touched from the client's event-loop thread, so it needs no lock.
    """

    def __init__(self, threshold: int) -> None:
        self.threshold = threshold
        self.consecutive = 0
        self.last_error: str | None = None
        self.is_open = False
        self.skipped = 0

    def record(self, error: str | None) -> bool:
        """Count one attempt's outcome; True exactly when this failure opened the breaker."""
        if error is None:
            self.consecutive = 0
            return False
        self.consecutive += 1
        self.last_error = error
        opens = not self.is_open and self.threshold > 0 and self.consecutive >= self.threshold
        self.is_open = self.is_open or opens
        return opens

    @property
    def message(self) -> str:
        """The error given to prompts the open breaker did not send."""
        return (
            f"circuit breaker open after {self.consecutive} failed calls in a row, not called "
            f"(last error: {self.last_error})"
        )


class LLMClient:
    """Concurrent, retrying, caching chat completions through litellm for one `LLMConfig`."""

    def __init__(self, config: LLMConfig) -> None:
        self.config = config
        self.usage = LLMUsage()
        self._usage_lock = threading.Lock()
        self._cache = open_reply_cache(config.cache_dir) if config.cache_dir is not None else None
        self._slots: asyncio.Semaphore | None = None
        self._slots_loop: asyncio.AbstractEventLoop | None = None
        self.breaker = CircuitBreaker(config.breaker_failures)
        # Provider calls whose cost litellm could not price (no known price for the model):
        # their `cost_usd` is 0.0, so a total over them is unknown, not zero.
        self.unpriced_calls = 0

    def __repr__(self) -> str:
        return f"LLMClient({self.config!r})"

    def complete(self, messages: Messages, *, use_cache: bool = True) -> LLMReply:
        """The reply to one prompt (a list of chat messages)."""
        return self.complete_many([messages], use_cache=use_cache)[0]

    def complete_many(
        self,
        prompts: Sequence[Messages],
        *,
        use_cache: bool = True,
        on_progress: ProgressCallback | None = None,
    ) -> list[LLMReply]:
        """One reply per prompt, in order.

        `on_progress(done, total)` is called (from the event-loop thread) as replies land.
        """
        if not prompts:
            return []
        return _BACKGROUND_LOOP.run(self._complete_all(prompts, use_cache, on_progress))

    def forget(self, prompts: Sequence[Messages]) -> None:
        """Drop the cached replies to `prompts`, so the next run asks again (e.g. a reply that
        arrived but could not be used: it is recorded as an error row, not kept as an answer)."""
        if self._cache is not None and prompts:
            self._cache.discard([self._key(messages) for messages in prompts])

    def close(self) -> None:
        """Release the cache connection."""
        if self._cache is not None:
            self._cache.close()

    def _key(self, messages: Messages) -> str:
        config = self.config
        return cache_key(
            model=config.model,
            api_base=config.api_base,
            messages=messages,
            temperature=config.temperature,
            max_tokens=config.max_tokens,
        )

    async def _complete_all(
        self,
        prompts: Sequence[Messages],
        use_cache: bool,
        on_progress: ProgressCallback | None,
    ) -> list[LLMReply]:
        total = len(prompts)
        keys = [self._key(messages) for messages in prompts]
        replies: list[LLMReply | None] = [None] * total
        if use_cache and self._cache is not None:
            hits = self._cache.get_many(keys)
            for index, key in enumerate(keys):
                if key in hits:
                    replies[index] = self._from_cache(hits[key])
        done = sum(reply is not None for reply in replies)
        self._count(cache_hits=done)
        if done and on_progress is not None:
            on_progress(done, total)

        groups: dict[str, list[int]] = {}
        for index, key in enumerate(keys):
            if replies[index] is None:
                groups.setdefault(key if use_cache else str(index), []).append(index)
        semaphore = self._concurrency_slots()

        async def answer(indices: list[int]) -> tuple[list[int], LLMReply]:
            first = indices[0]
            return indices, await self._call(keys[first], prompts[first], semaphore)

        tasks = [asyncio.ensure_future(answer(indices)) for indices in groups.values()]
        for finished in asyncio.as_completed(tasks):
            indices, reply = await finished
            duplicate = reply if reply.error else replace(reply, cached=True, attempts=0)
            replies[indices[0]] = reply
            for index in indices[1:]:
                replies[index] = duplicate
            if reply.error:
                self._count(errors=len(indices))
            else:
                self._count(cache_hits=len(indices) - 1)
            done += len(indices)
            if on_progress is not None:
                on_progress(done, total)
        return cast(list[LLMReply], replies)

    def _concurrency_slots(self) -> asyncio.Semaphore:
        """The client's `max_concurrency` slots, shared by all of its `complete_many` calls in
        flight at once (from several threads too: they all run on the one background loop)."""
        loop = asyncio.get_running_loop()
        if self._slots is None or self._slots_loop is not loop:
            self._slots, self._slots_loop = asyncio.Semaphore(self.config.max_concurrency), loop
        return self._slots

    async def _call(self, key: str, messages: Messages, semaphore: asyncio.Semaphore) -> LLMReply:
        """One prompt, retried; it keeps its concurrency slot while backing off."""
        config = self.config
        request = {
            "model": config.model,
            "messages": [dict(message) for message in messages],
            "api_base": config.api_base,
            "api_key": config.api_key,
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
            "timeout": config.timeout_s,
            "num_retries": 0,
        }
        async with semaphore:
            attempt = 0
            while True:
                if self.breaker.is_open:
                    self.breaker.skipped += 1
                    return self._failed(self.breaker.message, 0.0, attempt)
                attempt += 1
                self._count(calls=1, retries=int(attempt > 1))
                started = time.perf_counter()
                try:
                    response = await _litellm().acompletion(**request)
                    reply = self._from_response(response, _elapsed_ms(started), attempt)
                except Exception as error:
                    latency_ms = _elapsed_ms(started)
                    description = self._describe(error)
                    if self.breaker.record(description):
                        logger.warning(
                            "%s: %s; the rest of this step's prompts become error rows",
                            config.model,
                            self.breaker.message,
                        )
                    if attempt > config.max_retries or not is_retryable(error):
                        if not self.breaker.is_open:
                            logger.warning(
                                "%s failed after %d attempt(s): %s",
                                config.model,
                                attempt,
                                description,
                            )
                        return self._failed(description, latency_ms, attempt)
                    delay = max(
                        backoff_delay(attempt, config.backoff_base_s),
                        min(MAX_BACKOFF_S, retry_after_s(error) or 0.0),
                    )
                    logger.info(
                        "%s attempt %d failed, retrying in %.2fs: %s",
                        config.model,
                        attempt,
                        delay,
                        description,
                    )
                    await asyncio.sleep(delay)
                    continue
                self.breaker.record(None)
                self._count(
                    prompt_tokens=reply.prompt_tokens,
                    completion_tokens=reply.completion_tokens,
                    cost_usd=reply.cost_usd,
                )
                if self._cache is not None and reply.text is not None:
                    cached = CachedReply(
                        text=reply.text,
                        prompt_tokens=reply.prompt_tokens,
                        completion_tokens=reply.completion_tokens,
                        cost_usd=reply.cost_usd,
                        latency_ms=reply.latency_ms,
                    )
                    self._cache.put(key, cached, model=config.model)
                return reply

    def _failed(self, error: str, latency_ms: float, attempts: int) -> LLMReply:
        return LLMReply(
            text=None,
            error=error,
            latency_ms=latency_ms,
            prompt_tokens=0,
            completion_tokens=0,
            cost_usd=0.0,
            cached=False,
            attempts=attempts,
            model=self.config.model,
        )

    def _from_response(self, response: Any, latency_ms: float, attempts: int) -> LLMReply:
        text = response.choices[0].message.content
        if text is None:
            raise ValueError("the provider returned no message content")
        usage = getattr(response, "usage", None)
        hidden = getattr(response, "_hidden_params", None) or {}
        if hidden.get("response_cost") is None:
            self._count_unpriced()
        return LLMReply(
            text=text,
            error=None,
            latency_ms=latency_ms,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            cost_usd=float(hidden.get("response_cost") or 0.0),
            cached=False,
            attempts=attempts,
            model=self.config.model,
        )

    def _from_cache(self, hit: CachedReply) -> LLMReply:
        return LLMReply(
            text=hit.text,
            error=None,
            latency_ms=hit.latency_ms,
            prompt_tokens=hit.prompt_tokens,
            completion_tokens=hit.completion_tokens,
            cost_usd=hit.cost_usd,
            cached=True,
            attempts=0,
            model=self.config.model,
        )

    def _describe(self, error: BaseException) -> str:
        """Error class and message, with the API key, every secret of the environment and
        anything key-shaped redacted (`llm.secrets.redact`)."""
        name = type(error).__name__
        message = str(error).removeprefix(f"litellm.{name}: ")
        text = message if message.startswith(f"{name}: ") else f"{name}: {message}"
        return redact(text, [self.config.api_key])[:MAX_ERROR_CHARS]

    def _count_unpriced(self) -> None:
        with self._usage_lock:
            self.unpriced_calls += 1

    def _count(self, **increments: float) -> None:
        with self._usage_lock:
            for name, amount in increments.items():
                setattr(self.usage, name, getattr(self.usage, name) + amount)


def _elapsed_ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
