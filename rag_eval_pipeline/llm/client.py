"""The LLM client every judge and generator goes through: litellm, concurrency, retries, caching.

`LLMClient.complete_many` sends a batch of chat prompts to any litellm-supported model
("gpt-4o-mini", "openai/<name>" with an `api_base`, "ollama/llama3.2", ...) and returns one
`LLMReply` per prompt, in order. It is a plain synchronous call, usable from any thread, including
one that runs an event loop of its own: the requests run on one long-lived event loop per
process, in a daemon thread. A long-lived loop matters because litellm caches one HTTP client
(with open connections) per event loop; a fresh loop per call would leak a client and its sockets
on every call, and lose connection reuse.

Failures never escape as exceptions; each prompt is retried by the project's one policy
(`llm.failures`): transient faults (5xx, timeouts, resets) up to `max_retries` times with
exponential backoff and jitter; rate limits (429) after the provider's ``Retry-After``, until
the call's waits add up to `rate_limit_budget_s`, without using up retries; permanent errors
(400, 401/403, 404, context too long) at once become a reply with `error` set. litellm gives up
on an attempt that gets no reply within `timeout_s`, so a hung call costs about
`timeout_s × (max_retries + 1)` plus backoff, and its row says ``Timeout: no reply within ...``;
a backstop cancels any request after `backstop_timeout_s` (2 × `timeout_s` + 10 s: it also
covers litellm's setup on a process's first call, which can take seconds). Only the request is
timed: a prompt queued for an in-flight slot or for the run's budget waits as long as it must.
Reply and error texts are redacted where they enter (`LLMClient.redact`): no API key, no
secret of the environment, no URL password reaches the reply cache, a table or a log.

Requests in flight are bounded by an AIMD limit (`llm.adaptive`): it starts at `max_concurrency`
(shared by all of the client's calls, from any thread), halves on a 429 and grows back by one
per success. A prompt waiting out a backoff holds no slot.

A circuit breaker (`llm.breaker`, one per model and api_base in the process, so the steps of a run
after the first do not pay again to find an endpoint down) stops hammering an endpoint: calls
whose retries were exhausted and refused connections, as a share of the last
`breaker_window` calls (at least `breaker_min_calls` of them, 0 turns it off), open it; then every
prompt not answered yet gets the error ``circuit breaker open ...`` at once (one warning is logged,
not one per prompt), and after `breaker_cooldown_s` one probe is let through (the other prompts
wait for its outcome): if it succeeds, the client calls again.

A shared `CostBudget` (`llm.budget`, the run's ``RAG_EVAL_MAX_COST_USD``) holds each attempt's
worst-case cost (`llm.estimate.worst_case_cost`) while it is in flight and is charged with each
reply's actual cost; a prompt waits while calls in flight hold what it needs, and becomes the
error ``budget exhausted ...`` without being sent once its worst case no longer fits under the
cap, so the calls in flight cannot overshoot it.
With a `PromptEstimate` (`llm.estimate`, ``rag-eval estimate``) the client calls nothing: it
counts the prompts its cache cannot answer, their tokens and price, and answers them with a
stand-in text.

Successful replies are stored in the reply cache (`llm.cache`, local or on an object store) when
`cache_dir` is set; identical prompts (same model, endpoint really called, messages,
temperature and max_tokens) are then answered from it without a provider call, and identical
prompts within one batch are sent once. `use_cache=False` forces fresh calls (for
judge-consistency repeats) and still records replies for prompts not cached yet.

The first call imports litellm (not the import of this module: it takes seconds) and sets
``litellm.suppress_debug_info`` so litellm does not print its "Give Feedback / Get Help" banner
on every failed call.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass, field, replace
from functools import cache
from types import ModuleType
from typing import Any, TypeVar, cast

from rag_eval_pipeline.llm.adaptive import AdaptiveLimit
from rag_eval_pipeline.llm.breaker import CircuitBreaker, shared_breaker
from rag_eval_pipeline.llm.budget import CostBudget
from rag_eval_pipeline.llm.cache import CachedReply, cache_key, open_reply_cache
from rag_eval_pipeline.llm.endpoint import endpoint_digest
from rag_eval_pipeline.llm.estimate import PromptEstimate, stand_in_text, worst_case_cost
from rag_eval_pipeline.llm.failures import (
    Attempted,
    AttemptTimeout,
    Decision,
    FailureClass,
    NotCalled,
    RetryPolicy,
    retry_async,
    within,
)
from rag_eval_pipeline.llm.secrets import RedactingFilter, redact

Messages = Sequence[Mapping[str, str]]
ProgressCallback = Callable[[int, int], None]
T = TypeVar("T")

logger = logging.getLogger(__name__)

MAX_ERROR_CHARS = 500
# Prompts in progress at once per in-flight slot: those waiting out a backoff hold no slot, but
# bounding them keeps a failing endpoint from getting every prompt's retries at once.
CALLS_PER_SLOT = 4
PROBE_POLL_S = 0.05
# The backstop's room beyond 2 × timeout_s: litellm's setup on a process's first call.
BACKSTOP_SLACK_S = 10.0
TIMEOUT_ERRORS = frozenset({"Timeout", "APITimeoutError"})  # litellm's and openai's
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
    rate_limit_budget_s: float = 300.0
    breaker_window: int = 20
    breaker_min_calls: int = 10
    breaker_failure_ratio: float = 0.5
    breaker_cooldown_s: float = 30.0

    def __post_init__(self) -> None:
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {self.max_concurrency}")
        if self.timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {self.timeout_s}")
        self.retry_policy()  # validates the retry settings
        self.breaker()  # validates the breaker settings

    @property
    def backstop_timeout_s(self) -> float:
        """When a request is cancelled whatever litellm does (its own timeout is `timeout_s`)."""
        return 2 * self.timeout_s + BACKSTOP_SLACK_S

    def retry_policy(self) -> RetryPolicy:
        """The retry policy of each prompt. It sets no attempt timeout: an attempt also waits for
        an in-flight slot and the run's budget, which must not count as the provider's time;
        `LLMClient` bounds each request alone by `backstop_timeout_s`."""
        return RetryPolicy(
            max_retries=self.max_retries,
            backoff_base_s=self.backoff_base_s,
            rate_limit_budget_s=self.rate_limit_budget_s,
        )

    def breaker(self) -> CircuitBreaker:
        """A new circuit breaker with these settings."""
        return CircuitBreaker.from_settings(self)


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
    were retries, `rate_limited` of them answered 429 and were waited out, `timeouts` got no
    reply in time); `cache_hits` counts replies served without a call; `errors` counts replies
    returned with an error, including the prompts never sent because the circuit breaker was
    open (`breaker_skipped`) or the run's budget spent (`budget_refused`); tokens and cost are
    those of the provider calls only.
    """

    calls: int = 0
    retries: int = 0
    rate_limited: int = 0
    timeouts: int = 0
    breaker_skipped: int = 0
    budget_refused: int = 0
    cache_hits: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def as_metadata(self) -> dict[str, float | int]:
        """The counters as a flat dict, e.g. for Dagster output metadata."""
        return asdict(self)


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


