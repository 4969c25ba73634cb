"""Cache of successful LLM replies: one SQLite file on a local disk, or objects in a bucket.

`open_reply_cache` picks the store by location. Locally, replies live in
``<cache_dir>/llm_cache.sqlite3``; on an object store (`s3://...`, shared by run pods, where
SQLite cannot live) each reply is one JSON object ``<cache_dir>/replies/<key[:2]>/<key>.json``,
written with a create-only PUT (`If-None-Match: *`), so the first reply stored still wins; an
object that does not read back as a reply is moved aside (``<key>.json.corrupt-<UTC time>``, one
warning) and its prompt asked again.
Both are keyed by `cache_key`, the SHA-256 of the
canonical JSON of everything that determines a reply at a fixed temperature: model, the endpoint
litellm will really call (`llm.endpoint.endpoint_digest`: the `api_base`, or the provider's own
variables such as `OPENAI_API_BASE`, hashed), messages, temperature and max_tokens. A reply is
never reused across endpoints. The API key is deliberately not part of the key (rotating a key
must not invalidate the cache) and is never stored.

The database is opened by `storage.shared_sqlite.SharedDatabase` (WAL mode, a busy timeout),
so concurrent processes (parallel Dagster steps) read and write it safely. Within a process one
connection is shared behind a lock. A cache file that is corrupt is set aside and built again; one
locked by another process past the timeout, unopenable or on a full or read-only disk is one
warning, and the call goes on without it: prompts asked of the provider, replies not kept (which
a later run pays for again). The first reply stored under a key wins: later replies for
the same key are ignored, so a re-run reads exactly the answers earlier runs were scored on.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, astuple, dataclass
from pathlib import Path
from typing import Any, Protocol

from upath import UPath

from rag_eval_pipeline.storage.machine import warn_once
from rag_eval_pipeline.storage.objects import is_local, storage_path
from rag_eval_pipeline.storage.shared_sqlite import SharedDatabase, aside_name

CACHE_FILENAME = "llm_cache.sqlite3"
REPLIES_FOLDER = "replies"
_LOOKUP_CHUNK = 500
WHAT = "LLM reply cache"
WITHOUT = (
    "its prompts are asked of the provider, and a reply it does not keep is asked (and paid)"
    " again by a later run"
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS replies (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    text TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    latency_ms REAL NOT NULL,
    created_at REAL NOT NULL
)
"""


