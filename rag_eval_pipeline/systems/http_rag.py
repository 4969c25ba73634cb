"""The system under test behind HTTP: one request per question, its JSON reply → one output row.

`HttpRag.answer` sends every question as configured (`datasets.http_config`), at most
`max_concurrency` requests in flight; the questions of one session go one after another in
`turn` order (a stateful service sees its conversation in order), sessions in parallel.

Failures follow the project's one policy, shared with the judge and the generator
(`llm.failures`): each question runs through `retry_sync`, and `HttpRag.attempt` raises what
`classify` reads: `httpx.HTTPStatusError` with the response for a non-2xx reply (429: rate
limited, waited out after its `Retry-After` within `rate_limit_budget_s`, without using up
`max_retries`; 408 and 5xx: transient, retried with exponential backoff and jitter; any other
status: permanent), httpx's timeout and transport errors (transient; a refused connection
counts towards the breaker at once), `InvalidReply` for a 2xx reply that cannot be used
(permanent). Every failed attempt feeds the circuit breaker by its one rule
(`CircuitBreaker.observe`); the breaker is shared by every `HttpRag` of the process with the same
URL (`shared_breaker`), opens on a failure ratio over recent calls and half-opens with one probe
after `breaker_cooldown_s` (the other questions wait for it). A question that still fails is an
error row (`error` starts with `timeout`, `connection error`, `HTTP <status>`, `invalid reply`,
`rate limited` or `circuit breaker open`, with a short, escaped snippet of the reply); the run
goes on.

`total_latency_ms` is the wall time of the attempt that succeeded (request sent → reply read);
error rows have no latency. Retrieval and generation latencies come from the reply when their
selectors are configured.

Secrets: the resolved header values (and the variables they reference, and a password in the
URL) are redacted by value
from every error text, and replaced by `***` in answers, ids and contexts too (a service that
echoes its token writes no token into the warehouse); error texts also go through
`llm.secrets.redact`.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np
import pandas as pd

from rag_eval_pipeline.datasets.http_config import (
    HttpSystemConfig,
    referenced_variables,
    render_template,
    resolve_headers,
)
from rag_eval_pipeline.llm.breaker import CircuitBreaker, shared_breaker
from rag_eval_pipeline.llm.client import MAX_ERROR_CHARS, PROBE_POLL_S
from rag_eval_pipeline.llm.failures import Decision, FailureClass, NotCalled, retry_sync
from rag_eval_pipeline.llm.secrets import REDACTED, redact, secret_values
from rag_eval_pipeline.systems.answers import RAG_OUTPUT_COLUMNS, corpus_texts
from rag_eval_pipeline.text.escaping import terminal_text

logger = logging.getLogger(__name__)

MAX_REPLY_BYTES = 16 << 20
SNIPPET_CHARS = 200
TIMEOUT, CONNECTION, REPLY = "timeout", "connection error", "invalid reply"


class InvalidReply(ValueError):
    """A 2xx reply that cannot be used (not JSON, too large): permanent, never retried."""


@dataclass
class HttpUsage:
    """What one `answer` call spent: requests sent (retries included), retries (every request
    after a question's first), 429s waited out, error rows."""

    calls: int = 0
    retries: int = 0
    rate_limited: int = 0
    errors: int = 0

    def as_metadata(self) -> dict[str, int]:
        """The counters as a flat dict, e.g. for Dagster output metadata."""
        return asdict(self)


class HttpRag:
    """The user's system as an HTTP service (see the module docstring)."""

    def __init__(
        self,
        config: HttpSystemConfig,
        corpus: pd.DataFrame | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        environ = os.environ if environ is None else environ
        self.config = config
        self.headers = resolve_headers(config.headers, environ)
        referenced = [
            environ[name]
            for template in config.headers.values()
            for name in referenced_variables(template)
        ]
        password = urlsplit(config.url).password
        self.secrets = secret_values([*self.headers.values(), *referenced, password], environ={})
        self.name = self._redact(config.system_name)
        self.texts = corpus_texts(corpus)
        self.selectors = config.compiled_selectors()
        self.policy = config.retry_policy()
        self.usage = HttpUsage()
        self.breaker = shared_breaker(
            ("http", config.url), lambda: CircuitBreaker.from_settings(config)
        )
        self._lock = threading.Lock()

    def answer(self, queries: pd.DataFrame) -> pd.DataFrame:
        """One row per question (`RAG_OUTPUT_COLUMNS`), in the order of `queries`."""
        self.usage = HttpUsage()
        values = request_values(queries)
        rows: list[dict[str, Any]] = [{} for _ in values]
        with (
            self.client() as client,
            ThreadPoolExecutor(self.config.max_concurrency, "http-system") as pool,
        ):

            def answer_session(indices: list[int]) -> None:
                for index in indices:
                    rows[index] = self._row(client, values[index])

            for done in [pool.submit(answer_session, s) for s in session_order(values)]:
                done.result()
        frame = pd.DataFrame(rows, columns=RAG_OUTPUT_COLUMNS)
        self.usage.errors = int(frame["error"].notna().sum())
        return frame

    def client(self) -> httpx.Client:
        """An HTTP client with the configured headers, per-attempt timeout and connections."""
        limits = httpx.Limits(max_connections=self.config.max_concurrency)
        timeout = httpx.Timeout(self.config.timeout_s)
        return httpx.Client(headers=self.headers, timeout=timeout, limits=limits)

    def _row(self, client: httpx.Client, values: Mapping[str, Any]) -> dict[str, Any]:
        outcome = self._call(client, values)
        row: dict[str, Any] = {
            "system": self.name,
            "query_id": values["query_id"],
            "question": values["question"],
            "answer": None,
            "retrieved_doc_ids": [],
            "contexts": [],
            "retrieval_latency_ms": np.nan,
            "generation_latency_ms": np.nan,
            "total_latency_ms": np.nan,
            "generator_model": self.name,
            "error": None,
        }
        if isinstance(outcome, str):
            return {**row, "error": outcome}
        reply, latency_ms = outcome
        fields = self._fields(reply)
        if isinstance(fields, str):
            return {**row, "error": fields}
        return {**row, **fields, "total_latency_ms": latency_ms}

    def _call(self, client: httpx.Client, values: Mapping[str, Any]) -> tuple[Any, float] | str:
        """The parsed reply to one question and the latency of the attempt that got it, or the
        error text of the last failed attempt, under the shared retry policy."""
        sent = 0

        def attempt() -> tuple[Any, float]:
            nonlocal sent
            while self.breaker.probing:  # a half-open breaker's probe decides for all
                time.sleep(PROBE_POLL_S)
            if not self.breaker.allow():
                raise NotCalled(self._redact(self.breaker.message))
            with self._lock:
                self.usage.calls += 1
                self.usage.retries += int(sent > 0)
            sent += 1
            return self.attempt(client, values)

        outcome = retry_sync(attempt, self.policy, self._observe)
        if outcome.value is not None:
            self.breaker.record_success()
            return outcome.value
        error = outcome.error
        assert error is not None
        text = outcome.explained(str(error), self.policy)
        if isinstance(error, NotCalled):
            return text
        return f"{text} ({sent} attempt{'s' * (sent > 1)})"

    def _observe(self, error: BaseException, decision: Decision) -> None:
        """Feed one failed attempt to the breaker, the counters and the log."""
        if decision.failure is FailureClass.RATE_LIMITED:
            with self._lock:
                self.usage.rate_limited += 1
        if self.breaker.observe(error, decision, str(error)):
            logger.warning("%s: %s", self.name, self._redact(self.breaker.message))
        if decision.delay_s is not None:
            logger.info(
                "%s attempt %d failed (%s), retrying in %.2fs: %s",
                self.name,
                decision.attempt,
                decision.failure,
                decision.delay_s,
                error,
            )

    def attempt(self, client: httpx.Client, values: Mapping[str, Any]) -> tuple[Any, float]:
        """Send one question once: its parsed JSON reply (at most `MAX_REPLY_BYTES` read) and
        the wall time in ms; or raise what `llm.failures.classify` reads (see the module
        docstring), its message redacted and escaped."""
        config = self.config
        params = {key: render_template(str(v), values) for key, v in config.params.items()}
        body = None
        if config.body is not None:
            body = json.dumps(render_template(config.body, values), ensure_ascii=False)
        request = client.build_request(
            config.method,
            config.url,
            params={k: "" if v is None else str(v) for k, v in params.items()} or None,
            content=None if body is None else body.encode("utf-8"),
            headers=None if body is None else {"Content-Type": "application/json"},
        )
        started = time.perf_counter()
        try:
            response = client.send(request, stream=True)
            try:
                content = self._read(response, started)
            finally:
                response.close()
        except httpx.TimeoutException as error:
            raise type(error)(self._timeout(), request=request) from error
        except httpx.DecodingError as error:
            raise InvalidReply(self._redact(f"{REPLY}: {_describe(error)}")) from None
        except httpx.RequestError as error:
            message = self._redact(f"{CONNECTION}: {_describe(error)}")
            raise type(error)(message, request=request) from error
        latency_ms = (time.perf_counter() - started) * 1000
        if not response.is_success:
            message = f"HTTP {response.status_code}: {self._snippet(content)}"
            raise httpx.HTTPStatusError(message, request=request, response=response)
        try:
            return json.loads(content), latency_ms
        except (ValueError, RecursionError):
            raise InvalidReply(f"{REPLY}: not JSON: {self._snippet(content)}") from None

    def _read(self, response: httpx.Response, started: float) -> bytes:
        chunks, size = [], 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > MAX_REPLY_BYTES:
                raise InvalidReply(f"{REPLY}: larger than {MAX_REPLY_BYTES >> 20} MiB")
            if time.perf_counter() - started > self.config.timeout_s:
                raise httpx.ReadTimeout(self._timeout(), request=response.request)
            chunks.append(chunk)
        return b"".join(chunks)

    def _timeout(self) -> str:
        return f"{TIMEOUT}: no reply within {self.config.timeout_s:g} s"

    def _fields(self, reply: Any) -> dict[str, Any] | str:
        """The output columns the selectors find in `reply`, or the error text when the answer
        is missing."""
        found = {key: [m.value for m in path.find(reply)] for key, path in self.selectors.items()}
        answers = [a for a in found.get("answer", []) if a is not None]
        if not answers:
            selector = self.config.selectors.get("answer")
            return f"{REPLY}: the answer selector {selector} matched nothing"
        doc_ids = [self._scrub(_text(v)) for v in _flattened(found.get("retrieved_doc_ids", []))]
        contexts = [self._scrub(_text(v)) for v in _flattened(found.get("contexts", []))]
        models = found.get("generator_model") or [self.name]
        return {
            "answer": self._scrub(_text(answers[0])),
            "retrieved_doc_ids": doc_ids,
            "contexts": contexts or [self.texts.get(d, "") for d in doc_ids],
            "retrieval_latency_ms": _number(found.get("retrieval_latency_ms", [])),
            "generation_latency_ms": _number(found.get("generation_latency_ms", [])),
            "generator_model": self._scrub(_text(models[0])),
        }

    def _snippet(self, content: bytes) -> str:
        """The start of a reply, secrets redacted first, as one escaped line."""
        text = self._redact(content.decode("utf-8", errors="replace"))
        short = text[:SNIPPET_CHARS] + ("…" if len(text) > SNIPPET_CHARS else "")
        return terminal_text(json.dumps(short, ensure_ascii=False))

    def _scrub(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    def _redact(self, text: str) -> str:
        return redact(self._scrub(text))[:MAX_ERROR_CHARS]


def request_values(queries: pd.DataFrame) -> list[dict[str, Any]]:
    """Per question, the template values: `question`, `query_id`, `session_id` (text or None)
    and `turn` (an integer or None)."""
    count = len(queries)
    sessions = queries["session_id"] if "session_id" in queries else pd.Series([None] * count)
    turns = queries["turn"] if "turn" in queries else pd.Series([None] * count)
    return [
        {
            "question": str(question),
            "query_id": str(query_id),
            "session_id": None if pd.isna(session) else str(session),
            "turn": None if pd.isna(turn) else int(turn),
        }
        for question, query_id, session, turn in zip(
            queries["question"], queries["query_id"], sessions, turns, strict=True
        )
    ]


def session_order(values: list[dict[str, Any]]) -> list[list[int]]:
    """The questions grouped into what must run in sequence: each session's in `turn` order
    (then table order), every question without a session on its own; groups in table order."""
    groups: dict[object, list[int]] = {}
    for index, value in enumerate(values):
        key = ("session", value["session_id"]) if value["session_id"] is not None else index
        groups.setdefault(key, []).append(index)

    def turn(index: int) -> float:
        value = values[index]["turn"]
        return math.inf if value is None else value

    return [sorted(indices, key=turn) for indices in groups.values()]


def _flattened(matches: list[Any]) -> list[Any]:
    """The matched values, a matched list contributing its items; nulls dropped."""
    items = [item for match in matches for item in (match if isinstance(match, list) else [match])]
    return [item for item in items if item is not None]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _number(matches: list[Any]) -> float:
    value = matches[0] if matches else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return np.nan
    return float(value)


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
