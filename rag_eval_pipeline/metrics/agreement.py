"""Inter-rater agreement: LLM judge vs human and human vs human.

Judge scores in [0, 1] are mapped to the 1..5 Likert scale of human ratings with
:func:`bin_scores`; agreement is then measured with Cohen's kappa (unweighted and weighted)
and Spearman's rank correlation, computed by scikit-learn and scipy.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from itertools import combinations
from typing import Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats as scipy_stats

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
    """Cohen's kappa between two raters: ``sklearn.metrics.cohen_kappa_score``.

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
        categories = np.sort(pd.unique(np.concatenate([first, second])))
    else:
        categories = np.asarray(list(labels))
        if pd.unique(categories).size != categories.size:
            raise ValueError(f"labels must be unique, got {list(labels)}")
    known = np.isin(first, categories) & np.isin(second, categories)
    if not known.any():
        return float("nan")
    from sklearn.metrics import cohen_kappa_score  # imported on use: sklearn takes a second

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an undefined kappa is NaN, as documented
        kappa = cohen_kappa_score(
            first[known],
            second[known],
            labels=categories,
            weights=weights,
            replace_undefined_by=np.nan,
        )
    return float(kappa)


def spearman(a: ArrayLike, b: ArrayLike) -> float:
    """Spearman's rank correlation: Pearson correlation of the average ranks (ties share the
    mean of their ranks), ``scipy.stats.spearmanr(a, b).statistic``.

    ``a`` and ``b`` must have equal length and no missing values. Returns NaN when fewer than
    two items are given or when either input is constant.
    """
    first, second = _check_pair(a, b)
    if first.size < 2 or np.all(first == first[0]) or np.all(second == second[0]):
        return float("nan")
    return float(scipy_stats.spearmanr(first, second).statistic)


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
