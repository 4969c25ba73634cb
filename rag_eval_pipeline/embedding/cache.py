"""Content-addressed embedding cache: one float32 vector per (model id, text hash), on disk.

Vectors live in append-only shard files ``<cache_dir>/<model_key>/<shard>.npz`` so a re-run, a new
date or a backfill over unchanged texts never pays for the model again. The folder is local or
any fsspec URL (`s3://...`: run pods share it). Shards are published atomically
(`storage.objects.write_atomically`), so a crash never leaves a half-written shard behind.
Processes on one machine that embed at the same time (partitions materialized side by side)
take turns through an advisory file lock, so texts two dataset versions share are embedded
once, not once each; on an object store there is no lock, and two pods may both embed a shared
text (equal vectors in two shards: the cache stays correct).
"""

from __future__ import annotations

import hashlib
import io
import os
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from filelock import FileLock

from rag_eval_pipeline.storage.machine import cache_write, machine_failure_line
from rag_eval_pipeline.storage.objects import (
    is_local,
    read_snapshot,
    storage_path,
    write_atomically,
)


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

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = storage_path(directory)
        self._vectors: dict[str, np.ndarray] = {}
        self._loaded_shards: set[str] = set()

    def _refresh(self) -> None:
        if not self.directory.exists():
            return
        for shard in sorted(self.directory.glob("*.npz")):
            if shard.name in self._loaded_shards:
                continue
            with np.load(io.BytesIO(read_snapshot(shard))) as data:
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
        if not is_local(self.directory):
            yield
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            lock = FileLock(self.directory.path + "/.lock")
            lock.acquire()
        except OSError as error:
            if machine_failure_line(error) is None:
                raise
            yield  # a cache nobody can write: nothing to serialize
            return
        try:
            yield
        finally:
            lock.release()

    def store(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """Persist new vectors atomically as one new shard."""
        if len(keys) == 0:
            return
        shard_name = f"{uuid.uuid4().hex}.npz"
        buffer = io.BytesIO()
        np.savez(buffer, keys=np.asarray(keys), vectors=vectors.astype(np.float32))
        with cache_write("embedding cache", self.directory):
            write_atomically(
                self.directory / shard_name, lambda handle: handle.write(buffer.getvalue())
            )
        self._vectors.update(zip(keys, vectors.astype(np.float32), strict=True))
        self._loaded_shards.add(shard_name)
