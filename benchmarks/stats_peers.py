"""Benchmark the statistics `metrics/stats.py` keeps against scipy's on the same data.

`metrics/stats.py` takes the sign test, Fisher's tails and Benjamini–Hochberg from scipy; it
keeps its own code for the two permutation tests and the bootstrap. This script measures why:

* the exact paired sign-flip test (``paired_randomization_tails``, meet-in-the-middle over the
  distinct ``|d|``) against ``scipy.stats.permutation_test(permutation_type="samples",
  n_resamples=np.inf)``, which enumerates all ``2^k`` sign patterns, on ``k`` non-zero
  differences: the p-values are equal, the times are not;
* the two-sample Monte-Carlo permutation test (``permutation_tails``, both tails from one set of
  10,000 seeded splits) against two ``scipy.stats.permutation_test(permutation_type=
  "independent")`` calls (one per tail; scipy draws its splits otherwise, so p differs within
  Monte-Carlo error);
* the percentile bootstrap (``bootstrap_ci``, scipy's definition computed with numpy) against
  ``scipy.stats.bootstrap`` with the same draws (so the intervals are equal to the last bits of
  the quantile): one interval, where scipy's fixed cost per call shows, and a scorecard's
  intervals (``bootstrap_cis``, as ``summarize`` computes them) against scipy called per sample
  and called once for all samples.

Prints the best of three CPU times and the ratios.
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
    bootstrap_cis,
    paired_randomization_tails,
    permutation_tails,
)


def best_of(function: Callable[[], Any], repeats: int = 3) -> tuple[float, Any]:
    """The shortest of `repeats` CPU times of this process (seconds; steadier than wall-clock
    times on a shared machine, and every measured function runs on one thread) and the last
    result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.process_time()
        result = function()
        times.append(time.process_time() - start)
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


def scipy_interval(samples: np.ndarray) -> np.ndarray:
    """`scipy.stats.bootstrap`'s 95% percentile interval of the mean of each row of `samples`
    (one call for all rows), with the draws `bootstrap_ci` makes, as `[[low, high], ...]`."""
    result = stats.bootstrap(
        (samples,),
        np.mean,
        n_resamples=2000,
        batch=max(1, (1 << 22) // samples.size),
        vectorized=True,
        axis=-1,
        method="percentile",
        rng=np.random.default_rng(0),
    )
    return np.column_stack([result.confidence_interval.low, result.confidence_interval.high])


def bootstrap(rng: np.random.Generator) -> None:
    """One interval (`bootstrap_ci`) against one scipy call; then a scorecard's intervals
    (`bootstrap_cis`: one index matrix for the samples of one size) against one scipy call per
    sample and one scipy call for all samples (a 2-D sample)."""
    for n in (40, 300, 5_000):
        values = rng.normal(size=n)
        ours, interval = best_of(lambda values=values: bootstrap_ci(values))
        theirs, reference = best_of(lambda values=values: scipy_interval(values[np.newaxis]))
        gap = float(np.abs(np.array(interval) - reference[0]).max())
        print(
            f"bootstrap, one sample of n = {n}: ours {ours * 1e3:.2f} ms, scipy.stats.bootstrap "
            f"{theirs * 1e3:.2f} ms ({theirs / ours:.2f}x), max |difference| = {gap:.1e}"
        )
    for systems, metrics, n in ((3, 12, 50), (2, 20, 300)):
        cells = rng.random((systems * metrics, n))
        ours, intervals = best_of(lambda cells=cells: bootstrap_cis(list(cells)))
        per_cell, reference = best_of(lambda cells=cells: [scipy_interval(c[None]) for c in cells])
        batched, _ = best_of(lambda cells=cells: scipy_interval(cells))
        gap = float(np.abs(np.array(intervals) - np.vstack(reference)).max())
        print(
            f"bootstrap, a scorecard's {systems * metrics} samples of {n} (`bootstrap_cis`, as "
            f"`summarize`): ours {ours * 1e3:.1f} ms, scipy per sample {per_cell * 1e3:.1f} ms "
            f"({per_cell / ours:.2f}x), scipy one call {batched * 1e3:.1f} ms "
            f"({batched / ours:.2f}x), max |difference| = {gap:.1e}"
        )


def main() -> None:
    rng = np.random.default_rng(0)
    exact_sign_flip(rng)
    random_splits(rng)
    bootstrap(rng)


if __name__ == "__main__":
    main()
