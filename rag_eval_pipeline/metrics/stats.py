"""Aggregation statistics shared by every quality asset.

All functions are pure (numpy, pandas and scipy) and deterministic for a given ``seed``. The
sign test, Fisher's tails and Benjamini–Hochberg are scipy's. The percentile bootstrap is
``scipy.stats.bootstrap``'s by definition (same draws, same quantiles, checked by a test) but
computed here, because scipy's fixed cost per call is most of a small sample's interval
(``benchmarks/stats_peers.py``). The permutation tests are this module's own, because they are
measurably better for the verdicts (figures in ``docs/benchmarks.md``): the exact sign-flip test
enumerates distinct sums by meet-in-the-middle where ``scipy.stats.permutation_test``
enumerates every sign pattern (infeasible beyond about 20 changed items, and the verdicts
enumerate up to 40), and both one-sided tails come from one set of seeded draws (scipy draws
again for each tail, and its draws and tie tolerance differ, so stored p-values would move).

Resampling scheme
-----------------
Bootstrap resamples are ``scipy.stats.bootstrap``'s: indices drawn from
``numpy.random.default_rng(seed)`` with ``rng.integers(0, n, size=(chunk, n))``, chunk after
chunk, so resample ``r`` is the ``r``-th row of one long ``(n_resamples, n)`` index matrix.
The matrix is never materialized at once: chunks hold at most
``_MAX_CHUNK_ELEMENTS`` indices, which bounds memory for large ``n``. The result equals a naive
loop calling ``rng.integers(0, n, size=n)`` once per resample.

Confidence intervals are percentile intervals: the ``(1 - confidence) / 2`` and
``(1 + confidence) / 2`` quantiles (linear interpolation, numpy's default) of the resampled
means.

Tests come paired (the same items scored twice: :func:`sign_test`,
:func:`paired_randomization_tails`) and unpaired (two independent samples, e.g. two days'
interactions: :func:`fisher_exact_tails`, :func:`permutation_tails`,
:func:`quantile_exceedance_tails`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from statistics import NormalDist

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats as scipy_stats

__all__ = [
    "SUMMARY_COLUMNS",
    "benjamini_hochberg",
    "bootstrap_ci",
    "bootstrap_cis",
    "compare_paired",
    "fisher_exact_tails",
    "fisher_p_floor",
    "paired_bootstrap_ci",
    "paired_randomization_tails",
    "paired_randomization_test",
    "percentiles",
    "permutation_tails",
    "quantile_exceedance_tails",
    "role_weights",
    "sign_flip_p_floor",
    "sign_test",
    "summarize",
]

_MAX_CHUNK_ELEMENTS = 1 << 22
NORMAL_APPROXIMATION_ABOVE = 20_000

SUMMARY_COLUMNS: tuple[str, ...] = ("metric", "mean", "std", "count", "ci_low", "ci_high")


def _as_finite_1d(values: ArrayLike, name: str) -> np.ndarray:
    """Return ``values`` as a 1-D float64 array, raising ``ValueError`` on NaN or infinity."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} contains NaN or infinite values; drop them before calling")
    return array


def _check_resampling(confidence: float, n_resamples: int) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")


