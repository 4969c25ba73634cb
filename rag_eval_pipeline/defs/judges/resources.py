"""The judge LLM: the model and API base the environment names, else offline."""

from dagster import Definitions, definitions

from rag_eval_pipeline.defs.shared.resources import llm_from_environment
from rag_eval_pipeline.settings import JUDGE_API_BASE_ENV, JUDGE_MODEL_ENV


@definitions
def resources() -> Definitions:
    """This folder's resources for a default deployment (read when the code location loads)."""
    return Definitions(
        resources={"judge_llm": llm_from_environment("judge", JUDGE_MODEL_ENV, JUDGE_API_BASE_ENV)}
    )
