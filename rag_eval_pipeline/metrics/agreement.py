"""Inter-rater agreement: LLM judge vs human and human vs human.

Judge scores in [0, 1] are mapped to the 1..5 Likert scale of human ratings with
:func:`bin_scores`; agreement is then measured with Cohen's kappa (unweighted and weighted)
and Spearman's rank correlation. Definitions follow scikit-learn / scipy so results can be
checked against them.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

__all__ = ["agreement_table", "bin_scores", "cohen_kappa", "spearman"]

KappaWeights = Literal["linear", "quadratic"] | None


def _as_1d(values: ArrayLike, name: str) -> np.ndarray:
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
    if pd.isna(array).any():
        raise ValueError(f"{name} contains missing values; drop them before calling")
    return array


def _check_pair(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    first, second = _as_1d(a, "a"), _as_1d(b, "b")
    if first.size != second.size:
        raise ValueError(f"a and b must have the same length, got {first.size} and {second.size}")
    return first, second


def cohen_kappa(
    a: ArrayLike,
    b: ArrayLike,
    *,
    weights: KappaWeights = None,
    labels: Sequence[object] | None = None,
) -> float:
    """Cohen's kappa between two raters (same definition as ``sklearn.metrics.cohen_kappa_score``).

    With ``K`` labels, ``O`` the ``K × K`` confusion matrix of counts (rows: ``a``, columns:
    ``b``) and ``E = outer(O.sum(1), O.sum(0)) / O.sum()`` the counts expected under
    independence, ``kappa = 1 - sum(W * O) / sum(W * E)`` where the disagreement weight of
    label indices ``i, j`` is ``W_ij = [i != j]`` (``weights=None``), ``|i - j|``
    (``"linear"``) or ``(i - j) ** 2`` (``"quadratic"``).

    Args:
        a, b: Ratings of the same items, any hashable labels, no missing values.
        weights: ``None``, ``"linear"`` or ``"quadratic"``.
        labels: Ordered label set. Weights use positions in this list, so for ordinal scales
            pass the full scale (e.g. ``range(1, 6)``) so that unused levels still count in
            distances. Items whose rating (by either rater) is not in ``labels`` are ignored.
            Default: sorted union of the observed ratings.

    Returns:
        Kappa in [-1, 1]; NaN when undefined (no items, or ``sum(W * E) == 0``, e.g. both
        raters always give the same single label).
    """
    if weights not in (None, "linear", "quadratic"):
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")
    first, second = _check_pair(a, b)
    if labels is None:
        categories = pd.unique(np.concatenate([first, second]))
        categories = np.sort(categories)
    else:
        categories = np.asarray(list(labels))
        if pd.unique(categories).size != categories.size:
            raise ValueError(f"labels must be unique, got {list(labels)}")
    n_labels = categories.size
    codes_a = pd.Categorical(first, categories=categories).codes.astype(np.int64)
    codes_b = pd.Categorical(second, categories=categories).codes.astype(np.int64)
    known = (codes_a >= 0) & (codes_b >= 0)
    flat = codes_a[known] * n_labels + codes_b[known]
    observed = np.bincount(flat, minlength=n_labels * n_labels).reshape(n_labels, n_labels)
    total = observed.sum()
    if total == 0:
        return float("nan")
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / total

    index = np.arange(n_labels)
    distance = np.abs(index[:, None] - index[None, :])
    if weights is None:
        weight = (distance != 0).astype(np.float64)
    elif weights == "linear":
        weight = distance.astype(np.float64)
    else:
        weight = distance.astype(np.float64) ** 2
    denominator = float((weight * expected).sum())
    if denominator == 0.0:
        return float("nan")
    return 1.0 - float((weight * observed).sum()) / denominator


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, ties sharing the mean of their ranks: ``scipy.stats.rankdata``'s default
    ("average") by the same algorithm, without importing scipy.stats (over a second)."""
    order = np.argsort(values, kind="mergesort")
    position = np.empty(values.size, dtype=np.intp)
    position[order] = np.arange(values.size)
    ordered = values[order]
    starts = np.r_[True, ordered[1:] != ordered[:-1]]
    group = np.cumsum(starts)[position]
    bounds = np.r_[np.nonzero(starts)[0], values.size]
    return 0.5 * (bounds[group] + bounds[group - 1] + 1)


