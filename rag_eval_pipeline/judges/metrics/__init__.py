"""The judged metrics: one module per built-in metric, as ragas keeps them, and their registry.

Each module `judges/metrics/<metric>.py` holds the metric's definition (its docstring), its
prompt template and prompt builder, the interpretation of the LLM's reply, the offline heuristic,
a reference to its formula in `rag_eval_pipeline.metrics.ragas`, its detail columns, and
`METRIC`, the `judges.spec.JudgedMetric` that gathers them. `LLMJudge.score` and
`OfflineJudge.score` run any registered metric; the answer tiers judge the metrics that name
them (`metrics_for`).

A new judged metric is one module declaring its `JudgedMetric` and calling `register` (or a
line in `BUILT_IN` for a built-in one), plus its tests.
"""

from __future__ import annotations

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
from rag_eval_pipeline.judges.spec import JudgedMetric
from rag_eval_pipeline.llm.prompts import PromptTemplate

BUILT_IN: tuple[JudgedMetric, ...] = (
    faithfulness.METRIC,
    answer_relevance.METRIC,
    coherence.METRIC,
    answer_relevance_ragas.METRIC,
    e2e_score.METRIC,
    context_precision.METRIC,
    context_recall.METRIC,
    answer_correctness.METRIC,
)
METRICS: dict[str, JudgedMetric] = {metric.name: metric for metric in BUILT_IN}
"""Every registered judged metric by name, in the order the tiers judge them."""


def register(metric: JudgedMetric) -> JudgedMetric:
    """Add `metric` to `METRICS` (replacing one of the same name): the tiers it names judge it
    from then on, and the scorecard shows its mean as `metric.scorecard_name`."""
    METRICS[metric.name] = metric
    return metric


def unregister(name: str) -> None:
    """Remove a metric added by `register` (a built-in one cannot be removed)."""
    if name in {metric.name for metric in BUILT_IN}:
        raise ValueError(f"{name} is a built-in judged metric")
    METRICS.pop(name, None)


def metrics_for(tier: str) -> tuple[str, ...]:
    """The names of the registered metrics judged on `tier` (`tier2`, `tier3`, `traffic`)."""
    return tuple(name for name, metric in METRICS.items() if tier in metric.tiers)


def scorecard_names() -> dict[str, str]:
    """Judgment metric name → the name of its mean in the scorecard, for every registered one."""
    return {name: metric.scorecard_name for name, metric in METRICS.items()}


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
