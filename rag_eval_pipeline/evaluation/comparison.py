"""A/B comparison of configurations of the reference RAG on the same questions.

The variants file (`config/variants.yaml`) names the configurations, the baseline and the
metrics:

```yaml
baseline: top3-dense
variants:
  top3-dense: {retriever: dense, top_k: 3}
  top3-hybrid: {retriever: hybrid-rrf, top_k: 3}
metrics: [hit_rate@1, mrr, faithfulness, e2e_score, semantic_similarity, total_latency_ms]
alpha: 0.05          # optional
```

Every variant answers the same questions (`RagVariant`, `systems/variants.py`), then each answer
is scored per question: retrieval metrics of its retrieved documents against the qrels (any
name `evaluate_run` accepts), judge metrics (`judges.metrics.METRICS`), reference scores
(ROUGE, BLEU, semantic similarity) and the system's own latency and `error_rate` (1 for a
failed question). Each variant is compared with the baseline per metric on the questions both
have a score for (`compare_paired`: mean delta, paired bootstrap CI, paired randomization
p-value). The verdict is `better` or `worse` when p < alpha and the (1 − alpha) CI of the delta
excludes 0 — in the metric's good direction or not: latency and error rates are
lower-is-better, as in the scorecard — and `no significant difference` otherwise (including
when no pair is complete).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import pandas as pd
import yaml
from pydantic import AfterValidator

from rag_eval_pipeline.datasets.golden import GoldenDataset
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.composite import COMPOSITE, load_weights
from rag_eval_pipeline.evaluation.generation import (
    TEXT_SCORERS,
    judge_answers,
    reference_scores,
)
from rag_eval_pipeline.evaluation.scorecard import LOWER_IS_BETTER_MARKERS
from rag_eval_pipeline.judges.judge import Judge
from rag_eval_pipeline.judges.metrics import METRICS
from rag_eval_pipeline.metrics.composite import composite_score
from rag_eval_pipeline.metrics.retrieval import evaluate_run
from rag_eval_pipeline.metrics.stats import compare_paired
from rag_eval_pipeline.storage.config_files import ConfigModel, validated
from rag_eval_pipeline.storage.yaml_files import load_yaml_file
from rag_eval_pipeline.systems.generators import Generator
from rag_eval_pipeline.systems.variants import RagVariant, VariantEntry

BETTER, WORSE, NO_DIFFERENCE = "better", "worse", "no significant difference"
VERDICTS = (BETTER, WORSE, NO_DIFFERENCE)
COMPARISON_COLUMNS = [
    "variant",
    "baseline",
    "metric",
    "n",
    "mean_baseline",
    "mean_variant",
    "delta",
    "ci_low",
    "ci_high",
    "p_value",
    "verdict",
]
JUDGE_METRICS = tuple(METRICS)
REFERENCE_METRICS = (*TEXT_SCORERS, "semantic_similarity")
SYSTEM_METRICS = ("total_latency_ms", "retrieval_latency_ms", "generation_latency_ms", "error_rate")
NON_RETRIEVAL_METRICS = (*JUDGE_METRICS, *REFERENCE_METRICS, *SYSTEM_METRICS, COMPOSITE)
# A one-query run and qrels: `evaluate_run` on them validates retrieval metric names.
_PROBE_RUN = pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "score": [1.0]})
_PROBE_QRELS = pd.DataFrame({"query_id": ["q"], "doc_id": ["d"], "relevance": [1]})


def higher_is_better(metric: str) -> bool:
    """The scorecard's rule: latency, error rates and disagreements are lower-is-better."""
    return not any(marker in metric for marker in LOWER_IS_BETTER_MARKERS)


@dataclass(frozen=True)
class ComparisonPlan:
    """The variants to run (baseline included), the metrics to compare, the significance level."""

    baseline: str
    variants: tuple[RagVariant, ...]
    metrics: tuple[str, ...]
    alpha: float = 0.05

    @property
    def measures_latency(self) -> bool:
        """Whether a compared metric is a wall-clock latency (a result of this run only)."""
        return any(metric.endswith("_latency_ms") for metric in self.metrics)


class VariantsFile(ConfigModel):
    """`config/variants.yaml`: the variants of the reference RAG to compare (see the module
    docstring)."""

    baseline: str
    variants: dict[str, VariantEntry | None]
    metrics: list[str]
    alpha: Annotated[float, AfterValidator(_significance)] = 0.05