def spearman(a: ArrayLike, b: ArrayLike) -> float:
    """Spearman's rank correlation: Pearson correlation of the average ranks (ties share the
    mean of their ranks), equal to ``scipy.stats.spearmanr(a, b).statistic``.

    ``a`` and ``b`` must have equal length and no missing values. Returns NaN when fewer than
    two items are given or when either input is constant.
    """
    first, second = _check_pair(a, b)
    if first.size < 2:
        return float("nan")
    rank_a = average_ranks(first) - (first.size + 1) / 2.0
    rank_b = average_ranks(second) - (second.size + 1) / 2.0
    denominator = np.sqrt((rank_a**2).sum() * (rank_b**2).sum())
    if denominator == 0.0:
        return float("nan")
    return float(np.clip((rank_a * rank_b).sum() / denominator, -1.0, 1.0))


def bin_scores(scores_0_1: ArrayLike, n_bins: int = 5) -> np.ndarray:
    """Map judge scores in [0, 1] to integer levels ``1..n_bins`` (the 1..5 Likert scale).

    ``level = 1 + floor((n_bins - 1) * s + 0.5)``, i.e. ``1 + round((n_bins - 1) * s)`` with
    halves rounded up (not numpy's round-half-to-even). For ``n_bins=5``: 0 → 1, 0.125 → 2,
    0.25 → 2, 0.375 → 3, 0.5 → 3, 0.625 → 4, 0.875 → 5, 1 → 5.

    Raises ``ValueError`` for NaN or scores outside [0, 1] (drop judge errors first) and for
    ``n_bins < 2``. Returns an int64 array with the shape of the input.
    """
    if n_bins < 2:
        raise ValueError(f"n_bins must be >= 2, got {n_bins}")
    scores = np.asarray(scores_0_1, dtype=np.float64)
    if not ((scores >= 0.0) & (scores <= 1.0)).all():
        raise ValueError("scores must lie in [0, 1] and contain no NaN")
    return 1 + np.floor((n_bins - 1) * scores + 0.5).astype(np.int64)


def agreement_table(
    frame: pd.DataFrame,
    rater_columns: Sequence[str],
    *,
    labels: Sequence[object] | None = None,
) -> pd.DataFrame:
    """Pairwise agreement between every pair of rater columns.

    For each pair ``(rater_a, rater_b)`` of ``rater_columns`` (in ``itertools.combinations``
    order), rows where either rating is missing are dropped and the remaining ``n`` items
    give ``kappa`` (unweighted :func:`cohen_kappa`), ``weighted_kappa`` (quadratic weights)
    and ``spearman`` (:func:`spearman`). ``labels`` is passed to both kappas; for Likert
    ratings pass ``range(1, 6)``. Undefined statistics (e.g. ``n == 0``) are NaN.

    Returns:
        DataFrame with columns ``rater_a``, ``rater_b``, ``n``, ``kappa``,
        ``weighted_kappa``, ``spearman``; one row per pair.
    """
    rater_columns = list(rater_columns)
    if len(rater_columns) < 2:
        raise ValueError(f"need at least two rater columns, got {rater_columns}")
    missing = [c for c in rater_columns if c not in frame.columns]
    if missing:
        raise KeyError(f"columns not in frame: {missing}")
    rows = []
    for column_a, column_b in combinations(rater_columns, 2):
        pair = frame[[column_a, column_b]].dropna()
        ratings_a = pair[column_a].to_numpy()
        ratings_b = pair[column_b].to_numpy()
        rows.append(
            {
                "rater_a": column_a,
                "rater_b": column_b,
                "n": len(pair),
                "kappa": cohen_kappa(ratings_a, ratings_b, labels=labels),
                "weighted_kappa": cohen_kappa(
                    ratings_a, ratings_b, weights="quadratic", labels=labels
                ),
                "spearman": spearman(ratings_a, ratings_b),
            }
        )
    return pd.DataFrame(
        rows, columns=["rater_a", "rater_b", "n", "kappa", "weighted_kappa", "spearman"]
    )
