"""Every finished run that called an LLM is tagged with what it cost.

`tag_run_cost` sets the run's tags `rag_eval/cost_usd` (USD, or `unknown` when litellm could not
price a call) and `rag_eval/llm_calls` from its materializations' usage metadata
(`defs.llm_metadata.run_llm_usage`, `evaluation.cost.cost_tags`: the numbers of the run summary's
`LLM:` line and of the scorecard's `cost` tier), through `DagsterInstance.add_run_tags`; a run
without LLM calls (offline models) gets no tag. The tags show in the UI's run list and filter
runs (`RunsFilter(tags=...)`).

`rag-eval run` tags each run it executes when it ends; `run_cost_sensor` tags, in the daemon,
the runs it launched (backfills, schedules, the UI) once they end, successfully or not: a failed
run's calls were paid for too.
"""

from __future__ import annotations

from datetime import datetime

from dagster import (
    DagsterInstance,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunsFilter,
    SensorEvaluationContext,
    SkipReason,
    sensor,
)

from rag_eval_pipeline.defs.llm_metadata import run_llm_usage
from rag_eval_pipeline.evaluation.cost import COST_TAG, cost_tags

FINISHED_STATUSES = [DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED]
RUNS_PER_TICK = 100


def tag_run_cost(instance: DagsterInstance, run_id: str) -> dict[str, str]:
    """Tag run `run_id` with its LLM cost and calls; the tags set (none without LLM usage)."""
    tags = cost_tags(run_llm_usage(instance, run_id))
    if tags:
        instance.add_run_tags(run_id, tags)
    return tags


@sensor(
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.RUNNING,
    description=(
        "Tags each finished run that called an LLM with what it cost: rag_eval/cost_usd and "
        "rag_eval/llm_calls."
    ),
)
def run_cost_sensor(context: SensorEvaluationContext) -> SkipReason:
    after = datetime.fromisoformat(context.cursor) if context.cursor else None
    records = context.instance.get_run_records(
        filters=RunsFilter(statuses=FINISHED_STATUSES, updated_after=after),
        order_by="update_timestamp",
        ascending=True,
        limit=RUNS_PER_TICK,
    )
    tagged = 0
    for record in records:
        if COST_TAG not in record.dagster_run.tags:
            tagged += bool(tag_run_cost(context.instance, record.dagster_run.run_id))
        context.update_cursor(record.update_timestamp.isoformat())
    return SkipReason(
        f"Looked at {len(records)} finished run(s); tagged {tagged} with their LLM cost."
    )
