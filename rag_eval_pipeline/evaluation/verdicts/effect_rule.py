"""The previous, unpaired regression rule, kept so `benchmarks/regression_power.py` can
measure the rules side by side: a relative drop beyond the tolerance and the baseline outside
today's bootstrap CI."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rag_eval_pipeline.evaluation.verdicts.columns import KEY, REGRESSION_COLUMNS, alert_keys


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
    found["alert_key"] = alert_keys(found)
    return found[REGRESSION_COLUMNS].reset_index(drop=True)
