"""Tests for the UX-tier metrics on hand-built unit vectors with known cosines."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.metrics.ux import (
    cache_hit_rate,
    context_preservation,
    multi_turn_consistency,
    semantic_cache_hits,
)

pytestmark = [pytest.mark.unit]


def unit(degrees: float) -> list[float]:
    """2-d unit vector at ``degrees`` from the x axis."""
    radians = np.deg2rad(degrees)
    return [float(np.cos(radians)), float(np.sin(radians))]


def vectors(*rows: list[float]) -> np.ndarray:
    return np.array(rows, dtype=np.float32)


# cos(X, A) = 0.6, cos(X, B) = 0.8, cos(A, Y) = 0.8, cos(B, Y) = 0.6, cos(A, B) = 0.96
X, Y = [1.0, 0.0], [0.0, 1.0]
A, B = [0.6, 0.8], [0.8, 0.6]


def naive_cache_hits(embeddings: np.ndarray, threshold: float) -> np.ndarray:
    similarities = embeddings @ embeddings.T
    return np.array(
        [
            bool((similarities[i, :i] > embeddings.dtype.type(threshold)).any())
            for i in range(len(embeddings))
        ]
    )


def test_cache_hits_at_known_angles() -> None:
    # angles 0°, 90°, 10°, 100°, 45°: cos(10°)≈0.985, cos(35°)≈0.819, cos(45°)≈0.707
    embeddings = vectors(unit(0), unit(90), unit(10), unit(100), unit(45))
    assert semantic_cache_hits(embeddings, threshold=0.85).tolist() == [
        False,
        False,
        True,  # 10° from question 0
        True,  # 10° from question 1
        False,  # best is 35° from question 2: 0.819 < 0.85
    ]
    assert semantic_cache_hits(embeddings, threshold=0.8).tolist() == [
        False,
        False,
        True,
        True,
        True,
    ]
    assert cache_hit_rate(embeddings, threshold=0.85) == pytest.approx(0.4)


def test_cache_hits_threshold_is_strict() -> None:
    embeddings = vectors(X, A, Y)  # cos(X, A) = 0.6 and cos(A, Y) = 0.8 exactly in float32
    assert semantic_cache_hits(embeddings, threshold=0.8).tolist() == [False, False, False]
    assert semantic_cache_hits(embeddings, threshold=0.79).tolist() == [False, False, True]
    assert semantic_cache_hits(embeddings, threshold=0.6).tolist() == [False, False, True]
    assert semantic_cache_hits(embeddings, threshold=0.59).tolist() == [False, True, True]
    float64 = np.array([X, A], dtype=np.float64)
    assert semantic_cache_hits(float64, threshold=0.6).tolist() == [False, False]


def test_cache_hits_only_look_at_earlier_questions() -> None:
    embeddings = vectors(X, Y, Y, X)
    assert semantic_cache_hits(embeddings).tolist() == [False, False, True, True]
    assert semantic_cache_hits(vectors(X)).tolist() == [False]
    assert semantic_cache_hits(np.zeros((0, 3), dtype=np.float32)).tolist() == []
    assert np.isnan(cache_hit_rate(np.zeros((0, 3), dtype=np.float32)))


@pytest.mark.parametrize("block_elements", [1, 7, 64, 1 << 24])
def test_cache_hits_blocking_matches_naive(block_elements: int) -> None:
    raw = np.random.default_rng(0).normal(size=(60, 4))
    embeddings = (raw / np.linalg.norm(raw, axis=1, keepdims=True)).astype(np.float32)
    expected = naive_cache_hits(embeddings, 0.8)
    assert 0 < expected.sum() < 59
    hits = semantic_cache_hits(embeddings, 0.8, block_elements=block_elements)
    assert hits.tolist() == expected.tolist()


def test_embeddings_must_be_normalized() -> None:
    with pytest.raises(ValueError, match="L2-normalized"):
        semantic_cache_hits(np.array([[1.0, 1.0]], dtype=np.float32))
    with pytest.raises(ValueError, match="2-D"):
        semantic_cache_hits(np.array([1.0, 0.0], dtype=np.float32))


def test_context_preservation_hand_computed() -> None:
    frame = pd.DataFrame(
        {
            "session_id": ["s1", "s2", "s1", "s1", "s3", "s3"],
            "turn": [2, 1, 1, 3, 5, 4],
        }
    )
    # s1 by turn: X, A, B -> cos 0.6 and 0.96; s3 by turn: Y (turn 4), A (turn 5) -> 0.8
    embeddings = vectors(A, X, X, B, A, Y)
    result = context_preservation(frame, embeddings)
    per_session = result.per_session
    assert list(per_session.columns) == ["session_id", "n_turns", "n_pairs", "context_preservation"]
    assert per_session["session_id"].tolist() == ["s1", "s3"]  # single-turn s2 excluded
    assert per_session["n_turns"].tolist() == [3, 2]
    assert per_session["n_pairs"].tolist() == [2, 1]
    assert per_session["context_preservation"].tolist() == pytest.approx([0.78, 0.8])
    assert result.overall == pytest.approx(0.79)


def test_context_preservation_custom_columns_and_edge_cases() -> None:
    frame = pd.DataFrame({"conv": [7, 7], "step": [1, 2]}, index=[10, 3])
    embeddings = vectors(unit(0), unit(60))
    result = context_preservation(frame, embeddings, session_col="conv", turn_col="step")
    assert result.per_session["conv"].tolist() == [7]
    assert result.overall == pytest.approx(0.5, abs=1e-6)

    single = context_preservation(pd.DataFrame({"session_id": ["a"], "turn": [1]}), vectors(X))
    assert single.per_session.empty and np.isnan(single.overall)
    with pytest.raises(ValueError, match="ambiguous"):
        context_preservation(pd.DataFrame({"session_id": ["a", "a"], "turn": [1, 1]}), embeddings)
    with pytest.raises(ValueError, match="one per frame row"):
        context_preservation(frame, vectors(X))


def test_multi_turn_consistency_hand_computed() -> None:
    frame = pd.DataFrame(
        {
            "session_id": ["s1", "s1", "s1", "s1", "s2", "s2", "s3"],
            "turn": [1, 2, 3, 4, 1, 2, 1],
            "retrieved_doc_ids": [
                ["d1", "d2"],
                ["d2", "d3"],  # shares d2 with turn 1 -> pair counted
                ["d9"],  # disjoint from turn 2 -> pair skipped
                np.array(["d9", "d4"]),  # shares d9 with turn 3 -> counted
                ["d5"],
                None,  # nothing retrieved -> no overlap
                ["d1"],
            ],
        }
    )
    answers = vectors(X, A, Y, B, X, X, Y)
    result = multi_turn_consistency(frame, answers)
    per_session = result.per_session
    assert list(per_session.columns) == [
        "session_id",
        "n_turns",
        "n_pairs",
        "n_overlapping_pairs",
        "multi_turn_consistency",
    ]
    assert per_session["session_id"].tolist() == ["s1", "s2"]  # single-turn s3 excluded
    assert per_session["n_pairs"].tolist() == [3, 1]
    assert per_session["n_overlapping_pairs"].tolist() == [2, 0]
    # s1: cos(X, A) = 0.6 and cos(Y, B) = 0.6; cos(A, Y) = 0.8 is not counted
    assert per_session.loc[0, "multi_turn_consistency"] == pytest.approx(0.6)
    assert np.isnan(per_session.loc[1, "multi_turn_consistency"])
    assert result.overall == pytest.approx(0.6)


def test_multi_turn_consistency_uses_turn_order_and_validates_docs() -> None:
    frame = pd.DataFrame(
        {"session_id": [1, 1, 1], "turn": [3, 1, 2], "retrieved_doc_ids": [[1], [1], [2]]}
    )
    # sorted turns: 1 (docs {1}), 2 (docs {2}), 3 (docs {1}): no consecutive overlap
    result = multi_turn_consistency(frame, vectors(X, X, X))
    assert result.per_session["n_overlapping_pairs"].tolist() == [0]
    assert np.isnan(result.overall)

    frame["retrieved_doc_ids"] = [[1], [1], [1]]
    result = multi_turn_consistency(frame, vectors(X, A, B))  # turns 1, 2, 3 -> A, B, X
    assert result.per_session["multi_turn_consistency"].tolist() == pytest.approx([0.88])

    frame["retrieved_doc_ids"] = ["d1", "d1", "d1"]
    with pytest.raises(ValueError, match="list of ids"):
        multi_turn_consistency(frame, vectors(X, A, B))
