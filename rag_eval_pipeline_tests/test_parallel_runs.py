"""Runs side by side share the embedding cache: two processes that embed the same texts at the
same moment embed each text once (partitions run side by side as separate runs of the queue).
"""

from __future__ import annotations

import hashlib
import multiprocessing
import time
from dataclasses import dataclass
from multiprocessing.synchronize import Barrier
from pathlib import Path

import numpy as np
import pytest

from rag_eval_pipeline.embedding.embedder import Embedder

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        "fork" not in multiprocessing.get_all_start_methods(), reason="the test forks its workers"
    ),
]


@dataclass
class SlowStandInEmbedder(Embedder):
    """The real cache protocol around a stand-in model: a text's vector comes from its hash, each
    text embedded is appended to `log`, and embedding takes long enough for processes to meet."""

    log: Path | None = None

    def _embed(self, texts: list[str]) -> np.ndarray:
        assert self.log is not None
        with self.log.open("a") as handle:
            handle.write("".join(f"{text}\n" for text in texts))
        time.sleep(0.5)
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest(), dtype=np.uint8) for t in texts]
        return np.asarray(rows, dtype=np.float32)


def _encode_after(barrier: Barrier, embedder: Embedder, own: str, out: Path) -> None:
    barrier.wait()
    np.save(out, embedder.encode(["shared one", "shared two", own]))


def test_two_processes_embedding_the_same_texts_embed_each_once(tmp_path: Path) -> None:
    log = tmp_path / "embedded.txt"
    embedder = SlowStandInEmbedder(cache_dir=tmp_path / "cache", log=log)
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(2)
    workers = [
        context.Process(
            target=_encode_after, args=(barrier, embedder, f"own {i}", tmp_path / f"{i}.npy")
        )
        for i in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    embedded = log.read_text().splitlines()
    assert sorted(embedded) == ["own 0", "own 1", "shared one", "shared two"]
    first, second = (np.load(tmp_path / f"{i}.npy") for i in range(2))
    np.testing.assert_array_equal(first[:2], second[:2])
    assert not np.array_equal(first[2], second[2])
