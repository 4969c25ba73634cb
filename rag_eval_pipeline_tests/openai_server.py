"""A real, scriptable OpenAI Chat Completions server on 127.0.0.1 for tests and benchmarks.

`run_openai_server()` starts a `ThreadingHTTPServer` on a free loopback port in a background
thread and yields an `OpenAIServer` whose `base_url` ("http://127.0.0.1:PORT/v1") is what litellm
gets as `api_base` (with a model string such as "openai/test-judge").

Every `POST /v1/chat/completions` is recorded (body, headers, arrival and finish times, the
behaviour it got) and counted towards the maximum number of requests in flight at once. On arrival
a request takes the next behaviour from the fault script (`"ok"` once the script is empty), waits
`latency_s`, then behaves accordingly. With a `chooser`, a request the script does not cover gets
``chooser(body, seen)`` instead, `seen` being how many earlier requests carried the same messages
(so "500 to the first attempt of each prompt" is ``lambda body, seen: "500" if seen == 0 else
"ok"``). With a `concurrency_limit`, a request arriving while that many are already in flight
gets a 429 instead, as a provider enforcing a concurrency limit would.

- ``"ok"``: 200 with the `responder`'s text as ``choices[0].message.content``;
- ``"<status>"`` such as ``"429"``, ``"500"``, ``"400"``, ``"401"``: that status with an
  OpenAI-style error body (a 401 message echoes the bearer token, as a careless provider would);
  a 429 carries ``Retry-After: <retry_after_s>`` when `retry_after_s` is set;
- ``"hang"``: answers nothing for `hang_s` seconds (longer than any client timeout in the tests),
  then closes the connection;
- ``"garbage"``: 200 with a body that is not JSON.

Responses go out with TCP_NODELAY: with Nagle's algorithm the client's delayed ACK would add about
40 ms to every response, which would swamp latency measurements.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Responder = Callable[[dict[str, Any]], str]
Chooser = Callable[[dict[str, Any], int], str]
CHAT_PATH = "/v1/chat/completions"
BEHAVIOURS = frozenset({"ok", "hang", "garbage", "empty"})


def echo_last_user_message(request: dict[str, Any]) -> str:
    """The default responder: the content of the last message, prefixed with "echo: "."""
    return f"echo: {request['messages'][-1]['content']}"


def count_tokens(text: str) -> int:
    """A deterministic stand-in tokenizer: whitespace-separated words."""
    return len(text.split())


@dataclass
class RecordedRequest:
    """One request as the server saw it."""

    body: dict[str, Any]
    headers: dict[str, str]  # names lower-cased
    behaviour: str
    started_at: float
    finished_at: float | None = None


class OpenAIServer:
    """State shared between the test and the request handlers; thread-safe."""

    def __init__(
        self,
        responder: Responder,
        faults: Iterable[str],
        latency_s: float,
        hang_s: float,
        retry_after_s: float | None = None,
        chooser: Chooser | None = None,
        concurrency_limit: int | None = None,
    ) -> None:
        self.responder = responder
        self.chooser = chooser
        self.concurrency_limit = concurrency_limit
        self._seen: dict[str, int] = {}
        self.latency_s = latency_s
        self.hang_s = hang_s
        self.retry_after_s = retry_after_s
        self.base_url = ""
        self.requests: list[RecordedRequest] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._faults: deque[str] = deque()
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self.script(*faults)

    @property
    def request_count(self) -> int:
        """How many chat-completion requests arrived so far."""
        with self._lock:
            return len(self.requests)

    def script(self, *behaviours: str) -> None:
        """Append behaviours to the fault script; each is used by exactly one request."""
        unknown = [b for b in behaviours if b not in BEHAVIOURS and not b.isdigit()]
        if unknown:
            raise ValueError(f"unknown behaviours {unknown}; use {sorted(BEHAVIOURS)} or a status")
        with self._lock:
            self._faults.extend(behaviours)

    def reset(self) -> None:
        """Forget recorded requests and the in-flight maximum (the fault script is kept)."""
        with self._lock:
            self.requests.clear()
            self.max_in_flight = 0

    def _begin(self, record: RecordedRequest) -> str:
        with self._lock:
            self.requests.append(record)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            if self.concurrency_limit is not None and self._in_flight > self.concurrency_limit:
                return "429"
            if self._faults:
                return self._faults.popleft()
            if self.chooser is None:
                return "ok"
            key = json.dumps(record.body.get("messages"), sort_keys=True)
            seen = self._seen.get(key, 0)
            self._seen[key] = seen + 1
        return self.chooser(record.body, seen)

    def _end(self, record: RecordedRequest) -> None:
        with self._lock:
            self._in_flight -= 1
            record.finished_at = time.monotonic()

    def _wait(self, seconds: float) -> None:
        """Sleep, but wake up at once when the server shuts down."""
        if seconds > 0:
            self._closing.wait(seconds)


def _completion_body(request: dict[str, Any], text: str) -> dict[str, Any]:
    prompt_tokens = sum(count_tokens(str(m.get("content", ""))) for m in request["messages"])
    completion_tokens = count_tokens(text)
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "unknown"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def _error_body(status: int, authorization: str) -> dict[str, Any]:
    message = {
        400: "Invalid request: the prompt was rejected.",
        401: f"Incorrect API key provided: {authorization.removeprefix('Bearer ')}.",
        429: "Rate limit reached for requests.",
    }.get(status, "The server had an error while processing your request.")
    return {"error": {"message": message, "type": "scripted_error", "code": str(status)}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def _send_json(
        self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), "application/json", headers)

    def _send_bytes(
        self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        state = self.server.state
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path.rstrip("/") != CHAT_PATH:
            self._send_json(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send_json(400, {"error": {"message": "request body is not JSON"}})
            return
        record = RecordedRequest(
            body=body,
            headers={name.lower(): value for name, value in self.headers.items()},
            behaviour="",
            started_at=time.monotonic(),
        )
        record.behaviour = state._begin(record)
        try:
            self._respond(state, record)
        finally:
            state._end(record)

    def _respond(self, state: OpenAIServer, record: RecordedRequest) -> None:
        state._wait(state.latency_s)
        behaviour = record.behaviour
        if behaviour == "ok":
            self._send_json(200, _completion_body(record.body, state.responder(record.body)))
        elif behaviour == "hang":
            state._wait(state.hang_s)
            self.close_connection = True
        elif behaviour == "empty":  # billed, but no text (e.g. a content filter)
            body = _completion_body(record.body, state.responder(record.body))
            body["choices"][0]["message"]["content"] = None
            self._send_json(200, body)
        elif behaviour == "garbage":
            self._send_bytes(200, b"<html>502 Bad Gateway</html>", "application/json")
        else:
            status = int(behaviour)
            headers = (
                {"Retry-After": f"{state.retry_after_s:g}"}
                if status == 429 and state.retry_after_s is not None
                else None
            )
            body = _error_body(status, self.headers.get("Authorization", ""))
            self._send_json(status, body, headers)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up (a timeout) closes its connection: not worth a traceback."""

    def __init__(self, state: OpenAIServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


@contextmanager
def run_openai_server(
    responder: Responder = echo_last_user_message,
    faults: Iterable[str] = (),
    latency_s: float = 0.0,
    hang_s: float = 5.0,
    retry_after_s: float | None = None,
    chooser: Chooser | None = None,
    concurrency_limit: int | None = None,
) -> Iterator[OpenAIServer]:
    """Serve the OpenAI Chat Completions API on a free loopback port for the `with` block."""
    state = OpenAIServer(
        responder, faults, latency_s, hang_s, retry_after_s, chooser, concurrency_limit
    )
    server = _Server(state)
    state.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(
        target=server.serve_forever, args=(0.05,), name="openai-server", daemon=True
    )
    thread.start()
    try:
        yield state
    finally:
        state._closing.set()
        server.shutdown()
        server.server_close()
        thread.join()
