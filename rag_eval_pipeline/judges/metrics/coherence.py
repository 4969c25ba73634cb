"""Coherence: the answer's logical flow, in [0, 1].

- LLM judge: `COHERENCE` asks for a 1–5 rating (5 well organized … 1 incoherent); reply
  {"score": int, "reason": str}, read tolerantly by `parse`, which scales it to (s − 1) / 4;
  a rating outside 1–5 is an error.
- Offline judge: mean over consecutive answer sentences of clip(cos(s_i, s_i+1), 0, 1); 1 for a
  single sentence (nothing to connect), 0 for an answer without sentences
  (`consecutive_coherence`, `heuristic_row`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_eval_pipeline.embedding.sentences import embed_sentences, split_sentences
from rag_eval_pipeline.judges.heuristics import error_row, rubric_row, unless
from rag_eval_pipeline.judges.parsing import parse_score
from rag_eval_pipeline.judges.prompts import format_instructions
from rag_eval_pipeline.judges.replies import LikertReply, reply_reason, rubric
from rag_eval_pipeline.judges.spec import JudgedMetric, Problems, Texts
from rag_eval_pipeline.llm.prompts import Messages, PromptTemplate

if TYPE_CHECKING:
    from rag_eval_pipeline.judges.offline import OfflineJudge

NAME = "coherence"
SCORECARD_NAME = "avg_coherence"
DETAIL_COLUMNS: dict[str, str] = {"reason": "str"}
COHERENCE_LOW, COHERENCE_HIGH = 1.0, 5.0

COHERENCE = PromptTemplate(
    name="coherence",
    system=(
        "You rate the coherence of an answer: its logical flow, whether each sentence follows "
        "from the previous ones and the whole reads as one organized response, regardless of "
        "whether it is correct.\n"
        "Score from 1 to 5:\n"
        "5 = well organized, every sentence builds on the previous ones;\n"
        "4 = clear, with a minor jump or repetition;\n"
        "3 = understandable but loosely connected or partly repetitive;\n"
        "2 = hard to follow, sentences contradict or ignore each other;\n"
        "1 = incoherent: fragments without a logical thread.\n" + format_instructions(LikertReply)
    ),
    user="<question>\n$question\n</question>\n\n<answer>\n$answer\n</answer>",
)


def coherence_prompt(question: str, answer: str) -> Messages:
    """A 1–5 rating of the answer's logical flow (scaled to 0–1 by the judge)."""
    return COHERENCE.render(question=question, answer=answer)


def parse(text: str) -> dict[str, Any]:
    """A 1–5 coherence reply, its score scaled to 0–1: (s − 1) / 4."""
    score = parse_score(text, low=COHERENCE_LOW, high=COHERENCE_HIGH)
    scaled = (score - COHERENCE_LOW) / (COHERENCE_HIGH - COHERENCE_LOW)
    return {"score": scaled, "reason": reply_reason(text)}


interpret = rubric
"""The parsed rubric reply is the score; its reason is kept."""


def consecutive_coherence(vectors: np.ndarray) -> tuple[float, str]:
    """Mean over consecutive sentence pairs of clip(cos, 0, 1) (rows are unit vectors); 1 for
    one sentence (nothing to connect), 0 for none."""
    if len(vectors) == 0:
        return 0.0, "no sentences"
    if len(vectors) == 1:
        return 1.0, "single sentence"
    cosines = np.clip(np.einsum("ij,ij->i", vectors[:-1], vectors[1:]), 0.0, 1.0)
    return float(cosines.mean()), f"mean consecutive-sentence cosine over {len(cosines)} pairs"


def heuristic_row(vectors: np.ndarray) -> dict[str, Any]:
    """The offline row from the answer's unit sentence vectors, in order."""
    return rubric_row(*consecutive_coherence(vectors))


def offline_rows(
    judge: OfflineJudge, texts: Sequence[Texts], problems: Problems
) -> list[dict[str, Any]]:
    """The offline judge's rows: cosines of the answer's consecutive sentences."""
    answers = (split_sentences(row["answer"] or "") for row in texts)
    sentences = embed_sentences(judge.embedder, unless(problems, answers))
    return [
        error_row(problem) if problem else heuristic_row(embedded.vectors)
        for problem, embedded in zip(problems, sentences, strict=True)
    ]


METRIC = JudgedMetric(
    name=NAME,
    scorecard_name=SCORECARD_NAME,
    inputs=("question", "answer"),
    detail_columns=DETAIL_COLUMNS,
    prompt=lambda texts: coherence_prompt(texts["question"], texts["answer"]),
    parse=parse,
    interpret=lambda payload, _: interpret(payload),
    heuristic=offline_rows,
    reads=("answer",),
    tiers=("tier3",),
    reply=LikertReply,
)
