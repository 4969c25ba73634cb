"""The traffic tier in library form: one day of production interactions from `logs.*`.

A date partition holds the interactions whose `timestamp` falls on that date in the schedule's
timezone. Per interaction (long table, pairable day over day by metric):
`latency_ms` (total), `retrieval_latency_ms`, `generation_latency_ms`, `error` (1 when the
optional `error` column holds a message), `cost_usd` (the logged cost, else token counts priced
through litellm), `satisfaction` (0–1) and `positive_feedback` (0/1) from `feedback`.
Per day (quality rows): volume, latency p50/p95/p99, error rate, cost per query and in total,
mean satisfaction and the positive-feedback rate.
"""

from __future__ import annotations

from datetime import date

import numpy as np
import pandas as pd

from rag_eval_pipeline.evaluation.summaries import QUALITY_COLUMNS, single_values, summarize_wide
from rag_eval_pipeline.metrics.stats import percentiles
from rag_eval_pipeline.metrics.traffic import on_date, positive_feedback, token_costs

TRAFFIC_TIER = "traffic"
TRAFFIC_SYSTEM = "production"
TRAFFIC_ITEM_COLUMNS = ["system", "log_id", "timestamp", "metric", "value"]
LATENCY_COLUMNS = {
    "latency_ms": "latency",
    "retrieval_latency_ms": "retrieval_latency",
    "generation_latency_ms": "generation_latency",
}
MEAN_METRICS = {
    "error": "error_rate",
    "cost_usd": "avg_cost_usd",
    "satisfaction": "avg_satisfaction",
    "positive_feedback": "positive_feedback_rate",
}


def has_traffic(logs: pd.DataFrame | None) -> bool:
    """The version logs production traffic with timestamps (the traffic tier applies)."""
    return logs is not None and "timestamp" in logs.columns


def day_interactions(logs: pd.DataFrame | None, day: date, timezone: str) -> pd.DataFrame:
    """The log rows whose `timestamp` is on `day` in `timezone`, in time order, with a
    `log_id` (the row number when the file has none). Rows without a timestamp are on no day."""
    if logs is None or "timestamp" not in logs.columns:
        return pd.DataFrame(columns=["log_id", "timestamp"])
    logs = logs.reset_index(drop=True)
    if "log_id" not in logs.columns:
        logs = logs.assign(log_id=logs.index.astype(str))
    selected = logs[on_date(logs["timestamp"], day, timezone)]
    return selected.sort_values(["timestamp", "log_id"], kind="stable").reset_index(drop=True)


def interaction_costs(interactions: pd.DataFrame) -> np.ndarray:
    """Cost in USD per interaction: `cost_usd` where logged, else `model` + `prompt_tokens` +
    `completion_tokens` priced by :func:`token_costs`, else NaN."""
    cost = np.full(len(interactions), np.nan)
    if "cost_usd" in interactions.columns:
        cost = interactions["cost_usd"].to_numpy(dtype=float, na_value=np.nan)
    token_columns = {"model", "prompt_tokens", "completion_tokens"}
    if token_columns <= set(interactions.columns):
        priced = token_costs(
            interactions["model"].tolist(),
            interactions["prompt_tokens"].to_numpy(dtype=float, na_value=np.nan),
            interactions["completion_tokens"].to_numpy(dtype=float, na_value=np.nan),
        )
        cost = np.where(np.isnan(cost), priced, cost)
    return cost


def traffic_item_values(interactions: pd.DataFrame) -> pd.DataFrame:
    """Wide per-interaction values: `log_id`, `timestamp`, `volume` (1 per interaction) and
    one column per metric the logs carry."""
    values = pd.DataFrame(
        {
            "log_id": interactions["log_id"],
            "timestamp": interactions["timestamp"],
            "volume": np.ones(len(interactions)),
        }
    )
    for column in LATENCY_COLUMNS:
        if column in interactions.columns:
            values[column] = interactions[column].to_numpy(dtype=float, na_value=np.nan)
    if "error" in interactions.columns:
        values["error"] = interactions["error"].notna().to_numpy(dtype=float)
    cost = interaction_costs(interactions)
    if not np.isnan(cost).all():
        values["cost_usd"] = cost
    if "feedback" in interactions.columns:
        satisfaction = interactions["feedback"].to_numpy(dtype=float, na_value=np.nan)
        values["satisfaction"] = satisfaction
        values["positive_feedback"] = positive_feedback(satisfaction)
    return values


def traffic_items(values: pd.DataFrame) -> pd.DataFrame:
    """Long per-interaction table (`system, log_id, timestamp, metric, value`), NaN dropped."""
    metrics = [c for c in values.columns if c not in ("log_id", "timestamp")]
    long = values.melt(
        id_vars=["log_id", "timestamp"], value_vars=metrics, var_name="metric"
    ).dropna(subset=["value"])
    return long.assign(system=TRAFFIC_SYSTEM)[TRAFFIC_ITEM_COLUMNS].reset_index(drop=True)


def traffic_values(items: pd.DataFrame) -> pd.DataFrame:
    """The wide per-interaction values back from the long table of :func:`traffic_items`."""
    if items.empty:
        return pd.DataFrame(columns=["log_id", "volume"])
    wide = items.pivot_table(
        index="log_id", columns="metric", values="value", aggfunc="first", dropna=False
    )
    return wide.reset_index().rename_axis(columns=None)


def traffic_quality_rows(values: pd.DataFrame) -> pd.DataFrame:
    """The day's quality rows: `volume`; `<latency>_p50_ms`/`_p95_ms`/`_p99_ms` (numpy linear
    percentiles over the interactions that logged it); `error_rate`, `avg_cost_usd`,
    `avg_satisfaction`, `positive_feedback_rate` (means with bootstrap CIs, over the
    interactions that have the value); `total_cost_usd` (sum of known costs)."""
    volume = len(values)
    rows = [single_values({"volume": float(volume)}, TRAFFIC_TIER, TRAFFIC_SYSTEM, volume)]
    for column, prefix in LATENCY_COLUMNS.items():
        if column in values.columns and values[column].notna().any():
            latency = percentiles(values[column].to_numpy(dtype=float))
            rows.append(
                single_values(
                    {f"{prefix}_{name}_ms": value for name, value in latency.items()},
                    TRAFFIC_TIER,
                    TRAFFIC_SYSTEM,
                    count=int(values[column].notna().sum()),
                )
            )
    means = [c for c in MEAN_METRICS if c in values.columns]
    if means and volume:
        summary = summarize_wide(values.assign(system=TRAFFIC_SYSTEM), means, TRAFFIC_TIER)
        rows.append(summary.assign(metric=summary["metric"].map(MEAN_METRICS)))
    if "cost_usd" in values.columns:
        known = values["cost_usd"].dropna()
        rows.append(
            single_values(
                {"total_cost_usd": float(known.sum())}, TRAFFIC_TIER, TRAFFIC_SYSTEM, len(known)
            )
        )
    return pd.concat(rows, ignore_index=True)[QUALITY_COLUMNS]
