"""The unpaired (two-sample) regression tests against scipy on the same data."""

import numpy as np
import pytest
from scipy import stats

from rag_eval_pipeline.metrics import stats as ours
from rag_eval_pipeline.metrics.stats import fisher_exact_tails, permutation_tails

pytestmark = [pytest.mark.unit]


def scipy_permutation(a: np.ndarray, b: np.ndarray, alternative: str) -> float:
    """scipy's exact two-sample permutation p-value of mean(b) - mean(a) (all splits)."""
    return stats.permutation_test(
        (a, b),
        lambda x, y, axis: np.mean(y, axis=axis) - np.mean(x, axis=axis),
        permutation_type="independent",
        alternative=alternative,
        n_resamples=np.inf,
        vectorized=True,
    ).pvalue


def scipy_fisher(a: np.ndarray, b: np.ndarray, alternative: str) -> float:
    table = [[b.sum(), b.size - b.sum()], [a.sum(), a.size - a.sum()]]
    return stats.fisher_exact(table, alternative=alternative).pvalue


QUARTERS = np.random.default_rng(5)
# (a, b): ties (values on a 0.25 grid), unequal sizes, scipy's smallest samples (2), all equal
SMALL_CASES = [
    (QUARTERS.integers(0, 5, na) / 4, QUARTERS.integers(0, 5, nb) / 4 - shift)
    for na, nb, shift in ((5, 6, 0.1), (2, 7, 0.0), (3, 2, -0.3), (2, 2, 0.0), (7, 5, 0.25))
] + [(np.full(4, 0.5), np.full(3, 0.5)), (np.array([1.0, 2.0]), np.array([1.0, 2.0, 9.5]))]


@pytest.mark.parametrize("case", range(len(SMALL_CASES)))
def test_enumerated_permutation_test_equals_scipy_exactly(case: int) -> None:
    a, b = SMALL_CASES[case]
    less, greater = permutation_tails(a, b)
    assert less == pytest.approx(scipy_permutation(a, b, "less"), rel=1e-12)
    assert greater == pytest.approx(scipy_permutation(a, b, "greater"), rel=1e-12)


def test_all_equal_values_give_one_and_empty_samples_nan() -> None:
    assert permutation_tails(np.full(30, 0.7), np.full(40, 0.7)) == (1.0, 1.0)
    assert permutation_tails(np.full(30, 0.7), np.full(40, 0.7), normal_above=10) == (1.0, 1.0)
    assert np.isnan(permutation_tails([], [1.0, 2.0])).all()
    assert np.isnan(permutation_tails([1.0], [])).all()


def test_a_size_one_group_by_hand() -> None:
    # pooled 1, 2, 3, 2: b is each of the 4 values with probability 1/4; sum(b) = 2 observed
    assert permutation_tails([1.0, 2.0, 3.0], [2.0]) == (0.75, 0.75)
    assert permutation_tails([5.0], [1.0, 2.0, 3.0]) == (0.25, 1.0)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_splits_agree_with_scipy_within_monte_carlo_error(seed: int) -> None:
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 5, 9) / 4  # 19 values: C(19, 9) = 92,378 splits > 10,000 resamples
    b = rng.integers(0, 5, 10) / 4 - 0.15
    less, greater = permutation_tails(a, b, n_resamples=10000, seed=seed)
    for ours_p, alternative in ((less, "less"), (greater, "greater")):
        exact = scipy_permutation(a, b, alternative)
        assert abs(ours_p - exact) < 4 * np.sqrt(exact * (1 - exact) / 10000) + 1e-4


def test_random_splits_are_seeded_and_do_not_depend_on_chunking(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=40), rng.normal(size=35)
    first = permutation_tails(a, b, n_resamples=3000, seed=4)
    assert permutation_tails(a, b, n_resamples=3000, seed=4) == first
    monkeypatch.setattr(ours, "_MAX_CHUNK_ELEMENTS", 75 * 7)
    assert permutation_tails(a, b, n_resamples=3000, seed=4) == first


def test_normal_approximation_of_large_samples_matches_the_random_splits() -> None:
    rng = np.random.default_rng(8)
    a, b = rng.gamma(2.0, 1.0, 1500), rng.gamma(2.0, 1.0, 1300) + 0.06
    normal = permutation_tails(a, b, normal_above=1000)
    sampled = permutation_tails(a, b, n_resamples=20000, seed=1)
    assert 0.01 < normal[1] < 0.3  # a tail where the approximation matters
    for approx, mc in zip(normal, sampled, strict=True):
        assert abs(approx - mc) < 4 * np.sqrt(mc * (1 - mc) / 20000) + 0.005


