"""Tier 0, embedding quality: corpus embeddings → cluster cohesion and separation."""

import numpy as np
import pandas as pd
from dagster import AssetExecutionContext, MetadataValue, asset

from rag_eval_pipeline.defs.dataset.assets import DatasetTables, as_dataset
from rag_eval_pipeline.defs.metadata import summary_metadata
from rag_eval_pipeline.defs.partitions import evaluation_partitions
from rag_eval_pipeline.defs.resources import EmbedderResource
from rag_eval_pipeline.defs.skipping import skipped
from rag_eval_pipeline.evaluation.summaries import empty_quality, single_values
from rag_eval_pipeline.metrics.embedding import cluster_quality, kmeans_labels
from rag_eval_pipeline.systems.retrievers import document_texts

TIER = "tier0_embedding"
EMBEDDING_COLUMNS = ["doc_id", "cluster", "cluster_source", "embedding_model", "embedding"]


def embedding_matrix(corpus_embeddings: pd.DataFrame) -> np.ndarray:
    """The stored embeddings as one (documents × dimension) float32 matrix."""
    if corpus_embeddings.empty:
        return np.zeros((0, 0), dtype=np.float32)
    return np.vstack(corpus_embeddings["embedding"].to_numpy()).astype(np.float32)


@asset(
    partitions_def=evaluation_partitions,
    group_name="1_embedding",
    kinds={"pandas", "parquet"},
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
    corpus = dataset.corpus
    model = embedder.get()
    vectors = model.encode(document_texts(corpus))
    if "cluster" in corpus.columns and corpus["cluster"].notna().all():
        clusters, source = corpus["cluster"].astype(str).to_numpy(), "corpus labels"
    else:
        clusters, source = kmeans_labels(vectors).astype(str), "k-means (no cluster column)"
    context.add_output_metadata(
        {
            "n_documents": MetadataValue.int(len(corpus)),
            "embedded": MetadataValue.int(model.last_stats.embedded),
            "from_cache": MetadataValue.int(model.last_stats.from_cache),
            "embedding_model": MetadataValue.text(model.model_name),
            "dimension": MetadataValue.int(int(vectors.shape[1])),
            "cluster_source": MetadataValue.text(source),
        }
    )
    return pd.DataFrame(
        {
            "doc_id": corpus["doc_id"].to_numpy(),
            "cluster": clusters,
            "cluster_source": source,
            "embedding_model": model.model_name,
            "embedding": list(vectors),
        }
    )


@asset(
    partitions_def=evaluation_partitions,
    group_name="1_embedding",
    kinds={"pandas", "parquet"},
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
    vectors = embedding_matrix(corpus_embeddings)
    values = cluster_quality(vectors, corpus_embeddings["cluster"].to_numpy())
    model = str(corpus_embeddings["embedding_model"].iloc[0])
    quality = single_values(values, TIER, model, count=len(corpus_embeddings))
    context.add_output_metadata(
        {
            **summary_metadata(quality),
            "cluster_source": MetadataValue.text(str(corpus_embeddings["cluster_source"].iloc[0])),
        }
    )
    return quality
