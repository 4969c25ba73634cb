"""The daily schedule: one evaluation run per registered dataset version for the new date.

Each registered version is validated again at tick time (a folder can break after it was
registered) by the rule every command applies (`datasets.validity`, which reads a folder again
only when its files changed); invalid ones get no run, and the tick says why instead of a run
failing nightly. A partition that is already up to date (`up_to_date.evaluation_freshness`, the
rule `rag-eval run` applies; e.g. run by hand earlier that day) gets no run either; each run
carries the fingerprint of its inputs, recorded on its materializations."""

import os

from dagster import (
    DefaultScheduleStatus,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    schedule,
)

from rag_eval_pipeline.defs.runs.jobs import evaluation_job
from rag_eval_pipeline.defs.runs.up_to_date import (
    evaluation_assets,
    evaluation_freshness,
    fingerprint_tags,
)
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.defs.shared.resources import DatasetsResource
from rag_eval_pipeline.text.escaping import terminal_text

DAILY_CRON = os.environ.get("RAG_EVAL_SCHEDULE_CRON", "0 2 * * *")
SCHEDULE_TIMEZONE = os.environ.get("RAG_EVAL_SCHEDULE_TIMEZONE", "UTC")
INVALID_VERSIONS_TAG = "rag_eval/invalid_versions"
MAX_TAG_CHARS = 2000


@schedule(
    job=evaluation_job,
    cron_schedule=DAILY_CRON,
    execution_timezone=SCHEDULE_TIMEZONE,
    default_status=DefaultScheduleStatus.RUNNING,
    description=(
        "Every day (02:00 by default), evaluate every registered dataset version whose folder "
        "still validates; invalid versions are skipped and reported in the tick."
    ),
)
def daily_evaluation_schedule(
    context: ScheduleEvaluationContext, datasets: DatasetsResource
) -> list[RunRequest] | SkipReason:
    versions = sorted(context.instance.get_dynamic_partitions(DATASET_VERSION))
    if not versions:
        return SkipReason("No dataset versions registered yet (see dataset_version_sensor).")
    invalid = datasets.verdicts(versions).invalid
    reasons = "; ".join(f"{version!r}: {problem}" for version, problem in invalid.items())
    valid = [version for version in versions if version not in invalid]
    if not valid:
        return SkipReason(f"No registered dataset version validates. Invalid versions: {reasons}")
    for version, problem in invalid.items():
        context.log.warning(
            terminal_text(f"Dataset version {version!r} skipped (invalid): {problem}")
        )
    day = context.scheduled_execution_time.strftime("%Y-%m-%d")
    tags = {"rag_eval/trigger": "daily_schedule"}
    if invalid:
        tags[INVALID_VERSIONS_TAG] = reasons[:MAX_TAG_CHARS]
    assets = evaluation_assets()
    fingerprints = {
        version: fingerprint_tags(datasets.folder(version), version, day) for version in valid
    }
    stale = [
        version
        for version in valid
        if not evaluation_freshness(
            context.instance, version, day, assets, fingerprints[version]
        ).up_to_date
    ]
    if not stale:
        return SkipReason(f"Every valid dataset version is up to date on {day}.")
    return [
        RunRequest(
            run_key=f"{version}|{day}",
            partition_key=evaluation_partition_key(version, day),
            tags={**tags, **fingerprints[version]},
        )
        for version in stale
    ]
