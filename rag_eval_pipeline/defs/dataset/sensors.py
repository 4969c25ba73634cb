"""The dataset-version sensor: registers every valid version folder and evaluates new ones."""

import json
from datetime import UTC, datetime

from dagster import (
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from rag_eval_pipeline.defs.runs.jobs import evaluation_job
from rag_eval_pipeline.defs.shared.partitions import (
    DATASET_VERSION,
    dataset_version_partitions,
    evaluation_partition_key,
)
from rag_eval_pipeline.defs.shared.resources import DatasetsResource
from rag_eval_pipeline.text.escaping import terminal_text


def today() -> str:
    """Today's date partition key (UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%d")


@sensor(
    job=evaluation_job,
    minimum_interval_seconds=60,
    default_status=DefaultSensorStatus.RUNNING,
    description=(
        "Validates every new folder of the datasets location (RAG_EVAL_DATASETS: data/datasets/ "
        "or an s3:// prefix; all its tables, by the rule `rag-eval validate` applies), registers "
        "the valid ones as dataset_version partitions and "
        "requests today's evaluation for them; invalid folders are reported in the skip reason "
        "and log (once per folder state), not registered, and validated again only once their "
        "files change."
    ),
)
def dataset_version_sensor(
    context: SensorEvaluationContext, datasets: DatasetsResource
) -> SensorResult | SkipReason:
    registered = set(context.instance.get_dynamic_partitions(DATASET_VERSION))
    rejected_before: dict[str, list[str]] = json.loads(context.cursor) if context.cursor else {}
    verdicts = datasets.scan(skip=registered).verdicts
    rejected = {
        name: [verdict.signature, verdict.problem]
        for name, verdict in verdicts.items()
        if verdict.problem is not None
    }
    new_versions = [name for name, verdict in verdicts.items() if verdict.valid]
    context.update_cursor(json.dumps(rejected, sort_keys=True))
    for name, (signature, reason) in rejected.items():
        if rejected_before.get(name) != [signature, reason]:  # logged once per folder state
            context.log.warning(terminal_text(f"Dataset folder {name!r} not registered: {reason}"))
    if not new_versions:
        reasons = "; ".join(f"{name!r}: {reason}" for name, (_, reason) in rejected.items())
        return SkipReason(
            "No new dataset versions." + (f" Rejected folders: {reasons}" if reasons else "")
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
