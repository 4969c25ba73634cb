"""How large a change the paired regression tests can detect, given a partition's noise.

A verdict of "no significant change" means nothing if the test could not have seen the drop a
team cares about. These functions give, for the two paired tests of
`evaluation.verdicts`, the smallest change in the bad direction that would have cleared a
p-value bar (Benjamini–Hochberg's bar for a lone rejection among m tests is α / m):

* :func:`sign_test_min_worse` — 0/1 metrics, exact: the fewest items moving the bad way that
  make the one-sided sign test's p-value (:func:`metrics.stats.sign_test`) strictly smaller
  than the bar, with the items moving the good way held at today's count;
* :func:`sign_flip_min_shift` — continuous metrics, normal approximation of the one-sided
  sign-flip randomization test: the smallest shift δ of every paired difference for which
  ``Σ(e_i + δ) / sqrt(Σ(e_i + δ)²) ≥ z`` on average, with ``e`` today's differences centred on
  their mean (the day's noise without its shift) and ``z`` the standard normal quantile at
  ``1 − bar``. With ``s² = mean(e²)`` this is ``δ = z·s / sqrt(n − z²)``; 0 when the
  differences have no spread (every item moved by the same amount). Undetectable (``inf``)
  when the test cannot produce a p-value under the bar at all: ``n ≤ z²``, or its floor
  (:func:`metrics.stats.sign_flip_p_floor`: ``2⁻ⁿ``, all n signs agreeing, enumerated exactly
  up to 40 items; beyond, also the Monte-Carlo p-value's smallest value ``1 / (R + 1)``) is
  not below the bar. This is the shift of *every* item: items that did
  not change add nothing to the sign-flip statistic, so a change confined to k items has
  p ≥ 2⁻ᵏ and, however large, is never flagged when 2⁻ᵏ ≥ bar (the same item count as
  :func:`sign_test_min_worse` with nothing moving back).

The planner ("about N items to catch a 10% drop") needs the noise of a quiet day, not of
today: :func:`directional_noise` estimates a day's noise from the side of its paired
differences that a one-way change leaves alone, and :func:`pooled_noise` pools it over the
stored days of a metric, with a floor for the metric's kind.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

from rag_eval_pipeline.metrics.stats import sign_flip_p_floor, sign_test

# Up to this many items, `sign_test_items_needed` tries every count.
EXACT_SCAN = 1024

__all__ = [
    "directional_noise",
    "pooled_noise",
    "sign_flip_items_needed",
    "sign_flip_min_shift",
    "sign_test_items_needed",
    "sign_test_min_worse",
]


@lru_cache(maxsize=1 << 16)
def _sign_p(worse: int, better: int) -> float:
    """The exact one-sided sign test's p-value of one (worse, better) count: the searches below
    ask for the same counts again and again."""
    return float(sign_test(np.array([worse]), np.array([better]))[0])


def sign_test_min_worse(n_better: int, bar: float, max_worse: int) -> float:
    """Fewest items moving the bad way (at most `max_worse`) whose exact one-sided sign test
    against `n_better` items moving the good way has p < `bar`; ``inf`` when none does.

    The p-value ``P(X ≥ k)``, ``X ~ Binomial(k + n_better, ½)``, decreases as k grows, so the
    smallest such k is found by bisection.
    """
    if n_better < 0 or max_worse < 0:
        raise ValueError("n_better and max_worse must be non-negative counts")
    if not 0.0 < bar <= 1.0:
        raise ValueError(f"bar must be in (0, 1], got {bar}")

    def clears(worse: int) -> bool:
        return _sign_p(worse, n_better) < bar

    if max_worse == 0 or not clears(max_worse):
        return math.inf
    low, high = 0, max_worse  # clears(high) holds; clears(low) does not (p = 1 at 0 worse)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if clears(middle) else (middle, high)
    return float(high)


def sign_flip_min_shift(differences: ArrayLike, bar: float, n_resamples: int) -> float:
    """Smallest shift of the paired differences that the one-sided sign-flip test with
    `n_resamples` random sign vectors would flag at p < `bar` (normal approximation, see the
    module docstring); ``inf`` when no shift can be flagged."""
    d = np.asarray(differences, dtype=np.float64)
    if d.ndim != 1 or not np.isfinite(d).all():
        raise ValueError("differences must be a 1-D array of finite values")
    if not 0.0 < bar < 1.0:
        raise ValueError(f"bar must be in (0, 1), got {bar}")
    z = NormalDist().inv_cdf(1.0 - bar)
    n = d.size
    if n <= z * z or sign_flip_p_floor(n, n_resamples) >= bar:
        return math.inf
    centred = d - d.mean()
    spread = math.sqrt(float(np.mean(centred * centred)))
    return z * spread / math.sqrt(n - z * z)


def sign_test_items_needed(
    base_mean: float, back_rate: float, drop: float, bar: float, limit: int = 10_000_000
) -> float:
    """About how many items a 0/1 metric needs for a relative `drop` of its mean `base_mean`
    to be flagged alone by the exact one-sided sign test at p < `bar`.

    Today's noise is the share `back_rate` of items that moved the good way; noise moves as many
    the bad way, and the drop adds ``drop · base_mean`` more. With N items that is
    ``W = ⌈N · (back_rate + drop · base_mean)⌉`` worse and ``B = ⌊N · back_rate⌋`` better; the
    answer is the smallest N whose sign test on (W, B) has p < `bar` (rounding makes p jagged
    in N, so up to `EXACT_SCAN` items every N is tried; beyond, a power-of-two bracket and
    bisection give an N within the jagged stretch), ``inf`` when none up to `limit` does (no
    drop, or noise too large).
    """
    moved = drop * base_mean
    if not (moved > 0 and 0.0 < bar < 1.0) or back_rate < 0:
        return math.inf

    def clears(n: int) -> bool:
        worse = math.ceil(n * (back_rate + moved) - 1e-9)
        better = math.floor(n * back_rate + 1e-9)
        return _sign_p(worse, better) < bar

    high = 1
    while not clears(high):
        high *= 2
        if high > limit:
            return math.inf
    if high <= EXACT_SCAN:
        return float(next(n for n in range(1, high + 1) if clears(n)))
    low = high // 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if clears(middle) else (middle, high)
    return float(high)


def sign_flip_items_needed(spread: float, shift: float, bar: float, n_resamples: int) -> float:
    """About how many items a continuous metric needs for a shift `shift` of every item to be
    flagged alone by the one-sided sign-flip test at p < `bar`, with today's paired
    differences' spread `spread` (root mean square around their mean): the inverse of
    :func:`sign_flip_min_shift`, ``N = z² + (z · spread / shift)²``, and at least enough items
    for the test's p-value floor to be below the bar; ``inf`` for no shift."""
    if not (shift > 0 and 0.0 < bar < 1.0):
        return math.inf
    z = NormalDist().inv_cdf(1.0 - bar)
    needed = max(
        math.floor(z * z + (z * spread / shift) ** 2) + 1, math.floor(math.log2(1.0 / bar)) + 1
    )
    return math.inf if sign_flip_p_floor(needed, n_resamples) >= bar else float(needed)