class LLMClient:
    """Concurrent, retrying, caching chat completions through litellm for one `LLMConfig`."""

    def __init__(
        self,
        config: LLMConfig,
        budget: CostBudget | None = None,
        estimate: PromptEstimate | None = None,
        role: str = "llm",
    ) -> None:
        self.config = config
        self.budget = budget
        self.estimate = estimate
        self.role = role
        self.usage = LLMUsage()
        self._usage_lock = threading.Lock()
        self._cache = open_reply_cache(config.cache_dir) if config.cache_dir is not None else None
        self._limit: AdaptiveLimit | None = None
        self._in_progress: asyncio.Semaphore | None = None
        self._limit_loop: asyncio.AbstractEventLoop | None = None
        self._policy = config.retry_policy()
        self.endpoint = endpoint_digest(config.model, config.api_base)
        self.breaker = shared_breaker((config.model, config.api_base), config.breaker)
        # Provider calls whose cost litellm could not price (no known price for the model):
        # their `cost_usd` is 0.0, so a total over them is unknown, not zero.
        self.unpriced_calls = 0

    def __repr__(self) -> str:
        return f"LLMClient({self.config!r})"

    @property
    def lowest_concurrency(self) -> int:
        """The lowest in-flight limit the AIMD control reached (`max_concurrency` if no 429)."""
        return self._limit.lowest if self._limit is not None else self.config.max_concurrency

    def complete(self, messages: Messages, *, use_cache: bool = True) -> LLMReply:
        """The reply to one prompt (a list of chat messages)."""
        return self.complete_many([messages], use_cache=use_cache)[0]

    def complete_many(
        self,
        prompts: Sequence[Messages],
        *,
        use_cache: bool = True,
        on_progress: ProgressCallback | None = None,
        response_format: Mapping[str, Any] | None = None,
    ) -> list[LLMReply]:
        """One reply per prompt, in order.

        `on_progress(done, total)` is called (from the event-loop thread) as replies land.
        `response_format` (a JSON Schema the reply must follow, OpenAI's `json_schema` type) is
        sent only where `litellm.supports_response_schema` says the provider enforces it
        (`sent_format`); elsewhere the prompt alone asks for the shape.
        """
        if not prompts:
            return []
        sent = self.sent_format(response_format)
        return _BACKGROUND_LOOP.run(self._complete_all(prompts, use_cache, on_progress, sent))

    def sent_format(self, response_format: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """`response_format` when the model's provider enforces a response schema, else None."""
        if response_format is None:
            return None
        try:
            enforced = _litellm().supports_response_schema(model=self.config.model)
        except Exception:  # litellm raises for a model it cannot map to a provider
            enforced = False
        return dict(response_format) if enforced else None

    def uncached(
        self, prompts: Sequence[Messages], response_format: Mapping[str, Any] | None = None
    ) -> list[Messages]:
        """The distinct prompts among `prompts` that the reply cache cannot answer (all of them
        without a cache): what `complete_many` would send."""
        sent = self.sent_format(response_format)
        distinct = {self._key(messages, sent): messages for messages in prompts}
        hits = self._cache.get_many(list(distinct)) if self._cache is not None else {}
        return [messages for key, messages in distinct.items() if key not in hits]

    def forget(
        self, prompts: Sequence[Messages], response_format: Mapping[str, Any] | None = None
    ) -> None:
        """Drop the cached replies to `prompts` (asked with `response_format`), so the next run
        asks again (e.g. a reply that arrived but could not be used: it is recorded as an error
        row, not kept as an answer)."""
        if self._cache is not None and prompts:
            sent = self.sent_format(response_format)
            self._cache.discard([self._key(messages, sent) for messages in prompts])

    def close(self) -> None:
        """Release the cache connection."""
        if self._cache is not None:
            self._cache.close()

    def _key(self, messages: Messages, response_format: Mapping[str, Any] | None = None) -> str:
        config = self.config
        return cache_key(
            model=config.model,
            endpoint=self.endpoint,
            messages=messages,
            temperature=config.temperature,
            max_tokens=config.max_tokens,
            response_format=response_format,
        )

    async def _complete_all(
        self,
        prompts: Sequence[Messages],
        use_cache: bool,
        on_progress: ProgressCallback | None,
        response_format: dict[str, Any] | None = None,
    ) -> list[LLMReply]:
        total = len(prompts)
        keys = [self._key(messages, response_format) for messages in prompts]
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
        if self.estimate is not None:
            return self._estimated(prompts, replies, groups)
        limit, in_progress = self._adaptive_limit()

        async def answer(indices: list[int]) -> tuple[list[int], LLMReply]:
            first = indices[0]
            async with in_progress:
                call = self._call(keys[first], prompts[first], limit, response_format)
                return indices, await call

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

    def _estimated(
        self,
        prompts: Sequence[Messages],
        replies: list[LLMReply | None],
        groups: Mapping[str, list[int]],
    ) -> list[LLMReply]:
        """Estimate-only: count the prompts (`llm.estimate`) and answer the uncached ones with
        the stand-in text, calling nothing and caching nothing."""
        assert self.estimate is not None
        config = self.config
        duplicates = sum(len(indices) - 1 for indices in groups.values())
        self.estimate.record_cached(
            config.model, self.role, sum(r is not None for r in replies) + duplicates
        )
        stand_in = self._failed("", 0.0, 0)
        stand_in = replace(stand_in, text=stand_in_text(config.max_tokens), error=None)
        for indices in groups.values():
            self.estimate.record_uncached(
                config.model, self.role, prompts[indices[0]], config.max_tokens
            )
            for index in indices:
                replies[index] = stand_in
        return cast(list[LLMReply], replies)

    def _adaptive_limit(self) -> tuple[AdaptiveLimit, asyncio.Semaphore]:
        """The client's in-flight limit and its bound on prompts in progress, shared by all of its
        `complete_many` calls at once (from several threads too: they all run on the one
        background loop)."""
        loop = asyncio.get_running_loop()
        if self._limit is None or self._in_progress is None or self._limit_loop is not loop:
            concurrency = self.config.max_concurrency
            self._limit = AdaptiveLimit(concurrency)
            self._in_progress = asyncio.Semaphore(CALLS_PER_SLOT * concurrency)
            self._limit_loop = loop
        return self._limit, self._in_progress

    async def _call(
        self,
        key: str,
        messages: Messages,
        limit: AdaptiveLimit,
        response_format: dict[str, Any] | None = None,
    ) -> LLMReply:
        """One prompt under the retry policy; it holds an in-flight slot only while attempting."""
        config = self.config
        request: dict[str, Any] = {
            "model": config.model,
            "messages": [dict(message) for message in messages],
            "api_base": config.api_base,
            "api_key": config.api_key,
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
            "timeout": config.timeout_s,
            "num_retries": 0,
        }
        if response_format is not None:
            request["response_format"] = response_format
        epochs: list[int] = []
        started: list[float] = []
        worst_case = self._worst_case_usd(messages)

        async def attempt() -> LLMReply:
            while self.breaker.probing:  # a half-open breaker's probe decides for all
                await asyncio.sleep(PROBE_POLL_S)
            async with limit.slot() as epoch, self._sending(worst_case):
                self._count(calls=1, retries=int(bool(epochs)))
                epochs.append(epoch)
                started.append(time.perf_counter())
                response = await within(
                    config.backstop_timeout_s, _litellm().acompletion(**request)
                )
                return self._from_response(response, _elapsed_ms(started[-1]), len(epochs))

        def observe(error: BaseException, decision: Decision) -> None:
            self._observe(error, decision, limit, epochs[-1] if epochs else None)

        outcome = await retry_async(attempt, self._policy, observe)
        if outcome.value is not None:
            reply = outcome.value
            limit.succeeded()
            self.breaker.record_success()
            self._record(key, reply)
            return reply
        return self._give_up(outcome, _elapsed_ms(started[-1]) if started else 0.0, len(epochs))

    def _worst_case_usd(self, messages: Messages) -> float | None:
        """The prompt's worst-case cost when the run's budget has a cap (tokens are counted only
        then); None otherwise or when the model has no known price."""
        if self.budget is None or not self.budget.capped:
            return None
        return worst_case_cost(self.config.model, messages, self.config.max_tokens)

    @asynccontextmanager
    async def _sending(self, worst_case_usd: float | None) -> AsyncIterator[None]:
        """One attempt's send: hold the prompt's worst-case cost in the run's budget until the
        attempt is over (its reply, if any, charged its actual cost); while calls in flight hold
        what it needs, wait for them (first come, first served). Raise `NotCalled` when the
        budget cannot cover it even with nothing in flight, or the breaker is open."""
        budget = self.budget if self.budget is not None and self.budget.capped else None
        held = 0.0
        if budget is not None:
            ticket = object()
            try:
                while (reserved := budget.reserve(worst_case_usd, ticket)) is None:
                    if not budget.could_cover(worst_case_usd):
                        self._count(budget_refused=1)
                        raise NotCalled(budget.refuse(worst_case_usd))
                    await asyncio.sleep(PROBE_POLL_S)
            except BaseException:  # refused or cancelled while queued
                budget.leave(ticket)
                raise
            held = reserved
        try:
            if not self.breaker.allow():
                self._count(breaker_skipped=1)
                raise NotCalled(self.breaker.message)
            yield
        finally:
            if budget is not None:
                budget.release(held)

    def _observe(
        self, error: BaseException, decision: Decision, limit: AdaptiveLimit, epoch: int | None
    ) -> None:
        """Feed one failed attempt to the AIMD limit, the breaker, the counters and the log."""
        if isinstance(error, NotCalled):
            return
        description = self._describe(error)
        if decision.failure is FailureClass.RATE_LIMITED:
            self._count(rate_limited=1)
            if epoch is not None:
                limit.rate_limited(epoch, decision.delay_s or 0.0)
        if _is_timeout(error):
            self._count(timeouts=1)
        if self.breaker.observe(error, decision, description):
            logger.warning(
                "%s: %s; prompts not sent yet become error rows until a probe after %gs succeeds",
                self.config.model,
                self.breaker.message,
                self.config.breaker_cooldown_s,
            )
        if decision.delay_s is not None:
            logger.info(
                "%s attempt %d failed (%s), retrying in %.2fs: %s",
                self.config.model,
                decision.attempt,
                decision.failure,
                decision.delay_s,
                description,
            )
        elif not self.breaker.is_open:
            logger.warning(
                "%s failed after %d attempt(s) (%s, %s): %s",
                self.config.model,
                decision.attempt,
                decision.failure,
                decision.reason,
                description,
            )

    def _give_up(self, outcome: Attempted[LLMReply], latency_ms: float, attempts: int) -> LLMReply:
        error = outcome.error
        assert error is not None
        description = str(error) if isinstance(error, NotCalled) else self._describe(error)
        description = outcome.explained(description, self._policy)
        return self._failed(description[:MAX_ERROR_CHARS], latency_ms, attempts)

    def _record(self, key: str, reply: LLMReply) -> None:
        """Count a successful reply's usage, charge the budget and cache it."""
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
            self._cache.put(key, cached, model=self.config.model)

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
        """The reply of a provider's response, charged to the run's budget; a response without
        text is charged and counted too (it was billed), then raised as a transient fault."""
        usage = getattr(response, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        hidden = getattr(response, "_hidden_params", None) or {}
        price = hidden.get("response_cost")
        if price is None:
            self._count_unpriced()
        if self.budget is not None:
            self.budget.charge(None if price is None else float(price))
        text = response.choices[0].message.content
        if text is not None:
            text = self.redact(text)  # a provider or proxy may echo the key: never stored
        if text is None:
            self._count(
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                cost_usd=float(price or 0.0),
            )
            raise ValueError("the provider returned no message content")
        return LLMReply(
            text=text,
            error=None,
            latency_ms=latency_ms,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            cost_usd=float(price or 0.0),
            cached=False,
            attempts=attempts,
            model=self.config.model,
        )

    def _from_cache(self, hit: CachedReply) -> LLMReply:
        return LLMReply(
            text=self.redact(hit.text),  # an entry stored before replies were redacted
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
        anything key-shaped redacted (`llm.secrets.redact`); any timeout reads
        ``Timeout: no reply within <timeout_s> s``."""
        if isinstance(error, AttemptTimeout):
            return f"Timeout: no reply within {error.timeout_s:g} s"
        if _is_timeout(error):
            return f"Timeout: no reply within {self.config.timeout_s:g} s"
        name = type(error).__name__
        message = str(error).removeprefix(f"litellm.{name}: ")
        text = message if message.startswith(f"{name}: ") else f"{name}: {message}"
        return self.redact(text)[:MAX_ERROR_CHARS]

    def redact(self, text: str) -> str:
        """`text` as it may be stored or shown: `llm.secrets.redact`, knowing this client's API
        key and the user information of its `api_base` too. Applied to every reply's text and
        every error text where they enter, before the reply cache, a table or a log sees them."""
        return redact(text, [self.config.api_key], urls=[self.config.api_base])

    def _count_unpriced(self) -> None:
        with self._usage_lock:
            self.unpriced_calls += 1

    def _count(self, **increments: float) -> None:
        with self._usage_lock:
            for name, amount in increments.items():
                setattr(self.usage, name, getattr(self.usage, name) + amount)


def _is_timeout(error: BaseException) -> bool:
    """Whether an attempt failed for want of a reply in time (ours or litellm's timeout)."""
    return isinstance(error, AttemptTimeout) or type(error).__name__ in TIMEOUT_ERRORS


def _elapsed_ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
