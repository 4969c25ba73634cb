"""The daily schedule: one evaluation run per registered dataset version for the new date."""

import os

from dagster import (
    DefaultScheduleStatus,
    RunRequest,
    ScheduleEvaluationContext,
    SkipReason,
    schedule,
)

from rag_eval_pipeline.defs.jobs import evaluation_job
from rag_eval_pipeline.defs.partitions import DATASET_VERSION, evaluation_partition_key

DAILY_CRON = os.environ.get("RAG_EVAL_SCHEDULE_CRON", "0 2 * * *")
SCHEDULE_TIMEZONE = os.environ.get("RAG_EVAL_SCHEDULE_TIMEZONE", "UTC")


@schedule(
    job=evaluation_job,
    cron_schedule=DAILY_CRON,
    execution_timezone=SCHEDULE_TIMEZONE,
    default_status=DefaultScheduleStatus.RUNNING,
    description="Every day (02:00 by default), evaluate every registered dataset version.",
)
def daily_evaluation_schedule(context: ScheduleEvaluationContext) -> list[RunRequest] | SkipReason:
    versions = context.instance.get_dynamic_partitions(DATASET_VERSION)
    if not versions:
        return SkipReason("No dataset versions registered yet (see dataset_version_sensor).")
    day = context.scheduled_execution_time.strftime("%Y-%m-%d")
    return [
        RunRequest(
            run_key=f"{version}|{day}",
            partition_key=evaluation_partition_key(version, day),
            tags={"rag_eval/trigger": "daily_schedule"},
        )
        for version in sorted(versions)
    ]
