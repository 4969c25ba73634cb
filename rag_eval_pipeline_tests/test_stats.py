"""Tests for rag_eval_pipeline.metrics.stats (bootstrap, randomization test, summaries)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from rag_eval_pipeline.metrics import stats
from rag_eval_pipeline.metrics.stats import (
    bootstrap_ci,
    compare_paired,
    paired_bootstrap_ci,
    paired_randomization_test,
    percentiles,
    summarize,
)

pytestmark = [pytest.mark.unit]


def naive_bootstrap_ci(
    values: np.ndarray, confidence: float, n_resamples: int, seed: int
) -> tuple[float, float]:
    """One resample at a time, with the RNG scheme documented in the stats module."""
    rng = np.random.default_rng(seed)
    means = [
        values[rng.integers(0, values.size, size=values.size)].mean() for _ in range(n_resamples)
    ]
    alpha = 1 - confidence
    low, high = np.quantile(means, [alpha / 2, 1 - alpha / 2])
    return float(low), float(high)


def test_bootstrap_ci_matches_naive_loop() -> None:
    values = np.random.default_rng(3).exponential(size=17)
    expected = naive_bootstrap_ci(values, 0.9, 500, seed=11)
    assert bootstrap_ci(values, confidence=0.9, n_resamples=500, seed=11) == pytest.approx(
        expected, rel=1e-12
    )


def test_bootstrap_ci_chunking_does_not_change_result(monkeypatch: pytest.MonkeyPatch) -> None:
    values = np.random.default_rng(4).normal(size=23)
    unchunked = bootstrap_ci(values, n_resamples=300, seed=5)
    monkeypatch.setattr(stats, "_MAX_CHUNK_ELEMENTS", 50)  # two resamples per chunk
    assert bootstrap_ci(values, n_resamples=300, seed=5) == pytest.approx(unchunked, rel=1e-12)


@pytest.mark.parametrize(
    ("size", "confidence", "seed"), [(2, 0.95, 0), (17, 0.9, 11), (40, 0.95, 0), (301, 0.99, 3)]
)
def test_bootstrap_ci_is_scipys_percentile_bootstrap(
    size: int, confidence: float, seed: int
) -> None:
    """The definition `_bootstrap_interval` states: scipy.stats.bootstrap's percentile interval
    with the same generator (the same draws, the same quantiles), for any chunking."""
    values = np.random.default_rng(7).normal(loc=2.0, scale=1.5, size=size)
    reference = scipy_stats.bootstrap(
        (values,),
        np.mean,
        method="percentile",
        confidence_level=confidence,
        n_resamples=3000,
        batch=1000,
        rng=np.random.default_rng(seed),
    ).confidence_interval
    interval = bootstrap_ci(values, confidence=confidence, n_resamples=3000, seed=seed)
    assert interval == pytest.approx((reference.low, reference.high), rel=1e-13, abs=1e-15)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(min_value=-1e6, max_value=1e6, allow_nan=False), min_size=1, max_size=30),
    st.integers(min_value=0, max_value=2**32 - 1),
)
def test_bootstrap_ci_contains_mean_and_is_deterministic(values: list[float], seed: int) -> None:
    low, high = bootstrap_ci(values, n_resamples=400, seed=seed)
    mean = float(np.mean(values))
    tolerance = 1e-9 * max(1.0, float(np.abs(values).max()))
    assert low - tolerance <= mean <= high + tolerance
    assert (low, high) == bootstrap_ci(values, n_resamples=400, seed=seed)


def test_bootstrap_ci_seed_changes_result() -> None:
    values = np.arange(20.0)
    assert bootstrap_ci(values, seed=0) != bootstrap_ci(values, seed=1)


def test_bootstrap_ci_edge_cases() -> None:
    low, high = bootstrap_ci(np.array([]))
    assert np.isnan(low) and np.isnan(high)
    assert bootstrap_ci([4.5]) == (4.5, 4.5)
    assert bootstrap_ci([2.0, 2.0, 2.0]) == (2.0, 2.0)
    with pytest.raises(ValueError, match="NaN"):
        bootstrap_ci([1.0, np.nan])
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci([1.0, 2.0], confidence=1.0)


def test_wider_confidence_gives_wider_interval() -> None:
    values = np.random.default_rng(8).normal(size=60)
    low_90, high_90 = bootstrap_ci(values, confidence=0.9)
    low_99, high_99 = bootstrap_ci(values, confidence=0.99)
    assert low_99 < low_90 < high_90 < high_99


def test_paired_bootstrap_ci_is_bootstrap_of_differences() -> None:
    rng = np.random.default_rng(9)
    a, b = rng.normal(size=25), rng.normal(size=25)
    assert paired_bootstrap_ci(a, b, seed=2) == bootstrap_ci(b - a, seed=2)
    with pytest.raises(ValueError, match="same length"):
        paired_bootstrap_ci(a, b[:-1])


def test_randomization_test_identical_samples_give_p_one() -> None:
    a = np.random.default_rng(10).normal(size=30)
    assert paired_randomization_test(a, a.copy()) == 1.0


def test_randomization_test_big_shift_gives_minimal_p() -> None:
    a = np.random.default_rng(11).normal(size=30)
    p_value = paired_randomization_test(a, a + 3.0, n_resamples=999)
    # only the all-plus and all-minus sign patterns (2 of 2**30) reach the observed |mean|
    assert p_value == pytest.approx(1 / 1000)


def test_randomization_test_matches_exact_enumeration() -> None:
    differences = np.array([0.9, 1.3, -0.4, 2.1, 0.2, 1.7, -0.6, 0.8])
    signs = np.array(np.meshgrid(*[[-1, 1]] * differences.size)).reshape(differences.size, -1)
    exact = np.mean(np.abs(signs.T @ differences) >= abs(differences.sum()) - 1e-12)
    p_value = paired_randomization_test(np.zeros(8), differences, n_resamples=40000, seed=3)
    assert p_value == pytest.approx(exact, abs=0.01)
    assert 0.0 < p_value < 0.1


def test_randomization_test_is_symmetric_and_seeded() -> None:
    rng = np.random.default_rng(12)
    a, b = rng.normal(size=15), rng.normal(size=15) + 0.3
    assert paired_randomization_test(a, b, seed=4) == paired_randomization_test(b, a, seed=4)
    assert np.isnan(paired_randomization_test([], []))


def test_compare_paired_reports_delta_ci_and_p_value() -> None:
    a = np.array([0.5, 0.6, np.nan, 0.7, 0.4, 0.55])
    b = np.array([0.6, 0.8, 0.9, 0.75, 0.5, np.nan])
    result = compare_paired(a, b, n_bootstrap=500, n_permutations=500, seed=1)
    complete_a, complete_b = np.array([0.5, 0.6, 0.7, 0.4]), np.array([0.6, 0.8, 0.75, 0.5])
    assert result["n"] == 4
    assert result["mean_a"] == pytest.approx(0.55)
    assert result["mean_b"] == pytest.approx(0.6625)
    assert result["delta"] == pytest.approx(0.1125)
    assert (result["ci_low"], result["ci_high"]) == paired_bootstrap_ci(
        complete_a, complete_b, n_resamples=500, seed=1
    )
    assert result["p_value"] == paired_randomization_test(
        complete_a, complete_b, n_resamples=500, seed=1
    )
    # all four differences are positive: only 2 of the 16 sign patterns reach |sum|
    assert result["p_value"] == pytest.approx(2 / 16, abs=0.04)


def test_compare_paired_without_complete_pairs() -> None:
    result = compare_paired([np.nan, 1.0], [2.0, np.nan])
    assert result["n"] == 0
    assert all(np.isnan(result[key]) for key in ("delta", "ci_low", "ci_high", "p_value"))


def test_percentiles() -> None:
    values = np.array([10.0, 20.0, 30.0, 40.0, np.nan, 50.0])
    assert percentiles(values) == pytest.approx({"p50": 30.0, "p95": 48.0, "p99": 49.6})
    assert percentiles(values, qs=(0, 25, 99.9)) == pytest.approx(
        {"p0": 10.0, "p25": 20.0, "p99.9": 49.96}
    )
    empty = percentiles([np.nan])
    assert list(empty) == ["p50", "p95", "p99"] and all(np.isnan(v) for v in empty.values())
    with pytest.raises(ValueError, match="percentiles"):
        percentiles(values, qs=(101,))


def test_summarize_hand_computed_grouped_case() -> None:
    frame = pd.DataFrame(
        {
            "system": ["a", "a", "a", "b", "b"],
            "faithfulness": [1.0, 0.0, np.nan, 0.5, 0.7],
            "relevance": [2.0, 4.0, 6.0, np.nan, 3.0],
        }
    )
    table = summarize(frame, ["faithfulness", "relevance"], ["system"], n_resamples=300)
    assert list(table.columns) == ["system", "metric", "mean", "std", "count", "ci_low", "ci_high"]
    assert table[["system", "metric"]].to_numpy().tolist() == [
        ["a", "faithfulness"],
        ["a", "relevance"],
        ["b", "faithfulness"],
        ["b", "relevance"],
    ]
    assert table["mean"].tolist() == pytest.approx([0.5, 4.0, 0.6, 3.0])
    assert table["std"].iloc[:3].tolist() == pytest.approx([np.sqrt(0.5), 2.0, np.sqrt(0.02)])
    assert np.isnan(table["std"].iloc[3])  # single value
    assert table["count"].tolist() == [2, 3, 2, 1]
    assert table["count"].dtype == np.int64
    assert table.loc[3, ["ci_low", "ci_high"]].tolist() == [3.0, 3.0]
    expected_ci = bootstrap_ci([2.0, 4.0, 6.0], n_resamples=300)
    assert tuple(table.loc[1, ["ci_low", "ci_high"]]) == pytest.approx(expected_ci)
    assert (table["ci_low"] <= table["mean"]).all() and (table["mean"] <= table["ci_high"]).all()


def test_summarize_resamples_cells_of_one_size_together_with_their_own_intervals(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Cells of one size share one index matrix; each interval is bit for bit its
    `bootstrap_ci` alone, however the resamples are chunked."""
    rng = np.random.default_rng(12)
    frame = pd.DataFrame({"g": np.repeat(["a", "b"], 30)} | {m: rng.random(60) for m in "xyz"})
    frame.loc[::4, "y"] = np.nan  # another size
    monkeypatch.setattr(stats, "_MAX_CHUNK_ELEMENTS", 1000)  # several chunks per call
    summary = summarize(frame, ["x", "y", "z"], ["g"], n_resamples=500, seed=3)
    for row in summary.itertuples():
        values = frame.loc[frame["g"] == row.g, row.metric].dropna()
        assert (row.ci_low, row.ci_high) == bootstrap_ci(values, n_resamples=500, seed=3)
    assert summary["count"].tolist() == [30, 22, 30, 30, 23, 30]


