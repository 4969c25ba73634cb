"""Turning a scorecard into new regression alerts, each raised once."""

from __future__ import annotations

import pandas as pd

from rag_eval_pipeline.evaluation.regression import REGRESSION_COLUMNS, detect_regressions
from rag_eval_pipeline.evaluation.store import Baseline, WarehouseStore


def regressions_for(current: pd.DataFrame, baseline: Baseline | None) -> pd.DataFrame:
    """The regressions of `current` against `baseline` (none without a baseline)."""
    if baseline is None:
        return pd.DataFrame(columns=REGRESSION_COLUMNS)
    return detect_regressions(current, baseline.scorecard, baseline.version, baseline.date)


def new_alerts(store: WarehouseStore, version: str, regressions: pd.DataFrame) -> pd.DataFrame:
    """The regressions not alerted before (de-duplicated on `alert_key` against the record)."""
    history = store.read_alerts(version)
    if history.empty or regressions.empty:
        return regressions
    return regressions[~regressions["alert_key"].isin(set(history["alert_key"]))]
