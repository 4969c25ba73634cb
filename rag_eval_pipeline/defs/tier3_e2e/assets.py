"""Tier 3, end to end: the system under test retrieves and answers → judgments → quality."""

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue

from rag_eval_pipeline.datasets.golden import GoldenDataset
from rag_eval_pipeline.defs.dataset.assets import DatasetTables, as_dataset
from rag_eval_pipeline.defs.runs.pools import LLM_GENERATOR_POOL, LLM_JUDGE_POOL
from rag_eval_pipeline.defs.shared.llm_metadata import (
    criteria_metadata,
    judgments_metadata,
    llm_usage_metadata,
)
from rag_eval_pipeline.defs.shared.metadata import markdown_table, summary_metadata, text_metadata
from rag_eval_pipeline.defs.shared.partitions import partition_parts
from rag_eval_pipeline.defs.shared.resources import EmbedderResource, LLMResource, RagSystemResource
from rag_eval_pipeline.defs.shared.skipping import skipped
from rag_eval_pipeline.defs.tier3_e2e import asset
from rag_eval_pipeline.evaluation.answer_scores import score_answers
from rag_eval_pipeline.evaluation.composite import load_weights
from rag_eval_pipeline.evaluation.generation import (
    JUDGMENT_COLUMNS,
    judge_criteria,
)
from rag_eval_pipeline.evaluation.summaries import empty_quality, single_values, summarize_judgments
from rag_eval_pipeline.judges.criteria import configured_criteria
from rag_eval_pipeline.judges.metrics import metrics_for
from rag_eval_pipeline.llm.secrets import redact
from rag_eval_pipeline.metrics.correlation import correlations_by_system
from rag_eval_pipeline.metrics.stats import percentiles
from rag_eval_pipeline.metrics.traffic import LATENCY_PERCENTILES, latency_metric
from rag_eval_pipeline.systems.http_rag import HttpRag
from rag_eval_pipeline.systems.rag import RAG_OUTPUT_COLUMNS, build_rag_system
from rag_eval_pipeline.systems.staged_change import lost_answers_corpus
from rag_eval_pipeline.text.escaping import terminal_text

TIER = "tier3_e2e"


@asset(
    pool=LLM_GENERATOR_POOL,
    description=(
        "The system under test (reference RAG, your callable, your HTTP service, or logged "
        "answers) answers every question: answer, retrieved documents, "
        "retrieval/generation/total latency."
    ),
)
def e2e_generations(
    context: AssetExecutionContext,
    golden_dataset: DatasetTables,
    embedder: EmbedderResource,
    generator_llm: LLMResource,
    rag_system: RagSystemResource,
) -> pd.DataFrame:
    dataset = as_dataset(context, golden_dataset)
    kind = rag_system.kind_for(dataset)
    if kind == "reference" and not dataset.has_corpus:
        return skipped(
            context,
            "the reference RAG needs corpus texts; this version has none",
            pd.DataFrame(columns=[*RAG_OUTPUT_COLUMNS, "ground_truth_answer"]),
        )
    model = embedder.get()
    generator, client = generator_llm.generator(model)
    corpus, staged = _served_corpus(context, dataset, kind)
    system = build_rag_system(
        kind,
        corpus=corpus,
        answers=dataset.answers,
        embedder=model,
        generator=generator,
        target=rag_system.target,
        http=rag_system.http_for(dataset),
        top_k=rag_system.top_k,
        skip_top=rag_system.skip_top,
    )
    outputs = system.answer(dataset.queries)
    truths = dataset.queries.set_index("query_id").get("ground_truth_answer")
    outputs["ground_truth_answer"] = outputs["query_id"].map(truths) if truths is not None else None
    errors = outputs["error"].dropna()
    if len(errors):
        context.log.warning(
            terminal_text(
                redact(
                    f"{system.name}: {len(errors)} of {len(outputs)} question(s) are error "
                    f"rows; first: {errors.iloc[0]}"
                )
            )
        )
    usage = system.usage.as_metadata() if isinstance(system, HttpRag) else {}
    context.add_output_metadata(
        {
            "system": text_metadata(system.name),
            "n_questions": MetadataValue.int(len(outputs)),
            "n_errors": MetadataValue.int(len(errors)),
            **{f"http_{name}": MetadataValue.int(value) for name, value in usage.items()},
            "top_k": MetadataValue.int(rag_system.top_k),
            "skip_top": MetadataValue.int(rag_system.skip_top),
            "staged_change_questions": MetadataValue.int(len(staged)),
            **llm_usage_metadata("generator", generator.generator_model, client),
        }
    )
    return outputs


