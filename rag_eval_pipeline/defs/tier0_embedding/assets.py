"""Tier 0, embedding quality: corpus embeddings → cluster cohesion and separation."""

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue

from rag_eval_pipeline.defs.dataset.assets import DatasetTables, as_dataset
from rag_eval_pipeline.defs.shared.metadata import summary_metadata, text_metadata
from rag_eval_pipeline.defs.shared.partitions import partition_parts
from rag_eval_pipeline.defs.shared.resources import EmbedderResource
from rag_eval_pipeline.defs.shared.skipping import skipped
from rag_eval_pipeline.defs.tier0_embedding import asset
from rag_eval_pipeline.evaluation.corpus_embedding import (
    EMBEDDING_COLUMNS,
    embed_corpus,
    embedding_matrix,
    embedding_quality_rows,
)
from rag_eval_pipeline.evaluation.summaries import empty_quality


@asset(
    description=(
        "One embedding per corpus document (title + text) from the embedder resource, with its "
        "topic cluster (the corpus `cluster` column, or k-means when absent). Embeddings come "
        "from a content-addressed cache, so unchanged documents are never embedded twice."
    ),
)
def corpus_embeddings(
    context: AssetExecutionContext,
    golden_dataset: DatasetTables,
    embedder: EmbedderResource,
) -> pd.DataFrame:
    dataset = as_dataset(context, golden_dataset)
    if not dataset.has_corpus:
        return skipped(
            context,
            "this dataset version ships no corpus texts",
            pd.DataFrame(columns=EMBEDDING_COLUMNS),
        )
    model = embedder.get()
    embedded = embed_corpus(dataset.corpus, model)
    context.add_output_metadata(
        {
            "n_documents": MetadataValue.int(len(embedded)),
            "embedded": MetadataValue.int(model.last_stats.embedded),
            "from_cache": MetadataValue.int(model.last_stats.from_cache),
            "embedding_model": text_metadata(model.model_name),
            "dimension": MetadataValue.int(int(embedding_matrix(embedded).shape[1])),
            "cluster_source": text_metadata(str(embedded["cluster_source"].iloc[0])),
        }
    )
    return embedded


@asset(
    description=(
        "Cluster metrics of the corpus embeddings: total within-cluster pairs, number of "
        "clusters, mean intra-cluster cosine similarity, mean inter-centroid euclidean distance, "
        "cosine silhouette (equal to scikit-learn's)."
    ),
)
def embedding_quality(
    context: AssetExecutionContext, corpus_embeddings: pd.DataFrame
) -> pd.DataFrame:
    if corpus_embeddings.empty:
        return skipped(context, "no corpus embeddings for this dataset version", empty_quality())
    quality = embedding_quality_rows(corpus_embeddings)
    context.add_output_metadata(
        {
            **summary_metadata(quality, partition_parts(context)[0]),
            "cluster_source": text_metadata(str(corpus_embeddings["cluster_source"].iloc[0])),
        }
    )
    return quality
