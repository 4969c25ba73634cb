"""Answer relevance, RAGAS variant: does the answer answer this question rather than another?

score = mean_i cos(E(q), E(q_i)) over questions q_i written back from the answer, 0 for a
noncommittal answer (`metrics.ragas.ragas_answer_relevance`, the RAGAS formula).

- LLM judge: `ANSWER_RELEVANCE_RAGAS` asks for `n` questions the answer answers and whether it is
  noncommittal; reply {"questions": [str, ...], "noncommittal": bool}, read by
  `generated_questions`; `interpret` embeds nothing itself: the judge passes the vectors.
- Offline judge: the first `n` answer sentences stand in for the generated questions;
  score = clip(mean_i cos(q, sentence_i), 0, 1), 0 when noncommittal (`heuristic_row`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from rag_eval_pipeline.embedding.sentences import Sentences
from rag_eval_pipeline.judges.heuristics import dumps, rounded
from rag_eval_pipeline.judges.prompts import JSON_ONLY
from rag_eval_pipeline.judges.replies import (
    Interpretation,
    InvalidReplyError,
    as_bool,
    attempt,
    list_field,
)
from rag_eval_pipeline.llm.prompts import Messages, PromptTemplate
from rag_eval_pipeline.metrics.ragas import ragas_answer_relevance

NAME = "answer_relevance_ragas"
SCORECARD_NAME = "avg_answer_relevance_ragas"
DETAIL_COLUMNS: dict[str, str] = {"n_questions": "Int64", "noncommittal": "boolean"}

ANSWER_RELEVANCE_RAGAS = PromptTemplate(
    name="answer_relevance_ragas",
    system=(
        "Given an answer, write $n different questions that this answer answers, each one "
        "standalone and in the language of the answer.\n"
        "Also say whether the answer is noncommittal: evasive, vague or a refusal such as "
        "'I don't know' or 'I'm not sure'.\n"
        'Schema: {"questions": ["<question>", ...], "noncommittal": true or false}\n' + JSON_ONLY
    ),
    user="<answer>\n$answer\n</answer>",
)


def answer_relevance_ragas_prompt(answer: str, n: int) -> Messages:
    """`n` questions generated back from the answer, plus the noncommittal flag (RAGAS)."""
    return ANSWER_RELEVANCE_RAGAS.render(answer=answer, n=str(n))


def generated_questions(payload: dict[str, Any]) -> tuple[list[str], bool]:
    """The reply's questions (non-empty strings, stripped) and its noncommittal flag."""
    questions = list_field(payload, "questions")
    if not all(isinstance(q, str) and q.strip() for q in questions):
        raise InvalidReplyError("questions must be non-empty strings")
    noncommittal = as_bool(payload.get("noncommittal", False), "noncommittal")
    return [q.strip() for q in questions], noncommittal


def interpret(
    payload: dict[str, Any], vectors: Callable[[], tuple[np.ndarray, np.ndarray]]
) -> Interpretation:
    """The reply → score; `vectors()` gives the embeddings of the question and of the reply's
    questions (embedded in one batch by the judge for every reply that follows the schema)."""
    questions_back, noncommittal = generated_questions(payload)
    score, error = attempt(ragas_answer_relevance, *vectors(), noncommittal)
    return score, error, {"n_questions": len(questions_back), "noncommittal": noncommittal}


def heuristic_row(
    question_vector: np.ndarray, probes: Sentences, noncommittal: bool
) -> dict[str, Any]:
    """The offline row: `probes` are the answer's first sentences, standing in for questions."""
    if noncommittal:
        score, error = 0.0, None
    else:
        score, error = attempt(ragas_answer_relevance, question_vector, probes.vectors)
        score = max(score, 0.0)
    reply = {
        "questions": probes.texts,
        "noncommittal": noncommittal,
        "similarities": [rounded(c) for c in probes.vectors @ question_vector],
    }
    return {
        "score": score,
        "error": error,
        "raw_reply": dumps(reply),
        "n_questions": len(probes),
        "noncommittal": noncommittal,
    }
