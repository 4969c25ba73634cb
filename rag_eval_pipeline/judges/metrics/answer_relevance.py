"""Answer relevance (rubric): how directly the answer addresses the question, in [0, 1].

- LLM judge: `ANSWER_RELEVANCE` asks for a 0–1 rubric score (1 direct and complete, 0.7
  incomplete or padded, 0.3 touches the topic, 0 off-topic or a refusal); reply
  {"score": float, "reason": str}, read tolerantly by `parse` (a bare "0.8" or "Score: 4/5"
  counts too); out-of-range scores are errors.
- Offline judge: clip(cos(q, a), 0, 1) with q, a the embeddings of the question and of the whole
  answer; 0 for an empty or noncommittal answer (`heuristic_row`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rag_eval_pipeline.embedding.sentences import embed_sentences, split_sentences
from rag_eval_pipeline.judges.heuristics import (
    error_row,
    first_cosine,
    is_noncommittal,
    rubric_row,
    unless,
)
from rag_eval_pipeline.judges.prompts import format_instructions
from rag_eval_pipeline.judges.replies import RubricReply, parse_rubric, rubric
from rag_eval_pipeline.judges.spec import JudgedMetric, Problems, Texts
from rag_eval_pipeline.llm.prompts import Messages, PromptTemplate

if TYPE_CHECKING:
    from rag_eval_pipeline.judges.offline import OfflineJudge

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
        + format_instructions(RubricReply)
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


def offline_rows(
    judge: OfflineJudge, texts: Sequence[Texts], problems: Problems
) -> list[dict[str, Any]]:
    """The offline judge's rows: the cosine of the question and the whole answer."""
    skipped = [
        p or is_noncommittal(row["answer"] or "") for p, row in zip(problems, texts, strict=True)
    ]
    questions = embed_sentences(
        judge.embedder, unless(skipped, ([row["question"]] for row in texts))
    )
    answers = embed_sentences(
        judge.embedder,
        unless(skipped, ([" ".join(split_sentences(row["answer"] or ""))] for row in texts)),
    )
    rows = []
    for i, problem in enumerate(problems):
        if problem:
            rows.append(error_row(problem))
            continue
        rows.append(heuristic_row(None if skipped[i] else first_cosine(questions[i], answers[i])))
    return rows


METRIC = JudgedMetric(
    name=NAME,
    scorecard_name=SCORECARD_NAME,
    inputs=("question", "answer"),
    detail_columns=DETAIL_COLUMNS,
    prompt=lambda texts: answer_relevance_prompt(texts["question"], texts["answer"]),
    parse=parse,
    interpret=lambda payload, _: interpret(payload),
    heuristic=offline_rows,
    tiers=("tier2", "tier3", "traffic"),
    reply=RubricReply,
)
