"""Tier 0 embedding quality: how well an embedding model separates the corpus's topic clusters.

:func:`cluster_quality` scores embeddings against cluster labels (a corpus ``cluster`` column,
or :func:`kmeans_labels` when the corpus has none). Every statistic is computed from per-cluster
sums in row blocks, so memory stays ``O(chunk_size·(d + k) + k·d + n)`` for ``n`` items of
dimension ``d`` in ``k`` clusters: nothing ``n × n`` is ever materialized.

Cosine conventions shared by all statistics: rows are L2-normalized before any cosine; a zero
row stays zero, so it has cosine similarity 0 (distance 1) to every other row and distance 0 to
itself. Non-zero inputs need no such rule.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pandas as pd
import scipy.sparse as sp

__all__ = ["cluster_quality", "context_relevance", "kmeans_labels"]


def _normalize_rows(block: np.ndarray, dtype: type[np.floating] = np.float64) -> np.ndarray:
    """A copy of ``block`` in ``dtype`` with unit-norm rows; zero rows stay zero."""
    out = block.astype(dtype)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.divide(out, norms, out=out, where=norms > 0)
    return out


def _blocks(
    embeddings: np.ndarray, rows: np.ndarray | None, chunk_size: int
) -> Iterator[tuple[slice, np.ndarray]]:
    """Float64 row blocks of ``embeddings`` (or of ``embeddings[rows]``), with their positions."""
    n = embeddings.shape[0] if rows is None else rows.shape[0]
    for start in range(0, n, chunk_size):
        positions = slice(start, min(start + chunk_size, n))
        raw = embeddings[positions] if rows is None else embeddings[rows[positions]]
        block = raw.astype(np.float64)
        if not np.isfinite(block).all():
            raise ValueError("embeddings contain NaN or infinite values")
        yield positions, block


def _sum_by_cluster(codes: np.ndarray, block: np.ndarray, n_clusters: int) -> np.ndarray:
    """Per-cluster column sums of ``block`` (``n_clusters × d``) via a sparse one-hot product."""
    m = block.shape[0]
    one_hot = sp.csr_array((np.ones(m), (codes, np.arange(m))), shape=(n_clusters, m))
    return one_hot @ block


def _mean_centroid_distance(centroids: np.ndarray, chunk_size: int) -> float:
    """Mean Euclidean distance over the ``k(k-1)/2`` distinct centroid pairs; NaN when ``k < 2``.

    Uses ``|a-b|² = |a|² + |b|² - 2a·b`` on centroids centred at their mean (which leaves the
    distances unchanged and limits cancellation), one block of rows at a time.
    """
    k = centroids.shape[0]
    if k < 2:
        return math.nan
    centered = centroids - centroids.mean(axis=0)
    sq_norms = np.einsum("ij,ij->i", centered, centered)
    total = 0.0
    for start in range(0, k, chunk_size):
        stop = min(start + chunk_size, k)
        sq = (
            sq_norms[start:stop, None]
            + sq_norms[None, :]
            - 2.0 * (centered[start:stop] @ centered.T)
        )
        dist = np.sqrt(np.maximum(sq, 0.0))
        upper = np.arange(start, stop)[:, None] < np.arange(k)[None, :]
        total += float(dist[upper].sum())
    return total / (k * (k - 1) / 2)


def _cosine_silhouette(
    embeddings: np.ndarray, codes: np.ndarray, rows: np.ndarray | None, chunk_size: int
) -> float:
    """Mean cosine silhouette of ``embeddings[rows]`` (all rows when None) under ``codes[rows]``.

    With unit rows ``x̂`` and per-cluster sums ``S_c = Σ_{j∈c} x̂_j`` over the scored rows, the
    summed cosine distance from row ``i`` to cluster ``c`` is ``Σ_{j∈c} (1 - x̂_i·x̂_j) =
    n_c - x̂_i·S_c``, so each block of rows needs one ``block × k`` product instead of a
    ``block × n`` distance matrix, and the result equals summing the pairwise distances.
    Then ``a_i`` = mean distance to the other members of its own cluster, ``b_i`` = smallest
    mean distance to another cluster, ``s_i = (b_i - a_i) / max(a_i, b_i)`` with ``s_i = 0`` for
    singleton clusters and when ``a_i = b_i = 0`` (both as in scikit-learn). NaN unless
    ``2 ≤ k ≤ m - 1`` for ``m`` scored rows, the range where scikit-learn defines the score.
    """
    sub_codes = codes if rows is None else codes[rows]
    m = sub_codes.shape[0]
    _, sub_codes = np.unique(sub_codes, return_inverse=True)
    counts = np.bincount(sub_codes).astype(np.float64)
    k = counts.shape[0]
    if not 2 <= k <= m - 1:
        return math.nan

    sums = np.zeros((k, embeddings.shape[1]))
    for positions, block in _blocks(embeddings, rows, chunk_size):
        sums += _sum_by_cluster(sub_codes[positions], _normalize_rows(block), k)

    total = 0.0
    for positions, block in _blocks(embeddings, rows, chunk_size):
        unit = _normalize_rows(block)
        own = sub_codes[positions]
        index = np.arange(own.shape[0])
        dist_sums = counts[None, :] - unit @ sums.T
        self_dist = 1.0 - np.einsum("ij,ij->i", unit, unit)
        n_others = counts[own] - 1.0
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.clip((dist_sums[index, own] - self_dist) / n_others, 0.0, 2.0)
        mean_dist = dist_sums / counts[None, :]
        mean_dist[index, own] = np.inf
        b = np.clip(mean_dist.min(axis=1), 0.0, 2.0)
        denom = np.maximum(a, b)
        defined = (n_others > 0) & (denom > 0)
        total += float(np.sum((b[defined] - a[defined]) / denom[defined]))
    return total / m


def cluster_quality(
    embeddings: np.ndarray,
    labels: np.ndarray,
    *,
    silhouette_sample_size: int | None = 20000,
    seed: int = 0,
    chunk_size: int = 2048,
) -> dict[str, float]:
    """Cluster separation statistics of ``embeddings`` (``n × d``) under ``labels`` (length n).

    Returned keys (counts as ``int``, statistics as ``float``):

    - ``n_items``: ``n``, the number of embeddings.
    - ``n_clusters``: ``k``, the number of distinct labels.
    - ``total_pairs``: the number of unordered within-cluster pairs, ``Σ_c n_c(n_c-1)/2`` over
      clusters of size ``n_c`` (the pairs ``avg_intra_cluster_sim`` averages over; the number
      of all pairs is ``n_items·(n_items-1)/2``).
    - ``avg_intra_cluster_sim``: for each cluster with ``n_c ≥ 2``, the mean cosine similarity
      over its distinct pairs, in closed form ``(|Σ_c x̂|² - Σ_c |x̂|²) / (n_c(n_c-1))`` on
      L2-normalized rows ``x̂``; then the unweighted mean over those clusters. NaN when every
      cluster is a singleton.
    - ``avg_inter_cluster_dist``: the mean Euclidean distance between cluster centroids (means
      of the embeddings as given, not normalized) over the ``k(k-1)/2`` distinct centroid
      pairs. NaN when ``k = 1``.
    - ``silhouette_score``: the mean cosine silhouette coefficient, equal to
      ``sklearn.metrics.silhouette_score(X, labels, metric="cosine")`` on the scored rows:
      ``s_i = (b_i - a_i) / max(a_i, b_i)`` with ``a_i`` the mean cosine distance
      (``1 - cos``) to the other members of i's cluster and ``b_i`` the smallest mean distance
      to another cluster; ``s_i = 0`` for members of singleton clusters. Where scikit-learn
      raises (fewer than 2 or more than ``m - 1`` distinct labels among the ``m`` scored rows)
      this is NaN. When ``n > silhouette_sample_size`` only a uniform sample without
      replacement is scored, the rows ``np.random.default_rng(seed).choice(n,
      silhouette_sample_size, replace=False)``, and only they form the clusters.
    - ``silhouette_sample_size``: ``m``, the number of rows the silhouette was computed on
      (``n`` when not sampled).

    The silhouette costs ``O(m·k·d)`` time (see :func:`_cosine_silhouette`); ``chunk_size`` is
    the number of rows per block. Raises ``ValueError`` for empty input, mismatched shapes,
    missing labels or non-finite embeddings.
    """
    embeddings, labels = _checked_inputs(embeddings, labels, silhouette_sample_size, chunk_size)
    n = embeddings.shape[0]
    _, codes = np.unique(labels, return_inverse=True)
    codes = codes.reshape(-1)
    counts = np.bincount(codes)
    raw_sums, unit_sums, unit_sq_norms = _cluster_sums(
        embeddings, codes, counts.shape[0], chunk_size
    )
    rows = _silhouette_rows(n, silhouette_sample_size, seed)
    return {
        "n_items": n,
        "n_clusters": counts.shape[0],
        "total_pairs": int(np.sum(counts * (counts - 1) // 2)),
        "avg_intra_cluster_sim": _mean_intra_similarity(counts, unit_sums, unit_sq_norms),
        "avg_inter_cluster_dist": _mean_centroid_distance(raw_sums / counts[:, None], chunk_size),
        "silhouette_score": _cosine_silhouette(embeddings, codes, rows, chunk_size),
        "silhouette_sample_size": n if rows is None else int(rows.shape[0]),
    }


def _silhouette_rows(n: int, sample_size: int | None, seed: int) -> np.ndarray | None:
    """The sorted rows the silhouette scores when ``n > sample_size`` (a uniform sample without
    replacement, see :func:`cluster_quality`); None: every row."""
    if sample_size is None or n <= sample_size:
        return None
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n, size=sample_size, replace=False))


def _checked_inputs(
    embeddings: np.ndarray,
    labels: np.ndarray,
    silhouette_sample_size: int | None,
    chunk_size: int,
) -> tuple[np.ndarray, np.ndarray]:
    """``embeddings`` and ``labels`` as arrays; ``ValueError`` for what
    :func:`cluster_quality` refuses."""
    embeddings = np.asarray(embeddings)
    labels = np.asarray(labels)
    if embeddings.ndim != 2:
        raise ValueError(f"embeddings must be 2-D (n × d), got shape {embeddings.shape}")
    n, dim = embeddings.shape
    if n == 0 or dim == 0:
        raise ValueError(f"cluster_quality needs at least one non-empty embedding, got {n} × {dim}")
    if labels.shape != (n,):
        raise ValueError(f"labels must have shape ({n},), got {labels.shape}")
    if pd.isna(labels).any():
        raise ValueError("labels contain missing values")
    if silhouette_sample_size is not None and silhouette_sample_size < 1:
        raise ValueError(
            f"silhouette_sample_size must be ≥ 1 or None, got {silhouette_sample_size}"
        )
    if chunk_size < 1:
        raise ValueError(f"chunk_size must be ≥ 1, got {chunk_size}")
    return embeddings, labels


def _cluster_sums(
    embeddings: np.ndarray, codes: np.ndarray, k: int, chunk_size: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per cluster (``k × d``, ``k × d``, ``k``): the sum of its rows as given, the sum of its
    L2-normalized rows and the sum of their squared norms, accumulated block by block."""
    raw_sums = np.zeros((k, embeddings.shape[1]))
    unit_sums = np.zeros((k, embeddings.shape[1]))
    unit_sq_norms = np.zeros(k)
    for positions, block in _blocks(embeddings, None, chunk_size):
        block_codes = codes[positions]
        unit = _normalize_rows(block)
        raw_sums += _sum_by_cluster(block_codes, block, k)
        unit_sums += _sum_by_cluster(block_codes, unit, k)
        unit_sq_norms += np.bincount(
            block_codes, weights=np.einsum("ij,ij->i", unit, unit), minlength=k
        )
    return raw_sums, unit_sums, unit_sq_norms


