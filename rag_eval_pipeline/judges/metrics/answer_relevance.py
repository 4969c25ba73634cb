"""Answer relevance (rubric): how directly the answer addresses the question, in [0, 1].

- LLM judge: `ANSWER_RELEVANCE` asks for a 0–1 rubric score (1 direct and complete, 0.7
  incomplete or padded, 0.3 touches the topic, 0 off-topic or a refusal); reply
  {"score": float, "reason": str}, read tolerantly by `parse` (a bare "0.8" or "Score: 4/5"
  counts too); out-of-range scores are errors.
- Offline judge: clip(cos(q, a), 0, 1) with q, a the embeddings of the question and of the whole
  answer; 0 for an empty or noncommittal answer (`heuristic_row`).
"""

from __future__ import annotations

from typing import Any

from rag_eval_pipeline.judges.heuristics import rubric_row
from rag_eval_pipeline.judges.prompts import JSON_ONLY
from rag_eval_pipeline.judges.replies import parse_rubric, rubric
from rag_eval_pipeline.llm.prompts import Messages, PromptTemplate

NAME = "answer_relevance"
SCORECARD_NAME = "avg_answer_relevance"
DETAIL_COLUMNS: dict[str, str] = {"reason": "str"}

ANSWER_RELEVANCE = PromptTemplate(
    name="answer_relevance",
    system=(
        "You rate how relevant an answer is to a question, regardless of whether it is correct.\n"
        "Score from 0 to 1:\n"
        "1.0 = addresses the question directly and completely, nothing off-topic;\n"
        "0.7 = addresses the question but is incomplete or padded with unrelated content;\n"
        "0.3 = only touches the topic of the question;\n"
        "0.0 = off-topic, evasive or a refusal such as 'I don't know'.\n"
        'Schema: {"score": <number between 0 and 1>, "reason": "<one sentence>"}\n' + JSON_ONLY
    ),
    user="<question>\n$question\n</question>\n\n<answer>\n$answer\n</answer>",
)


def answer_relevance_prompt(question: str, answer: str) -> Messages:
    """A 0–1 rubric score for how directly the answer addresses the question."""
    return ANSWER_RELEVANCE.render(question=question, answer=answer)


parse = parse_rubric
"""Reads the reply: its 0–1 score (JSON, bare or labelled) and its JSON reason."""

interpret = rubric
"""The parsed rubric reply is the score; its reason is kept."""


def heuristic_row(cosine: float | None) -> dict[str, Any]:
    """The offline row from the question–answer cosine; None for an empty or noncommittal
    answer, which scores 0."""
    if cosine is None:
        return rubric_row(0.0, "empty or noncommittal answer")
    return rubric_row(min(max(cosine, 0.0), 1.0), f"cosine={cosine:.4f}")
