"""The Dagster code location: everything under `rag_eval_pipeline/defs/`, and the resources.

Each tier's folder under `defs/` holds its assets, checks, sensors and schedules (the layout of
Dagster's `dagster-open-platform`); assets and checks are collected by package, jobs, sensors and
schedules named here. The resources are those of a default deployment: offline unless the
environment names models.
"""

import os

from dagster import (
    Definitions,
    EnvVar,
    in_process_executor,
    load_asset_checks_from_package_module,
    load_assets_from_package_module,
)

from rag_eval_pipeline import defs as tiers
from rag_eval_pipeline.datasets.http_config import HTTP_CONFIG_ENV, HTTP_URL_ENV
from rag_eval_pipeline.defs.dataset.schedules import daily_evaluation_schedule
from rag_eval_pipeline.defs.dataset.sensors import dataset_version_sensor
from rag_eval_pipeline.defs.io_managers import ParquetIOManagerResource
from rag_eval_pipeline.defs.jobs import evaluation_job
from rag_eval_pipeline.defs.machine_failures import console_logger
from rag_eval_pipeline.defs.resources import (
    AlertsResource,
    BaselineResource,
    DatasetsResource,
    EmbedderResource,
    LLMResource,
    RagSystemResource,
    ResultCacheResource,
    WarehouseResource,
)
from rag_eval_pipeline.defs.run_cost import run_cost_sensor
from rag_eval_pipeline.defs.run_ownership import dead_owner_run_sensor
from rag_eval_pipeline.defs.scorecard.sensors import regression_alert_sensor
from rag_eval_pipeline.embedding.embedder import DEFAULT_MODEL
from rag_eval_pipeline.settings import (
    EMBEDDER_MODEL_ENV,
    GENERATOR_API_BASE_ENV,
    GENERATOR_MODEL_ENV,
    JUDGE_API_BASE_ENV,
    JUDGE_MODEL_ENV,
    OFFLINE_MODEL,
)

ALERT_WEBHOOK_ENV = "RAG_EVAL_ALERT_WEBHOOK"


def _env_var(name: str) -> EnvVar | None:
    """The variable `name` as an `EnvVar` when set: read at run time, so the job snapshot that
    Dagster stores with every run (and shows in the UI) holds its name, never its value (an
    `api_base` may carry `user:password@`)."""
    return EnvVar(name) if name in os.environ else None


def default_resources() -> dict[str, object]:
    """The resources of a default deployment: offline unless the environment names models."""
    return {
        "io_manager": ParquetIOManagerResource(),
        "datasets": DatasetsResource(),
        "embedder": EmbedderResource(model=os.environ.get(EMBEDDER_MODEL_ENV, DEFAULT_MODEL)),
        "judge_llm": LLMResource(
            model=os.environ.get(JUDGE_MODEL_ENV, OFFLINE_MODEL),
            api_base=_env_var(JUDGE_API_BASE_ENV),
            role="judge",
        ),
        "generator_llm": LLMResource(
            model=os.environ.get(GENERATOR_MODEL_ENV, OFFLINE_MODEL),
            api_base=_env_var(GENERATOR_API_BASE_ENV),
            role="generator",
        ),
        "warehouse": WarehouseResource(),
        "result_cache": ResultCacheResource(),
        "baseline": BaselineResource(
            version=os.environ.get("RAG_EVAL_BASELINE_VERSION"),
            date=os.environ.get("RAG_EVAL_BASELINE_DATE"),
        ),
        "alerts": AlertsResource(
            # An EnvVar: the URL (a credential for Slack) is read at run time, never stored in
            # the run's job snapshot or shown in the UI.
            webhook_url=_env_var(ALERT_WEBHOOK_ENV),
            style=os.environ.get("RAG_EVAL_ALERT_STYLE", "json"),
            ui_url=os.environ.get("RAG_EVAL_UI_URL"),
        ),
        "rag_system": RagSystemResource(
            kind=os.environ.get("RAG_EVAL_SYSTEM", "reference"),
            target=os.environ.get("RAG_EVAL_SYSTEM_TARGET"),
            url=os.environ.get(HTTP_URL_ENV),
            http_config=os.environ.get(HTTP_CONFIG_ENV),
            skip_top=int(os.environ.get("RAG_EVAL_SKIP_TOP", "0")),
        ),
    }


ALL_ASSETS = load_assets_from_package_module(tiers)
ALL_CHECKS = load_asset_checks_from_package_module(tiers)

defs = Definitions(
    assets=ALL_ASSETS,
    jobs=[evaluation_job],
    schedules=[daily_evaluation_schedule],
    asset_checks=ALL_CHECKS,
    sensors=[
        dataset_version_sensor,
        regression_alert_sensor,
        dead_owner_run_sensor,
        run_cost_sensor,
    ],
    resources=default_resources(),
    loggers={"console": console_logger},
    # Assets materialized from the UI outside evaluation_job run in one process too (jobs.py).
    executor=in_process_executor,
)
