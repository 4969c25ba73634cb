"""The two dates lined up: one row per quality metric of either scorecard, and per metric the
items both dates scored (paired) or each date's sample (unpaired)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rag_eval_pipeline.evaluation.verdicts.columns import KEY
from rag_eval_pipeline.evaluation.verdicts.partition import is_quality_metric

Key = tuple[str, str, str]
SCORECARD_COLUMNS = [
    *KEY,
    "value",
    "count",
    "error_rate",
    "higher_is_better",
    "regression_threshold",
    "regression_min_change",
    "role",
]
# Columns a metric's rule takes from today's scorecard, else from the baseline's.
RULE_COLUMNS = ("higher_is_better", "regression_threshold", "regression_min_change", "role")


@dataclass(frozen=True)
class PairedItems:
    """One metric's items on both dates: the (baseline, today) values of the items finite on
    both, the counts of items with a value on the baseline only and on today only, and today's
    items with or without a value (declined, failed or errored items have none)."""

    baseline: np.ndarray
    current: np.ndarray
    only_baseline: int
    only_current: int
    asked: int


def scorecard_rows(current: pd.DataFrame, baseline: pd.DataFrame) -> pd.DataFrame:
    """Today's (`_c`) and the baseline's (`_b`) scorecard rows of every quality metric, outer-
    joined on the key, with the metric's rule columns (today's, else the baseline's)."""
    rows = _card(current, "_c").merge(_card(baseline, "_b"), on=KEY, how="outer")
    for column in RULE_COLUMNS:
        if column + "_c" not in rows:
            rows[column + "_c"] = rows.get(column + "_b", np.nan)
        rows[column] = rows[column + "_c"].combine_first(
            rows.get(column + "_b", rows[column + "_c"])
        )
    rows["regression_min_change"] = rows["regression_min_change"].fillna(0.0)
    return rows


def _card(scorecard: pd.DataFrame, suffix: str) -> pd.DataFrame:
    present = [c for c in SCORECARD_COLUMNS if c in scorecard.columns]
    frame = scorecard[present]
    keep = [is_quality_metric(t, m) for t, m in zip(frame["tier"], frame["metric"], strict=True)]
    frame = frame[np.asarray(keep, dtype=bool)]
    return frame.rename(columns={c: c + suffix for c in present if c not in KEY})


def paired_items(current: pd.DataFrame, baseline: pd.DataFrame) -> dict[Key, PairedItems]:
    """Per key: the items of both dates lined up by `item_id` (`PairedItems`)."""
    both = baseline.merge(
        current, on=[*KEY, "item_id"], how="outer", suffixes=("_b", "_c"), indicator=True
    )
    paired = {}
    for key, rows in both.groupby(KEY, sort=False):
        base = rows["value_b"].to_numpy(dtype=float)
        cur = rows["value_c"].to_numpy(dtype=float)
        has_b, has_c = np.isfinite(base), np.isfinite(cur)
        ok = has_b & has_c
        paired[key] = PairedItems(
            base[ok],
            cur[ok],
            int((has_b & ~has_c).sum()),
            int((has_c & ~has_b).sum()),
            int((rows["_merge"] != "left_only").sum()),
        )
    return paired


def unpaired_samples(
    current: pd.DataFrame | None, baseline: pd.DataFrame | None
) -> dict[Key, tuple[np.ndarray, np.ndarray]]:
    """Per key: the finite values of the baseline's sample and of today's (either may be empty)."""
    base, cur, none = _finite_by_key(baseline), _finite_by_key(current), np.empty(0)
    return {key: (base.get(key, none), cur.get(key, none)) for key in base.keys() | cur.keys()}


def _finite_by_key(frame: pd.DataFrame | None) -> dict[Key, np.ndarray]:
    if frame is None:
        return {}
    finite = frame[np.isfinite(frame["value"].to_numpy(dtype=float))]
    return {
        key: rows["value"].to_numpy(dtype=float) for key, rows in finite.groupby(KEY, sort=False)
    }
