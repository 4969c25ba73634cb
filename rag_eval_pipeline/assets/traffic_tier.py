"""The traffic tier: production interactions of the partition's date, from `logs.*`.

The date partition holds the interactions logged on that date in the schedule's timezone
(`RAG_EVAL_SCHEDULE_TIMEZONE`), so a version whose logs span many days feeds many partitions
and a backfill over those dates builds the day-by-day history.
"""

from datetime import date

import pandas as pd
from dagster import AssetExecutionContext, Config, MetadataValue, asset

from rag_eval_pipeline.assets.dataset import as_dataset
from rag_eval_pipeline.assets.skipping import skipped
from rag_eval_pipeline.evaluation.summaries import empty_quality
from rag_eval_pipeline.evaluation.traffic import (
    TRAFFIC_ITEM_COLUMNS,
    day_interactions,
    has_traffic,
    traffic_item_values,
    traffic_items,
    traffic_quality_rows,
    traffic_values,
)
from rag_eval_pipeline.metadata import summary_metadata
from rag_eval_pipeline.partitions import evaluation_partitions, partition_parts
from rag_eval_pipeline.schedules import SCHEDULE_TIMEZONE

PLOTTED_METRICS = (
    "volume",
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "error_rate",
    "avg_cost_usd",
    "total_cost_usd",
    "avg_satisfaction",
)

NO_TRAFFIC = "this version has no logs.* with a timestamp column"


class TrafficConfig(Config):
    """The timezone whose calendar day a partition's date is (default: the schedule's)."""

    timezone: str = SCHEDULE_TIMEZONE


@asset(
    partitions_def=evaluation_partitions,
    group_name="6_traffic",
    kinds={"pandas", "parquet"},
    description=(
        "One row per (production interaction of the day, metric): latency (total, retrieval, "
        "generation), error, cost in USD, satisfaction and positive feedback, from `logs.*`."
    ),
)
def traffic_metrics(
    context: AssetExecutionContext,
    config: TrafficConfig,
    golden_dataset: dict[str, pd.DataFrame],
) -> pd.DataFrame:
    dataset = as_dataset(context, golden_dataset)
    if not has_traffic(dataset.logs):
        return skipped(context, NO_TRAFFIC, pd.DataFrame(columns=TRAFFIC_ITEM_COLUMNS))
    _, day = partition_parts(context)
    interactions = day_interactions(dataset.logs, date.fromisoformat(day), config.timezone)
    items = traffic_items(traffic_item_values(interactions))
    context.add_output_metadata(
        {
            "volume": MetadataValue.int(len(interactions)),
            "timezone": MetadataValue.text(config.timezone),
            "n_rows": MetadataValue.int(len(items)),
        }
    )
    return items


@asset(
    partitions_def=evaluation_partitions,
    group_name="6_traffic",
    kinds={"pandas", "parquet"},
    description=(
        "The day's production traffic: volume, latency p50/p95/p99, error rate, cost per "
        "query and total, user satisfaction and positive-feedback rate."
    ),
)
def traffic_quality(
    context: AssetExecutionContext,
    golden_dataset: dict[str, pd.DataFrame],
    traffic_metrics: pd.DataFrame,
) -> pd.DataFrame:
    if not has_traffic(as_dataset(context, golden_dataset).logs):
        return skipped(context, NO_TRAFFIC, empty_quality())
    quality = traffic_quality_rows(traffic_values(traffic_metrics))
    context.add_output_metadata(summary_metadata(quality, PLOTTED_METRICS))
    return quality