def directional_noise(differences: ArrayLike) -> float:
    """A day's noise in its paired differences, robust to a change in one direction:
    ``m₂ = 2 · min(Σ d₊², Σ d₋²) / n`` (``d₊``: the positive differences, ``d₋``: the negative
    ones), NaN without items.

    Noise moves items both ways alike, so each side holds half of its second moment; a drop
    (or a recovery) adds to one side only, and the smaller side is the noise's. For 0/1 metrics
    (differences in {−1, 0, 1}) this is the discordance rate of a quiet day,
    ``2 · min(worse, better) / n``; for continuous metrics the mean square of the differences
    (``√m₂`` is the spread the sign-flip test's power is computed from).
    """
    d = np.asarray(differences, dtype=np.float64)
    if d.ndim != 1 or not np.isfinite(d).all():
        raise ValueError("differences must be a 1-D array of finite values")
    if d.size == 0:
        return math.nan
    up, down = float(np.sum(d[d > 0] ** 2)), float(np.sum(d[d < 0] ** 2))
    return 2.0 * min(up, down) / d.size


def pooled_noise(noise: ArrayLike, n_items: ArrayLike, floor: float) -> float:
    """The noise of several days pooled by their items, at least `floor`:
    ``max(floor, Σ nᵢ · m₂ᵢ / Σ nᵢ)`` over the days with a finite `noise` (their
    :func:`directional_noise`) and ``nᵢ > 0`` paired items; `floor` alone without such a day."""
    m = np.asarray(noise, dtype=np.float64)
    n = np.asarray(n_items, dtype=np.float64)
    if m.shape != n.shape:
        raise ValueError(f"noise and n_items differ in shape: {m.shape} vs {n.shape}")
    ok = np.isfinite(m) & np.isfinite(n) & (n > 0)
    if not ok.any():
        return float(floor)
    return max(float(floor), float(np.sum(n[ok] * m[ok]) / np.sum(n[ok])))
