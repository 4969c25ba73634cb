"""The metric correlation matrix against scipy's Pearson r."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import pearsonr

from rag_eval_pipeline.metrics.correlation import correlation_matrix, correlations_by_system

pytestmark = [pytest.mark.unit]


def test_correlation_matrix_equals_scipy_pairwise_complete() -> None:
    rng = np.random.default_rng(3)
    values = pd.DataFrame(rng.random((30, 3)), columns=["a", "b", "c"])
    values["b"] += values["a"]
    values.loc[[2, 5, 11], "a"] = np.nan
    values.loc[[5, 7], "c"] = np.nan
    matrix = correlation_matrix(values, ["a", "b", "c", "absent"])
    assert list(matrix.index) == ["a", "b", "c"] == list(matrix.columns)
    for x in "abc":
        for y in "abc":
            both = values[[x, y]].dropna()
            expected = 1.0 if x == y else pearsonr(both[x], both[y]).statistic
            assert matrix.loc[x, y] == pytest.approx(expected, abs=1e-12), (x, y)


def test_too_few_pairs_or_a_constant_column_is_nan() -> None:
    values = pd.DataFrame({"a": [1.0, 2.0, np.nan, 4.0], "b": [2.0, np.nan, 1.0, 3.0]})
    values["c"] = 0.5
    matrix = correlation_matrix(values, ["a", "b", "c"])
    assert np.isnan(matrix.loc["a", "b"])  # only 2 rows have both
    assert np.isnan(matrix.loc["a", "c"]) and np.isnan(matrix.loc["c", "c"])
    assert matrix.loc["a", "a"] == pytest.approx(1.0)


def test_correlations_by_system_pivots_each_system_on_its_questions() -> None:
    rng = np.random.default_rng(5)
    rows = [
        {"system": system, "query_id": f"q{i}", "metric": metric, "score": float(rng.random())}
        for system in ("b-sys", "a-sys")
        for i in range(12)
        for metric in ("faithfulness", "context_recall", "coherence")
    ]
    judgments = pd.DataFrame(rows)
    matrices = correlations_by_system(judgments)
    assert list(matrices) == ["a-sys", "b-sys"]
    for system, matrix in matrices.items():
        assert list(matrix.index) == ["context_recall", "faithfulness"]
        wide = judgments[judgments["system"] == system].pivot(
            index="query_id", columns="metric", values="score"
        )
        expected = pearsonr(wide["context_recall"], wide["faithfulness"]).statistic
        assert matrix.loc["context_recall", "faithfulness"] == pytest.approx(expected, abs=1e-12)
    assert correlations_by_system(judgments.iloc[0:0]) == {}
    assert correlations_by_system(judgments[judgments["metric"] == "coherence"]) == {}