def _served_corpus(
    context: AssetExecutionContext, dataset: GoldenDataset, kind: str
) -> tuple[pd.DataFrame, list[str]]:
    """The corpus the system under test retrieves from on the partition's day, and the questions
    whose relevant documents a staged change (`dataset.yaml`) removed from it that day."""
    _, day = partition_parts(context)
    if kind != "reference" or not dataset.manifest.change_active(day):
        return dataset.corpus, []
    corpus, staged = lost_answers_corpus(
        dataset.corpus, dataset.relevant_qrels, dataset.manifest.staged_change_drop or 0.0
    )
    context.log.info(
        f"staged change (dataset.yaml): the index lost the relevant documents of "
        f"{len(staged)} question(s) on {day}"
    )
    return corpus, staged


@asset(
    pool=LLM_JUDGE_POOL,
    description=(
        "One row per (question, metric): judge E2E usefulness, faithfulness, answer "
        "relevance, RAGAS context "
        "precision/recall and answer correctness; ROUGE, BLEU and semantic similarity; "
        "context relevance (mean question–chunk cosine); exact match, regex match against "
        "the queries' expected_pattern, citation precision/recall/F1 of [n] markers; the "
        "composite score (config/composite.yaml)."
    ),
)
def e2e_judgments(
    context: AssetExecutionContext,
    golden_dataset: DatasetTables,
    e2e_generations: pd.DataFrame,
    embedder: EmbedderResource,
    judge_llm: LLMResource,
) -> pd.DataFrame:
    if e2e_generations.empty:
        return skipped(
            context, "no end-to-end answers to judge", pd.DataFrame(columns=JUDGMENT_COLUMNS)
        )
    model = embedder.get()
    judge, client = judge_llm.judge(model)
    weights = load_weights()
    judgments = score_answers(
        e2e_generations,
        as_dataset(context, golden_dataset),
        judge,
        model,
        metrics_for("tier3"),
        weights,
        with_context_relevance=True,
    )
    custom, not_computed = judge_criteria(e2e_generations, judge, configured_criteria("tier3"))
    judgments = pd.concat([judgments, custom], ignore_index=True)
    context.add_output_metadata(
        {
            **judgments_metadata(judgments, weights, judge.judge_model, client),
            **criteria_metadata(not_computed),
        }
    )
    return judgments


@asset(
    description=(
        "avg_e2e_score, avg_semantic_similarity, ROUGE, BLEU, answer correctness, context "
        "precision/recall with CIs and error rates; total latency p50/p95/p99."
    ),
)
def e2e_quality(
    context: AssetExecutionContext,
    e2e_generations: pd.DataFrame,
    e2e_judgments: pd.DataFrame,
) -> pd.DataFrame:
    if e2e_judgments.empty:
        return skipped(context, "no end-to-end judgments for this dataset version", empty_quality())
    quality = [summarize_judgments(e2e_judgments, TIER)]
    for system, rows in e2e_generations.groupby("system"):
        latency = percentiles(rows["total_latency_ms"].to_numpy(dtype=float), LATENCY_PERCENTILES)
        quality.append(
            single_values(
                {latency_metric("latency", q): latency[f"p{q}"] for q in LATENCY_PERCENTILES},
                TIER,
                str(system),
                count=int(rows["total_latency_ms"].notna().sum()),
            )
        )
    summary = pd.concat(quality, ignore_index=True)
    context.add_output_metadata(
        {
            **summary_metadata(summary, partition_parts(context)[0]),
            **correlation_metadata(e2e_judgments),
        }
    )
    return summary


def correlation_metadata(judgments: pd.DataFrame) -> dict[str, MetadataValue]:
    """Per system, the Pearson correlation matrix of the RAGAS-style metrics over questions."""
    return {
        f"correlations/{system}": MetadataValue.md(
            markdown_table(matrix.reset_index(names="metric"))
        )
        for system, matrix in correlations_by_system(judgments).items()
    }
