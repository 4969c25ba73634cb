"""Alerted rows of `metric_regressions`: not raised before (each alert is delivered once), and
the history of every stored partition's alerts with what the sensor did with them.

An alert recorded with `delivered == False` (the webhook failed after its retries) is not
settled: it is raised again on a later sensor tick until a delivery succeeds. Delivered alerts
and alerts raised without a webhook (`delivered` null) are never raised again.
"""

from __future__ import annotations

import pandas as pd

from rag_eval_pipeline.evaluation.headline import change_kinds
from rag_eval_pipeline.storage.warehouse import REGRESSIONS_ASSET, WarehouseStore

DELIVERED, FAILED, LOGGED, NOT_SENT = (
    "delivered",
    "delivery failed",
    "logged (no webhook)",
    "not sent yet (the alert sensor has not run)",
)


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


def delivery_status(alerted: pd.DataFrame, history: pd.DataFrame) -> pd.Series:
    """Per alerted row, what the alert sensor did with it, from its latest record (`history`):
    `delivered`, `delivery failed`, `logged (no webhook)`, or `not sent yet` when the sensor
    has not recorded it."""
    status = pd.Series(NOT_SENT, index=alerted.index, dtype=object)
    if history.empty or alerted.empty:
        return status
    latest = history.drop_duplicates("alert_key", keep="last").set_index("alert_key")
    delivered = latest.get("delivered", pd.Series(None, index=latest.index, dtype=object))
    words = delivered.map(
        lambda d: LOGGED if d is None or pd.isna(d) else DELIVERED if d else FAILED
    )
    found = alerted["alert_key"].map(words)
    return found.fillna(status)


def alert_history(store: WarehouseStore, version: str | None = None) -> pd.DataFrame:
    """The alerted rows of every stored `metric_regressions` partition (of `version`, or all),
    oldest first, with their `kind` (`evaluation.headline`: regression or outage) and the
    alert sensor's `status` (`delivery_status`): the verdicts' alerts whether or not the
    sensor has run."""
    versions = [version] if version else store.partition_versions(REGRESSIONS_ASSET)
    frames = []
    for name in versions:
        for day in store.partition_dates(REGRESSIONS_ASSET, name):
            rows = store.read_partition(REGRESSIONS_ASSET, name, day)
            if rows is not None and len(rows) and "alert" in rows.columns:
                alerted = rows[rows["alert"].astype(bool)]
                frames.append(alerted.assign(kind=change_kinds(alerted)))
    if not frames:
        return pd.DataFrame()
    alerted = pd.concat(frames, ignore_index=True).sort_values(["date", "dataset_version"])
    return alerted.assign(status=delivery_status(alerted, store.read_alerts(version)))
