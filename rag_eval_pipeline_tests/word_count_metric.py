"""A judged metric declared outside the package, as a user adds one: one module, no other file.

`answer_brevity` rates how briefly an answer answers: the LLM judge scores it 1–5 with a rubric,
the offline judge takes 1 for an answer of at most `SHORT_WORDS` words and `SHORT_WORDS / n`
for one of `n` words. It is judged on Tier 3 and shows in the scorecard as `avg_answer_brevity`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_eval_pipeline.embedding.sentences import word_tokens
from rag_eval_pipeline.judges.heuristics import error_row, rubric_row
from rag_eval_pipeline.judges.offline import OfflineJudge
from rag_eval_pipeline.judges.parsing import parse_score
from rag_eval_pipeline.judges.prompts import format_instructions
from rag_eval_pipeline.judges.replies import LikertReply, reply_reason, rubric
from rag_eval_pipeline.judges.spec import JudgedMetric, Problems, Texts
from rag_eval_pipeline.llm.prompts import PromptTemplate

SHORT_WORDS = 12

BREVITY = PromptTemplate(
    name="answer_brevity",
    system=(
        "Rate from 1 to 5 how briefly the answer answers the question (5: no word too many).\n"
        + format_instructions(LikertReply)
    ),
    user="<question>\n$question\n</question>\n\n<answer>\n$answer\n</answer>",
)


def parse(text: str) -> dict[str, Any]:
    """A 1–5 reply scaled to 0–1."""
    return {"score": (parse_score(text, low=1, high=5) - 1) / 4, "reason": reply_reason(text)}


def offline_rows(judge: OfflineJudge, texts: Sequence[Texts], problems: Problems) -> list[dict]:
    """1 up to `SHORT_WORDS` words, then `SHORT_WORDS / n`."""
    rows = []
    for problem, row in zip(problems, texts, strict=True):
        n_words = len(word_tokens(row["answer"] or ""))
        score = min(1.0, SHORT_WORDS / max(n_words, 1))
        rows.append(error_row(problem) if problem else rubric_row(score, f"{n_words} words"))
    return rows


METRIC = JudgedMetric(
    name="answer_brevity",
    scorecard_name="avg_answer_brevity",
    inputs=("question", "answer"),
    detail_columns={"reason": "str"},
    prompt=lambda texts: BREVITY.render(question=texts["question"], answer=texts["answer"]),
    parse=parse,
    interpret=lambda payload, _: rubric(payload),
    heuristic=offline_rows,
    tiers=("tier3",),
)
