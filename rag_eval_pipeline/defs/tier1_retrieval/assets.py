"""Tier 1, retrieval: runs of every system → per-query IR metrics → per-system quality."""

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue

from rag_eval_pipeline.defs.dataset.assets import DatasetTables, as_dataset
from rag_eval_pipeline.defs.shared.metadata import markdown_table, summary_metadata
from rag_eval_pipeline.defs.shared.partitions import partition_parts
from rag_eval_pipeline.defs.shared.resources import EmbedderResource, RagSystemResource
from rag_eval_pipeline.defs.tier1_retrieval import asset
from rag_eval_pipeline.evaluation.corpus_embedding import embedding_matrix
from rag_eval_pipeline.evaluation.retrieval import (
    all_runs,
    evaluate_runs,
    logged_runs,
    real_user_run,
    reference_runs,
)
from rag_eval_pipeline.evaluation.summaries import summarize_wide
from rag_eval_pipeline.metrics.retrieval import DEFAULT_RETRIEVAL_METRICS
from rag_eval_pipeline.storage.batches import TableBatches

TIER = "tier1_retrieval"
PLOTTED_METRICS = ("hit_rate@1", "hit_rate@10", "mrr", "ndcg@10", "recall@10", "map")


@asset(
    description=(
        "Ranked documents per query from every source: the reference retrievers (dense, BM25, "
        "RRF hybrid) over the corpus, the TREC runs shipped with the version, and the "
        "retrieved ids of logged real-user traffic. Stored one row group per chunk of queries "
        "and read back chunk by chunk, so memory does not grow with the number of queries."
    ),
)
def retrieval_runs(
    context: AssetExecutionContext,
    golden_dataset: DatasetTables,
    corpus_embeddings: pd.DataFrame,
    embedder: EmbedderResource,
    rag_system: RagSystemResource,
) -> TableBatches:
    dataset = as_dataset(context, golden_dataset)
    frames: list[pd.DataFrame | TableBatches] = [logged_runs(dataset), real_user_run(dataset)[0]]
    if dataset.has_corpus and not corpus_embeddings.empty:
        frames.insert(
            0,
            reference_runs(
                dataset,
                embedder.get(),
                embedding_matrix(corpus_embeddings),
                depth=rag_system.retrieval_depth,
                skip_top=rag_system.skip_top,
            ),
        )
    context.add_output_metadata({"skip_top": MetadataValue.int(rag_system.skip_top)})
    return all_runs(frames)


@asset(
    description=(
        "Per-query IR metrics of every system with trec_eval semantics: HitRate@k, MRR, "
        "Recall@k, Precision@k, NDCG@k (linear and exponential gain), MAP, R-precision."
    ),
)
def retrieval_metrics(
    context: AssetExecutionContext,
    golden_dataset: DatasetTables,
    retrieval_runs: TableBatches,
) -> pd.DataFrame:
    dataset = as_dataset(context, golden_dataset)
    per_query = evaluate_runs(
        retrieval_runs,
        dataset.qrels,
        real_user_run(dataset)[1],
        relevance_level=dataset.relevance_level,
    )
    queries = per_query.groupby(["source", "system"]).size().rename("queries").reset_index()
    context.add_output_metadata(
        {
            "n_rows": MetadataValue.int(len(per_query)),
            "n_systems": MetadataValue.int(len(queries)),
            "systems": MetadataValue.md(markdown_table(queries)),
            "relevance_level": MetadataValue.int(dataset.relevance_level),
        }
    )
    return per_query


@asset(
    description="Mean, std, count and 95% bootstrap CI of every IR metric per system.",
)
def retrieval_quality(
    context: AssetExecutionContext, retrieval_metrics: pd.DataFrame
) -> pd.DataFrame:
    return summarized_retrieval(context, retrieval_metrics)


def summarized_retrieval(context: AssetExecutionContext, metrics: pd.DataFrame) -> pd.DataFrame:
    """The IR metrics' per-system summary (scorecard tier `tier1_retrieval`), its headline
    metrics plotted one series per version."""
    quality = summarize_wide(metrics, list(DEFAULT_RETRIEVAL_METRICS), TIER)
    context.add_output_metadata(
        summary_metadata(quality, partition_parts(context)[0], PLOTTED_METRICS)
    )
    return quality
