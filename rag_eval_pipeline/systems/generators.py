"""The generators of the systems under test: they answer questions from retrieved contexts.

`OfflineGenerator` is extractive: it answers with the context sentences most similar to the
question (sentences and embeddings of `rag_eval_pipeline.embedding.sentences`). `LLMGenerator`
answers with an LLM through the generator prompt `GENERATOR` (numbered context, citations [n]).
Both answer `NO_CONTEXT_ANSWER` ("I don't know.") when a row has no context, without calling
anything, and return one row per question with `GENERATION_COLUMNS`.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import pandas as pd

from rag_eval_pipeline.datasets.values import aligned, as_chunks, as_text, missing_input
from rag_eval_pipeline.embedding.sentences import context_sentences, embed_sentences
from rag_eval_pipeline.llm.prompts import (
    Messages,
    PromptTemplate,
    format_contexts,
    oversized,
)

if TYPE_CHECKING:
    from rag_eval_pipeline.embedding.embedder import Embedder
    from rag_eval_pipeline.llm.client import LLMClient

OFFLINE_GENERATOR_MODEL = "offline-extractive-generator"
NO_CONTEXT_ANSWER = "I don't know."

GENERATION_COLUMNS: dict[str, str] = {
    "answer": "str",
    "generator_model": "str",
    "latency_ms": "float64",
    "error": "str",
    "cached": "bool",
    "prompt_tokens": "int64",
    "completion_tokens": "int64",
    "cost_usd": "float64",
}

GENERATOR = PromptTemplate(
    name="generator",
    system=(
        "Answer the question using only the numbered context passages. Cite every passage you "
        "use with its number in square brackets, e.g. [2]. Be concise. If the passages do not "
        f"contain the answer, reply exactly: {NO_CONTEXT_ANSWER}"
    ),
    user="<context>\n$context\n</context>\n\n<question>\n$question\n</question>",
)


def generator_prompt(question: str, contexts: Sequence[str]) -> Messages:
    """Answer from the numbered context only, citing passages as [n]."""
    return GENERATOR.render(question=question, context=format_contexts(contexts))


class Generator(Protocol):
    """Answers questions from retrieved contexts: one row per question (`GENERATION_COLUMNS`)."""

    @property
    def generator_model(self) -> str: ...

    def generate(
        self,
        questions: Sequence[str],
        contexts: Sequence[Sequence[str]],
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame: ...


def generation_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Generation rows → a DataFrame with `GENERATION_COLUMNS` and their dtypes."""
    return pd.DataFrame(list(rows), columns=list(GENERATION_COLUMNS)).astype(GENERATION_COLUMNS)


class OfflineGenerator:
    """Extractive answers: the `max_sentences` context sentences closest to the question.

    Sentences of all chunks are de-duplicated, ranked by cosine with the question (ties keep
    the earlier sentence), and the top ones are joined in their context order. No context →
    `NO_CONTEXT_ANSWER`. `latency_ms` is the batch time divided evenly over the rows.
    """

    def __init__(self, embedder: Embedder, max_sentences: int = 2) -> None:
        if max_sentences < 1:
            raise ValueError(f"max_sentences must be at least 1, got {max_sentences}")
        self.embedder = embedder
        self.max_sentences = max_sentences

    @property
    def generator_model(self) -> str:
        """Always `OFFLINE_GENERATOR_MODEL`."""
        return OFFLINE_GENERATOR_MODEL

    def generate(
        self,
        questions: Sequence[str],
        contexts: Sequence[Sequence[str]],
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame:
        """One extractive answer per question; `use_cache` has no effect."""
        start = time.perf_counter()
        aligned(questions=questions, contexts=contexts)
        texts = [as_text(q) for q in questions]
        problems = [missing_input(question=q) for q in texts]
        candidates = [
            [] if problem else list(dict.fromkeys(context_sentences(chunks)))
            for problem, chunks in zip(problems, contexts, strict=True)
        ]
        answerable = [bool(c) for c in candidates]
        question_vectors = embed_sentences(
            self.embedder, [[q] if ok else [] for ok, q in zip(answerable, texts, strict=True)]
        )
        sentences = embed_sentences(self.embedder, candidates)
        rows = []
        for i, problem in enumerate(problems):
            if problem:
                rows.append({"answer": None, "error": problem})
            elif not answerable[i]:
                rows.append({"answer": NO_CONTEXT_ANSWER, "error": None})
            else:
                similarity = sentences[i].vectors @ question_vectors[i].vectors[0]
                ranked = sorted(range(len(similarity)), key=lambda j: (-similarity[j], j))
                chosen = sorted(ranked[: self.max_sentences])
                answer = " ".join(sentences[i].texts[j] for j in chosen)
                rows.append({"answer": answer, "error": None})
        latency_ms = (time.perf_counter() - start) * 1000 / max(len(rows), 1)
        common = {
            "generator_model": self.generator_model,
            "latency_ms": latency_ms,
            "cached": False,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost_usd": 0.0,
        }
        return generation_frame([row | common for row in rows])


class LLMGenerator:
    """Answers through an LLM with the generator prompt (numbered context, citations [n]).

    A row without any non-blank chunk gets `NO_CONTEXT_ANSWER` without a call; a prompt over
    `MAX_PROMPT_CHARS` (never sent), a failed call or an empty reply gives a row with `answer`
    None and `error` set.
    """

    def __init__(self, client: LLMClient) -> None:
        self.client = client

    @property
    def generator_model(self) -> str:
        """The litellm model string of the generator."""
        return self.client.config.model

    def generate(
        self,
        questions: Sequence[str],
        contexts: Sequence[Sequence[str]],
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame:
        """One answer per question, all prompts sent as one batch."""
        aligned(questions=questions, contexts=contexts)
        texts = [as_text(q) for q in questions]
        chunk_lists = [[c for c in as_chunks(chunks) if c.strip()] for chunks in contexts]
        candidates = {
            i: generator_prompt(q, chunks)
            for i, (q, chunks) in enumerate(zip(texts, chunk_lists, strict=True))
            if q and chunks
        }
        too_long = {i: oversized(prompt) for i, prompt in candidates.items() if oversized(prompt)}
        asked = [i for i in candidates if i not in too_long]
        prompts = [candidates[i] for i in asked]
        replies = self.client.complete_many(prompts, use_cache=use_cache) if prompts else []
        reply_of = dict(zip(asked, replies, strict=True))
        base = {
            "generator_model": self.generator_model,
            "latency_ms": 0.0,
            "cached": False,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost_usd": 0.0,
        }
        rows = []
        for i, question in enumerate(texts):
            reply = reply_of.get(i)
            if reply is None:
                problem = missing_input(question=question) or too_long.get(i)
                rows.append(
                    base | {"answer": None if problem else NO_CONTEXT_ANSWER, "error": problem}
                )
                continue
            if reply.error is not None:
                answer, error = None, f"llm call failed: {reply.error}"
            elif reply.text is None or not reply.text.strip():
                answer, error = None, "empty reply"
            else:
                answer, error = reply.text.strip(), None
            rows.append(
                {
                    "answer": answer,
                    "error": error,
                    "generator_model": reply.model or self.generator_model,
                    "latency_ms": reply.latency_ms,
                    "cached": reply.cached,
                    "prompt_tokens": reply.prompt_tokens,
                    "completion_tokens": reply.completion_tokens,
                    "cost_usd": reply.cost_usd,
                }
            )
        return generation_frame(rows)
