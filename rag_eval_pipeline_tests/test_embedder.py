"""The packaged model loads offline, embeds deterministically, and the cache avoids re-embedding."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from rag_eval_pipeline.embedding.embedder import Embedder


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
