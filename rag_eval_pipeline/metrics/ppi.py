"""Prediction-powered inference (PPI) of a mean: the judge's scores corrected by human labels.

Setting (Angelopoulos et al., "Prediction-powered inference", Science 2023): n labeled items
carry a human score ``Y`` and the judge's score ``Ŷ``; N unlabeled items carry the judge's
score ``Ŷᵘ`` only. The estimand is the human mean ``θ = E[Y]``. With a weight ``λ``,

    θ̂_λ = mean(λ · Ŷᵘ) + mean(Y − λ · Ŷ)

is unbiased for any fixed ``λ`` *provided the labeled items are drawn from the same
distribution as the unlabeled ones* (the one assumption). ``λ = 1`` is PPI (the judge's mean,
corrected by the mean judge−human difference, the "rectifier"); ``λ = 0`` is the classical
mean of the labels alone. PPI++ (Angelopoulos, Duchi, Zrnic, arXiv:2311.01453, 2024) tunes
``λ`` to minimize the variance:

    λ̂ = clip( Cov(Y, Ŷ) / ((1 + n/N) · Var(Ŷ ∪ Ŷᵘ)), 0, 1 )

(``Cov`` over the labeled items with 1/n, ``Var`` over all judge scores with 1/(n+N−1)), so a
useless judge falls back to the classical estimate and the interval is never much wider than
the classical one. The (1 − α) interval is the normal interval

    θ̂_λ ± z_{1−α/2} · sqrt( λ² · Var₀(Ŷᵘ) / N + Var₀(Y − λŶ) / n )

(``Var₀`` with 1/size). These are the definitions of the reference package ``ppi-python``
(``ppi_py.ppi_mean_pointestimate``, ``ppi_py.ppi_mean_ci``, ``ppi_py.classical_mean_ci``),
against which the tests check them. Every function works along the last axis, so a 2-D input
(one row per simulated draw) is evaluated in one vectorized call.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import norm

__all__ = [
    "PPIEstimate",
    "classical_mean_ci",
    "power_tuning_lambda",
    "ppi_mean",
    "ppi_mean_ci",
    "ppi_mean_estimate",
]

# How the scorecard names a judge metric's corrected mean and its labels-only mean, and what
# the report says they mean.
PPI_PREFIX, CLASSICAL_PREFIX = "ppi_", "classical_"
EXPLANATION = (
    "ppi_<metric> is the judge's mean corrected by the judge−human differences on the labeled "
    "items (prediction-powered inference, PPI++): an estimate of what the raters would give "
    "on average, with a 95% interval; classical_<metric> uses the labels alone. Valid when the "
    "labeled items are drawn like the partition's items."
)


def _arrays(
    labels: ArrayLike, judged: ArrayLike, judged_unlabeled: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    y, yhat, yhat_u = (np.asarray(a, dtype=float) for a in (labels, judged, judged_unlabeled))
    if y.shape != yhat.shape:
        raise ValueError(
            f"labels and judged scores of the labeled items differ in shape: {y.shape} vs "
            f"{yhat.shape}"
        )
    if y.shape[-1] < 2 or yhat_u.shape[-1] < 1:
        raise ValueError(
            f"PPI needs at least 2 labeled and 1 unlabeled item, got n={y.shape[-1]}, "
            f"N={yhat_u.shape[-1]}"
        )
    if any(np.isnan(a).any() for a in (y, yhat, yhat_u)):
        raise ValueError("PPI inputs contain NaN: drop unscored or unlabeled items first")
    return y, yhat, yhat_u


def power_tuning_lambda(
    labels: ArrayLike, judged: ArrayLike, judged_unlabeled: ArrayLike
) -> np.ndarray | float:
    """PPI++'s variance-minimizing weight of the judge, clipped to [0, 1] (module docstring).

    0 when the judge's scores do not vary (nothing to learn from them)."""
    y, yhat, yhat_u = _arrays(labels, judged, judged_unlabeled)
    n, big_n = y.shape[-1], yhat_u.shape[-1]
    centered_y = y - y.mean(axis=-1, keepdims=True)
    centered_yhat = yhat - yhat.mean(axis=-1, keepdims=True)
    covariance = (centered_y * centered_yhat).mean(axis=-1)
    variance = np.concatenate([yhat, yhat_u], axis=-1).var(axis=-1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = covariance / ((1 + n / big_n) * variance)
    lam = np.clip(np.where(variance > 0, lam, 0.0), 0.0, 1.0)
    return float(lam) if lam.ndim == 0 else lam


def _weight(
    lam: float | ArrayLike | None, y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray
) -> np.ndarray:
    weight = power_tuning_lambda(y, yhat, yhat_u) if lam is None else lam
    return np.asarray(weight, dtype=float)[..., None]


def ppi_mean_estimate(
    labels: ArrayLike,
    judged: ArrayLike,
    judged_unlabeled: ArrayLike,
    lam: float | ArrayLike | None = None,
) -> np.ndarray | float:
    """θ̂_λ = mean(λŶᵘ) + mean(Y − λŶ); `lam=None` tunes λ (PPI++), 1 is PPI, 0 classical."""
    y, yhat, yhat_u = _arrays(labels, judged, judged_unlabeled)
    weight = _weight(lam, y, yhat, yhat_u)
    estimate = (weight * yhat_u).mean(axis=-1) + (y - weight * yhat).mean(axis=-1)
    return float(estimate) if estimate.ndim == 0 else estimate


def ppi_mean_ci(
    labels: ArrayLike,
    judged: ArrayLike,
    judged_unlabeled: ArrayLike,
    alpha: float = 0.05,
    lam: float | ArrayLike | None = None,
) -> tuple[np.ndarray | float, np.ndarray | float]:
    """Two-sided (1 − α) prediction-powered interval of the human mean (module docstring)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    y, yhat, yhat_u = _arrays(labels, judged, judged_unlabeled)
    weight = _weight(lam, y, yhat, yhat_u)
    estimate = (weight * yhat_u).mean(axis=-1) + (y - weight * yhat).mean(axis=-1)
    n, big_n = y.shape[-1], yhat_u.shape[-1]
    variance = (weight * yhat_u).var(axis=-1) / big_n + (y - weight * yhat).var(axis=-1) / n
    half = norm.ppf(1 - alpha / 2) * np.sqrt(variance)
    low, high = estimate - half, estimate + half
    if low.ndim == 0:
        return float(low), float(high)
    return low, high


def classical_mean_ci(
    labels: ArrayLike, alpha: float = 0.05
) -> tuple[np.ndarray | float, np.ndarray | float]:
    """The normal interval of the labels' mean alone: mean(Y) ± z_{1−α/2} · sqrt(Var₀(Y) / n)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    y = np.asarray(labels, dtype=float)
    if y.shape[-1] < 2 or np.isnan(y).any():
        raise ValueError(f"the classical interval needs ≥ 2 labels without NaN, got {y.shape}")
    half = norm.ppf(1 - alpha / 2) * np.sqrt(y.var(axis=-1) / y.shape[-1])
    mean = y.mean(axis=-1)
    if mean.ndim == 0:
        return float(mean - half), float(mean + half)
    return mean - half, mean + half


@dataclass(frozen=True)
class PPIEstimate:
    """One metric's judge mean, its prediction-powered correction and the classical interval."""

    estimate: float
    ci_low: float
    ci_high: float
    lam: float
    n_labeled: int
    n_unlabeled: int
    judge_mean: float
    classical_mean: float
    classical_low: float
    classical_high: float


def ppi_mean(
    labels: ArrayLike,
    judged: ArrayLike,
    judged_unlabeled: ArrayLike,
    alpha: float = 0.05,
    lam: float | None = None,
) -> PPIEstimate:
    """Everything the scorecard reports for one metric, for 1-D inputs (λ tuned by default)."""
    y, yhat, yhat_u = _arrays(labels, judged, judged_unlabeled)
    if y.ndim != 1 or yhat_u.ndim != 1:
        raise ValueError("ppi_mean takes 1-D inputs; use ppi_mean_ci for batches")
    weight = power_tuning_lambda(y, yhat, yhat_u) if lam is None else float(lam)
    low, high = ppi_mean_ci(y, yhat, yhat_u, alpha, weight)
    classical_low, classical_high = classical_mean_ci(y, alpha)
    return PPIEstimate(
        estimate=float(ppi_mean_estimate(y, yhat, yhat_u, weight)),
        ci_low=float(low),
        ci_high=float(high),
        lam=float(weight),
        n_labeled=int(y.size),
        n_unlabeled=int(yhat_u.size),
        judge_mean=float(yhat_u.mean()),
        classical_mean=float(y.mean()),
        classical_low=float(classical_low),
        classical_high=float(classical_high),
    )
