"""The evaluation partitions: dataset version (dynamic) × date (daily, today included).

Dates start at `RAG_EVAL_PARTITIONS_START` (default 2026-11-01): set it to the first day you
want to backfill; an early start only adds empty partitions to every asset page.
"""

import os

from dagster import (
    AssetExecutionContext,
    DailyPartitionsDefinition,
    DynamicPartitionsDefinition,
    MultiPartitionKey,
    MultiPartitionsDefinition,
)

from rag_eval_pipeline.datasets.versions import validate_version_name

DATASET_VERSION = "dataset_version"
DATE = "date"
PARTITIONS_START_DATE = os.environ.get("RAG_EVAL_PARTITIONS_START", "2026-11-01")

dataset_version_partitions = DynamicPartitionsDefinition(name=DATASET_VERSION)
date_partitions = DailyPartitionsDefinition(start_date=PARTITIONS_START_DATE, end_offset=1)
evaluation_partitions = MultiPartitionsDefinition(
    {DATASET_VERSION: dataset_version_partitions, DATE: date_partitions}
)


def evaluation_partition_key(dataset_version: str, date: str) -> MultiPartitionKey:
    """The multi-partition key of one dataset version on one date (`<version>|<date>`)."""
    return MultiPartitionKey({DATASET_VERSION: validate_version_name(dataset_version), DATE: date})


def partition_parts(context: AssetExecutionContext) -> tuple[str, str]:
    """The (dataset version, date) of the partition being materialized."""
    keys = context.partition_key.keys_by_dimension  # type: ignore[attr-defined]
    return validate_version_name(keys[DATASET_VERSION]), keys[DATE]
