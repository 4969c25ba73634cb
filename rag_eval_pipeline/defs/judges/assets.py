"""Judging the judges: reliability on repeated judgments, agreement with humans, show/hide."""

import pandas as pd
from dagster import AssetExecutionContext, Config, MetadataValue
from pydantic import Field

from rag_eval_pipeline.defs.dataset.assets import DatasetTables, as_dataset
from rag_eval_pipeline.defs.judges import asset
from rag_eval_pipeline.defs.runs.pools import LLM_JUDGE_POOL
from rag_eval_pipeline.defs.shared.llm_metadata import llm_usage_metadata
from rag_eval_pipeline.defs.shared.metadata import (
    markdown_table,
    path_metadata,
    summary_metadata,
    text_metadata,
)
from rag_eval_pipeline.defs.shared.partitions import partition_parts
from rag_eval_pipeline.defs.shared.resources import EmbedderResource, LLMResource
from rag_eval_pipeline.defs.shared.skipping import skipped
from rag_eval_pipeline.defs.tier3_e2e.assets import TIER as E2E_TIER
from rag_eval_pipeline.evaluation.judging import (
    agreement_values,
    human_agreement,
    reliability_values,
    repeated_judgments,
    show_decisions,
    show_judge_values,
)
from rag_eval_pipeline.evaluation.ppi_estimates import (
    judge_labeled_items,
    ppi_estimates,
    ppi_quality,
    ppi_table,
)
from rag_eval_pipeline.evaluation.rater_tasks import judging_tasks, rater_tasks, unjudged_top_k
from rag_eval_pipeline.evaluation.retrieval import qrels_judged_runs
from rag_eval_pipeline.evaluation.summaries import empty_quality, single_values
from rag_eval_pipeline.metrics.ppi import EXPLANATION
from rag_eval_pipeline.metrics.retrieval import JUDGED_K
from rag_eval_pipeline.settings import REPORTS_URL
from rag_eval_pipeline.storage.batches import TableBatches
from rag_eval_pipeline.storage.objects import storage_path, write_text_atomically

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
    pool=LLM_JUDGE_POOL,
    description=(
        "Re-judges Tier 2 answers (cache bypassed) to measure the judge's consistency "
        "(share of items whose repeated scores differ by at most δ), error rate and latency; "
        "and its agreement with human raters (Cohen's kappa, weighted kappa, Spearman)."
    ),
)
def judge_reliability(
    context: AssetExecutionContext,
    config: JudgeReliabilityConfig,
    golden_dataset: DatasetTables,
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
    parts = [single_values(values, RELIABILITY_TIER, judge.judge_model, count=len(sample))]
    if dataset.judge_labels is not None:
        agreement = human_agreement(dataset.judge_labels, judge)
        metadata["human_agreement"] = MetadataValue.md(markdown_table(agreement))
        # each agreement row counts the labels both raters scored, not the re-judged sample
        parts.extend(
            single_values(pair_values, RELIABILITY_TIER, judge.judge_model, count=n_labels)
            for n_labels, pair_values in agreement_values(agreement)
        )
    quality = pd.concat(parts, ignore_index=True)
    context.add_output_metadata(
        {
            **summary_metadata(quality, partition_parts(context)[0]),
            **metadata,
            "repetitions": MetadataValue.int(config.repetitions),
            "delta": MetadataValue.float(config.delta),
            **llm_usage_metadata("judge", judge.judge_model, client),
        }
    )
    return quality


@asset(
    pool=LLM_JUDGE_POOL,
    description=(
        "The production show/hide judge against human `ground_truth_show` labels: accuracy, "
        "precision, recall and F1 of the 'Yes' class, confusion matrix, errors, latency."
    ),
)
def show_judge_quality(
    context: AssetExecutionContext,
    golden_dataset: DatasetTables,
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
            **summary_metadata(quality, partition_parts(context)[0]),
            "confusion_matrix": MetadataValue.md(markdown_table(confusion)),
            "n_errors": MetadataValue.int(int(values["n_errors"])),
            **llm_usage_metadata("judge", model, client),
        }
    )
    return quality


class JudgeCorrectedConfig(Config):
    """The error level α of the prediction-powered intervals (95% by default)."""

    alpha: float = 0.05


