"""Context precision: are the chunks that help answer ranked first?

score = Σ_k (precision@k × v_k) / Σ_k v_k over the verdicts v_k ∈ {0, 1} of the ranked chunks
(`metrics.ragas.context_precision`, the RAGAS average precision); 0 when no chunk is relevant;
no chunk at all has no score, only the error `no contexts`.

- LLM judge: `CONTEXT_PRECISION` asks for one verdict per numbered chunk, useful for the
  ground-truth answer or not; reply {"verdicts": [1 | 0, ...]}, one per chunk (`interpret`; a
  wrong count is an invalid reply).
- Offline judge: chunk k is relevant when one of its sentences supports one of the ground-truth
  sentences (`OfflineJudge.support` ≥ threshold; `heuristic_row`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, Field

from rag_eval_pipeline.embedding.sentences import chunk_sentences, embed_sentences, split_sentences
from rag_eval_pipeline.judges.heuristics import dumps, error_row, rounded, unless
from rag_eval_pipeline.judges.prompts import format_instructions
from rag_eval_pipeline.judges.replies import Flag, Interpretation, InvalidReplyError, read
from rag_eval_pipeline.judges.spec import JudgedMetric, Problems, Texts
from rag_eval_pipeline.llm.prompts import Messages, PromptTemplate, format_contexts
from rag_eval_pipeline.metrics.ragas import context_precision

if TYPE_CHECKING:
    from rag_eval_pipeline.judges.offline import OfflineJudge

NAME = "context_precision"
SCORECARD_NAME = "avg_context_precision"
DETAIL_COLUMNS: dict[str, str] = {"n_contexts": "Int64", "n_relevant": "Int64"}
NO_TRUTH_CLAIMS = "no ground-truth claims"


class Reply(BaseModel):
    """The reply `CONTEXT_PRECISION` asks for: one verdict (1 or 0) per numbered chunk."""

    verdicts: list[Flag] = Field(description="the i-th for chunk [i]: 1 if useful, 0 if not")


CONTEXT_PRECISION = PromptTemplate(
    name="context_precision",
    system=(
        "You judge retrieved context chunks. For each numbered chunk, in order, decide whether it "
        "was useful in arriving at the ground-truth answer to the question: 1 if useful, 0 if "
        "not.\n"
        "Return exactly $n_chunks verdicts, the i-th for chunk [i].\n" + format_instructions(Reply)
    ),
    user=(
        "<question>\n$question\n</question>\n\n<ground_truth>\n$ground_truth\n</ground_truth>\n\n"
        "<context>\n$context\n</context>"
    ),
)


def context_precision_prompt(question: str, contexts: Sequence[str], ground_truth: str) -> Messages:
    """One relevance verdict per ranked chunk, in rank order."""
    return CONTEXT_PRECISION.render(
        question=question,
        ground_truth=ground_truth,
        context=format_contexts(contexts),
        n_chunks=str(len(contexts)),
    )


def scored(verdicts: Sequence[int]) -> Interpretation:
    """The verdicts of the ranked chunks → context precision, with the chunk counts."""
    details = {"n_contexts": len(verdicts), "n_relevant": sum(verdicts)}
    return context_precision(verdicts), None, details


def interpret(payload: dict[str, Any], n_chunks: int) -> Interpretation:
    """The reply's verdicts, exactly `n_chunks` of them, → context precision."""
    verdicts = read(Reply, payload).verdicts
    if len(verdicts) != n_chunks:
        raise InvalidReplyError(f"expected {n_chunks} verdicts, got {len(verdicts)}")
    return scored(verdicts)


def heuristic_row(best: Sequence[float], threshold: float) -> dict[str, Any]:
    """The offline row: chunk k is relevant when `best[k]` (the best support of a ground-truth
    sentence by one of its sentences) reaches `threshold`."""
    verdicts = [int(b >= threshold) for b in best]
    score, error, details = scored(verdicts)
    reply = {"verdicts": verdicts, "support": [rounded(b) for b in best]}
    return {"score": score, "error": error, "raw_reply": dumps(reply), **details}


def offline_rows(
    judge: OfflineJudge, texts: Sequence[Texts], problems: Problems
) -> list[dict[str, Any]]:
    """The offline judge's rows: each chunk's best support of a ground-truth sentence; a ground
    truth without a sentence (no word) has no score, only the error `no ground-truth claims`."""
    truths = (split_sentences(row["ground_truth"] or "") for row in texts)
    truth_sentences = embed_sentences(judge.embedder, unless(problems, truths))
    chunks = [
        sentences
        for problem, row in zip(problems, texts, strict=True)
        if not problem
        for sentences in chunk_sentences(row["contexts"])
    ]
    evidence = iter(embed_sentences(judge.embedder, chunks))
    rows = []
    for i, (problem, row) in enumerate(zip(problems, texts, strict=True)):
        if problem:
            rows.append(error_row(problem))
            continue
        supports = [judge.support(truth_sentences[i], next(evidence)) for _ in row["contexts"]]
        if len(truth_sentences[i]) == 0:
            rows.append(error_row(NO_TRUTH_CLAIMS))
            continue
        rows.append(heuristic_row([float(np.max(s)) for s in supports], judge.threshold))
    return rows


METRIC = JudgedMetric(
    name=NAME,
    scorecard_name=SCORECARD_NAME,
    inputs=("question", "contexts", "ground_truth"),
    detail_columns=DETAIL_COLUMNS,
    prompt=lambda texts: context_precision_prompt(
        texts["question"], texts["contexts"], texts["ground_truth"]
    ),
    interpret=lambda payload, n_chunks: interpret(payload, n_chunks),
    context=lambda _, texts, *__: [len(row["contexts"]) for row in texts],
    skip=lambda texts: None if texts["contexts"] else "no contexts",
    heuristic=offline_rows,
    reads=("contexts", "ground_truth"),
    tiers=("tier3",),
    reply=Reply,
)
