"""Systems under test: the reference RAG, a user's Python callable, logged answers, or HTTP.

Every system answers a table of questions with one row per question in `RAG_OUTPUT_COLUMNS`:
the answer, the retrieved document ids and their texts, retrieval/generation/total latency, the
generator model and an `error` (a failing question is an error row, never a lost row).
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import numpy as np
import pandas as pd

from rag_eval_pipeline.datasets.http_config import HttpSystemConfig
from rag_eval_pipeline.embedding.embedder import Embedder, loading_seconds
from rag_eval_pipeline.systems import REFERENCE_RAG
from rag_eval_pipeline.systems.answers import RAG_OUTPUT_COLUMNS, corpus_texts
from rag_eval_pipeline.systems.generators import Generator
from rag_eval_pipeline.systems.http_rag import HttpRag
from rag_eval_pipeline.systems.retrievers import dense_scores, document_texts, top_k_run


class RagSystem(Protocol):
    """Anything that answers the golden questions."""

    name: str

    def answer(self, queries: pd.DataFrame) -> pd.DataFrame: ...


class ReferenceRag:
    """Dense top-k retrieval over the corpus, then the configured generator.

    `skip_top` drops the best `skip_top` documents before generation: a fault-injection knob
    that simulates a degraded index (the demo uses it to show a regression alert).
    """

    def __init__(
        self,
        embedder: Embedder,
        corpus: pd.DataFrame,
        generator: Generator,
        top_k: int = 3,
        skip_top: int = 0,
        name: str = REFERENCE_RAG,
    ) -> None:
        self.embedder = embedder
        self.corpus = corpus.reset_index(drop=True)
        self.generator = generator
        self.top_k = top_k
        self.skip_top = skip_top
        self.name = name

    def retrieve(self, queries: pd.DataFrame) -> pd.DataFrame:
        """The run of the reference retriever (`system, query_id, doc_id, rank, score`)."""
        doc_vectors = self.embedder.encode(document_texts(self.corpus))
        query_vectors = self.embedder.encode(queries["question"].tolist())
        run = top_k_run(
            dense_scores(query_vectors, doc_vectors),
            queries["query_id"].tolist(),
            self.corpus["doc_id"].tolist(),
            self.top_k + self.skip_top,
            self.name,
        )
        if self.skip_top:
            run = run[run["rank"] > self.skip_top].assign(rank=lambda r: r["rank"] - self.skip_top)
        return run.reset_index(drop=True)

    def answer(self, queries: pd.DataFrame) -> pd.DataFrame:
        """Retrieve and generate for every question; the retrieval latency leaves out the
        one-time loading of the embedding model (which only the first run of a process pays)."""
        start, loading = time.perf_counter(), loading_seconds()
        run = self.retrieve(queries)
        elapsed = time.perf_counter() - start - (loading_seconds() - loading)
        retrieval_ms = elapsed * 1000 / max(len(queries), 1)
        texts = dict(zip(self.corpus["doc_id"], document_texts(self.corpus), strict=True))
        doc_ids = (
            run.groupby("query_id", sort=False)["doc_id"]
            .agg(list)
            .reindex(queries["query_id"])
            .map(lambda ids: ids if isinstance(ids, list) else [])
            .tolist()
        )
        contexts = [[texts[d] for d in ids] for ids in doc_ids]
        generations = self.generator.generate(queries["question"].tolist(), contexts)
        generation_ms = generations["latency_ms"].to_numpy(dtype=float)
        return pd.DataFrame(
            {
                "system": self.name,
                "query_id": queries["query_id"].to_numpy(),
                "question": queries["question"].to_numpy(),
                "answer": generations["answer"].to_numpy(),
                "retrieved_doc_ids": doc_ids,
                "contexts": contexts,
                "retrieval_latency_ms": retrieval_ms,
                "generation_latency_ms": generation_ms,
                "total_latency_ms": retrieval_ms + generation_ms,
                "generator_model": generations["generator_model"].to_numpy(),
                "error": generations["error"].to_numpy(),
            }
        )[RAG_OUTPUT_COLUMNS]


def load_callable(target: str) -> Callable[[str], Mapping[str, Any]]:
    """Import `package.module:function`, with a clear error when it cannot be found."""
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"rag_system target {target!r} must look like 'package.module:function'")
    try:
        function = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"cannot import rag_system target {target!r}: {error}") from error
    if not callable(function):
        raise ValueError(f"rag_system target {target!r} is not callable")
    return function


class CallableRag:
    """The user's own system: `function(question) -> {"answer", "retrieved_doc_ids"|"contexts"}`.

    An exception or a reply without `answer` becomes an error row; the other rows go on.
    """

    def __init__(self, target: str, corpus: pd.DataFrame | None = None) -> None:
        self.function = load_callable(target)
        self.name = target
        self.texts = corpus_texts(corpus)

    def _row(self, query_id: str, question: str) -> dict[str, Any]:
        start = time.perf_counter()
        try:
            reply = dict(self.function(question))
            answer = reply["answer"]
            error = None
        except Exception as exc:  # the user's code may raise anything; record it per row
            reply, answer, error = {}, None, f"{type(exc).__name__}: {exc}"
        total_ms = (time.perf_counter() - start) * 1000
        doc_ids = [str(d) for d in reply.get("retrieved_doc_ids", [])]
        contexts = list(reply.get("contexts") or [self.texts.get(d, "") for d in doc_ids])
        return {
            "system": self.name,
            "query_id": query_id,
            "question": question,
            "answer": answer,
            "retrieved_doc_ids": doc_ids,
            "contexts": contexts,
            "retrieval_latency_ms": float(reply.get("retrieval_latency_ms", np.nan)),
            "generation_latency_ms": float(reply.get("generation_latency_ms", np.nan)),
            "total_latency_ms": total_ms,
            "generator_model": str(reply.get("model", self.name)),
            "error": error,
        }

    def answer(self, queries: pd.DataFrame) -> pd.DataFrame:
        rows = [
            self._row(q, text)
            for q, text in zip(queries["query_id"], queries["question"], strict=True)
        ]
        return pd.DataFrame(rows, columns=RAG_OUTPUT_COLUMNS)


class LoggedRag:
    """Answers already produced by the system in production: the dataset's `answers` table."""

    def __init__(
        self, answers: pd.DataFrame, corpus: pd.DataFrame | None, name: str = "logged"
    ) -> None:
        self.answers = answers.drop_duplicates("query_id", keep="last").set_index("query_id")
        self.texts = corpus_texts(corpus)
        self.name = name

    def answer(self, queries: pd.DataFrame) -> pd.DataFrame:
        logged = self.answers.reindex(queries["query_id"])
        doc_ids = [
            list(ids) if isinstance(ids, list | np.ndarray) else []
            for ids in logged["retrieved_doc_ids"]
        ]
        latency = (
            logged["latency_ms"].to_numpy(dtype=float)
            if "latency_ms" in logged
            else np.full(len(logged), np.nan)
        )
        missing = logged["answer"].isna().to_numpy()
        return pd.DataFrame(
            {
                "system": self.name,
                "query_id": queries["query_id"].to_numpy(),
                "question": queries["question"].to_numpy(),
                "answer": logged["answer"].to_numpy(),
                "retrieved_doc_ids": doc_ids,
                "contexts": [[self.texts.get(d, "") for d in ids] for ids in doc_ids],
                "retrieval_latency_ms": np.nan,
                "generation_latency_ms": np.nan,
                "total_latency_ms": latency,
                "generator_model": self.name,
                "error": np.where(missing, "no logged answer for this query", None),
            }
        )[RAG_OUTPUT_COLUMNS]


def build_rag_system(
    kind: str,
    *,
    corpus: pd.DataFrame | None,
    answers: pd.DataFrame | None,
    embedder: Embedder,
    generator: Generator,
    target: str | None = None,
    http: HttpSystemConfig | None = None,
    top_k: int = 3,
    skip_top: int = 0,
) -> RagSystem:
    """The system under test for `kind` (`reference`, `callable`, `logged` or `http`)."""
    if kind == "reference":
        if corpus is None:
            raise ValueError("the reference RAG needs a corpus")
        return ReferenceRag(embedder, corpus, generator, top_k=top_k, skip_top=skip_top)
    if kind == "callable":
        if not target:
            raise ValueError("rag_system kind 'callable' needs target='package.module:function'")
        return CallableRag(target, corpus)
    if kind == "logged":
        if answers is None:
            raise ValueError("rag_system kind 'logged' needs an answers.* table in the dataset")
        return LoggedRag(answers, corpus)
    if kind == "http":
        if http is None:
            raise ValueError("rag_system kind 'http' needs its http configuration")
        return HttpRag(http, corpus)
    raise ValueError(f"unknown rag_system kind {kind!r}: use reference, callable, logged or http")