def test_permutation_test_rejects_nan() -> None:
    with pytest.raises(ValueError, match="NaN"):
        permutation_tails([1.0, np.nan], [2.0])


def test_fisher_exact_tails_equal_scipy() -> None:
    rng = np.random.default_rng(9)
    cases = [
        (rng.integers(0, 2, rng.integers(1, 40)), rng.integers(0, 2, rng.integers(1, 40)))
        for _ in range(12)
    ]
    cases += [
        (np.zeros(5), np.zeros(8)),  # all equal
        (np.ones(3), np.ones(1)),
        (np.array([1]), np.array([0])),  # size-1 groups
        (np.array([1, 1, 0]), np.array([0])),
        (rng.binomial(1, 0.30, 5000), rng.binomial(1, 0.28, 4000)),  # large n
    ]
    for a, b in cases:
        less, greater = fisher_exact_tails(a, b)
        assert less == pytest.approx(scipy_fisher(a, b, "less"), rel=1e-9)
        assert greater == pytest.approx(scipy_fisher(a, b, "greater"), rel=1e-9)


def test_fisher_needs_0_1_values_and_two_samples() -> None:
    with pytest.raises(ValueError, match="0/1"):
        fisher_exact_tails([0.0, 0.5], [1.0])
    assert fisher_exact_tails(np.zeros(5), np.ones(5)) == (
        pytest.approx(scipy_fisher(np.zeros(5), np.ones(5), "less")),
        pytest.approx(1 / 252),
    )
    assert np.isnan(fisher_exact_tails([], [1.0])).all()


def exceedance_table(a: np.ndarray, b: np.ndarray, q: float) -> list[list[int]]:
    """[[b above, b not above], [a above, a not above]] the pooled q-quantile (numpy linear)."""
    threshold = np.quantile(np.concatenate([a, b]), q)
    above_a, above_b = int((a > threshold).sum()), int((b > threshold).sum())
    return [[above_b, b.size - above_b], [above_a, a.size - above_a]]


def test_median_exceedance_table_is_scipys_median_test_table() -> None:
    rng = np.random.default_rng(8)
    a, b = rng.integers(0, 30, 41).astype(float), rng.integers(5, 35, 37).astype(float)
    *_, table = stats.median_test(a, b, ties="below")  # rows above / below, columns a, b
    assert exceedance_table(a, b, 0.5) == [
        [table[0][1], table[1][1]],
        [table[0][0], table[1][0]],
    ]
    p_less, p_greater = ours.quantile_exceedance_tails(a, b, 0.5)
    assert p_less == pytest.approx(
        stats.fisher_exact(exceedance_table(a, b, 0.5), alternative="less").pvalue, rel=1e-9
    )
    assert p_greater == pytest.approx(
        stats.fisher_exact(exceedance_table(a, b, 0.5), alternative="greater").pvalue, rel=1e-9
    )


@pytest.mark.parametrize("q", [0.5, 0.95, 0.99])
@pytest.mark.parametrize("seed", [1, 2])
def test_quantile_exceedance_equals_scipy_fisher_on_the_exceedance_table(
    q: float, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    a = rng.lognormal(6.0, 0.5, 300)
    b = np.concatenate([rng.lognormal(6.0, 0.5, 250), rng.lognormal(6.8, 0.5, 30)])
    table = exceedance_table(a, b, q)
    expected = [stats.fisher_exact(table, alternative=alt).pvalue for alt in ("less", "greater")]
    np.testing.assert_allclose(ours.quantile_exceedance_tails(a, b, q), expected, rtol=1e-9)


def test_a_slower_tail_is_found_and_one_value_a_day_proves_nothing() -> None:
    rng = np.random.default_rng(3)
    usual = rng.lognormal(6.0, 0.3, 400)
    slow_tail = np.concatenate([rng.lognormal(6.0, 0.3, 340), rng.lognormal(7.5, 0.2, 60)])
    assert ours.quantile_exceedance_tails(usual, slow_tail, 0.95)[1] < 1e-6
    assert ours.quantile_exceedance_tails([900.0], [1200.0], 0.95) == pytest.approx((1.0, 0.5))


def test_quantile_exceedance_edge_cases() -> None:
    assert ours.quantile_exceedance_tails([5.0, 5.0], [5.0], 0.95) == (1.0, 1.0)
    assert all(np.isnan(ours.quantile_exceedance_tails([], [1.0], 0.5)))
    with pytest.raises(ValueError, match="q must be"):
        ours.quantile_exceedance_tails([1.0], [2.0], 1.0)
