"""The paired regression tests and Benjamini–Hochberg against scipy on the same data."""

import math

import numpy as np
import pytest
from scipy import stats

from rag_eval_pipeline.metrics.stats import (
    benjamini_hochberg,
    paired_randomization_tails,
    paired_randomization_test,
    sign_test,
)

pytestmark = [pytest.mark.unit]


def test_sign_test_equals_scipy_binomtest() -> None:
    worse = np.array([0, 1, 3, 6, 6, 10, 40, 0])
    better = np.array([0, 0, 1, 0, 6, 2, 35, 5])
    expected = [
        1.0 if w + b == 0 else stats.binomtest(w, w + b, 0.5, alternative="greater").pvalue
        for w, b in zip(worse, better, strict=True)
    ]
    np.testing.assert_allclose(sign_test(worse, better), expected, rtol=1e-12)


def test_six_flips_one_way_is_p_0_0156() -> None:
    assert sign_test(np.array([6]), np.array([0]))[0] == pytest.approx(0.015625)


def test_sign_test_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        sign_test(np.array([-1]), np.array([2]))


@pytest.mark.parametrize("alternative", ["greater", "less", "two-sided"])
def test_one_sided_randomization_matches_scipy_exact_permutation(alternative: str) -> None:
    rng = np.random.default_rng(7)
    a = rng.uniform(0, 1, 12)
    b = a - 0.08 + rng.normal(0, 0.1, 12)
    exact = stats.permutation_test(
        (b - a,),
        np.sum,
        permutation_type="samples",
        alternative=alternative,
        n_resamples=np.inf,
    ).pvalue
    ours = paired_randomization_test(a, b, alternative=alternative, n_resamples=40000, seed=1)
    # Monte-Carlo p-value of 40,000 sign flips: within 4 standard errors of the exact one.
    assert abs(ours - exact) < 4 * np.sqrt(exact * (1 - exact) / 40000) + 1e-4


def test_both_tails_from_one_draw_equal_the_one_sided_tests() -> None:
    rng = np.random.default_rng(11)
    a, b = rng.uniform(0, 1, 60), rng.uniform(0, 1, 60)  # beyond exact enumeration
    less, greater = paired_randomization_tails(a, b, n_resamples=5000, seed=2)
    assert less == paired_randomization_test(a, b, alternative="less", n_resamples=5000, seed=2)
    assert greater == paired_randomization_test(
        a, b, alternative="greater", n_resamples=5000, seed=2
    )
    assert np.isnan(paired_randomization_tails([], [])).all()


@pytest.mark.parametrize("n", [2, 5, 6, 13, 18])
def test_sign_flip_tails_enumerate_exactly_as_scipy(n: int) -> None:
    """Up to 40 non-zero differences every sign pattern is enumerated: scipy's exact test."""
    rng = np.random.default_rng(n)
    a = rng.uniform(0, 1, n + 3)
    b = a - 0.05 + rng.normal(0, 0.1, n + 3)
    b[:3] = a[:3]  # three unchanged items: they carry no sign
    expected = [
        stats.permutation_test(
            (b[3:] - a[3:],),
            np.sum,
            permutation_type="samples",
            alternative=alternative,
            n_resamples=np.inf,
        ).pvalue
        for alternative in ("less", "greater")
    ]
    np.testing.assert_allclose(paired_randomization_tails(a, b), expected, rtol=1e-12)


@pytest.mark.parametrize("n", [4, 12, 17])
def test_sign_flip_with_repeated_changes_enumerates_exactly_as_scipy(n: int) -> None:
    """Changes on a lattice (precision@5 moves by multiples of 0.2) repeat: the enumeration
    groups equal magnitudes with binomial weights and still counts every pattern."""
    rng = np.random.default_rng(n)
    a = rng.choice([0.0, 0.2, 0.4, 0.6, 0.8, 1.0], n)
    b = np.clip(a + rng.choice([-0.4, -0.2, 0.2], n), 0.0, 1.0)
    nonzero = (b - a)[b != a]
    expected = [
        stats.permutation_test(
            (nonzero,), np.sum, permutation_type="samples", alternative=side, n_resamples=np.inf
        ).pvalue
        for side in ("less", "greater")
    ]
    np.testing.assert_allclose(paired_randomization_tails(a, b), expected, rtol=1e-12)


def test_exact_sign_flip_of_forty_repeated_changes_is_fast_and_exact() -> None:
    """40 changes of three sizes: 2^40 patterns, counted through 41·41·41 distinct sums."""
    sizes, magnitudes = (14, 13, 13), (0.1, 0.2, 0.3)
    d = np.repeat([-0.1, 0.2, -0.3], sizes)
    positives = np.meshgrid(*(np.arange(c + 1) for c in sizes), indexing="ij")
    w = [np.array([math.comb(c, k) for k in range(c + 1)], float) for c in sizes]
    # every (positives of 0.1, of 0.2, of 0.3), with its number of sign patterns
    sums = sum(m * (2 * k - c) for m, k, c in zip(magnitudes, positives, sizes, strict=True))
    weight = np.einsum("i,j,k->ijk", *w)
    tolerance = 1e-9 * np.abs(d).sum()
    less = weight[sums <= d.sum() + tolerance].sum() / 2.0**40
    greater = weight[sums >= d.sum() - tolerance].sum() / 2.0**40
    assert paired_randomization_tails(np.zeros(40), d) == (less, greater)


def test_exact_sign_flip_of_six_items_one_way_is_one_in_64() -> None:
    base = np.array([0.9, 0.8, 0.7, 1.0, 0.6, 0.75, 0.5, 0.5])
    today = base - np.array([0.1, 0.2, 0.05, 0.3, 0.1, 0.15, 0.0, 0.0])
    assert paired_randomization_tails(base, today) == (1 / 64, 1.0)
    assert paired_randomization_tails(base, base) == (1.0, 1.0)


def test_randomization_rejects_unknown_alternative() -> None:
    with pytest.raises(ValueError, match="alternative"):
        paired_randomization_test([1.0], [2.0], alternative="worse")


def test_benjamini_hochberg_equals_scipy() -> None:
    p = np.random.default_rng(3).uniform(0, 0.2, 60)
    p[:5] = [0.0001, 0.015625, 0.002, 0.04, 1.0]
    np.testing.assert_allclose(
        benjamini_hochberg(p), stats.false_discovery_control(p, method="bh"), rtol=1e-12
    )


def test_benjamini_hochberg_skips_nan() -> None:
    p = np.array([0.01, np.nan, 0.04, 0.03])
    q = benjamini_hochberg(p)
    assert np.isnan(q[1])
    finite = np.array([0.01, 0.04, 0.03])
    np.testing.assert_allclose(q[[0, 2, 3]], stats.false_discovery_control(finite))
    assert np.isnan(benjamini_hochberg(np.array([np.nan]))).all()
