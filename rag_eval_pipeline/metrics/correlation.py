"""Correlation between per-question metrics (the RAGAS walkthrough's correlation matrix)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

MIN_PAIRS = 3
# The RAGAS walkthrough's metrics, in the order of its correlation matrix.
RAGAS_METRICS = (
    "context_precision",
    "context_recall",
    "faithfulness",
    "answer_relevance",
    "answer_correctness",
)


def correlation_matrix(values: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Pearson correlation of every pair of `metrics` columns over the rows (questions).

    Pairwise complete: each pair uses the rows where both metrics have a value (as
    `DataFrame.corr`); r is NaN with fewer than 3 such rows or when either column is constant
    on them. The diagonal is 1 for a metric with at least 3 values that vary. Columns absent
    from `values` are left out; the result is a square frame indexed by metric.
    """
    present = [m for m in metrics if m in values.columns]
    data = values[present].to_numpy(dtype=float)
    n = len(present)
    matrix = np.full((n, n), np.nan)
    for i in range(n):
        for j in range(i, n):
            both = ~np.isnan(data[:, i]) & ~np.isnan(data[:, j])
            x, y = data[both, i], data[both, j]
            if both.sum() < MIN_PAIRS or x.std() == 0 or y.std() == 0:
                continue
            matrix[i, j] = matrix[j, i] = float(np.corrcoef(x, y)[0, 1])
    return pd.DataFrame(matrix, index=present, columns=present)


def correlations_by_system(
    judgments: pd.DataFrame, metrics: Sequence[str] = RAGAS_METRICS
) -> dict[str, pd.DataFrame]:
    """Per system, `correlation_matrix` of `metrics` over its questions.

    `judgments` is long (`system`, `query_id`, `metric`, `score`); a (system, question, metric)
    judged more than once counts its first score. Systems none of whose rows hold one of
    `metrics` are left out; an empty table gives an empty dict. Systems come sorted.
    """
    if judgments.empty:
        return {}
    wide = judgments.pivot_table(
        index=["system", "query_id"], columns="metric", values="score", aggfunc="first"
    )
    matrices = {}
    for system, rows in wide.groupby(level="system"):
        matrix = correlation_matrix(rows, metrics)
        if not matrix.empty:
            matrices[str(system)] = matrix
    return matrices