@asset(
    pool=LLM_JUDGE_POOL,
    description=(
        "The Tier 3 judge means corrected by the human labels (prediction-powered inference, "
        "PPI++): per system and judged criterion with labels, ppi_<metric> (estimate of the "
        "raters' mean, 95% CI) and classical_<metric> (the labels alone); assumes the labeled "
        "items are drawn like the partition's."
    ),
)
def judge_corrected_quality(
    context: AssetExecutionContext,
    config: JudgeCorrectedConfig,
    golden_dataset: DatasetTables,
    e2e_judgments: pd.DataFrame,
    embedder: EmbedderResource,
    judge_llm: LLMResource,
) -> pd.DataFrame:
    labels = as_dataset(context, golden_dataset).judge_labels
    if labels is None:
        return skipped(context, "this dataset version has no judge_labels", empty_quality())
    if e2e_judgments.empty:
        return skipped(context, "no end-to-end judgments to correct", empty_quality())
    judge, client = judge_llm.judge(embedder.get())
    labeled = judge_labeled_items(labels, judge)
    estimates = ppi_estimates(labels, labeled, e2e_judgments, config.alpha)
    quality = ppi_quality(estimates, E2E_TIER)
    context.add_output_metadata(
        {
            **summary_metadata(quality, partition_parts(context)[0]),
            "ppi": MetadataValue.md(markdown_table(ppi_table(estimates))),
            "what_ppi_means": text_metadata(EXPLANATION),
            "alpha": MetadataValue.float(config.alpha),
            **llm_usage_metadata("judge", judge.judge_model, client),
        }
    )
    return quality


class RaterExportConfig(Config):
    """How many of the day's answers go to the raters, the seed, who rates, where the CSV is
    written (`<exports_dir>/<dataset_version>/<date>.csv`), and how many unjudged documents
    of the systems' top `judged_k` go to the qrels CSV (`<date>-qrels.csv` beside it)."""

    sample_size: int = 20
    seed: int = 0
    raters: list[str] = Field(default_factory=lambda: ["rater_a", "rater_b"])
    exports_dir: str = str(storage_path(REPORTS_URL) / "rater_tasks")
    judged_k: int = JUDGED_K
    qrels_tasks: int = 100


@asset(
    kinds={"pandas", "csv"},
    description=(
        "A seeded sample of the day's end-to-end answers (question, retrieved contexts, "
        "answer) as a CSV for human raters, with empty human_<criterion>_<rater> columns: "
        "filled in, it is the next judge_labels file. Beside it, <date>-qrels.csv: the "
        "documents in the systems' top k (judged@k) that the qrels do not judge, best-ranked "
        "first, with an empty relevance column: filled in, they grow the qrels."
    ),
)
def rater_export(
    context: AssetExecutionContext,
    config: RaterExportConfig,
    golden_dataset: DatasetTables,
    retrieval_runs: TableBatches,
    e2e_generations: pd.DataFrame,
) -> pd.DataFrame:
    version, day = partition_parts(context)
    folder = storage_path(config.exports_dir) / version
    dataset = as_dataset(context, golden_dataset)
    unjudged, n_unjudged = unjudged_top_k(
        qrels_judged_runs(retrieval_runs, e2e_generations),
        dataset.qrels,
        config.judged_k,
        dataset.relevance_level,
        config.qrels_tasks,
    )
    qrels_path = folder / f"{day}-qrels.csv"
    qrels_tasks = judging_tasks(unjudged, dataset.queries, dataset.corpus)
    write_text_atomically(qrels_tasks.to_csv(index=False), qrels_path)
    context.add_output_metadata(
        {
            f"n_unjudged_top_{config.judged_k}": MetadataValue.int(n_unjudged),
            "n_qrels_tasks": MetadataValue.int(len(qrels_tasks)),
            "qrels_csv_path": path_metadata(qrels_path),
        }
    )
    if e2e_generations.empty:
        return skipped(context, "no end-to-end answers to rate", pd.DataFrame(columns=["label_id"]))
    tasks = rater_tasks(e2e_generations, config.sample_size, config.seed, config.raters, day)
    path = folder / f"{day}.csv"
    write_text_atomically(tasks.drop(columns=["system", "query_id"]).to_csv(index=False), path)
    context.add_output_metadata(
        {
            "n_tasks": MetadataValue.int(len(tasks)),
            "csv_path": path_metadata(path),
            "raters": text_metadata(", ".join(config.raters)),
        }
    )
    return tasks
