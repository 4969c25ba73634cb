"""One module per RAG judge metric, as ragas keeps them, so each metric is findable in one place.

Each module `judges/metrics/<metric>.py` holds the metric's definition (its docstring), its
prompt template and prompt builder, the interpretation of the LLM's reply (`interpret`, with
`parse` where the reply is a rubric score), the offline heuristic (`heuristic_row`, the scoring
core the `OfflineJudge` method delegates to), a reference to its formula in
`rag_eval_pipeline.metrics.ragas`, its detail columns, and `SCORECARD_NAME`, the name its mean
has in the scorecard. `LLMJudge` and `OfflineJudge` keep the batching, calls and caching.
"""

from __future__ import annotations

from types import ModuleType

from rag_eval_pipeline.judges.metrics import (
    answer_correctness,
    answer_relevance,
    answer_relevance_ragas,
    coherence,
    context_precision,
    context_recall,
    e2e_score,
    faithfulness,
)
from rag_eval_pipeline.llm.prompts import PromptTemplate

METRICS: dict[str, ModuleType] = {
    module.NAME: module
    for module in (
        faithfulness,
        answer_relevance,
        coherence,
        answer_relevance_ragas,
        e2e_score,
        context_precision,
        context_recall,
        answer_correctness,
    )
}
SCORECARD_NAMES: dict[str, str] = {name: module.SCORECARD_NAME for name, module in METRICS.items()}
DETAIL_COLUMNS: dict[str, dict[str, str]] = {
    name: module.DETAIL_COLUMNS for name, module in METRICS.items()
}

PROMPTS: dict[str, PromptTemplate] = {
    template.name: template
    for template in (
        faithfulness.FAITHFULNESS,
        answer_relevance.ANSWER_RELEVANCE,
        coherence.COHERENCE,
        answer_relevance_ragas.ANSWER_RELEVANCE_RAGAS,
        e2e_score.E2E_SCORE,
        context_precision.CONTEXT_PRECISION,
        context_recall.CONTEXT_RECALL,
        answer_correctness.ANSWER_CORRECTNESS,
    )
}
"""Every prompt the LLM judge sends (versioned by `PROMPT_VERSION`, as is the generator's,
`systems.generators.GENERATOR`)."""
