"""Regression detection: each scorecard metric against its baseline, direction-aware.

A metric regresses when both hold:
1. its change in the bad direction exceeds the metric's tolerance: higher-is-better metrics
   dropped by more than `regression_threshold × |baseline|` (5% by default), lower-is-better
   ones rose by more than that, and by more than `regression_min_change` in absolute terms (0 by
   default; e.g. 100 ms for latencies, so timer noise on fast components is not an alert); and
2. the baseline value lies outside the current 95% bootstrap CI — a change the sampling noise of
   this evaluation can explain is not reported. Metrics without a CI (single numbers such as the
   silhouette or a latency percentile) are judged by rule 1 alone.
Dataset statistics (tier `dataset`) are never regressions.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

KEY = ["tier", "system", "metric"]
REGRESSION_COLUMNS = [
    "alert_key",
    "dataset_version",
    "date",
    "baseline_version",
    "baseline_date",
    "tier",
    "system",
    "metric",
    "baseline_value",
    "value",
    "relative_change",
    "threshold",
    "ci_low",
    "ci_high",
    "higher_is_better",
]


def detect_regressions(
    current: pd.DataFrame, baseline: pd.DataFrame, baseline_version: str, baseline_date: str
) -> pd.DataFrame:
    """The regressions of `current` (a scorecard) against `baseline` (an earlier scorecard)."""
    merged = current[current["tier"] != "dataset"].merge(
        baseline[[*KEY, "value"]].rename(columns={"value": "baseline_value"}), on=KEY, how="inner"
    )
    merged = merged[merged["value"].notna() & merged["baseline_value"].notna()]
    if merged.empty:
        return pd.DataFrame(columns=REGRESSION_COLUMNS)
    value = merged["value"].to_numpy(dtype=float)
    base = merged["baseline_value"].to_numpy(dtype=float)
    higher = merged["higher_is_better"].to_numpy(dtype=bool)
    threshold = merged["regression_threshold"].to_numpy(dtype=float)
    worsening = np.where(higher, base - value, value - base)
    floor = merged.get("regression_min_change", pd.Series(0.0, index=merged.index))
    allowed = np.maximum(threshold * np.abs(base), floor.fillna(0.0).to_numpy(float))
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(
            base != 0, (value - base) / np.abs(base), np.sign(value - base) * np.inf
        )
    low = merged["ci_low"].to_numpy(dtype=float)
    high = merged["ci_high"].to_numpy(dtype=float)
    has_ci = ~np.isnan(low) & ~np.isnan(high)
    outside_ci = ~has_ci | (base < low) | (base > high)
    regressed = (worsening > allowed) & (worsening > 0) & outside_ci
    found = merged[regressed].assign(
        relative_change=relative[regressed],
        threshold=threshold[regressed],
        baseline_version=baseline_version,
        baseline_date=baseline_date,
    )
    found["alert_key"] = (
        found["dataset_version"]
        + "|"
        + found["date"]
        + "|"
        + found["tier"]
        + "|"
        + found["system"]
        + "|"
        + found["metric"]
    )
    return found[REGRESSION_COLUMNS].reset_index(drop=True)