def load_plan(path: Path) -> ComparisonPlan:
    """Read a variants file; every problem raises `ValueError` starting with the file's path."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: variants file not found")
    try:
        raw = load_yaml_file(path)
    except yaml.YAMLError as error:
        raise ValueError(f"{path}: not valid YAML: {error}") from error
    return parse_plan(raw, path)


def parse_plan(raw: Any, path: Path | str = "variants.yaml") -> ComparisonPlan:
    """Validate the parsed YAML of a variants file (see the module docstring); a problem raises
    `ValueError` naming `path`, the key and the value."""
    plan = validated(VariantsFile, raw, path)
    if len(plan.variants) < 2:
        raise ValueError(f"{path}: variants: expected a mapping of at least two named variants")
    variants = tuple(
        (entry or VariantEntry()).variant(str(name)) for name, entry in plan.variants.items()
    )
    names = [variant.name for variant in variants]
    if plan.baseline not in names:
        raise ValueError(f"{path}: baseline {plan.baseline!r} is not among the variants {names}")
    try:
        metrics = _metrics(plan.metrics)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from error
    return ComparisonPlan(plan.baseline, variants, metrics, plan.alpha)


def _significance(alpha: float) -> float:
    if not 0 < alpha < 1:
        raise ValueError(f"must be a number in (0, 1), got {alpha!r}")
    return alpha


def _metrics(raw: list[str]) -> tuple[str, ...]:
    if not raw:
        raise ValueError("metrics: expected a non-empty list of metric names")
    repeated = sorted({m for m in raw if raw.count(m) > 1})
    if repeated:
        raise ValueError(f"metrics: listed more than once: {repeated}")
    try:
        evaluate_run(_PROBE_RUN, _PROBE_QRELS, retrieval_metrics(raw))
    except ValueError as error:
        raise ValueError(
            f"metrics: {error}; other metrics: {list(NON_RETRIEVAL_METRICS)}"
        ) from error
    return tuple(raw)


def retrieval_metrics(metrics: Sequence[str]) -> list[str]:
    """The metrics scored by `evaluate_run` (every name that is not a judge, reference or
    system metric)."""
    return [m for m in metrics if m not in NON_RETRIEVAL_METRICS]


def variant_answers(
    variant: RagVariant, dataset: GoldenDataset, embedder: Embedder, generator: Generator
) -> pd.DataFrame:
    """The variant's answers to every question (`RAG_OUTPUT_COLUMNS` + `ground_truth_answer`)."""
    if not dataset.has_corpus:
        raise ValueError(f"dataset version {dataset.version!r} has no corpus to retrieve from")
    outputs = variant.build(embedder, dataset.corpus, generator).answer(dataset.queries)
    queries = dataset.queries
    truths = (
        queries[["query_id", "ground_truth_answer"]]
        if "ground_truth_answer" in queries.columns
        else queries[["query_id"]].assign(ground_truth_answer=None)
    )
    return outputs.merge(truths, on="query_id", how="left")


def answers_run(answers: pd.DataFrame) -> pd.DataFrame:
    """The retrieved documents of `answers` as a run: score = −rank (list order)."""
    run = answers[["query_id", "retrieved_doc_ids"]].explode("retrieved_doc_ids")
    run = run.dropna(subset=["retrieved_doc_ids"]).rename(columns={"retrieved_doc_ids": "doc_id"})
    return run.assign(score=-(run.groupby("query_id").cumcount() + 1).astype(float))


def score_answers(
    answers: pd.DataFrame,
    qrels: pd.DataFrame,
    metrics: Sequence[str],
    judge: Judge,
    embedder: Embedder,
    relevance_level: int = 1,
) -> pd.DataFrame:
    """Per-question scores of one system's answers: `query_id` and one column per metric.

    Retrieval metrics count grades ≥ `relevance_level` as relevant (trec_eval -l). A question a
    metric does not apply to (no relevant qrels, no ground truth) or whose judgment failed has
    NaN there. `composite` (config/composite.yaml) scores its component metrics too, then
    combines them (`metrics.composite.composite_score`).
    """
    weights = load_weights() if COMPOSITE in metrics else {}
    scored = [m for m in dict.fromkeys([*metrics, *weights]) if m != COMPOSITE]
    frames = [_system_scores(answers, scored)]
    retrieval = retrieval_metrics(scored)
    if retrieval:
        frames.append(
            evaluate_run(answers_run(answers), qrels, retrieval, relevance_level=relevance_level)
        )
    judged = [m for m in scored if m in JUDGE_METRICS]
    judgments = [judge_answers(answers, judge, judged)] if judged else []
    if any(m in REFERENCE_METRICS for m in scored):
        judgments.append(reference_scores(answers, embedder))
    judgments = [j[j["metric"].isin(scored)] for j in judgments if not j.empty]
    if judgments:
        long = pd.concat(judgments, ignore_index=True)
        frames.append(long.pivot(index="query_id", columns="metric", values="score").reset_index())
    scores = frames[0]
    for frame in frames[1:]:
        scores = scores.merge(frame, on="query_id", how="outer")
    if weights:
        scores[COMPOSITE] = composite_score(scores, weights)
    return scores.reindex(columns=["query_id", *metrics])


