"""Correlation between per-question metrics (the RAGAS walkthrough's correlation matrix)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

MIN_PAIRS = 3


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
