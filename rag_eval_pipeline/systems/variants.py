"""Configurations of the reference RAG: retriever, top k, embedder and fault injection.

A `RagVariant` is one configuration of the reference system, as named in the variants file of
the `system_comparison` asset (`config/variants.yaml`):

- `retriever`: `dense` (cosine over the embedder's vectors, the reference RAG's default),
  `bm25`, or `hybrid-rrf` (reciprocal-rank fusion of the dense and BM25 rankings, each taken
  to `FUSION_DEPTH` documents, as Tier 1's `hybrid-rrf` run);
- `top_k`: documents handed to the generator;
- `embedder`: a sentence-transformers model path or name for dense retrieval (default: the
  evaluation embedder);
- `skip_top`: drop the best documents first (fault injection, as `RAG_EVAL_SKIP_TOP`).

`VariantRag` is `ReferenceRag` with the retriever swapped; generation and the output table are
the reference RAG's, so variants differ only in what they retrieve.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Annotated, Any

import pandas as pd
from pydantic import BeforeValidator

from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.storage.config_files import ConfigModel
from rag_eval_pipeline.systems.generators import Generator
from rag_eval_pipeline.systems.rag import ReferenceRag
from rag_eval_pipeline.systems.retrievers import (
    BM25,
    DENSE,
    HYBRID,
    RETRIEVERS,
    bm25_scores,
    dense_scores,
    document_texts,
    reciprocal_rank_fusion,
    top_k_run,
)

FUSION_DEPTH = 100


class VariantRag(ReferenceRag):
    """The reference RAG with a dense, BM25 or hybrid (RRF) retriever."""

    def __init__(
        self,
        embedder: Embedder,
        corpus: pd.DataFrame,
        generator: Generator,
        *,
        retriever: str = DENSE,
        top_k: int = 3,
        skip_top: int = 0,
        name: str = "reference-rag",
    ) -> None:
        if retriever not in RETRIEVERS:
            raise ValueError(f"unknown retriever {retriever!r}: use one of {list(RETRIEVERS)}")
        super().__init__(embedder, corpus, generator, top_k=top_k, skip_top=skip_top, name=name)
        self.retriever = retriever

    def retrieve(self, queries: pd.DataFrame) -> pd.DataFrame:
        """The run of the configured retriever (`system, query_id, doc_id, rank, score`)."""
        if self.retriever == DENSE:
            return super().retrieve(queries)
        depth = self.top_k + self.skip_top
        questions = queries["question"].tolist()
        query_ids, doc_ids = queries["query_id"].tolist(), self.corpus["doc_id"].tolist()
        documents = document_texts(self.corpus)
        candidates = depth if self.retriever == BM25 else max(depth, FUSION_DEPTH)
        run = top_k_run(
            bm25_scores(questions, documents), query_ids, doc_ids, candidates, self.name
        )
        if self.retriever == HYBRID:
            dense = top_k_run(
                dense_scores(self.embedder.encode(questions), self.embedder.encode(documents)),
                query_ids,
                doc_ids,
                candidates,
                self.name,
            )
            run = reciprocal_rank_fusion(dense, run, system=self.name, k=depth)
        run = run[run["rank"] > self.skip_top].assign(rank=lambda r: r["rank"] - self.skip_top)
        return run.reset_index(drop=True)


@dataclass(frozen=True)
class RagVariant:
    """One configuration of the reference RAG (see the module docstring for each field)."""

    name: str
    retriever: str = DENSE
    top_k: int = 3
    skip_top: int = 0
    embedder: str | None = None

    def build(self, embedder: Embedder, corpus: pd.DataFrame, generator: Generator) -> VariantRag:
        """The variant's RAG; `embedder` is used for dense retrieval unless the variant names
        its own model (then a copy of it with that model, sharing its cache folder)."""
        retrieval_embedder = (
            embedder if self.embedder is None else replace(embedder, model=self.embedder)
        )
        return VariantRag(
            retrieval_embedder,
            corpus,
            generator,
            retriever=self.retriever,
            top_k=self.top_k,
            skip_top=self.skip_top,
            name=self.name,
        )


def _retriever(value: Any) -> str:
    if value not in RETRIEVERS:
        raise ValueError(f"unknown retriever {value!r}; use one of {list(RETRIEVERS)}")
    return str(value)


def _at_least(minimum: int) -> Callable[[Any], int]:
    def check(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"must be an integer ≥ {minimum}, got {value!r}")
        return value

    return check


def _model_name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"must be a model path or name, got {value!r}")
    return value


class VariantEntry(ConfigModel):
    """One entry of `variants:` in `config/variants.yaml` (see the module docstring)."""

    retriever: Annotated[str, BeforeValidator(_retriever)] = DENSE
    top_k: Annotated[int, BeforeValidator(_at_least(1))] = 3
    skip_top: Annotated[int, BeforeValidator(_at_least(0))] = 0
    embedder: Annotated[str, BeforeValidator(_model_name)] | None = None

    def variant(self, name: str) -> RagVariant:
        """The configuration this entry names `name`."""
        return RagVariant(name, self.retriever, self.top_k, self.skip_top, self.embedder)
