"""Tier 0 embedding metrics against scikit-learn's silhouette and naive O(n²) reference loops."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score, silhouette_score

from rag_eval_pipeline.metrics.embedding import cluster_quality, kmeans_labels

pytestmark = [pytest.mark.unit]


def _naive_intra_inter(embeddings: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """Mean pairwise cosine within clusters (macro over clusters of ≥2) and centroid distance."""
    cluster_means = []
    centroids = []
    for label in np.unique(labels):
        members = embeddings[labels == label]
        centroids.append(members.mean(axis=0))
        sims = [
            float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
            for a, b in itertools.combinations(members, 2)
        ]
        if sims:
            cluster_means.append(np.mean(sims))
    distances = [float(np.linalg.norm(a - b)) for a, b in itertools.combinations(centroids, 2)]
    return float(np.mean(cluster_means)), float(np.mean(distances))


def _random_case(n: int, dim: int, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((k, dim)) * 2
    labels = rng.integers(0, k, size=n)
    return centers[labels] + rng.standard_normal((n, dim)), labels


@pytest.mark.parametrize(
    ("n", "dim", "k", "seed"),
    [(30, 4, 2, 0), (200, 16, 5, 1), (500, 64, 12, 2), (257, 3, 40, 3), (1500, 32, 3, 4)],
)
def test_silhouette_equals_sklearn(n: int, dim: int, k: int, seed: int) -> None:
    embeddings, labels = _random_case(n, dim, k, seed)
    labels[:3] = [k, k + 1, k + 2]  # three singleton clusters
    result = cluster_quality(embeddings, labels, chunk_size=64)
    expected = silhouette_score(embeddings, labels, metric="cosine")
    assert result["silhouette_score"] == pytest.approx(expected, abs=1e-6)
    assert result["silhouette_sample_size"] == n


def test_silhouette_equals_sklearn_float32_and_string_labels() -> None:
    embeddings, codes = _random_case(800, 48, 6, 5)
    embeddings = embeddings.astype(np.float32)
    labels = np.array([f"topic-{code}" for code in codes], dtype=object)
    result = cluster_quality(embeddings, labels)
    expected = silhouette_score(embeddings, labels, metric="cosine")
    assert result["silhouette_score"] == pytest.approx(expected, abs=1e-6)
    assert result["n_clusters"] == 6


@pytest.mark.parametrize(("n", "dim", "k", "seed"), [(40, 5, 3, 0), (120, 12, 7, 1)])
def test_intra_and_inter_equal_naive_loops(n: int, dim: int, k: int, seed: int) -> None:
    embeddings, labels = _random_case(n, dim, k, seed)
    labels[0] = k  # a singleton cluster: no pairs, still a centroid
    intra, inter = _naive_intra_inter(embeddings, labels)
    result = cluster_quality(embeddings, labels, chunk_size=5)
    assert result["avg_intra_cluster_sim"] == pytest.approx(intra, abs=1e-12)
    assert result["avg_inter_cluster_dist"] == pytest.approx(inter, abs=1e-12)
    sizes = np.bincount(labels)
    assert result["total_pairs"] == int(sum(s * (s - 1) // 2 for s in sizes))
    assert result["n_items"] == n
    assert result["n_clusters"] == k + 1


def test_chunk_size_does_not_change_results() -> None:
    embeddings, labels = _random_case(300, 10, 4, 6)
    small = cluster_quality(embeddings, labels, chunk_size=1)
    large = cluster_quality(embeddings, labels, chunk_size=10_000)
    assert small.keys() == large.keys()
    for key in small:
        assert small[key] == pytest.approx(large[key], rel=1e-12, abs=1e-12)


def test_hand_computed_example() -> None:
    embeddings = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [0.0, 3.0]])
    result = cluster_quality(embeddings, np.array([0, 0, 1, 1]))
    assert result == {
        "n_items": 4,
        "n_clusters": 2,
        "total_pairs": 2,
        "avg_intra_cluster_sim": pytest.approx(1.0),
        "avg_inter_cluster_dist": pytest.approx(math.hypot(1.5, 2.0)),
        "silhouette_score": pytest.approx(1.0),
        "silhouette_sample_size": 4,
    }


def test_zero_vector_has_cosine_zero_to_others_and_distance_zero_to_itself() -> None:
    embeddings = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0], [0.0, 2.0]])
    result = cluster_quality(embeddings, np.array([0, 0, 1, 1]))
    # Cluster 0: a = 1 and b = 1 for both members (s = 0); cluster 1: a = 0, b = 1 (s = 1).
    assert result["silhouette_score"] == pytest.approx(0.5)
    assert result["avg_intra_cluster_sim"] == pytest.approx(0.5)


def test_sample_path_scores_the_documented_sample() -> None:
    embeddings, labels = _random_case(900, 8, 5, 7)
    result = cluster_quality(embeddings, labels, silhouette_sample_size=250, seed=3)
    rows = np.random.default_rng(3).choice(900, size=250, replace=False)
    expected = silhouette_score(embeddings[rows], labels[rows], metric="cosine")
    assert result["silhouette_sample_size"] == 250
    assert result["silhouette_score"] == pytest.approx(expected, abs=1e-6)
    intra, inter = _naive_intra_inter(embeddings, labels)  # other statistics use every row
    assert result["avg_intra_cluster_sim"] == pytest.approx(intra, abs=1e-12)
    assert result["avg_inter_cluster_dist"] == pytest.approx(inter, abs=1e-12)
    unsampled = cluster_quality(embeddings, labels, silhouette_sample_size=None)
    assert unsampled["silhouette_sample_size"] == 900


def test_one_cluster_has_nan_silhouette_and_inter_distance() -> None:
    embeddings, _ = _random_case(20, 4, 1, 8)
    result = cluster_quality(embeddings, np.zeros(20, dtype=int))
    assert math.isnan(result["silhouette_score"])
    assert math.isnan(result["avg_inter_cluster_dist"])
    unit = embeddings / np.linalg.norm(embeddings, axis=1, keepdims=True)
    sims = unit @ unit.T
    expected = sims[np.triu_indices(20, k=1)].mean()
    assert result["avg_intra_cluster_sim"] == pytest.approx(expected, abs=1e-12)
    assert result["total_pairs"] == 190


def test_all_singletons_have_nan_intra_and_silhouette() -> None:
    embeddings, _ = _random_case(5, 3, 1, 9)
    result = cluster_quality(embeddings, np.arange(5))
    assert result["total_pairs"] == 0
    assert math.isnan(result["avg_intra_cluster_sim"])
    assert math.isnan(result["silhouette_score"])
    assert not math.isnan(result["avg_inter_cluster_dist"])


@pytest.mark.parametrize(
    ("embeddings", "labels", "message"),
    [
        (np.empty((0, 4)), np.empty(0), "at least one"),
        (np.ones(4), np.zeros(4), "2-D"),
        (np.ones((3, 2)), np.zeros(2), "labels must have shape"),
        (np.array([[1.0, np.nan], [1.0, 2.0]]), np.array([0, 1]), "NaN or infinite"),
        (np.ones((2, 2)), np.array([1.0, np.nan]), "missing"),
    ],
)
def test_invalid_input_raises(embeddings: np.ndarray, labels: np.ndarray, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        cluster_quality(embeddings, labels)


def test_kmeans_labels_are_deterministic_and_recover_blobs() -> None:
    embeddings, truth = _random_case(400, 16, 5, 10)
    embeddings = embeddings.astype(np.float32) * 3
    first = kmeans_labels(embeddings, n_clusters=5, seed=1)
    assert first.dtype == np.int64
    np.testing.assert_array_equal(first, kmeans_labels(embeddings, n_clusters=5, seed=1))
    assert adjusted_rand_score(truth, first) > 0.95


@pytest.mark.parametrize(("n", "expected_k"), [(3, 2), (200, 10), (450, 15), (6000, 50)])
def test_kmeans_default_cluster_count(n: int, expected_k: int) -> None:
    rng = np.random.default_rng(11)
    labels = kmeans_labels(rng.standard_normal((n, 4)))
    assert len(np.unique(labels)) == expected_k


def test_kmeans_rejects_bad_cluster_counts() -> None:
    with pytest.raises(ValueError, match="between 1 and 3"):
        kmeans_labels(np.ones((3, 2)), n_clusters=4)
    with pytest.raises(ValueError, match="non-empty"):
        kmeans_labels(np.empty((0, 2)))
