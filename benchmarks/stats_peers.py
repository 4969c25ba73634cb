"""Benchmark the statistics `metrics/stats.py` keeps against scipy's on the same data.

`metrics/stats.py` takes the sign test, Fisher's tails, Benjamini–Hochberg and the bootstrap
from scipy; it keeps its own code for the two permutation tests. This script measures why:

* the exact paired sign-flip test (``paired_randomization_tails``, meet-in-the-middle over the
  distinct ``|d|``) against ``scipy.stats.permutation_test(permutation_type="samples",
  n_resamples=np.inf)``, which enumerates all ``2^k`` sign patterns, on ``k`` non-zero
  differences: the p-values are equal, the times are not;
* the two-sample Monte-Carlo permutation test (``permutation_tails``, both tails from one set of
  10,000 seeded splits) against two ``scipy.stats.permutation_test(permutation_type=
  "independent")`` calls (one per tail; scipy draws its splits otherwise, so p differs within
  Monte-Carlo error);
* the percentile bootstrap through ``scipy.stats.bootstrap`` against the plain numpy loop it
  replaced (same draws, so the intervals are equal to the last bits of the quantile).

Prints the best of three wall-clock times and the ratios.
Usage: ``python benchmarks/stats_peers.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import stats

from rag_eval_pipeline.metrics.stats import (
    bootstrap_ci,
    paired_randomization_tails,
    permutation_tails,
)


def best_of(function: Callable[[], Any], repeats: int = 3) -> tuple[float, Any]:
    """The shortest of `repeats` wall-clock times (seconds) and the last result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), result


def paired_mean(a: np.ndarray, b: np.ndarray, axis: int) -> np.ndarray:
    return np.mean(b - a, axis=axis)


def mean_difference(a: np.ndarray, b: np.ndarray, axis: int) -> np.ndarray:
    return np.mean(b, axis=axis) - np.mean(a, axis=axis)


def scipy_tails(a: np.ndarray, b: np.ndarray, **options: Any) -> tuple[float, float]:
    """scipy's one-sided permutation p-values, one call per tail."""
    return tuple(
        float(stats.permutation_test((a, b), vectorized=True, alternative=tail, **options).pvalue)
        for tail in ("less", "greater")
    )


def exact_sign_flip(rng: np.random.Generator) -> None:
    for k in (16, 20):
        a = rng.random(k)
        b = a + rng.normal(0.0, 0.1, k)
        ours, ours_p = best_of(lambda a=a, b=b: paired_randomization_tails(a, b))
        theirs, scipy_p = best_of(
            lambda a=a, b=b: scipy_tails(
                a, b, statistic=paired_mean, permutation_type="samples", n_resamples=np.inf
            ),
            repeats=1,
        )
        gap = max(abs(x - y) for x, y in zip(ours_p, scipy_p, strict=True))
        print(
            f"exact sign flip, k = {k}: ours {ours * 1e3:.2f} ms, scipy {theirs * 1e3:.0f} ms "
            f"({theirs / ours:,.0f}x), max |p - p_scipy| = {gap:.1e}"
        )


def random_splits(rng: np.random.Generator) -> None:
    for n in (60, 400):
        a, b = rng.random(n), rng.random(n) + 0.05
        ours, ours_p = best_of(lambda a=a, b=b: permutation_tails(a, b))
        theirs, scipy_p = best_of(
            lambda a=a, b=b: scipy_tails(
                a,
                b,
                statistic=mean_difference,
                permutation_type="independent",
                n_resamples=10_000,
                rng=np.random.default_rng(0),
            )
        )
        gap = max(abs(x - y) for x, y in zip(ours_p, scipy_p, strict=True))
        print(
            f"two-sample permutation, {n} + {n} values, 10,000 splits: ours {ours * 1e3:.1f} ms, "
            f"scipy {theirs * 1e3:.1f} ms ({theirs / ours:.1f}x), max |p - p_scipy| = {gap:.4f}"
        )


def bootstrap(rng: np.random.Generator) -> None:
    for n in (40, 300, 5_000):
        values = rng.normal(size=n)

        def numpy_loop(values: np.ndarray = values) -> tuple[float, float]:
            draws = np.random.default_rng(0).integers(0, values.size, (2000, values.size))
            low, high = np.quantile(values[draws].mean(axis=1), [0.025, 0.975])
            return (float(low), float(high))

        ours, interval = best_of(lambda values=values: bootstrap_ci(values))
        plain, reference = best_of(numpy_loop)
        gap = max(abs(x - y) for x, y in zip(interval, reference, strict=True))
        print(
            f"bootstrap, n = {n}: scipy.stats.bootstrap {ours * 1e3:.2f} ms, numpy loop "
            f"{plain * 1e3:.2f} ms ({ours / plain:.2f}x), max |difference| = {gap:.1e}"
        )


def main() -> None:
    rng = np.random.default_rng(0)
    exact_sign_flip(rng)
    random_splits(rng)
    bootstrap(rng)


if __name__ == "__main__":
    main()
