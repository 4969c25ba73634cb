"""The Dagster code location: every asset, check, resource, job, schedule and sensor."""

from dagster import Definitions, load_assets_from_modules

from rag_eval_pipeline.assets import dataset, scorecard
from rag_eval_pipeline.io_managers import ParquetIOManagerResource
from rag_eval_pipeline.jobs import evaluation_job
from rag_eval_pipeline.resources import DatasetsResource, EmbedderResource
from rag_eval_pipeline.schedules import daily_evaluation_schedule
from rag_eval_pipeline.sensors import dataset_version_sensor


def default_resources() -> dict[str, object]:
    """The resources of a default (offline, local) deployment."""
    return {
        "io_manager": ParquetIOManagerResource(),
        "datasets": DatasetsResource(),
        "embedder": EmbedderResource(),
    }


defs = Definitions(
    assets=load_assets_from_modules([dataset, scorecard]),
    jobs=[evaluation_job],
    schedules=[daily_evaluation_schedule],
    sensors=[dataset_version_sensor],
    resources=default_resources(),
)
