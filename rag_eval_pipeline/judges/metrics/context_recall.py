"""Context recall: the share of the ground truth's claims that the retrieved context covers.

score = attributed claims / claims (`metrics.ragas.context_recall`, the RAGAS formula); a ground
truth without claims has no score, only the error `no claims`.

- LLM judge: `CONTEXT_RECALL` asks for the ground truth's atomic claims, each marked attributable
  to the context or not; reply {"claims": [{"claim": str, "attributed": bool}]}, read by
  `interpret`.
- Offline judge: the ground truth's sentences are its claims; a claim is attributed when some
  context sentence supports it (`OfflineJudge.support` ≥ threshold); `heuristic_row`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, Field

from rag_eval_pipeline.embedding.sentences import Sentences, split_sentences
from rag_eval_pipeline.judges.heuristics import claim_row, claim_rows
from rag_eval_pipeline.judges.prompts import format_instructions
from rag_eval_pipeline.judges.replies import Interpretation, attempt, read
from rag_eval_pipeline.judges.spec import JudgedMetric, Problems, Texts
from rag_eval_pipeline.llm.prompts import Messages, PromptTemplate, format_contexts
from rag_eval_pipeline.metrics.ragas import context_recall

if TYPE_CHECKING:
    from rag_eval_pipeline.judges.offline import OfflineJudge

NAME = "context_recall"
SCORECARD_NAME = "avg_context_recall"
DETAIL_COLUMNS: dict[str, str] = {"n_claims": "Int64", "n_attributed": "Int64"}


class Claim(BaseModel):
    """One claim of the ground truth and its verdict."""

    claim: str = Field(description="an atomic, self-contained claim of the ground truth")
    attributed: bool = Field(description="whether the context states or directly implies it")


class Reply(BaseModel):
    """The reply `CONTEXT_RECALL` asks for."""

    claims: list[Claim]


CONTEXT_RECALL = PromptTemplate(
    name="context_recall",
    system=(
        "You check how much of a ground-truth answer the retrieved context covers.\n"
        "1. Break the ground truth into atomic, self-contained claims.\n"
        "2. For each claim decide whether it can be attributed to the context, that is whether "
        "the context states or directly implies it.\n" + format_instructions(Reply)
    ),
    user="<context>\n$context\n</context>\n\n<ground_truth>\n$ground_truth\n</ground_truth>",
)


def context_recall_prompt(contexts: Sequence[str], ground_truth: str) -> Messages:
    """Ground-truth claims, each marked attributable to the context or not."""
    return CONTEXT_RECALL.render(context=format_contexts(contexts), ground_truth=ground_truth)


def interpret(payload: dict[str, Any]) -> Interpretation:
    """The reply's claim verdicts → context recall, with the claim counts."""
    flags = [claim.attributed for claim in read(Reply, payload).claims]
    score, error = attempt(context_recall, flags)
    return score, error, {"n_claims": len(flags), "n_attributed": sum(flags)}


def heuristic_row(claims: Sentences, best: np.ndarray, threshold: float) -> dict[str, Any]:
    """The offline row: ground-truth sentence i is attributed when `best[i]` (its best support
    by a context sentence) reaches `threshold`."""
    return claim_row(claims, best, threshold, "attributed", context_recall)


def offline_rows(
    judge: OfflineJudge, texts: Sequence[Texts], problems: Problems
) -> list[dict[str, Any]]:
    """The offline judge's rows: the ground truth's sentences checked against the context's."""
    claims = (split_sentences(row["ground_truth"] or "") for row in texts)
    contexts = (row["contexts"] for row in texts)
    return claim_rows(judge, problems, claims, contexts, heuristic_row)


METRIC = JudgedMetric(
    name=NAME,
    scorecard_name=SCORECARD_NAME,
    inputs=("contexts", "ground_truth"),
    detail_columns=DETAIL_COLUMNS,
    prompt=lambda texts: context_recall_prompt(texts["contexts"], texts["ground_truth"]),
    interpret=lambda payload, _: interpret(payload),
    heuristic=offline_rows,
    tiers=("tier3",),
    reply=Reply,
)
