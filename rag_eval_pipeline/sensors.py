"""Sensors: register new dataset version folders as partitions and evaluate them right away."""

from datetime import UTC, datetime

from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from rag_eval_pipeline.jobs import evaluation_job
from rag_eval_pipeline.partitions import (
    DATASET_VERSION,
    dataset_version_partitions,
    evaluation_partition_key,
)
from rag_eval_pipeline.resources import DatasetsResource


def today() -> str:
    """Today's date partition key (UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%d")


@sensor(
    job=evaluation_job,
    minimum_interval_seconds=60,
    default_status=DefaultSensorStatus.RUNNING,
    description=(
        "Registers every valid folder under data/datasets/ as a dataset_version partition and "
        "requests today's evaluation for new ones; invalid folders are reported, not registered."
    ),
)
def dataset_version_sensor(
    context: SensorEvaluationContext, datasets: DatasetsResource
) -> SensorResult | SkipReason:
    scan = datasets.scan()
    for name, reason in scan.invalid.items():
        context.log.warning(f"Dataset folder {name!r} not registered: {reason}")
    registered = set(context.instance.get_dynamic_partitions(DATASET_VERSION))
    new_versions = [version for version in scan.valid if version not in registered]
    if not new_versions:
        rejected = "; ".join(f"{name!r}: {reason}" for name, reason in scan.invalid.items())
        return SkipReason(
            "No new dataset versions." + (f" Rejected folders: {rejected}" if rejected else "")
        )
    day = today()
    return SensorResult(
        run_requests=[
            RunRequest(
                run_key=f"{version}|{day}",
                partition_key=evaluation_partition_key(version, day),
                tags={"rag_eval/trigger": "new_dataset_version"},
            )
            for version in new_versions
        ],
        dynamic_partitions_requests=[dataset_version_partitions.build_add_request(new_versions)],
    )