def cache_key(
    *,
    model: str,
    endpoint: str,
    messages: Sequence[Mapping[str, str]],
    temperature: float,
    max_tokens: int | None,
    response_format: Mapping[str, Any] | None = None,
) -> str:
    """SHA-256 (hex) of the canonical JSON of the request fields that determine a reply;
    `endpoint` is the digest of the endpoint called (`llm.endpoint.endpoint_digest`); a request
    with a `response_format` is another request (without one, the key is unchanged)."""
    payload: dict[str, Any] = {
        "model": model,
        "endpoint": endpoint,
        "messages": [dict(message) for message in messages],
        "temperature": temperature,
        "max_tokens": max_tokens,
    }
    if response_format is not None:
        payload["response_format"] = dict(response_format)
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedReply:
    """What is kept of one successful reply."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    latency_ms: float


class ReplyCache:
    """Successful replies by `cache_key`, in ``<directory>/llm_cache.sqlite3``; a cache that
    cannot serve a call (corrupt, locked, unopenable, unwritable) is one warning, and the call
    goes on without it (`storage.shared_sqlite`)."""

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory) / CACHE_FILENAME
        self._lock = threading.Lock()
        self._database = SharedDatabase(self.path, _SCHEMA, WHAT, WITHOUT)

    def get_many(self, keys: Sequence[str]) -> dict[str, CachedReply]:
        """The cached replies among `keys` (missing keys are simply absent from the result)."""
        unique = list(dict.fromkeys(keys))
        with self._lock:
            return self._database.run(lambda db: _lookup(db, unique), {})

    def put(self, key: str, reply: CachedReply, *, model: str) -> None:
        """Store a reply unless the key already has one (first reply wins)."""
        row = (key, model, *astuple(reply), time.time())
        with self._lock:
            self._database.run(
                lambda db: db.execute(
                    "INSERT OR IGNORE INTO replies VALUES (?,?,?,?,?,?,?,?)", row
                ),
                None,
            )

    def discard(self, keys: Sequence[str]) -> None:
        """Remove the replies of `keys` (absent keys are ignored)."""
        rows = [(key,) for key in keys]
        with self._lock:
            self._database.run(
                lambda db: db.executemany("DELETE FROM replies WHERE key = ?", rows), None
            )

    def __len__(self) -> int:
        with self._lock:
            return self._database.run(
                lambda db: int(db.execute("SELECT COUNT(*) FROM replies").fetchone()[0]), 0
            )

    def close(self) -> None:
        """Close the connection (a later call opens it again)."""
        with self._lock:
            self._database.close()


def _lookup(connection: sqlite3.Connection, keys: list[str]) -> dict[str, CachedReply]:
    found: dict[str, CachedReply] = {}
    for start in range(0, len(keys), _LOOKUP_CHUNK):
        chunk = keys[start : start + _LOOKUP_CHUNK]
        placeholders = ",".join("?" * len(chunk))
        rows = connection.execute(
            "SELECT key, text, prompt_tokens, completion_tokens, cost_usd, latency_ms "
            f"FROM replies WHERE key IN ({placeholders})",
            chunk,
        )
        for key, *values in rows:
            found[key] = CachedReply(*values)
    return found


class ObjectReplyCache:
    """Successful replies by `cache_key`, one JSON object each under ``<directory>/replies/``
    on an object store (or any fsspec filesystem)."""

    def __init__(self, directory: UPath) -> None:
        self.root = directory / REPLIES_FOLDER
        self._fs = self.root.fs

    def _path(self, key: str) -> str:
        return (self.root / key[:2] / f"{key}.json").path

    def get_many(self, keys: Sequence[str]) -> dict[str, CachedReply]:
        """The cached replies among `keys`, fetched concurrently (missing keys are absent)."""
        unique = list(dict.fromkeys(keys))
        paths = {self._path(key): key for key in unique}
        found = self._fs.cat(list(paths), on_error="omit") if paths else {}
        replies: dict[str, CachedReply] = {}
        for path, data in found.items():
            try:
                replies[paths[self._fs._strip_protocol(path)]] = CachedReply(**json.loads(data))
            except (ValueError, TypeError) as error:
                self._set_aside(self._fs._strip_protocol(path), error)
        return replies

    def _set_aside(self, path: str, error: Exception) -> None:
        """Move a reply object that does not read back aside (its key is free again)."""
        aside = f"{path.rsplit('/', 1)[0]}/{aside_name(path.rsplit('/', 1)[1])}"
        with contextlib.suppress(FileNotFoundError):  # another pod moved it first
            self._fs.mv(path, aside)
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        url = self._fs.unstrip_protocol(path)
        warn_once(
            f"{WHAT}|{aside}",
            f"{WHAT} {url} is corrupt ({type(error).__name__}: {reason}): set aside as "
            f"{aside.rsplit('/', 1)[1]}, its prompt is asked of the provider again",
        )

    def put(self, key: str, reply: CachedReply, *, model: str) -> None:
        """Store a reply unless the key already has one (first reply wins: a create-only PUT)."""
        record = json.dumps(asdict(reply)).encode()
        try:
            self._fs.pipe_file(self._path(key), record, mode="create")
        except FileExistsError:
            return

    def discard(self, keys: Sequence[str]) -> None:
        """Remove the replies of `keys` (absent keys are ignored)."""
        present = [path for path in map(self._path, dict.fromkeys(keys)) if self._fs.exists(path)]
        if present:
            self._fs.rm(present)

    def __len__(self) -> int:
        if not self._fs.exists(self.root.path):
            return 0
        return sum(1 for path in self._fs.find(self.root.path) if path.endswith(".json"))

    def close(self) -> None:
        """Nothing to release (each call is its own request)."""


class ReplyStore(Protocol):
    """What the LLM client needs of a reply cache."""

    def get_many(self, keys: Sequence[str]) -> dict[str, CachedReply]: ...

    def put(self, key: str, reply: CachedReply, *, model: str) -> None: ...

    def discard(self, keys: Sequence[str]) -> None: ...

    def close(self) -> None: ...


def open_reply_cache(location: str | os.PathLike[str]) -> ReplyStore:
    """The reply cache at `location`: SQLite on a local disk, objects on an object store."""
    directory = storage_path(location)
    if not is_local(directory):
        return ObjectReplyCache(directory)
    return ReplyCache(Path(directory.path))
