"""The datasets resource: where the dataset versions live (settings' defaults)."""

from dagster import Definitions, definitions

from rag_eval_pipeline.defs.shared.resources import DatasetsResource


@definitions
def resources() -> Definitions:
    """This folder's resources for a default deployment (read when the code location loads)."""
    return Definitions(resources={"datasets": DatasetsResource()})