def test_summarize_excludes_nan_and_handles_no_groups() -> None:
    frame = pd.DataFrame(
        {
            "score": pd.array([1.0, None, 3.0, None], dtype="Float64"),
            "ok": [True, False, True, True],
        }
    )
    table = summarize(frame, ["score", "ok"])
    assert list(table.columns) == ["metric", "mean", "std", "count", "ci_low", "ci_high"]
    assert table["metric"].tolist() == ["score", "ok"]
    assert table["count"].tolist() == [2, 4]
    assert table["mean"].tolist() == pytest.approx([2.0, 0.75])


def test_summarize_all_nan_metric_and_validation() -> None:
    frame = pd.DataFrame({"g": ["x", "y"], "v": [np.nan, 1.0]})
    table = summarize(frame, ["v"], ["g"])
    assert table["count"].tolist() == [0, 1]
    assert table.loc[0, ["mean", "std", "ci_low", "ci_high"]].isna().all()
    with pytest.raises(KeyError):
        summarize(frame, ["missing"])
    with pytest.raises(ValueError, match="both grouped and summarized"):
        summarize(frame, ["v"], ["v"])


def test_large_samples_use_the_normal_interval_which_matches_the_bootstrap() -> None:
    values = np.random.default_rng(3).integers(0, 2, 30_000).astype(float)
    normal = bootstrap_ci(values)
    resampled = bootstrap_ci(values, normal_above=10**9)
    assert normal != resampled
    assert normal == pytest.approx(resampled, abs=1e-3)
    half = 1.959963984540054 * values.std(ddof=1) / np.sqrt(values.size)
    assert normal == pytest.approx((values.mean() - half, values.mean() + half), abs=1e-12)
