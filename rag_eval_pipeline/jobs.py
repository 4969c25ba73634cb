"""The evaluation job: every asset (and its checks) for one dataset version and date."""

from dagster import AssetSelection, define_asset_job

from rag_eval_pipeline.partitions import evaluation_partitions

EVALUATION_JOB_NAME = "evaluation_job"

evaluation_job = define_asset_job(
    EVALUATION_JOB_NAME,
    selection=AssetSelection.all(),
    partitions_def=evaluation_partitions,
    description="Materialize every evaluation tier for one dataset version on one date.",
    tags={"rag_eval/kind": "evaluation"},
)
