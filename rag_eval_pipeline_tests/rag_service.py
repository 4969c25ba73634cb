"""A real RAG service over HTTP on 127.0.0.1, scriptable per question, for the http system tests.

`run_rag_service(documents)` starts a `ThreadingHTTPServer` on a free loopback port in a thread
and yields a `RagService` whose `url` is its `/ask` endpoint. `POST /ask` takes a JSON body with
a `query` field (`GET /ask` the query parameter `q`), waits `delay_s`, and answers, by the
question's first word:

- `slow:` waits `slow_s` seconds first; `fail:` answers 500 every time; `flaky:` answers 500 to
  the question's first request, then normally; `auth:` answers 401 with a body that echoes the
  `Authorization` header (as a careless service would); `rate:` answers 429 with
  `Retry-After: 1` to the first request, then normally; `throttled:` answers 429 with
  `Retry-After: 0.2` to the first two requests, then normally; `garbage:` answers 200 with a
  body that is not JSON; a number (`404:`) answers that status every time;
- anything else: 200 with `{"data": {"answer", "sources": [{"id", "text"}]}, "timing":
  {"retrieval_ms"}}`: the answer echoes the question and the Authorization header, the sources
  are `documents[question]` (ids, text `text of <id>`).

Every request is recorded (path, query string, parsed body, headers, arrival and finish times),
and the largest number of requests in flight at once is kept.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    """One request as the service saw it."""

    path: str
    query: str
    body: Any
    headers: dict[str, str]  # names lower-cased
    started_at: float
    finished_at: float = 0.0


@dataclass
class RagService:
    """State shared by the test and the handlers; thread-safe."""

    documents: Mapping[str, list[str]]
    slow_s: float = 2.0
    delay_s: float = 0.0
    url: str = ""
    requests: list[Request] = field(default_factory=list)
    max_in_flight: int = 0
    _in_flight: int = 0
    _seen: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closing: threading.Event = field(default_factory=threading.Event)

    def count(self, question: str) -> int:
        """How many requests asked `question`."""
        with self._lock:
            return self._seen[question]

    def _begin(self, request: Request, question: str) -> int:
        with self._lock:
            self.requests.append(request)
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
            self._seen[question] += 1
            return self._seen[question]

    def _end(self, request: Request) -> None:
        with self._lock:
            self._in_flight -= 1
            request.finished_at = time.monotonic()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output quiet."""

    def _send(self, status: int, data: bytes, headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        try:
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (its timeout)
            self.close_connection = True

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        service = self.server.service
        raw = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        parts = urlsplit(self.path)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            self._send(400, b'{"error": "request body is not JSON"}')
            return
        question = str(body["query"]) if body else parse_qs(parts.query).get("q", [""])[0]
        headers = {name.lower(): value for name, value in self.headers.items()}
        request = Request(parts.path, parts.query, body, headers, time.monotonic())
        seen = service._begin(request, question)
        try:
            self._respond(service, question, seen, headers.get("authorization", ""))
        finally:
            service._end(request)

    def _respond(self, service: RagService, question: str, seen: int, authorization: str) -> None:
        kind = question.split(":", 1)[0] if ":" in question else ""
        service._closing.wait(service.delay_s)
        if kind == "slow":
            service._closing.wait(service.slow_s)
        if kind == "fail" or (kind == "flaky" and seen == 1):
            self._send(500, b'{"error": "internal error"}')
        elif kind == "auth":
            self._send(401, json.dumps({"error": f"bad credentials: {authorization}"}).encode())
        elif kind == "rate" and seen == 1:
            self._send(429, b'{"error": "slow down"}', {"Retry-After": "1"})
        elif kind == "throttled" and seen <= 2:
            self._send(429, b'{"error": "slow down"}', {"Retry-After": "0.2"})
        elif kind.isdigit():
            self._send(int(kind), b'{"error": "as asked"}')
        elif kind == "garbage":
            self._send(200, b"<html>not json</html>")
        else:
            ids = service.documents.get(question, [])
            reply = {
                "data": {
                    "answer": f"echo {question} (auth {authorization})",
                    "sources": [{"id": i, "text": f"text of {i}"} for i in ids],
                },
                "timing": {"retrieval_ms": 12.5},
            }
            self._send(200, json.dumps(reply).encode())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    service: RagService


@contextmanager
def run_rag_service(
    documents: Mapping[str, list[str]] | None = None, slow_s: float = 2.0, delay_s: float = 0.0
) -> Iterator[RagService]:
    """Serve a `RagService` on a free loopback port for the duration of the block."""
    service = RagService(documents or {}, slow_s, delay_s)
    server = _Server(("127.0.0.1", 0), _Handler)
    server.service = service
    service.url = f"http://127.0.0.1:{server.server_address[1]}/ask"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield service
    finally:
        service._closing.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
