"""Content-addressed embedding cache: one float32 vector per (model id, text hash), on disk.

Vectors live in append-only shard files ``<cache_dir>/<model_key>/<shard>.npz`` so a re-run, a new
date or a backfill over unchanged texts never pays for the model again. Shards are written to a
temporary file and renamed into place, so a crash never leaves a half-written shard behind.
Processes that embed at the same time (partitions materialized side by side) take turns through
an advisory file lock, so texts two dataset versions share are embedded once, not once each.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; concurrent processes may embed a text twice
    fcntl = None  # type: ignore[assignment]


def text_key(text: str) -> str:
    """The cache key of one text: SHA-256 of its UTF-8 bytes, hex."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def model_key(model_id: str, normalize: bool) -> str:
    """A filesystem-safe folder name for one model configuration (`model_id` is the embedder's
    identity: the model and the fingerprint of its weights)."""
    digest = hashlib.sha256(f"{model_id}|normalize={normalize}".encode()).hexdigest()[:16]
    readable = "".join(c if c.isalnum() or c in "-_." else "_" for c in model_id)[-48:]
    return f"{readable}-{digest}"


class EmbeddingCache:
    """Vectors of one model configuration, looked up by text hash."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._vectors: dict[str, np.ndarray] = {}
        self._loaded_shards: set[str] = set()

    def _refresh(self) -> None:
        if not self.directory.exists():
            return
        for shard in sorted(self.directory.glob("*.npz")):
            if shard.name in self._loaded_shards:
                continue
            with np.load(shard) as data:
                keys, vectors = data["keys"], data["vectors"]
            self._vectors.update(zip(keys.tolist(), vectors, strict=True))
            self._loaded_shards.add(shard.name)

    def lookup(self, keys: Sequence[str]) -> list[np.ndarray | None]:
        """The cached vector of each key, or None where the text was never embedded."""
        self._refresh()
        return [self._vectors.get(key) for key in keys]

    def dimension(self) -> int | None:
        """The length of the cached vectors, or None when the cache is empty."""
        self._refresh()
        return len(next(iter(self._vectors.values()))) if self._vectors else None

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the cache's lock file: one process at a time computes and stores vectors.

        Look the keys up again inside: vectors another process stored while this one waited
        are then read, not computed again. The lock is released when the process dies.
        """
        if fcntl is None:
            yield
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        with open(self.directory / ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def store(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """Persist new vectors atomically as one new shard."""
        if len(keys) == 0:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        shard_name = f"{uuid.uuid4().hex}.npz"
        fd, tmp_name = tempfile.mkstemp(dir=self.directory, suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as handle:
                np.savez(handle, keys=np.asarray(keys), vectors=vectors.astype(np.float32))
            os.replace(tmp_name, self.directory / shard_name)
        except BaseException:
            Path(tmp_name).unlink(missing_ok=True)
            raise
        self._vectors.update(zip(keys, vectors.astype(np.float32), strict=True))
        self._loaded_shards.add(shard_name)
