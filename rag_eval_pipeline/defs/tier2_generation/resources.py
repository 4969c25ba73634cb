"""The generator LLM: the model and API base the environment names, else offline."""

import os

from dagster import Definitions, definitions

from rag_eval_pipeline.defs.shared.resources import LLMResource, env_var_if_set
from rag_eval_pipeline.settings import GENERATOR_API_BASE_ENV, GENERATOR_MODEL_ENV, OFFLINE_MODEL


@definitions
def resources() -> Definitions:
    """This folder's resources for a default deployment (read when the code location loads)."""
    return Definitions(
        resources={
            "generator_llm": LLMResource(
                model=os.environ.get(GENERATOR_MODEL_ENV, OFFLINE_MODEL),
                api_base=env_var_if_set(GENERATOR_API_BASE_ENV),
                role="generator",
            )
        }
    )