def _chunk_sizes(n_resamples: int, n: int) -> Iterator[int]:
    """Yield chunk sizes summing to ``n_resamples`` with ``chunk * n <= _MAX_CHUNK_ELEMENTS``."""
    chunk = max(1, _MAX_CHUNK_ELEMENTS // max(n, 1))
    for start in range(0, n_resamples, chunk):
        yield min(chunk, n_resamples - start)


def _bootstrap_intervals(
    samples: np.ndarray, confidence: float, n_resamples: int, seed: int
) -> np.ndarray:
    """The percentile interval of the mean of each row of ``samples`` (``k`` rows of ``n``
    values) as ``(k, 2)`` ``[low, high]``: the ``(1 - confidence) / 2`` and
    ``(1 + confidence) / 2`` linear quantiles of the means of ``n_resamples`` resamples whose
    indices are drawn as the module docstring says, one index matrix for every row.

    For each row this is ``scipy.stats.bootstrap((row,), np.mean, method="percentile",
    rng=numpy.random.default_rng(seed))`` by definition (the same draws, the same quantiles; a
    test checks they agree), and each row's interval is bit for bit the one of that row alone.
    It is computed here, not by scipy, because scipy's fixed cost per call is most of a small
    sample's interval, and in one scipy call for several samples numpy sums the resamples in
    another order, so each interval's last bits would depend on the samples batched with it;
    the benchmark is ``benchmarks/stats_peers.py`` (bootstrap rows)."""
    rows, size = samples.shape
    rng = np.random.default_rng(seed)
    means = np.concatenate(
        [
            # each resample contiguous, so its mean sums as the same resample's alone
            np.take(samples, rng.integers(0, size, size=(chunk, size)), axis=1)
            .reshape(-1, size)
            .mean(axis=1)
            .reshape(rows, chunk)
            for chunk in _chunk_sizes(n_resamples, rows * size)
        ],
        axis=1,
    )
    alpha = 1.0 - confidence
    return np.quantile(means, [alpha / 2.0, 1.0 - alpha / 2.0], axis=1).T


def _resampled(size: int, normal_above: int) -> bool:
    """Whether :func:`bootstrap_ci` resamples a sample of ``size`` values (else its interval
    is exact, ``(nan, nan)`` or ``(v, v)``, or the normal one)."""
    return 1 < size <= normal_above


def bootstrap_ci(
    values: ArrayLike,
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
    normal_above: int = NORMAL_APPROXIMATION_ABOVE,
) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of the mean of ``values``.

    Above ``normal_above`` values the bootstrap distribution of a mean is normal to well
    within the Monte-Carlo error of 2,000 resamples, so the interval is the normal one,
    ``mean ± z · s / √n`` (``s`` with ``ddof=1``), which costs O(n) instead of
    O(n · n_resamples): 100,000 queries × 20 metrics take milliseconds instead of minutes.

    Args:
        values: 1-D numeric sample. Must not contain NaN or infinity (``ValueError``);
            callers drop missing values (e.g. error rows) first.
        confidence: Two-sided confidence level in (0, 1).
        n_resamples: Number of bootstrap resamples.
        seed: Seed for ``numpy.random.default_rng``; identical inputs give identical output.
        normal_above: Sample size above which the normal interval is used.

    Returns:
        ``(ci_low, ci_high)``. An empty sample gives ``(nan, nan)``; a single value ``v``
        gives ``(v, v)`` (every resample equals ``v``).
    """
    array = _as_finite_1d(values, "values")
    _check_resampling(confidence, n_resamples)
    if array.size == 0:
        return (float("nan"), float("nan"))
    if array.size == 1:
        return (float(array[0]), float(array[0]))
    if not _resampled(array.size, normal_above):
        half_width = NormalDist().inv_cdf(0.5 + confidence / 2.0) * array.std(ddof=1)
        half_width /= math.sqrt(array.size)
        return (float(array.mean() - half_width), float(array.mean() + half_width))
    [(low, high)] = _bootstrap_intervals(array[np.newaxis], confidence, n_resamples, seed)
    return (float(low), float(high))


def _paired_differences(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    first = _as_finite_1d(a, "a")
    second = _as_finite_1d(b, "b")
    if first.shape != second.shape:
        raise ValueError(f"a and b must have the same length, got {first.size} and {second.size}")
    return second - first


def paired_bootstrap_ci(
    a: ArrayLike,
    b: ArrayLike,
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of ``mean(b - a)`` for paired samples.

    Pairs are resampled together, i.e. this is :func:`bootstrap_ci` of the per-item
    differences ``b - a``. ``a`` and ``b`` must have equal length and no NaN/infinity.
    """
    return bootstrap_ci(
        _paired_differences(a, b), confidence=confidence, n_resamples=n_resamples, seed=seed
    )


def paired_randomization_test(
    a: ArrayLike,
    b: ArrayLike,
    *,
    n_resamples: int = 10000,
    seed: int = 0,
    alternative: str = "two-sided",
) -> float:
    """Paired randomization (sign-flipping) test of ``mean(b - a) == 0``.

    Under the null hypothesis each difference ``d_i = b_i - a_i`` is symmetric around zero, so
    its sign is exchangeable. Each resample multiplies every ``d_i`` by an independent random
    sign (±1 with probability 1/2); ``count`` is the number of resamples whose statistic is at
    least the observed one (with a relative tolerance of 1e-9 so that ties caused by
    floating-point rounding count as ties). The statistic is ``|sum(signed d)|`` for
    ``alternative="two-sided"``, ``sum(signed d)`` for ``"greater"`` (H1: ``b`` exceeds ``a``)
    and ``-sum(signed d)`` for ``"less"``, as in ``scipy.stats.permutation_test`` with
    ``permutation_type="samples"``.

    Returns:
        ``(count + 1) / (n_resamples + 1)``, a valid p-value that is never 0. Identical
        samples give exactly 1.0. Empty input gives NaN. ``a`` and ``b`` must have equal
        length and no NaN/infinity.
    """
    differences = _paired_differences(a, b)
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if alternative not in ("two-sided", "greater", "less"):
        raise ValueError(f"alternative must be two-sided, greater or less, got {alternative!r}")
    n = differences.size
    if n == 0:
        return float("nan")
    if alternative == "less":
        differences = -differences
    observed = differences.sum()
    if alternative == "two-sided":
        observed = abs(observed)
    tolerance = 1e-9 * np.abs(differences).sum()
    count = 0
    for flipped in _sign_flip_sums(differences, n_resamples, seed):
        if alternative == "two-sided":
            flipped = np.abs(flipped)
        count += int(np.count_nonzero(flipped >= observed - tolerance))
    return (count + 1) / (n_resamples + 1)


def _sign_flip_sums(differences: np.ndarray, n_resamples: int, seed: int) -> Iterator[np.ndarray]:
    """Chunks of ``sum(signs · differences)`` for ``n_resamples`` random sign vectors."""
    rng = np.random.default_rng(seed)
    for size in _chunk_sizes(n_resamples, differences.size):
        signs = rng.integers(0, 2, size=(size, differences.size), dtype=np.int8) * 2 - 1
        yield signs @ differences


def _tail_counts(
    chunks: Iterable[np.ndarray], observed: float, tolerance: float
) -> tuple[int, int]:
    """How many resampled statistics are at most / at least the observed one (within the
    tolerance, so equal values summed in another order count as ties)."""
    less = greater = 0
    for values in chunks:
        less += int(np.count_nonzero(values <= observed + tolerance))
        greater += int(np.count_nonzero(values >= observed - tolerance))
    return less, greater


# Up to this many non-zero paired differences, the sign-flip test enumerates every sign pattern.
EXACT_SIGN_FLIP_MAX = 40


def paired_randomization_tails(
    a: ArrayLike,
    b: ArrayLike,
    *,
    n_resamples: int = 10000,
    seed: int = 0,
    exact_max: int = EXACT_SIGN_FLIP_MAX,
) -> tuple[float, float]:
    """``(p_less, p_greater)`` of the one-sided paired sign-flip tests of ``mean(b - a)``.

    Only the ``k`` non-zero differences carry information (a zero is the same under either
    sign). When ``k <= exact_max`` every one of the ``2^k`` sign patterns is enumerated and
    ``p = count / 2^k`` exactly, as ``scipy.stats.permutation_test((a, b), statistic,
    permutation_type="samples", n_resamples=np.inf)`` (its smallest value is ``2^-k``, all
    signs agreeing). The enumeration is meet-in-the-middle over the distinct magnitudes
    ``|d|`` (:func:`_enumerated_tail_counts`), so time and memory grow with ``2^(k/2)`` at
    most, not ``2^k``, and much less when changes repeat. Beyond ``exact_max``,
    :func:`paired_randomization_test`'s ``n_resamples`` random sign vectors (seeded),
    ``p = (count + 1) / (n_resamples + 1)``; both tails come from the same draws. Ties within
    ``1e-9 · Σ|d|`` count as ties (equal sums added in another order).
    Empty input gives ``(nan, nan)``; no non-zero difference gives ``(1.0, 1.0)``.
    """
    differences = _paired_differences(a, b)
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if differences.size == 0:
        return (float("nan"), float("nan"))
    nonzero = differences[differences != 0.0]
    if nonzero.size == 0:
        return (1.0, 1.0)
    observed = nonzero.sum()
    tolerance = 1e-9 * np.abs(nonzero).sum()
    if nonzero.size <= exact_max:
        less, greater = _enumerated_tail_counts(nonzero, observed, tolerance)
        total = 2.0**nonzero.size
        return (less / total, greater / total)
    less, greater = _tail_counts(_sign_flip_sums(nonzero, n_resamples, seed), observed, tolerance)
    return ((less + 1) / (n_resamples + 1), (greater + 1) / (n_resamples + 1))


def _signed_sums(magnitudes: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every distinct way of signing ``counts[j]`` copies of ``magnitudes[j]``: the sums
    ``Σ_j magnitudes[j] · (2·b_j − counts[j])`` over ``b_j = 0 … counts[j]`` (how many copies
    are positive), sorted ascending, and how many sign patterns give each
    (``Π_j C(counts[j], b_j)``, exact in float64 up to 2⁵³)."""
    sums, weights = np.zeros(1), np.ones(1)
    unit = True  # every sum so far comes from one pattern: sort the sums alone
    for magnitude, count in zip(magnitudes, counts, strict=True):
        positive = np.arange(count + 1)
        # count + 1 sorted runs: a stable sort (timsort) merges them in linear time per run
        shifted = (magnitude * (2 * positive - count)[:, None] + sums[None, :]).ravel()
        if unit and count == 1:
            sums = np.sort(shifted, kind="stable")
            continue
        binomials = np.array([math.comb(int(count), int(b)) for b in positive], dtype=float)
        spread = np.ones(sums.size) if unit else weights
        order = np.argsort(shifted, kind="stable")
        sums, weights = shifted[order], (binomials[:, None] * spread[None, :]).ravel()[order]
        unit = False
    return sums, np.ones(sums.size) if unit else weights


def _enumerated_tail_counts(
    differences: np.ndarray, observed: float, tolerance: float
) -> tuple[int, int]:
    """How many of the ``2^k`` sign patterns have a signed sum at most / at least ``observed``
    (within ``tolerance``), by meet-in-the-middle.

    A pattern's sum depends only on how many copies of each distinct ``|d|`` are positive, so
    equal magnitudes are enumerated once with binomial multiplicities (a metric with few
    distinct changes, such as precision@k, has few distinct sums). The magnitudes are split
    into two groups of about equal numbers of distinct sums; for each sum of the first group,
    the weights of the second group's sums that complete a pattern at most / at least the
    observed sum are read from cumulative weights by binary search, so time and memory grow
    with the square root of the number of distinct sums (at most ``2^(k/2)``).
    """
    magnitudes, counts = np.unique(np.abs(differences), return_counts=True)
    order = np.argsort(-counts, kind="stable")
    groups: tuple[list[int], list[int]] = ([], [])
    sizes = [1.0, 1.0]
    for j in order:
        half = 0 if sizes[0] <= sizes[1] else 1
        groups[half].append(int(j))
        sizes[half] *= counts[j] + 1
    left, left_weights = _signed_sums(magnitudes[groups[0]], counts[groups[0]])
    right, right_weights = _signed_sums(magnitudes[groups[1]], counts[groups[1]])
    cumulative = np.concatenate([[0.0], np.cumsum(right_weights)])
    at_most = cumulative[np.searchsorted(right, observed + tolerance - left, side="right")]
    below = cumulative[np.searchsorted(right, observed - tolerance - left, side="left")]
    less = float(left_weights @ at_most)
    greater = float(left_weights @ (cumulative[-1] - below))
    return round(less), round(greater)


def sign_flip_p_floor(
    n_nonzero: int, n_resamples: int, exact_max: int = EXACT_SIGN_FLIP_MAX
) -> float:
    """The smallest p-value :func:`paired_randomization_tails` can return on ``n_nonzero``
    non-zero differences: ``2^-k`` enumerated, ``max(2^-k, 1 / (n_resamples + 1))`` beyond."""
    exact = 2.0**-n_nonzero
    return exact if n_nonzero <= exact_max else max(exact, 1.0 / (n_resamples + 1))


def sign_test(n_worse: ArrayLike, n_better: ArrayLike) -> np.ndarray:
    """Exact one-sided sign (McNemar) test on discordant pairs, vectorized over tests.

    For 0/1 scores of the same items on two dates, only the discordant pairs carry
    information: ``n_worse`` items went the bad way (e.g. 1 → 0 for a hit rate), ``n_better``
    the good way. Under H0 each discordant pair is either with probability 1/2, so the p-value
    of H1 "worse" is ``P(X >= n_worse)`` for ``X ~ Binomial(n_worse + n_better, 1/2)``, the
    exact binomial tail: ``scipy.stats.binomtest(n_worse, n, 0.5, alternative="greater")``,
    whose ``scipy.stats.binom.sf(n_worse - 1, n, 0.5)`` computes it here for every test at
    once. No discordant pair gives 1.0.
    """
    worse = np.asarray(n_worse, dtype=np.int64)
    better = np.asarray(n_better, dtype=np.int64)
    if worse.shape != better.shape or (worse < 0).any() or (better < 0).any():
        raise ValueError("n_worse and n_better must be non-negative counts of the same shape")
    return np.asarray(scipy_stats.binom.sf(worse - 1, worse + better, 0.5), dtype=np.float64)


def _two_samples(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    return _as_finite_1d(a, "a"), _as_finite_1d(b, "b")


def fisher_exact_tails(a: ArrayLike, b: ArrayLike) -> tuple[float, float]:
    """One-sided Fisher's exact tests of the rate of ones of 0/1 sample ``b`` against ``a``.

    Unpaired: ``a`` and ``b`` are independent samples (e.g. two days' interactions). Given the
    ``K`` ones among all ``n = n_a + n_b`` values, under H0 (one rate for both) the number of ones
    in ``b`` is hypergeometric, ``P(X = x) = C(K, x) · C(n - K, n_b - x) / C(n, n_b)``. For the
    observed ``k_b`` ones, ``p_less = P(X <= k_b)`` (H1: ``b``'s rate is lower) and
    ``p_greater = P(X >= k_b)``: ``scipy.stats.hypergeom``'s ``cdf`` and ``sf``, the tails
    ``scipy.stats.fisher_exact([[k_b, n_b - k_b], [k_a, n_a - k_a]], alternative="less" /
    "greater")`` sums. It is the exact permutation test of the difference in
    rates, ties included (0/1 values are all ties).

    Returns:
        ``(p_less, p_greater)``. All values equal (``K`` is 0 or ``n``) gives ``(1.0, 1.0)``;
        either sample empty gives ``(nan, nan)``. Values other than 0 and 1 raise ``ValueError``.
    """
    first, second = _two_samples(a, b)
    if not (np.isin(first, (0.0, 1.0)).all() and np.isin(second, (0.0, 1.0)).all()):
        raise ValueError("fisher_exact_tails needs 0/1 values")
    if first.size == 0 or second.size == 0:
        return (float("nan"), float("nan"))
    n, n_b = first.size + second.size, second.size
    ones, k_b = int(first.sum() + second.sum()), int(second.sum())
    table = scipy_stats.hypergeom(n, ones, n_b)
    return (float(table.cdf(k_b)), float(table.sf(k_b - 1)))


def fisher_p_floor(n_a: int, n_b: int, ones: int) -> float:
    """The smallest one-sided p-value :func:`fisher_exact_tails` can return for samples of
    ``n_a`` and ``n_b`` values with ``ones`` ones in all: the hypergeometric probability of the
    more extreme of the two most lopsided tables (1.0 when every value is equal)."""
    n = n_a + n_b
    if n_a == 0 or n_b == 0 or ones in (0, n):
        return 1.0
    low, high = max(0, n_b - (n - ones)), min(ones, n_b)
    return float(scipy_stats.hypergeom(n, ones, n_b).pmf([low, high]).min())


def quantile_exceedance_tails(a: ArrayLike, b: ArrayLike, q: float) -> tuple[float, float]:
    """One-sided tests of whether sample ``b``'s ``q``-quantile is below / above ``a``'s.

    Unpaired (e.g. two days' latencies), Mood's median test generalized to any quantile: the
    threshold is the ``q``-quantile of the pooled values (numpy's linear interpolation), each
    value counts as an exceedance when it is strictly above it, and :func:`fisher_exact_tails`
    compares the two samples' rates of exceedances. A higher ``q``-quantile in ``b`` shows as
    more of ``b`` above the pooled one, so ``p_greater`` (H1: ``b``'s quantile is higher) is
    Fisher's upper tail and ``p_less`` its lower one. Exact given the number of exceedances;
    under H0 (one distribution for both) the labels are exchangeable. For ``q = 0.5`` the table
    is ``scipy.stats.median_test(a, b, ties="below")``'s.

    Returns:
        ``(p_less, p_greater)``; ``(1.0, 1.0)`` when no value exceeds the threshold (all equal);
        ``(nan, nan)`` when either sample is empty. ``q`` outside (0, 1) raises ``ValueError``.
    """
    first, second = _two_samples(a, b)
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be in (0, 1), got {q}")
    if first.size == 0 or second.size == 0:
        return (float("nan"), float("nan"))
    threshold = np.quantile(np.concatenate([first, second]), q)
    return fisher_exact_tails((first > threshold).astype(float), (second > threshold).astype(float))


def permutation_tails(
    a: ArrayLike,
    b: ArrayLike,
    *,
    n_resamples: int = 10000,
    seed: int = 0,
    normal_above: int = NORMAL_APPROXIMATION_ABOVE,
) -> tuple[float, float]:
    """One-sided two-sample permutation tests of ``mean(b) - mean(a)``: ``(p_less, p_greater)``.

    Unpaired: ``a`` and ``b`` are independent samples (e.g. two days' interactions). Under H0
    both come from one distribution, so the group labels are exchangeable: a permutation splits
    the ``n = n_a + n_b`` pooled values into groups of ``n_a`` and ``n_b`` at random. The
    statistic is ``mean(b) - mean(a)``, computed as ``sum(b)``, which orders the splits the same
    way (the pooled sum is fixed). ``p_less`` (H1: ``b`` is lower) counts the splits whose
    statistic is at most the observed one, ``p_greater`` those at least it, with a tolerance of
    ``1e-9 · Σ|pooled|`` so that equal values summed in another order count as ties: as
    ``scipy.stats.permutation_test((a, b), lambda a, b: mean(b) - mean(a),
    permutation_type="independent", alternative="less" / "greater")`` up to that tie
    tolerance (looser than scipy's). Both tails come from the same splits.

    * When the ``C(n, n_a)`` distinct splits number at most ``n_resamples``, each is enumerated
      once and ``p = count / C(n, n_a)``, exactly (the observed split is one of them).
    * Otherwise ``n_resamples`` random splits: ``numpy.random.default_rng(seed).permuted``
      shuffles rows of the pooled values, chunk after chunk of at most ``_MAX_CHUNK_ELEMENTS``
      values (memory stays bounded), and ``p = (count + 1) / (n_resamples + 1)``, never 0, as
      in :func:`paired_randomization_test`.
    * Above ``normal_above`` pooled values, ``sum(b)`` over all splits is normal to well within
      the Monte-Carlo error (finite-population central limit theorem), with its exact mean
      ``n_b · mean(pooled)`` and variance ``n_a · n_b · var(pooled) / (n - 1)`` (``var`` with
      ``ddof=0``): the tails are the normal ones, O(n) instead of O(n · n_resamples).

    Returns:
        ``(p_less, p_greater)``. All values equal gives ``(1.0, 1.0)``; either sample empty
        gives ``(nan, nan)``. NaN or infinity raise ``ValueError`` (drop error rows first).
    """
    first, second = _two_samples(a, b)
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    if first.size == 0 or second.size == 0:
        return (float("nan"), float("nan"))
    pooled = np.concatenate([first, second])
    n, n_b = pooled.size, second.size
    observed = second.sum()
    if np.ptp(pooled) == 0.0:
        return (1.0, 1.0)
    if n > normal_above:
        spread = math.sqrt(first.size * n_b * pooled.var() / (n - 1))
        z = float(observed - n_b * pooled.mean()) / spread
        return (NormalDist().cdf(z), NormalDist().cdf(-z))
    tolerance = 1e-9 * np.abs(pooled).sum()
    n_splits = math.comb(n, n_b)
    exact = n_splits <= n_resamples
    chunks = (
        [_split_sums(pooled, n_b)] if exact else _random_split_sums(pooled, n_b, n_resamples, seed)
    )
    less, greater = _tail_counts(chunks, observed, tolerance)
    if exact:
        return (less / n_splits, greater / n_splits)
    return ((less + 1) / (n_resamples + 1), (greater + 1) / (n_resamples + 1))


def _split_sums(pooled: np.ndarray, n_b: int) -> np.ndarray:
    """``sum(b)`` for every distinct split, enumerating the smaller group's index sets."""
    n = pooled.size
    k = min(n_b, n - n_b)
    flat = itertools.chain.from_iterable(itertools.combinations(range(n), k))
    chosen = np.fromiter(flat, dtype=np.intp, count=math.comb(n, k) * k).reshape(-1, k)
    sums = pooled[chosen].sum(axis=1)
    return sums if k == n_b else pooled.sum() - sums


def _random_split_sums(
    pooled: np.ndarray, n_b: int, n_resamples: int, seed: int
) -> Iterator[np.ndarray]:
    """Chunks of ``sum(b)`` over ``n_resamples`` random splits (shuffles of ``pooled``)."""
    rng = np.random.default_rng(seed)
    for size in _chunk_sizes(n_resamples, pooled.size):
        shuffled = rng.permuted(np.broadcast_to(pooled, (size, pooled.size)), axis=1)
        yield shuffled[:, :n_b].sum(axis=1)


def benjamini_hochberg(p_values: ArrayLike, weights: ArrayLike | None = None) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (q-values), optionally weighted.

    Unweighted: ``q_(i) = min_{j >= i} min(1, m · p_(j) / j)`` over the ``m`` finite p-values
    sorted ascending (``scipy.stats.false_discovery_control(method="bh")``, which computes
    them); rejecting every
    test with ``q < α`` keeps the expected share of false discoveries at most α for
    independent or positively dependent tests.

    Weighted (Genovese, Roeder & Wasserman, 2006): with weights ``w_i > 0`` averaging 1 over
    the ``m`` tests, the same step-up runs on ``p_i / w_i``, so ``q_i`` is the BH q-value of
    ``p_i / w_i`` (capped at 1, which changes no q-value: ``m · p / j ≥ p``). It rejects
    ``H_(i)`` when ``p_(i) / w_(i) ≤ k · α / m`` for the largest such ``k``; a lone
    rejection needs ``p_i < α · w_i / m``. FDR ≤ α holds under the same conditions. Weights
    of 1 give the unweighted q-values. NaN p-values (no test) stay NaN and do not count in
    ``m``; weights must be positive and finite where p is finite.
    """
    p = np.asarray(p_values, dtype=np.float64)
    q = np.full(p.shape, np.nan)
    finite = np.isfinite(p)
    m = int(finite.sum())
    if m == 0:
        return q
    scaled = p[finite]
    if weights is not None:
        w = np.broadcast_to(np.asarray(weights, dtype=np.float64), p.shape)[finite]
        if not (np.isfinite(w).all() and (w > 0).all()):
            raise ValueError("weights must be positive and finite for every finite p-value")
        scaled = scaled / w
    q[finite] = scipy_stats.false_discovery_control(np.minimum(scaled, 1.0), method="bh")
    return q


def role_weights(is_primary: ArrayLike, primary_share: float) -> np.ndarray:
    """Weighted-BH weights for a family of primary and secondary tests, averaging 1.

    The primaries share ``primary_share`` of the total weight ``m`` equally, the secondaries
    the rest: ``w = primary_share · m / m_primary`` for a primary and ``(1 − primary_share) · m
    / m_secondary`` for a secondary, so a lone primary is rejected at ``p < α ·
    primary_share / m_primary`` however many secondaries join the family. When the family
    holds one kind only, every weight is 1 (plain BH).
    """
    primary = np.asarray(is_primary, dtype=bool)
    if not 0.0 < primary_share < 1.0:
        raise ValueError(f"primary_share must be in (0, 1), got {primary_share}")
    m, m_primary = primary.size, int(primary.sum())
    if m_primary in (0, m):
        return np.ones(m)
    return np.where(
        primary, primary_share * m / m_primary, (1.0 - primary_share) * m / (m - m_primary)
    )


def compare_paired(
    a: ArrayLike,
    b: ArrayLike,
    *,
    confidence: float = 0.95,
    n_bootstrap: int = 2000,
    n_permutations: int = 10000,
    seed: int = 0,
) -> dict[str, float | int]:
    """A/B comparison of two systems scored on the same items (``a`` = baseline).

    Pairs where either side is NaN (e.g. an error row in one system) are dropped first.

    Returns:
        A dict with ``n`` (number of complete pairs), ``mean_a``, ``mean_b``,
        ``delta = mean(b - a)``, ``ci_low``/``ci_high`` (:func:`paired_bootstrap_ci`) and
        ``p_value`` (:func:`paired_randomization_test`). With no complete pair every value
        except ``n`` is NaN.
    """
    first = np.asarray(a, dtype=np.float64)
    second = np.asarray(b, dtype=np.float64)
    if first.shape != second.shape or first.ndim != 1:
        raise ValueError(
            f"a and b must be 1-D with the same length, got {first.shape} and {second.shape}"
        )
    complete = ~(np.isnan(first) | np.isnan(second))
    first, second = first[complete], second[complete]
    ci_low, ci_high = paired_bootstrap_ci(
        first, second, confidence=confidence, n_resamples=n_bootstrap, seed=seed
    )
    empty = first.size == 0
    return {
        "n": int(first.size),
        "mean_a": float("nan") if empty else float(first.mean()),
        "mean_b": float("nan") if empty else float(second.mean()),
        "delta": float("nan") if empty else float((second - first).mean()),
        "ci_low": ci_low,
        "ci_high": ci_high,
        "p_value": paired_randomization_test(first, second, n_resamples=n_permutations, seed=seed),
    }


def percentiles(values: ArrayLike, qs: Sequence[float] = (50, 95, 99)) -> dict[str, float]:
    """Percentiles of ``values`` (linear interpolation, numpy's default), ignoring NaN.

    Args:
        values: 1-D numeric sample (e.g. latencies in ms). NaN entries are ignored.
        qs: Percentiles in [0, 100].

    Returns:
        ``{"p50": ..., "p95": ..., "p99": ...}`` (keys formatted as ``f"p{q:g}"``, e.g.
        ``"p99.9"``). Every value is NaN when no non-NaN value remains.
    """
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"values must be 1-D, got shape {array.shape}")
    q_array = np.asarray(qs, dtype=np.float64)
    if ((q_array < 0) | (q_array > 100)).any() or np.isnan(q_array).any():
        raise ValueError(f"percentiles must be in [0, 100], got {list(qs)}")
    array = array[~np.isnan(array)]
    if array.size == 0:
        return {f"p{q:g}": float("nan") for q in q_array}
    results = np.percentile(array, q_array)
    return {f"p{q:g}": float(result) for q, result in zip(q_array, results, strict=True)}


def _present(values: pd.Series) -> np.ndarray:
    """The non-missing values of a column as float64."""
    array = values.to_numpy(dtype=np.float64, na_value=np.nan)
    return array[~np.isnan(array)]


def bootstrap_cis(
    samples: Sequence[ArrayLike],
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> list[tuple[float, float]]:
    """:func:`bootstrap_ci` of each sample (1-D, finite: ``ValueError`` otherwise); the samples
    it resamples that have one size share one index matrix (:func:`_bootstrap_intervals`),
    drawn once instead of once per sample."""
    _check_resampling(confidence, n_resamples)
    arrays = [_as_finite_1d(sample, f"samples[{i}]") for i, sample in enumerate(samples)]
    intervals: dict[int, tuple[float, float]] = {}
    by_size: dict[int, list[int]] = {}
    for index, array in enumerate(arrays):
        if _resampled(array.size, NORMAL_APPROXIMATION_ABOVE):
            by_size.setdefault(array.size, []).append(index)
        else:
            intervals[index] = bootstrap_ci(
                array, confidence=confidence, n_resamples=n_resamples, seed=seed
            )
    for members in by_size.values():
        stacked = np.stack([arrays[index] for index in members])
        bounds = _bootstrap_intervals(stacked, confidence, n_resamples, seed)
        intervals.update(zip(members, map(tuple, bounds.tolist()), strict=True))
    return [intervals[index] for index in range(len(arrays))]


def _metric_row(array: np.ndarray, interval: tuple[float, float]) -> dict[str, float | int]:
    count = array.size
    return {
        "mean": float(array.mean()) if count else float("nan"),
        "std": float(array.std(ddof=1)) if count >= 2 else float("nan"),
        "count": count,
        "ci_low": interval[0],
        "ci_high": interval[1],
    }


def summarize(
    frame: pd.DataFrame,
    value_columns: Sequence[str],
    group_columns: Sequence[str] = (),
    *,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Long summary table: one row per (group..., metric).

    For every group (``frame.groupby(group_columns, sort=True, dropna=False)``; the whole
    frame when ``group_columns`` is empty) and every column of ``value_columns`` (in the
    given order) the row holds:

    * ``mean`` — mean of the non-NaN values;
    * ``std`` — sample standard deviation (``ddof=1``), NaN when ``count < 2``;
    * ``count`` — number of non-NaN values. Rows with NaN (or ``pd.NA``) in a value column
      are excluded from that metric only; error rows are counted separately by callers;
    * ``ci_low`` / ``ci_high`` — :func:`bootstrap_ci` of the mean (same ``seed`` for every
      cell, so the table is deterministic; cells of one size are resampled together, with
      the intervals they have alone).

    A metric with ``count == 0`` in a group gets NaN statistics. Columns are
    ``[*group_columns, "metric", "mean", "std", "count", "ci_low", "ci_high"]``; rows are
    ordered by group key, then by ``value_columns`` order. Boolean value columns are
    summarized as 0/1 (their mean is a rate).
    """
    value_columns = list(value_columns)
    group_columns = list(group_columns)
    missing = [c for c in (*value_columns, *group_columns) if c not in frame.columns]
    if missing:
        raise KeyError(f"columns not in frame: {missing}")
    overlap = set(value_columns) & set(group_columns)
    if overlap:
        raise ValueError(f"columns both grouped and summarized: {sorted(overlap)}")

    if group_columns:
        groups = frame.groupby(group_columns, sort=True, dropna=False)
    else:
        groups = [((), frame)]
    cells = [
        (keys, column, _present(group[column]))
        for keys, group in groups
        for column in value_columns
    ]
    samples = [sample for *_, sample in cells]
    intervals = bootstrap_cis(samples, confidence=confidence, n_resamples=n_resamples, seed=seed)
    rows = [
        {
            **dict(zip(group_columns, keys, strict=True)),
            "metric": column,
            **_metric_row(sample, interval),
        }
        for (keys, column, sample), interval in zip(cells, intervals, strict=True)
    ]
    result = pd.DataFrame(rows, columns=[*group_columns, *SUMMARY_COLUMNS])
    return result.astype({"count": np.int64})
