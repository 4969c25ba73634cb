"""The columns of a verdict table and each row's alert identity."""

from __future__ import annotations

import pandas as pd

from rag_eval_pipeline.evaluation.verdicts.model_roles import IDENTITY_ROLES

KEY = ["tier", "system", "metric"]
# Which comparison a row belongs to, and what changed: shared by both rules' tables.
COMPARISON_IDS = ["alert_key", "dataset_version", "date", "baseline_version", "baseline_date"]
CHANGE_COLUMNS = [*KEY, "baseline_value", "value", "relative_change"]
REGRESSION_COLUMNS = [
    *COMPARISON_IDS,
    *CHANGE_COLUMNS,
    "threshold",
    "ci_low",
    "ci_high",
    "higher_is_better",
]
METRIC_REGRESSION_COLUMNS = [
    *COMPARISON_IDS,
    *CHANGE_COLUMNS,
    "role",
    "threshold",
    "higher_is_better",
    "n_items",
    "n_paired",
    "n_only_baseline",
    "n_only_current",
    "n_worse",
    "n_better",
    "test",
    "p_value",
    "q_value",
    "bar",
    "detectable_change",
    "noise",
    "items_needed",
    "items_needed_basis",
    "items_to_detect",
    "verdict",
    "reason",
    "alert",
    *IDENTITY_ROLES,
]


def alert_keys(frame: pd.DataFrame) -> pd.Series:
    """Each row's alert identity, `dataset_version|date|tier|system|metric`."""
    keys = frame["dataset_version"]
    for column in ("date", "tier", "system", "metric"):
        keys = keys + "|" + frame[column]
    return keys
