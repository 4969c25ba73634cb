"""Every finished run that called an LLM is tagged with what it cost.

`tag_run_cost` sets the run's tags `rag_eval/cost_usd` (USD, or `unknown` when litellm could not
price a call) and `rag_eval/llm_calls` from its materializations' usage metadata
(`defs.shared.llm_metadata.run_llm_usage`, `evaluation.cost.cost_tags`: the numbers of the run
summary's `LLM:` line and of the scorecard's `cost` tier), through `DagsterInstance.add_run_tags`;
a run without LLM calls (offline models) gets no tag. The tags show in the UI's run list and
filter runs (`RunsFilter(tags=...)`).

`rag-eval run` tags each run it executes when it ends; `run_cost_sensor` tags, in the daemon,
the runs it launched (backfills, schedules, the UI) once they end, successfully or not: a failed
run's calls were paid for too. A failed step records no usage, so a run that did not succeed is
also tagged `rag_eval/cost_complete: false` (its figures are lower bounds).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta

from dagster import (
    DagsterInstance,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunsFilter,
    SensorEvaluationContext,
    SkipReason,
    sensor,
)

from rag_eval_pipeline.defs.shared.llm_metadata import run_llm_usage
from rag_eval_pipeline.evaluation.cost import COST_TAG, cost_tags

FINISHED_STATUSES = [DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED]
RUNS_PER_TICK = 100


def tag_run_cost(instance: DagsterInstance, run_id: str) -> dict[str, str]:
    """Tag run `run_id` with its LLM cost and calls; the tags set (none without LLM usage). A
    run that did not succeed also gets `rag_eval/cost_complete: false`: a failed step records no
    usage, so its calls are missing from the figures."""
    run = instance.get_run_by_id(run_id)
    complete = run is not None and run.status == DagsterRunStatus.SUCCESS
    tags = cost_tags(run_llm_usage(instance, run_id), complete=complete)
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
    # The cursor is the last update time looked at and the runs seen at exactly that time:
    # runs updated at the same instant may straddle a page, and `updated_after` is strict.
    cursor = json.loads(context.cursor) if context.cursor else None
    last = datetime.fromisoformat(cursor["at"]) if cursor else None
    seen = set(cursor["runs"]) if cursor else set()
    records = context.instance.get_run_records(
        filters=RunsFilter(
            statuses=FINISHED_STATUSES,
            updated_after=last - timedelta(microseconds=1) if last else None,
        ),
        order_by="update_timestamp",
        ascending=True,
        limit=RUNS_PER_TICK + len(seen),
    )
    tagged = looked = 0
    for record in records:
        run, at = record.dagster_run, record.update_timestamp
        if at == last and run.run_id in seen:
            continue
        looked += 1
        if COST_TAG not in run.tags:
            tagged += bool(tag_run_cost(context.instance, run.run_id))
        seen = seen | {run.run_id} if at == last else {run.run_id}
        last = at
    if last is not None:
        context.update_cursor(json.dumps({"at": last.isoformat(), "runs": sorted(seen)}))
    return SkipReason(f"Looked at {looked} finished run(s); tagged {tagged} with their LLM cost.")
