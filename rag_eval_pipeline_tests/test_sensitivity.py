"""The smallest detectable change of the paired tests, against scipy and the tests themselves."""

import math

import numpy as np
import pytest
from scipy import stats

from rag_eval_pipeline.metrics.sensitivity import sign_flip_min_shift, sign_test_min_worse
from rag_eval_pipeline.metrics.stats import paired_randomization_tails

pytestmark = [pytest.mark.unit]

R = 10000  # the regression rule's default resamples


def binomtest_min_worse(n_better: int, bar: float, max_worse: int) -> float:
    """The same answer by brute force over scipy's exact binomial test."""
    for worse in range(1, max_worse + 1):
        if stats.binomtest(worse, worse + n_better, 0.5, alternative="greater").pvalue < bar:
            return float(worse)
    return math.inf


@pytest.mark.parametrize("n_better", [0, 1, 3, 6, 20, 75])
@pytest.mark.parametrize("bar", [0.05, 0.05 / 20, 0.05 / 60, 1e-6])
def test_min_worse_equals_brute_force_over_scipy(n_better: int, bar: float) -> None:
    assert sign_test_min_worse(n_better, bar, 400) == binomtest_min_worse(n_better, bar, 400)


def test_lone_metric_among_60_tests_needs_11_items_one_way() -> None:
    assert sign_test_min_worse(0, 0.05 / 60, 200) == 11  # 2^-11 < 0.05/60 <= 2^-10
    assert sign_test_min_worse(0, 0.05, 200) == 5  # even one test at 0.05 needs 5


def test_too_few_items_can_never_be_flagged() -> None:
    assert sign_test_min_worse(0, 0.05 / 60, 10) == math.inf
    assert sign_test_min_worse(3, 0.05, 0) == math.inf


def test_min_worse_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        sign_test_min_worse(-1, 0.05, 10)
    with pytest.raises(ValueError, match="bar"):
        sign_test_min_worse(0, 0.0, 10)


def test_min_shift_is_where_the_normal_statistic_reaches_z() -> None:
    noise = np.tile([-0.1, 0.1], 50)  # centred, s = 0.1, n = 100
    bar = 0.001
    z = stats.norm.ppf(1 - bar)
    shift = sign_flip_min_shift(noise, bar, R)
    assert shift == pytest.approx(z * 0.1 / math.sqrt(100 - z * z))
    shifted = noise + shift
    assert shifted.sum() / math.sqrt((shifted**2).sum()) == pytest.approx(z)


def test_min_shift_ignores_the_observed_shift() -> None:
    noise = np.random.default_rng(3).normal(0, 0.1, 80)
    assert sign_flip_min_shift(noise + 0.3, 0.01, R) == pytest.approx(
        sign_flip_min_shift(noise, 0.01, R)
    )


def test_min_shift_brackets_the_randomization_test() -> None:
    """A shift well above the estimate is flagged by the real test; one well below is not."""
    rng = np.random.default_rng(11)
    base = rng.uniform(0.4, 1.0, 200)
    noise = rng.normal(0, 0.1, 200)
    noise -= noise.mean()
    bar = 0.05 / 20
    shift = sign_flip_min_shift(noise, bar, R)
    for factor, flagged in ((1.25, True), (0.75, False)):
        today = base - noise - factor * shift  # a drop: baseline − today = noise + shift
        p_less, _ = paired_randomization_tails(base, today, n_resamples=40000, seed=0)
        assert (p_less < bar) is flagged, factor


def test_min_shift_edge_cases() -> None:
    assert sign_flip_min_shift(np.full(50, 0.2), 0.01, R) == pytest.approx(0.0, abs=1e-12)
    assert sign_flip_min_shift(np.array([0.1, -0.1, 0.2]), 0.001, R) == math.inf  # n <= z²
    with pytest.raises(ValueError, match="finite"):
        sign_flip_min_shift(np.array([0.1, np.nan]), 0.01, R)


def test_no_shift_is_detectable_below_the_tests_p_value_floor() -> None:
    """The Monte-Carlo p-value is never below 1 / (R + 1), and n agreeing signs give 2⁻ⁿ."""
    noise = np.random.default_rng(5).normal(0, 0.1, 400)
    bar = 0.05 / 600  # 8.3e-5 < 1 / 10001
    assert sign_flip_min_shift(noise, bar, R) == math.inf
    far = np.full(400, 10.0)  # every item 10 worse: the smallest p the test can give
    assert paired_randomization_tails(far, np.zeros(400), n_resamples=R)[1] >= bar
    assert sign_flip_min_shift(noise, 0.05 / 60, 1000) == math.inf  # 1/1001 >= 0.00083
    assert math.isfinite(sign_flip_min_shift(noise, 0.05 / 60, R))
    nine = np.random.default_rng(6).normal(0, 0.1, 9)
    assert sign_flip_min_shift(nine, 0.05 / 30, R) == math.inf  # 2⁻⁹ = 0.00195 >= 0.00167
