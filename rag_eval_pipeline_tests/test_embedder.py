"""The packaged model loads offline, embeds deterministically, and the cache avoids re-embedding."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rag_eval_pipeline.embedding.embedder import Embedder

pytestmark = [pytest.mark.integration]


def test_packaged_model_gives_normalized_384_dim_vectors(embedder: Embedder) -> None:
    vectors = embedder.encode(["How do I rotate an API key?", "Storage is billed per GiB-month."])
    assert vectors.shape == (2, 384)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similar = embedder.encode(["How can I rotate my API key?"])[0]
    assert float(vectors[0] @ similar) > float(vectors[1] @ similar) + 0.3


def test_second_encode_comes_from_cache(tmp_path: Path, embedder: Embedder) -> None:
    first = Embedder(cache_dir=tmp_path)
    texts = ["alpha document", "beta document", "alpha document"]
    vectors = first.encode(texts)
    assert (first.last_stats.embedded, first.last_stats.from_cache) == (2, 1)
    fresh_process_view = Embedder(cache_dir=tmp_path)
    again = fresh_process_view.encode([*texts, "gamma"])
    assert (fresh_process_view.last_stats.embedded, fresh_process_view.last_stats.from_cache) == (
        1,
        3,
    )
    np.testing.assert_array_equal(again[:3], vectors)
    np.testing.assert_array_equal(vectors[0], vectors[2])


def test_empty_input_returns_empty_matrix(embedder: Embedder) -> None:
    assert embedder.encode([]).shape == (0, 384)


def test_loading_the_model_draws_no_progress_bar(tmp_path: Path) -> None:
    """A fresh process (as `rag-eval run` is) embeds without a tqdm bar on its stderr."""
    script = (
        "from pathlib import Path\n"
        "from rag_eval_pipeline.embedding.embedder import Embedder\n"
        f"embedder = Embedder(cache_dir=Path({str(tmp_path)!r}))\n"
        "print(embedder.encode(['a fresh text']).shape)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TQDM"))}
    completed = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "(1, 384)"
    assert "Loading weights" not in completed.stderr
    assert "it/s]" not in completed.stderr
