"""Prediction-powered inference: the reference package `ppi-python` on the same data, and
coverage with known truth (a biased, noisy judge)."""

from __future__ import annotations

import numpy as np
import pytest
from ppi_py import classical_mean_ci as reference_classical_ci
from ppi_py import ppi_mean_ci as reference_ci
from ppi_py import ppi_mean_pointestimate as reference_estimate

from benchmarks.ppi_coverage import simulate
from rag_eval_pipeline.metrics.ppi import (
    classical_mean_ci,
    power_tuning_lambda,
    ppi_mean,
    ppi_mean_ci,
    ppi_mean_estimate,
)

pytestmark = [pytest.mark.unit]


def _judged_sample(seed: int, n: int, big_n: int, bias: float, noise: float):
    rng = np.random.default_rng(seed)
    truth = rng.choice((np.arange(5)) / 4, size=n + big_n)
    judged = np.clip(truth + bias + rng.normal(0, noise, truth.size), 0, 1)
    return truth[:n], judged[:n], judged[n:]


@pytest.mark.parametrize(
    ("seed", "n", "big_n", "bias", "noise"),
    [(0, 40, 56, 0.1, 0.1), (1, 12, 300, -0.2, 0.3), (2, 100, 1000, 0.0, 1.0), (3, 5, 7, 0.3, 0.0)],
)
@pytest.mark.parametrize("lam", [None, 1.0, 0.0, 0.4])
def test_matches_ppi_python(seed: int, n: int, big_n: int, bias: float, noise: float, lam):
    y, yhat, yhat_u = _judged_sample(seed, n, big_n, bias, noise)
    expected_low, expected_high = reference_ci(y, yhat, yhat_u, alpha=0.05, lam=lam)
    low, high = ppi_mean_ci(y, yhat, yhat_u, alpha=0.05, lam=lam)
    assert low == pytest.approx(float(np.squeeze(expected_low)), abs=1e-12)
    assert high == pytest.approx(float(np.squeeze(expected_high)), abs=1e-12)
    estimate = ppi_mean_estimate(y, yhat, yhat_u, lam=lam)
    expected = float(np.squeeze(reference_estimate(y, yhat, yhat_u, lam=lam)))
    assert estimate == pytest.approx(expected, abs=1e-12)


def test_classical_interval_matches_ppi_python() -> None:
    y, _, _ = _judged_sample(4, 30, 10, 0.0, 0.1)
    expected = reference_classical_ci(y, alpha=0.1)
    assert classical_mean_ci(y, alpha=0.1) == pytest.approx(tuple(map(float, expected)))


def test_batches_equal_row_by_row_calls() -> None:
    rows = [_judged_sample(s, 20, 80, 0.1, 0.2) for s in range(5)]
    y, yhat, yhat_u = (np.stack([r[i] for r in rows]) for i in range(3))
    low, high = ppi_mean_ci(y, yhat, yhat_u)
    lam = power_tuning_lambda(y, yhat, yhat_u)
    for k, row in enumerate(rows):
        assert (low[k], high[k]) == pytest.approx(ppi_mean_ci(*row))
        assert lam[k] == pytest.approx(power_tuning_lambda(*row))


def test_power_tuning_falls_back_to_classical_for_a_useless_judge() -> None:
    y, _, yhat_u = _judged_sample(5, 30, 100, 0.0, 0.1)
    constant = np.full(y.size, 0.5)
    assert power_tuning_lambda(y, constant, np.full(yhat_u.size, 0.5)) == 0.0
    summary = ppi_mean(y, constant, np.full(yhat_u.size, 0.5))
    assert (summary.ci_low, summary.ci_high) == pytest.approx(
        (summary.classical_low, summary.classical_high)
    )
    assert summary.estimate == pytest.approx(y.mean())


def test_summary_reports_sizes_judge_mean_and_correction() -> None:
    y, yhat, yhat_u = _judged_sample(6, 40, 200, 0.2, 0.05)
    summary = ppi_mean(y, yhat, yhat_u)
    assert (summary.n_labeled, summary.n_unlabeled) == (40, 200)
    assert summary.judge_mean == pytest.approx(yhat_u.mean())
    # the lenient judge's mean sits above the interval, which the labels pull back down
    assert summary.ci_low <= summary.estimate <= summary.ci_high < summary.judge_mean
    assert 0.0 < summary.lam <= 1.0


@pytest.mark.parametrize(
    ("labels", "judged", "unlabeled", "message"),
    [
        ([0.5, 1.0], [0.5], [0.2], "differ in shape"),
        ([0.5], [0.5], [0.2], "at least 2 labeled"),
        ([0.5, np.nan], [0.5, 0.1], [0.2], "NaN"),
    ],
)
def test_bad_inputs_are_named(labels, judged, unlabeled, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ppi_mean_ci(labels, judged, unlabeled)


def test_known_truth_coverage_and_width() -> None:
    """1,000 draws of a biased (+0.15), noisy (σ 0.15) judge; n = 100 labeled, N = 1,000."""
    result = simulate(draws=1000, labeled=100, unlabeled=1000, seed=0)
    assert result.ppi_coverage >= 0.93
    assert result.width_ratio <= 1.0
    # the judge alone is biased: its own interval almost never covers the human mean
    assert result.judge_coverage < 0.05
