"""The `evaluation_scorecard` asset: one row per (system, tier, metric) for the partition."""

import pandas as pd
from dagster import AssetExecutionContext, AssetIn, MetadataValue, asset

from rag_eval_pipeline.assets.dataset import as_dataset
from rag_eval_pipeline.metadata import markdown_table
from rag_eval_pipeline.partitions import evaluation_partitions, partition_parts

SCORECARD_COLUMNS = [
    "dataset_version",
    "date",
    "system",
    "tier",
    "metric",
    "value",
    "std",
    "count",
    "ci_low",
    "ci_high",
]


def dataset_rows(tables: dict[str, pd.DataFrame], context: AssetExecutionContext) -> pd.DataFrame:
    """Dataset statistics as scorecard rows (tier `dataset`)."""
    stats = as_dataset(context, tables).statistics()
    return pd.DataFrame(
        {
            "system": "dataset",
            "tier": "dataset",
            "metric": list(stats),
            "value": [float(v) for v in stats.values()],
            "count": 1,
        }
    )


@asset(
    partitions_def=evaluation_partitions,
    group_name="scorecard",
    kinds={"pandas", "parquet"},
    ins={"golden_dataset": AssetIn()},
    description="All tiers' headline metrics for the partition, one row per system/tier/metric.",
)
def evaluation_scorecard(
    context: AssetExecutionContext, golden_dataset: dict[str, pd.DataFrame]
) -> pd.DataFrame:
    version, day = partition_parts(context)
    rows = dataset_rows(golden_dataset, context)
    scorecard = rows.assign(dataset_version=version, date=day).reindex(columns=SCORECARD_COLUMNS)
    context.add_output_metadata(
        {"n_metrics": len(scorecard), "scorecard": MetadataValue.md(markdown_table(scorecard))}
    )
    return scorecard