def _mean_intra_similarity(
    counts: np.ndarray, unit_sums: np.ndarray, unit_sq_norms: np.ndarray
) -> float:
    """``avg_intra_cluster_sim`` of :func:`cluster_quality` from the per-cluster sums."""
    multi = counts >= 2
    if not multi.any():
        return math.nan
    pair_sims = np.einsum("ij,ij->i", unit_sums[multi], unit_sums[multi]) - unit_sq_norms[multi]
    sizes = counts[multi].astype(np.float64)
    return float(np.mean(pair_sims / (sizes * (sizes - 1))))


def kmeans_labels(
    embeddings: np.ndarray, n_clusters: int | None = None, seed: int = 0
) -> np.ndarray:
    """Pseudo-topic labels (int64, length n) for a corpus without a ``cluster`` column.

    Runs scikit-learn ``KMeans(n_clusters, random_state=seed, n_init=1)`` (k-means++ init) on
    the L2-normalized rows, so Euclidean k-means follows the cosine geometry the silhouette
    uses. The same input and seed always give the same labels. When ``n_clusters`` is None,
    ``k = round(sqrt(n / 2))`` clipped to ``[2, 50]``, and then to at most ``n``. An explicit
    ``n_clusters`` must lie in ``[1, n]``. Raises ``ValueError`` for empty or non-2-D input.
    """
    from sklearn.cluster import KMeans

    embeddings = np.asarray(embeddings)
    if embeddings.ndim != 2 or embeddings.shape[0] == 0:
        raise ValueError(f"embeddings must be a non-empty 2-D array, got shape {embeddings.shape}")
    n = embeddings.shape[0]
    if n_clusters is None:
        n_clusters = min(int(np.clip(round(math.sqrt(n / 2)), 2, 50)), n)
    elif not 1 <= n_clusters <= n:
        raise ValueError(f"n_clusters must be between 1 and {n}, got {n_clusters}")
    unit = _normalize_rows(embeddings, np.float32 if embeddings.dtype == np.float32 else np.float64)
    model = KMeans(n_clusters=n_clusters, random_state=seed, n_init=1)
    return model.fit_predict(unit).astype(np.int64)


def context_relevance(
    question_vectors: np.ndarray, context_vectors: np.ndarray, owners: np.ndarray
) -> np.ndarray:
    """Per question, the mean cosine similarity between the question and each of its
    retrieved chunks, clipped to [0, 1] (the app eval module's `context_relevance`).

    ``context_vectors[j]`` is a chunk retrieved for question ``owners[j]`` (an index into
    ``question_vectors``); a chunk listed twice counts twice. Each cosine is clipped at 0
    before averaging (an opposed chunk is as irrelevant as an orthogonal one), so the value
    is in [0, 1]. A question without chunks is NaN; a zero vector has cosine 0 (see above).
    """
    questions = _normalize_rows(np.asarray(question_vectors, dtype=np.float64))
    contexts = _normalize_rows(np.asarray(context_vectors, dtype=np.float64))
    owners = np.asarray(owners, dtype=np.int64)
    cosines = np.clip(np.einsum("ij,ij->i", questions[owners], contexts), 0.0, 1.0)
    n = len(questions)
    counts = np.bincount(owners, minlength=n).astype(float)
    sums = np.bincount(owners, weights=cosines, minlength=n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(counts > 0, sums / counts, np.nan)
