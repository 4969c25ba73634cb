"""Alerted rows of `metric_regressions` not raised before (each alert is raised once)."""

from __future__ import annotations

import pandas as pd

from rag_eval_pipeline.storage.warehouse import WarehouseStore


def new_alerts(store: WarehouseStore, version: str, regressions: pd.DataFrame) -> pd.DataFrame:
    """The regressions not alerted before (de-duplicated on `alert_key` against the record)."""
    history = store.read_alerts(version)
    if history.empty or regressions.empty:
        return regressions
    return regressions[~regressions["alert_key"].isin(set(history["alert_key"]))]
