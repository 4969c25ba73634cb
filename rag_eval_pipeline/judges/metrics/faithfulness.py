"""Faithfulness: the share of the answer's claims that the retrieved context supports.

score = supported claims / claims (`metrics.ragas.faithfulness_score`, the RAGAS formula); an
answer without claims has no score, only the error `no claims`.

- LLM judge: `FAITHFULNESS` asks for the answer's atomic claims, each verified against the
  context alone; reply {"claims": [{"claim": str, "supported": bool}]}, read by `interpret`.
  An empty answer is not sent: it has no claims.
- Offline judge: the answer's sentences are its claims (none when it is noncommittal,
  `offline_claims`); a claim is supported when some context sentence supports it
  (`OfflineJudge.support` ≥ threshold); `heuristic_row` scores those verdicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, Field

from rag_eval_pipeline.embedding.sentences import Sentences, split_sentences
from rag_eval_pipeline.judges.heuristics import claim_row, claim_rows, is_noncommittal
from rag_eval_pipeline.judges.prompts import format_instructions
from rag_eval_pipeline.judges.replies import Interpretation, attempt, read
from rag_eval_pipeline.judges.spec import JudgedMetric, Problems, Skip, Texts
from rag_eval_pipeline.llm.prompts import Messages, PromptTemplate, format_contexts
from rag_eval_pipeline.metrics.ragas import faithfulness_score

if TYPE_CHECKING:
    from rag_eval_pipeline.judges.offline import OfflineJudge

NAME = "faithfulness"
NO_CLAIMS = "no claims"
SCORECARD_NAME = "avg_faithfulness"
DETAIL_COLUMNS: dict[str, str] = {"n_claims": "Int64", "n_supported": "Int64"}


class Claim(BaseModel):
    """One claim of the answer and its verdict."""

    claim: str = Field(description="an atomic, self-contained claim of the answer")
    supported: bool = Field(description="whether the context alone supports it")


class Reply(BaseModel):
    """The reply `FAITHFULNESS` asks for."""

    claims: list[Claim]


FAITHFULNESS = PromptTemplate(
    name="faithfulness",
    system=(
        "You verify whether an answer is grounded in the given context.\n"
        "1. Break the answer into atomic, self-contained factual claims (replace pronouns by what "
        "they refer to; one fact per claim; ignore citation markers such as [2]).\n"
        "2. For each claim decide whether it can be directly inferred from the context alone. "
        "Outside knowledge does not count: a true claim absent from the context is not supported.\n"
        "If the answer makes no factual claim (for example it only says it does not know), "
        'return {"claims": []}.\n' + format_instructions(Reply)
    ),
    user=(
        "<question>\n$question\n</question>\n\n<context>\n$context\n</context>\n\n"
        "<answer>\n$answer\n</answer>"
    ),
)


def faithfulness_prompt(question: str, contexts: Sequence[str], answer: str) -> Messages:
    """Claim extraction and verification against the context in one reply."""
    return FAITHFULNESS.render(question=question, context=format_contexts(contexts), answer=answer)


def interpret(payload: dict[str, Any]) -> Interpretation:
    """The reply's claim verdicts → faithfulness, with the claim counts."""
    flags = [claim.supported for claim in read(Reply, payload).claims]
    score, error = attempt(faithfulness_score, flags)
    return score, error, {"n_claims": len(flags), "n_supported": sum(flags)}


def offline_claims(answer: str) -> list[str]:
    """The claims the offline judge checks: the answer's sentences, none when noncommittal."""
    return [] if is_noncommittal(answer) else split_sentences(answer)


def heuristic_row(claims: Sentences, best: np.ndarray, threshold: float) -> dict[str, Any]:
    """The offline row: claim i is supported when `best[i]` (its best support by a context
    sentence) reaches `threshold`."""
    return claim_row(claims, best, threshold, "supported", faithfulness_score)


def row_prompt(texts: Texts) -> Messages | Skip:
    """One row's prompt; an empty answer has no claims and is not sent."""
    if not texts["answer"].strip():
        return Skip(NO_CLAIMS)
    return faithfulness_prompt(texts["question"], texts["contexts"], texts["answer"])


def offline_rows(
    judge: OfflineJudge, texts: Sequence[Texts], problems: Problems
) -> list[dict[str, Any]]:
    """The offline judge's rows: the answer's sentences checked against the context's."""
    claims = (offline_claims(row["answer"] or "") for row in texts)
    contexts = (row["contexts"] for row in texts)
    return claim_rows(judge, problems, claims, contexts, heuristic_row)


METRIC = JudgedMetric(
    name=NAME,
    scorecard_name=SCORECARD_NAME,
    inputs=("question", "contexts", "answer"),
    detail_columns=DETAIL_COLUMNS,
    prompt=row_prompt,
    interpret=lambda payload, _: interpret(payload),
    heuristic=offline_rows,
    reads=("contexts", "answer"),
    tiers=("tier2", "tier3", "traffic"),
    reply=Reply,
)
