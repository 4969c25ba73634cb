"""Judging the judges: reliability on repeated judgments, agreement with humans, show/hide."""

import pandas as pd
from dagster import AssetExecutionContext, Config, MetadataValue, asset
from pydantic import Field

from rag_eval_pipeline.assets.dataset import as_dataset
from rag_eval_pipeline.assets.llm_metadata import llm_usage_metadata
from rag_eval_pipeline.assets.skipping import skipped
from rag_eval_pipeline.evaluation.judging import (
    agreement_values,
    human_agreement,
    reliability_values,
    repeated_judgments,
    show_decisions,
    show_judge_values,
)
from rag_eval_pipeline.evaluation.summaries import empty_quality, single_values
from rag_eval_pipeline.metadata import markdown_table, summary_metadata
from rag_eval_pipeline.partitions import evaluation_partitions
from rag_eval_pipeline.resources import EmbedderResource, LLMResource

RELIABILITY_TIER = "judge_reliability"
SHOW_JUDGE_TIER = "show_judge"


class JudgeReliabilityConfig(Config):
    """Which Tier 2 rows are re-judged, how often, and the consistency tolerance δ."""

    repetitions: int = 2
    delta: float = 0.5
    sample_size: int | None = None
    metrics: list[str] = Field(default_factory=lambda: ["faithfulness", "answer_relevance"])
    seed: int = 0


@asset(
    partitions_def=evaluation_partitions,
    group_name="5_judges",
    kinds={"pandas", "parquet"},
    description=(
        "Re-judges Tier 2 answers (cache bypassed) to measure the judge's consistency "
        "(share of items whose repeated scores differ by at most δ), error rate and latency; "
        "and its agreement with human raters (Cohen's kappa, weighted kappa, Spearman)."
    ),
)
def judge_reliability(
    context: AssetExecutionContext,
    config: JudgeReliabilityConfig,
    golden_dataset: dict[str, pd.DataFrame],
    ideal_context_generations: pd.DataFrame,
    embedder: EmbedderResource,
    judge_llm: LLMResource,
) -> pd.DataFrame:
    if ideal_context_generations.empty:
        return skipped(context, "no Tier 2 answers to re-judge", empty_quality())
    dataset = as_dataset(context, golden_dataset)
    judge, client = judge_llm.judge(embedder.get())
    sample = ideal_context_generations
    if config.sample_size is not None and config.sample_size < len(sample):
        sample = sample.sample(n=config.sample_size, random_state=config.seed)
    repeats = repeated_judgments(sample, judge, config.metrics, config.repetitions)
    values = reliability_values(repeats, config.delta)
    metadata = {}
    if dataset.judge_labels is not None:
        agreement = human_agreement(dataset.judge_labels, judge)
        values.update(agreement_values(agreement))
        metadata["human_agreement"] = MetadataValue.md(markdown_table(agreement))
    quality = single_values(values, RELIABILITY_TIER, judge.judge_model, count=len(sample))
    context.add_output_metadata(
        {
            **summary_metadata(quality),
            **metadata,
            "repetitions": MetadataValue.int(config.repetitions),
            "delta": MetadataValue.float(config.delta),
            **llm_usage_metadata("judge", judge.judge_model, client),
        }
    )
    return quality


@asset(
    partitions_def=evaluation_partitions,
    group_name="5_judges",
    kinds={"pandas", "parquet"},
    description=(
        "The production show/hide judge against human `ground_truth_show` labels: accuracy, "
        "precision, recall and F1 of the 'Yes' class, confusion matrix, errors, latency."
    ),
)
def show_judge_quality(
    context: AssetExecutionContext,
    golden_dataset: dict[str, pd.DataFrame],
    embedder: EmbedderResource,
    judge_llm: LLMResource,
) -> pd.DataFrame:
    dataset = as_dataset(context, golden_dataset)
    labels = dataset.judge_labels
    if labels is None or "ground_truth_show" not in labels.columns:
        return skipped(
            context,
            "this dataset version has no judge_labels with ground_truth_show",
            empty_quality(),
        )
    show_judge, client = judge_llm.show_judge(embedder.get())
    decisions = show_decisions(labels, show_judge)
    values = show_judge_values(decisions)
    model = str(decisions["judge_model"].iloc[0]) if len(decisions) else judge_llm.model
    headline = {
        k: values[k]
        for k in ("accuracy", "precision", "recall", "f1_score", "error_rate", "avg_latency_ms")
    }
    quality = single_values(
        headline,
        SHOW_JUDGE_TIER,
        model,
        count=int(values["n_scored"]),
        n_errors=int(values["n_errors"]),
        error_rate=float(values["error_rate"]),
    )
    confusion = pd.DataFrame(
        {
            "": ["human: show", "human: hide"],
            "judge: show": [values["tp"], values["fp"]],
            "judge: hide": [values["fn"], values["tn"]],
        }
    )
    context.add_output_metadata(
        {
            **summary_metadata(quality),
            "confusion_matrix": MetadataValue.md(markdown_table(confusion)),
            "n_errors": MetadataValue.int(int(values["n_errors"])),
            **llm_usage_metadata("judge", model, client),
        }
    )
    return quality