def _system_scores(answers: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """The system's own per-question metrics: latencies and `error_rate` (1 = failed)."""
    columns = {"query_id": answers["query_id"].to_numpy()}
    for metric in metrics:
        if metric == "error_rate":
            columns[metric] = answers["error"].notna().to_numpy(dtype=float)
        elif metric in SYSTEM_METRICS:
            columns[metric] = answers[metric].to_numpy(dtype=float)
    return pd.DataFrame(columns)


def verdict(comparison: Mapping[str, float], metric: str, alpha: float) -> str:
    """`better`/`worse` when p < alpha and the CI excludes 0, by the metric's direction."""
    low, high, p_value = comparison["ci_low"], comparison["ci_high"], comparison["p_value"]
    if not (p_value < alpha and (low > 0 or high < 0)):
        return NO_DIFFERENCE
    return BETTER if (low > 0) == higher_is_better(metric) else WORSE


def compare_variants(
    scores: Mapping[str, pd.DataFrame],
    baseline: str,
    metrics: Sequence[str],
    *,
    alpha: float = 0.05,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per (variant, metric) for every variant but `baseline` (`COMPARISON_COLUMNS`).

    `scores` maps a variant name to its per-question scores (`query_id` + metric columns);
    pairs are matched on `query_id`, and only questions both systems were scored on count.
    """
    reference = scores[baseline].set_index("query_id")
    rows = []
    for variant, frame in scores.items():
        if variant == baseline:
            continue
        challenger = frame.set_index("query_id")
        for metric in metrics:
            a, b = reference[metric].align(challenger[metric], join="inner")
            result = compare_paired(
                a.to_numpy(float), b.to_numpy(float), confidence=1 - alpha, seed=seed
            )
            rows.append(
                {
                    "variant": variant,
                    "baseline": baseline,
                    "metric": metric,
                    "n": result["n"],
                    "mean_baseline": result["mean_a"],
                    "mean_variant": result["mean_b"],
                    "delta": result["delta"],
                    "ci_low": result["ci_low"],
                    "ci_high": result["ci_high"],
                    "p_value": result["p_value"],
                    "verdict": verdict(result, metric, alpha),
                }
            )
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


def composite_winner(comparison: pd.DataFrame, baseline: str) -> dict[str, Any]:
    """The A/B winner by the composite score, with its paired comparison to the baseline.

    The variant whose composite is significantly `better` than the baseline's (paired CI
    excludes 0 and p < alpha) by the largest mean delta wins; when none is, the baseline
    stays the winner. The row of the winning variant gives `delta`, `ci_low`, `ci_high`,
    `p_value`; for the baseline they are those of the closest challenger (largest delta), or
    NaN without any composite row.
    """
    rows = comparison[comparison["metric"] == COMPOSITE].sort_values(
        ["delta", "variant"], ascending=[False, True], kind="stable"
    )
    better = rows[rows["verdict"] == BETTER]
    best = better.iloc[0] if not better.empty else rows.iloc[0] if not rows.empty else None
    stats = ("delta", "ci_low", "ci_high", "p_value")
    return {
        "winner": str(best["variant"]) if not better.empty else baseline,
        **{k: float(best[k]) if best is not None else float("nan") for k in stats},
        "compared_with": str(best["variant"]) if best is not None else baseline,
    }


def run_comparison(
    plan: ComparisonPlan,
    dataset: GoldenDataset,
    embedder: Embedder,
    generator: Generator,
    judge: Judge,
) -> pd.DataFrame:
    """Answer the dataset's questions with every variant, score them, compare with the baseline.

    The generator, the judge and `embedder` (semantic similarity) are shared by all variants,
    so they differ only in their retrieval configuration.
    """
    scores = {
        variant.name: score_answers(
            variant_answers(variant, dataset, embedder, generator),
            dataset.qrels,
            plan.metrics,
            judge,
            embedder,
            relevance_level=dataset.relevance_level,
        )
        for variant in plan.variants
    }
    return compare_variants(scores, plan.baseline, plan.metrics, alpha=plan.alpha)
