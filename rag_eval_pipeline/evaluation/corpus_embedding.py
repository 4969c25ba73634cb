"""Tier 0 in library form: a corpus embedded with its topic clusters, and their cluster metrics.

The `corpus_embeddings` and `embedding_quality` assets call these on the partition's corpus; the
model bridge (`evaluation.model_bridge`) calls them on the baseline's stored corpus with today's
embedder, so an embedder change is measured the way the assets measure a day.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.summaries import single_values
from rag_eval_pipeline.metrics.embedding import cluster_quality, kmeans_labels
from rag_eval_pipeline.systems.retrievers import document_texts

TIER = "tier0_embedding"
EMBEDDING_COLUMNS = ["doc_id", "cluster", "cluster_source", "embedding_model", "embedding"]
CORPUS_LABELS, KMEANS = "corpus labels", "k-means (no cluster column)"


def embed_corpus(corpus: pd.DataFrame, embedder: Embedder) -> pd.DataFrame:
    """One row per document (`EMBEDDING_COLUMNS`): its embedding (title + text) and its topic
    cluster, the corpus `cluster` column when every document has one, else k-means on the
    embeddings (`metrics.embedding.kmeans_labels`)."""
    vectors = embedder.encode(document_texts(corpus))
    if "cluster" in corpus.columns and corpus["cluster"].notna().all():
        clusters, source = corpus["cluster"].astype(str).to_numpy(), CORPUS_LABELS
    else:
        clusters, source = kmeans_labels(vectors).astype(str), KMEANS
    return pd.DataFrame(
        {
            "doc_id": corpus["doc_id"].to_numpy(),
            "cluster": clusters,
            "cluster_source": source,
            "embedding_model": embedder.model_name,
            "embedding": list(vectors),
        }
    )


def embedding_matrix(corpus_embeddings: pd.DataFrame) -> np.ndarray:
    """The stored embeddings as one (documents × dimension) float32 matrix."""
    if corpus_embeddings.empty:
        return np.zeros((0, 0), dtype=np.float32)
    return np.vstack(corpus_embeddings["embedding"].to_numpy()).astype(np.float32)


def embedding_quality_rows(corpus_embeddings: pd.DataFrame) -> pd.DataFrame:
    """The cluster metrics of `embed_corpus`'s table as quality rows of Tier 0, system = the
    embedding model (`metrics.embedding.cluster_quality`)."""
    values = cluster_quality(
        embedding_matrix(corpus_embeddings), corpus_embeddings["cluster"].to_numpy()
    )
    model = str(corpus_embeddings["embedding_model"].iloc[0])
    return single_values(values, TIER, model, count=len(corpus_embeddings))
