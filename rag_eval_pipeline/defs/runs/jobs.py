"""The evaluation job: every asset (and its checks) for one dataset version and date.

A run executes its steps one after another in its run worker (the in-process executor): a
partition's 20-odd steps are mostly sub-second, and the multiprocess executor would start a
process per step that imports PyTorch, litellm and the project again (3-7 s each), so a run the
UI, the schedule, a sensor or a backfill launches would cost 10-20x what `rag-eval run` costs.
Partitions run side by side as separate runs, through the run queue (`max_concurrent_runs`).
The job is partitioned like its assets (dataset version × date; Dagster infers it).
Step retries work as with any executor: an asset's `RetryPolicy`, or run config
`execution: {config: {retries: ...}}`.
"""

from dagster import AssetSelection, define_asset_job, in_process_executor

EVALUATION_JOB_NAME = "evaluation_job"

evaluation_job = define_asset_job(
    EVALUATION_JOB_NAME,
    selection=AssetSelection.all(),
    description="Materialize every evaluation tier for one dataset version on one date.",
    tags={"rag_eval/kind": "evaluation"},
    executor_def=in_process_executor,
)
