"""How large a change the paired regression tests can detect, given a partition's noise.

A verdict of "no significant change" means nothing if the test could not have seen the drop a
team cares about. These functions give, for the two paired tests of
`evaluation.regression`, the smallest change in the bad direction that would have cleared a
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
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike

from rag_eval_pipeline.metrics.stats import sign_flip_p_floor, sign_test

__all__ = ["sign_flip_min_shift", "sign_test_min_worse"]


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
        return bool(sign_test(np.array([worse]), np.array([n_better]))[0] < bar)

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
