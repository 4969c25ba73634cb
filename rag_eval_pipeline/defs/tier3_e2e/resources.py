"""The system under test: its kind, target, URL and HTTP config from the environment."""

import os

from dagster import Definitions, definitions

from rag_eval_pipeline.datasets.http_config import HTTP_CONFIG_ENV, HTTP_URL_ENV
from rag_eval_pipeline.defs.shared.resources import RagSystemResource


@definitions
def resources() -> Definitions:
    """This folder's resources for a default deployment (read when the code location loads)."""
    return Definitions(
        resources={
            "rag_system": RagSystemResource(
                kind=os.environ.get("RAG_EVAL_SYSTEM", "reference"),
                target=os.environ.get("RAG_EVAL_SYSTEM_TARGET"),
                url=os.environ.get(HTTP_URL_ENV),
                http_config=os.environ.get(HTTP_CONFIG_ENV),
                skip_top=int(os.environ.get("RAG_EVAL_SKIP_TOP", "0")),
            )
        }
    )
