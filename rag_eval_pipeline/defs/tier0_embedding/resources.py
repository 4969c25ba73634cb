"""The embedder: the model `RAG_EVAL_EMBEDDER_MODEL` names, else the packaged one."""

import os

from dagster import Definitions, definitions

from rag_eval_pipeline.defs.shared.resources import EmbedderResource
from rag_eval_pipeline.embedding.embedder import DEFAULT_MODEL
from rag_eval_pipeline.settings import EMBEDDER_MODEL_ENV


@definitions
def resources() -> Definitions:
    """This folder's resources for a default deployment (read when the code location loads)."""
    return Definitions(
        resources={
            "embedder": EmbedderResource(model=os.environ.get(EMBEDDER_MODEL_ENV, DEFAULT_MODEL))
        }
    )
