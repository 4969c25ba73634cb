"""Tier 2, generation with ideal context: answers from the relevant documents → judgments."""

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue

from rag_eval_pipeline.defs.dataset.assets import DatasetTables, as_dataset
from rag_eval_pipeline.defs.runs.pools import LLM_GENERATOR_POOL, LLM_JUDGE_POOL
from rag_eval_pipeline.defs.shared.llm_metadata import judgments_metadata, llm_usage_metadata
from rag_eval_pipeline.defs.shared.metadata import summary_metadata, text_metadata
from rag_eval_pipeline.defs.shared.partitions import partition_parts
from rag_eval_pipeline.defs.shared.resources import EmbedderResource, LLMResource
from rag_eval_pipeline.defs.shared.skipping import skipped
from rag_eval_pipeline.defs.tier2_generation import asset
from rag_eval_pipeline.evaluation.answer_scores import score_answers
from rag_eval_pipeline.evaluation.composite import load_weights
from rag_eval_pipeline.evaluation.generation import (
    JUDGMENT_COLUMNS,
    generate,
    ideal_contexts,
)
from rag_eval_pipeline.evaluation.summaries import empty_quality, summarize_judgments
from rag_eval_pipeline.judges.metrics import metrics_for
from rag_eval_pipeline.metrics.text import BLEU_SIGNATURE

TIER = "tier2_generation"
GENERATION_OUTPUT = ["system", "query_id", "question", "ground_truth_answer", "contexts", "answer"]


@asset(
    pool=LLM_GENERATOR_POOL,
    description=(
        "The generator's answer to every question given its qrels-relevant documents (the "
        "ideal context), isolating generation quality from retrieval."
    ),
)
def ideal_context_generations(
    context: AssetExecutionContext,
    golden_dataset: DatasetTables,
    embedder: EmbedderResource,
    generator_llm: LLMResource,
) -> pd.DataFrame:
    dataset = as_dataset(context, golden_dataset)
    if not dataset.has_corpus:
        return skipped(
            context,
            "this dataset version ships no corpus texts to use as context",
            pd.DataFrame(columns=GENERATION_OUTPUT),
        )
    generator, client = generator_llm.generator(embedder.get())
    generations = generate(ideal_contexts(dataset), generator, generator.generator_model)
    context.add_output_metadata(
        {
            "n_questions": MetadataValue.int(len(generations)),
            "n_generation_errors": MetadataValue.int(int(generations["error"].notna().sum())),
            **llm_usage_metadata("generator", generator.generator_model, client),
        }
    )
    return generations


@asset(
    pool=LLM_JUDGE_POOL,
    description=(
        "One row per (question, metric): LLM-judge faithfulness and answer relevance (rubric "
        "and RAGAS variant), ROUGE-1/2/L F1, sentence BLEU, exact match, semantic "
        "similarity, regex match against the queries' expected_pattern, citation "
        "precision/recall/F1 of [n] markers (n-th document of the ideal context), and the "
        "composite score (config/composite.yaml)."
    ),
)
def generation_judgments(
    context: AssetExecutionContext,
    golden_dataset: DatasetTables,
    ideal_context_generations: pd.DataFrame,
    embedder: EmbedderResource,
    judge_llm: LLMResource,
) -> pd.DataFrame:
    if ideal_context_generations.empty:
        return skipped(context, "no generations to judge", pd.DataFrame(columns=JUDGMENT_COLUMNS))
    model = embedder.get()
    judge, client = judge_llm.judge(model)
    weights = load_weights()
    judgments = score_answers(
        ideal_context_generations,
        as_dataset(context, golden_dataset),
        judge,
        model,
        metrics_for("tier2"),
        weights,
        sources="context_doc_ids",
    )
    context.add_output_metadata(
        {
            **judgments_metadata(judgments, weights, judge.judge_model, client),
            "bleu_signature": text_metadata(BLEU_SIGNATURE),
        }
    )
    return judgments


@asset(
    description=(
        "avg_faithfulness, avg_answer_relevance, avg_rouge1_f/2_f/L_f, avg_bleu, ... with "
        "std, count, 95% bootstrap CI and the judge error rate."
    ),
)
def generation_quality(
    context: AssetExecutionContext, generation_judgments: pd.DataFrame
) -> pd.DataFrame:
    if generation_judgments.empty:
        return skipped(context, "no judgments for this dataset version", empty_quality())
    quality = summarize_judgments(generation_judgments, TIER)
    context.add_output_metadata(summary_metadata(quality, partition_parts(context)[0]))
    return quality
