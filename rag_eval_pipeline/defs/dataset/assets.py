"""The `golden_dataset` asset: one dataset version's validated tables, snapshotted per date."""

from datetime import date
from typing import Any

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue

from rag_eval_pipeline.datasets.golden import GoldenDataset
from rag_eval_pipeline.defs.dataset import asset
from rag_eval_pipeline.defs.dataset.schedules import SCHEDULE_TIMEZONE
from rag_eval_pipeline.defs.shared.metadata import markdown_table, text_metadata
from rag_eval_pipeline.defs.shared.partitions import partition_parts
from rag_eval_pipeline.defs.shared.resources import DatasetsResource

DatasetTables = dict[str, Any]
"""The `golden_dataset` asset's value: table name → DataFrame, or `TableBatches` (runs)."""


@asset(
    description=(
        "The dataset version's corpus, queries, qrels, runs, logs and judge labels, validated "
        "(file, row and column named on any error) and frozen for the date."
    ),
)
def golden_dataset(context: AssetExecutionContext, datasets: DatasetsResource) -> DatasetTables:
    version, day = partition_parts(context)
    dataset = datasets.load(version)
    stats = dataset.statistics()
    manifest = dataset.manifest
    origin = datasets.logs_origin(version)
    context.add_output_metadata(
        {
            **({"logs_from": text_metadata(origin)} if origin else {}),
            **{name: MetadataValue.int(value) for name, value in stats.items()},
            "relevance_level": MetadataValue.int(manifest.relevance_level),
            "system": text_metadata(manifest.system or "from RAG_EVAL_SYSTEM"),
            "language": text_metadata(manifest.language or "unspecified"),
            "tables": MetadataValue.md(
                markdown_table(pd.DataFrame({"table": list(stats), "rows": list(stats.values())}))
            ),
        }
    )
    return dataset.stored_tables(date.fromisoformat(day))


def as_dataset(context: AssetExecutionContext, tables: DatasetTables) -> GoldenDataset:
    """The `GoldenDataset` of the partition being materialized, from the stored tables (staged
    logs: those of the partition's date in the schedule's timezone, and the undated ones)."""
    version, day = partition_parts(context)
    return GoldenDataset.from_tables(version, tables, date.fromisoformat(day), SCHEDULE_TIMEZONE)
