"""What every system under test answers: one row per question in `RAG_OUTPUT_COLUMNS` (the
answer, the retrieved document ids and their texts, retrieval/generation/total latency, the
generator model and an `error`), and the corpus lookup systems share."""

from __future__ import annotations

import pandas as pd

RAG_OUTPUT_COLUMNS = [
    "system",
    "query_id",
    "question",
    "answer",
    "retrieved_doc_ids",
    "contexts",
    "retrieval_latency_ms",
    "generation_latency_ms",
    "total_latency_ms",
    "generator_model",
    "error",
]


def corpus_texts(corpus: pd.DataFrame | None) -> dict[str, str]:
    """Document id → text, for systems that return ids without their texts."""
    return {} if corpus is None else dict(zip(corpus["doc_id"], corpus["text"], strict=True))
