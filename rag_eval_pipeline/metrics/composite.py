"""A composite quality score: a weighted combination of per-question metrics."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd


def composite_score(values: pd.DataFrame, weights: Mapping[str, float]) -> np.ndarray:
    """Per row, ``Σ_m w_m · values[m] / Σ_m w_m`` over the metrics `m` of `weights`.

    The weights are normalized to sum to 1, so metrics on [0, 1] give a score on [0, 1]
    (the source material's example 0.4 · relevance + 0.4 · faithfulness + 0.2 · semantic
    similarity already sums to 1). A row missing any weighted metric (NaN, or the column is
    absent) is NaN: a partial sum would not be comparable with complete ones. Weights must be
    non-negative with a positive sum (ValueError otherwise).
    """
    if not weights:
        raise ValueError("composite weights: need at least one metric")
    w = np.array([float(v) for v in weights.values()])
    if (w < 0).any() or not np.isfinite(w).all() or w.sum() <= 0:
        raise ValueError(f"composite weights must be non-negative with a positive sum: {weights}")
    columns = [
        values[m].to_numpy(dtype=float) if m in values.columns else np.full(len(values), np.nan)
        for m in weights
    ]
    matrix = np.column_stack(columns) if columns else np.empty((len(values), 0))
    return matrix @ (w / w.sum())
