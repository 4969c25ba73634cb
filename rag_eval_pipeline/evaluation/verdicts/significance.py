"""The one-sided tests of one metric row: paired on the items both dates scored, unpaired on
each date's sample; each gives its p-values in both directions and the smallest p-value it
could reach on its items (its floor)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rag_eval_pipeline.metrics.stats import (
    EXACT_SIGN_FLIP_MAX,
    NORMAL_APPROXIMATION_ABOVE,
    fisher_exact_tails,
    fisher_p_floor,
    paired_randomization_tails,
    permutation_tails,
    quantile_exceedance_tails,
    sign_flip_p_floor,
    sign_test,
)
from rag_eval_pipeline.metrics.traffic import LATENCY_QUANTILES

EFFECT_ONLY = "effect rule only (no per-item scores)"
SIGN_TEST = "exact sign test (McNemar)"
RANDOMIZATION_TEST = "paired sign-flip test"
FISHER_TEST = "Fisher's exact test (unpaired)"
PERMUTATION_TEST = "two-sample permutation (unpaired)"
QUANTILE_TEST = "quantile exceedance test (unpaired, Fisher)"
UNPAIRED_TESTS = (FISHER_TEST, PERMUTATION_TEST, QUANTILE_TEST)
PAIRED_TESTS = (SIGN_TEST, RANDOMIZATION_TEST)


@dataclass(frozen=True)
class TestResult:
    """One row's test: its name, one-sided p-values, the smallest p-value it could reach on
    its items (conditional on what moved: 1 when nothing did), and the paired counts."""

    __test__ = False  # not a pytest class

    name: str
    p_worse: float
    p_better: float
    floor: float
    n_worse: int = 0
    n_better: int = 0
    # A Monte Carlo test's floor without its resampling limit (1 / the number of sign
    # patterns or splits); None for a test that enumerates or is exact.
    exact_floor: float | None = None

    @property
    def degenerate(self) -> bool:
        """Nothing moved (no discordant pair, no non-zero difference, all values equal): p ≡ 1."""
        return self.floor >= 1.0

    def floor_with(self, n_resamples: int) -> float:
        """The floor the same test reaches with `n_resamples` resamples."""
        if self.exact_floor is None:
            return self.floor
        return max(self.exact_floor, 1.0 / (n_resamples + 1))


def binary(base: np.ndarray, cur: np.ndarray) -> bool:
    """Whether every value of both dates is 0 or 1."""
    return bool(np.isin(base, (0.0, 1.0)).all() and np.isin(cur, (0.0, 1.0)).all())


def paired_test(
    base: np.ndarray, cur: np.ndarray, higher: bool, seed: int, n_resamples: int
) -> TestResult:
    """The exact sign test for 0/1 items, the paired sign-flip test else (`n_resamples` sign
    vectors beyond its exact enumeration)."""
    worse = (cur < base) if higher else (cur > base)
    better = (cur > base) if higher else (cur < base)
    n_worse, n_better = int(worse.sum()), int(better.sum())
    moved = n_worse + n_better
    if binary(base, cur):
        p_worse = float(sign_test(np.array([n_worse]), np.array([n_better]))[0])
        p_better = float(sign_test(np.array([n_better]), np.array([n_worse]))[0])
        return TestResult(SIGN_TEST, p_worse, p_better, 2.0**-moved, n_worse, n_better)
    p_less, p_greater = paired_randomization_tails(base, cur, n_resamples=n_resamples, seed=seed)
    p_worse, p_better = (p_less, p_greater) if higher else (p_greater, p_less)
    floor = sign_flip_p_floor(moved, n_resamples)
    exact = 2.0**-moved if moved > EXACT_SIGN_FLIP_MAX else None
    return TestResult(RANDOMIZATION_TEST, p_worse, p_better, floor, n_worse, n_better, exact)


def unpaired_test(
    metric: str, base: np.ndarray, cur: np.ndarray, higher: bool, seed: int, n_resamples: int
) -> TestResult:
    """The quantile test for a latency percentile, Fisher's for 0/1 values, the permutation
    test of means else (`n_resamples` random splits when they cannot all be enumerated)."""
    if metric in LATENCY_QUANTILES:
        quantile = LATENCY_QUANTILES[metric]
        test, (p_less, p_greater) = QUANTILE_TEST, quantile_exceedance_tails(base, cur, quantile)
        cut = np.quantile(np.concatenate([base, cur]), quantile)
        floor = fisher_p_floor(base.size, cur.size, int((base > cut).sum() + (cur > cut).sum()))
    elif binary(base, cur):
        test, (p_less, p_greater) = FISHER_TEST, fisher_exact_tails(base, cur)
        floor = fisher_p_floor(base.size, cur.size, int(base.sum() + cur.sum()))
    else:
        return _permutation_test(base, cur, higher, seed, n_resamples)
    p_worse, p_better = (p_less, p_greater) if higher else (p_greater, p_less)
    return TestResult(test, p_worse, p_better, floor)


def _permutation_test(
    base: np.ndarray, cur: np.ndarray, higher: bool, seed: int, n_resamples: int
) -> TestResult:
    """The two-sample permutation test of the difference in means; its floor is that of its
    resampling, 0 under its normal approximation, 1 when every value is equal."""
    p_less, p_greater = permutation_tails(base, cur, n_resamples=n_resamples, seed=seed)
    splits = math.comb(base.size + cur.size, cur.size)
    normal = base.size + cur.size > NORMAL_APPROXIMATION_ABOVE
    floor = 0.0 if normal else 1.0 / min(splits, n_resamples + 1)
    if np.ptp(np.concatenate([base, cur])) == 0.0:
        floor = 1.0
    limited = floor < 1.0 and not normal and splits > n_resamples
    exact = (1.0 / splits if splits < 1e300 else 0.0) if limited else None
    p_worse, p_better = (p_less, p_greater) if higher else (p_greater, p_less)
    return TestResult(PERMUTATION_TEST, p_worse, p_better, floor, exact_floor=exact)
