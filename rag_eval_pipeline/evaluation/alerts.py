"""Alerted rows of `metric_regressions` not raised before (each alert is delivered once).

An alert recorded with `delivered == False` (the webhook failed after its retries) is not
settled: it is raised again on a later sensor tick until a delivery succeeds. Delivered alerts
and alerts raised without a webhook (`delivered` null) are never raised again.
"""

from __future__ import annotations

import pandas as pd

from rag_eval_pipeline.storage.warehouse import WarehouseStore


def _settled(history: pd.DataFrame) -> pd.DataFrame:
    """The recorded alerts that are never raised again: delivered, or raised without a webhook."""
    if "delivered" not in history.columns:
        return history
    failed = history["delivered"].eq(False).fillna(False).to_numpy(dtype=bool)
    return history[~failed]


def new_alerts(store: WarehouseStore, version: str, regressions: pd.DataFrame) -> pd.DataFrame:
    """The regressions not settled before (de-duplicated on `alert_key` against the record's
    delivered or webhook-less alerts; an undelivered one is returned again)."""
    history = store.read_alerts(version)
    if history.empty or regressions.empty:
        return regressions
    return regressions[~regressions["alert_key"].isin(set(_settled(history)["alert_key"]))]


def undelivered_partitions(store: WarehouseStore) -> list[tuple[str, str]]:
    """`(dataset_version, date)` of the partitions holding an alert whose webhook delivery
    failed and that no later delivery settled, oldest first."""
    history = store.read_alerts()
    if history.empty or "delivered" not in history.columns:
        return []
    settled = set(_settled(history)["alert_key"])
    failed = history[~history["alert_key"].isin(settled)]
    pairs = failed[["dataset_version", "date"]].drop_duplicates()
    return [(str(v), str(d)) for v, d in pairs.itertuples(index=False)]
