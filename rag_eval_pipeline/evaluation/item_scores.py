"""Per-item scores in one long layout, so two partitions can be compared item by item.

The layout is `tier, system, metric, item_id, value`: one row per scored item (a query, a
judge label, a session, an interaction, ...) of one metric of one system, `metric` named exactly
as in the scorecard (e.g. `avg_faithfulness` for the judgments' `faithfulness`), `value` NaN for
an error row. Two registries convert per-item assets to it:

- `ITEM_SOURCES`: items both dates score (the dataset's questions), compared **paired**;
- `SAMPLE_SOURCES`: samples of each date compared **unpaired** (two-sample tests): the system
  under test's per-question total latency, under Tier 3's latency percentiles (the same
  questions on both dates make the samples positively correlated, which only makes the
  unpaired test conservative); and the traffic tier, whose items (the day's interactions,
  and the judged sample of them) differ from one day to the next. Its interaction metrics
  become the scorecard's means
  (`error` → `error_rate`, `cost_usd` → `avg_cost_usd`, `satisfaction` → `avg_satisfaction`,
  `positive_feedback` → `positive_feedback_rate`), its latencies the latency percentiles
  (`latency_ms` → `latency_p50_ms`, `_p95_ms`, `_p99_ms`, and the same for retrieval and
  generation), and its judgments the `avg_*` judge metrics.

The `metric_regressions` asset reads every asset named in either, today's as inputs and the
baseline's from the warehouse. To let a new tier's metrics be tested per item, write its
per-item table as an asset, add `"<asset name>": <function turning it into this layout>` to the
registry that fits, and add the asset as an input of `metric_regressions`
(`rag_eval_pipeline/defs/scorecard/regressions.py`). Metrics without per-item values (traffic
volume and total cost, the judge's latency among them) are judged by the effect rule alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pandas as pd

from rag_eval_pipeline.evaluation.summaries import scorecard_metric
from rag_eval_pipeline.evaluation.traffic import MEAN_METRICS, TRAFFIC_TIER
from rag_eval_pipeline.metrics.retrieval import DEFAULT_RETRIEVAL_METRICS
from rag_eval_pipeline.metrics.traffic import (
    LATENCY_COLUMNS,
    LATENCY_PERCENTILES,
    latency_metric,
)

ITEM_COLUMNS = ["tier", "system", "metric", "item_id", "value"]
E2E_TIER = "tier3_e2e"


def empty_items() -> pd.DataFrame:
    """An item table with no rows."""
    return pd.DataFrame(columns=ITEM_COLUMNS)


def wide_items(
    frame: pd.DataFrame, tier: str, metrics: Sequence[str], item_column: str = "query_id"
) -> pd.DataFrame:
    """Wide per-item metric columns (`system, <item_column>, <metric>...`) in the long layout."""
    present = [m for m in metrics if m in frame.columns]
    if frame.empty or not present:
        return empty_items()
    long = frame.melt(
        id_vars=["system", item_column], value_vars=present, var_name="metric", value_name="value"
    ).rename(columns={item_column: "item_id"})
    return long.assign(tier=tier, item_id=long["item_id"].astype(str))[ITEM_COLUMNS]


def judgment_items(judgments: pd.DataFrame, tier: str, prefix: str = "avg_") -> pd.DataFrame:
    """Long judgments (`system, query_id, metric, score, error`) in the item layout.

    Metric names are the scorecard's (`summaries.scorecard_metric`); error rows keep their NaN
    score (missing on that side of a pair, never a zero).
    """
    if judgments.empty:
        return empty_items()
    return _items(
        tier,
        judgments["system"],
        scorecard_metric(judgments["metric"], prefix),
        judgments["query_id"],
        judgments["score"],
    )


def traffic_samples(metrics: pd.DataFrame) -> pd.DataFrame:
    """`traffic_metrics` (`system, log_id, timestamp, metric, value`) in the item layout: each
    interaction value under the scorecard metric it makes, its mean (`MEAN_METRICS`) or one of
    its latency percentiles (the day's latencies, once per percentile)."""
    renames = list(MEAN_METRICS.items()) + [
        (column, latency_metric(prefix, q))
        for column, prefix in LATENCY_COLUMNS.items()
        for q in LATENCY_PERCENTILES
    ]
    frames = []
    for column, metric in renames:
        kept = metrics[metrics["metric"] == column]
        frames.append(_items(TRAFFIC_TIER, kept["system"], metric, kept["log_id"], kept["value"]))
    return pd.concat(frames, ignore_index=True)


def e2e_latency_samples(generations: pd.DataFrame) -> pd.DataFrame:
    """`e2e_generations`' per-question `total_latency_ms` of each system in the item layout,
    under each of Tier 3's latency percentiles (`latency_p50_ms`, `_p95_ms`, `_p99_ms`)."""
    if generations.empty or "total_latency_ms" not in generations.columns:
        return empty_items()
    frames = [
        _items(
            E2E_TIER,
            generations["system"],
            latency_metric("latency", q),
            generations["query_id"],
            generations["total_latency_ms"],
        )
        for q in LATENCY_PERCENTILES
    ]
    return pd.concat(frames, ignore_index=True)


def _items(
    tier: str, system: pd.Series, metric: str | pd.Series, item_id: pd.Series, value: pd.Series
) -> pd.DataFrame:
    """Aligned columns in the item layout (ids as strings, values as floats)."""
    return pd.DataFrame(
        {
            "tier": tier,
            "system": system.astype(str),
            "metric": metric,
            "item_id": item_id.astype(str),
            "value": value.astype(float),
        }
    )[ITEM_COLUMNS]


Sources = dict[str, Callable[[pd.DataFrame], pd.DataFrame]]

ITEM_SOURCES: Sources = {
    "retrieval_metrics": lambda f: wide_items(f, "tier1_retrieval", DEFAULT_RETRIEVAL_METRICS),
    "system_retrieval_metrics": lambda f: wide_items(
        f, "tier1_retrieval", DEFAULT_RETRIEVAL_METRICS
    ),
    "generation_judgments": lambda f: judgment_items(f, "tier2_generation"),
    "e2e_judgments": lambda f: judgment_items(f, E2E_TIER),
}
SAMPLE_SOURCES: Sources = {
    "e2e_generations": e2e_latency_samples,
    "traffic_metrics": traffic_samples,
    "traffic_judgments": lambda f: judgment_items(f, TRAFFIC_TIER),
}


def item_scores(
    tables: dict[str, pd.DataFrame | None], sources: Sources = ITEM_SOURCES
) -> pd.DataFrame:
    """Every per-item table of `sources` found in `tables` (asset name → table or None)."""
    frames = [
        sources[name](table)
        for name, table in tables.items()
        if name in sources and table is not None and not table.empty
    ]
    frames = [frame for frame in frames if not frame.empty]
    return pd.concat(frames, ignore_index=True) if frames else empty_items()


def item_sources(tables: dict[str, pd.DataFrame | None]) -> pd.DataFrame:
    """`tier, system, metric, asset`: the asset of `tables` (either registry) that holds each
    metric's per-item rows, so a reader is sent where the rows are."""
    frames = [
        registry[name](table)[["tier", "system", "metric"]].drop_duplicates().assign(asset=name)
        for registry in (ITEM_SOURCES, SAMPLE_SOURCES)
        for name, table in tables.items()
        if name in registry and table is not None and not table.empty
    ]
    frames = [frame for frame in frames if not frame.empty]
    if not frames:
        return pd.DataFrame(columns=["tier", "system", "metric", "asset"])
    return pd.concat(frames, ignore_index=True).drop_duplicates(["tier", "system", "metric"])
