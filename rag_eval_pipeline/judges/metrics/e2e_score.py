"""End-to-end usefulness: how useful the answer is against the ground-truth answer, in [0, 1].

- LLM judge: `E2E_SCORE` asks for a 0–1 rubric score (1 all essential information, nothing
  contradicting; 0.7 a minor miss; 0.3 partly right; 0 wrong or no answer); reply
  {"score": float, "reason": str}, read tolerantly by `parse`.
- Offline judge: w · clip(cos(a, g), 0, 1) + (1 − w) · token F1(a, g), g the ground truth,
  w = `e2e_semantic_weight` (0.5); token F1 is SQuAD's F1 over case-folded `\\w+` tokens (any
  script, no stop-word removal, `token_f1`); 0 for an empty answer (`heuristic_row`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from rag_eval_pipeline.embedding.sentences import embed_sentences, split_sentences, word_tokens
from rag_eval_pipeline.judges.heuristics import error_row, first_cosine, rubric_row, unless
from rag_eval_pipeline.judges.prompts import format_instructions
from rag_eval_pipeline.judges.replies import RubricReply, parse_rubric, rubric
from rag_eval_pipeline.judges.spec import JudgedMetric, Problems, Texts
from rag_eval_pipeline.llm.prompts import Messages, PromptTemplate
from rag_eval_pipeline.metrics.bounds import MAX_JUDGED_CHARS
from rag_eval_pipeline.metrics.f1 import overlap_f1

if TYPE_CHECKING:
    from rag_eval_pipeline.judges.offline import OfflineJudge

NAME = "e2e_score"
SCORECARD_NAME = "avg_e2e_score"
DETAIL_COLUMNS: dict[str, str] = {"reason": "str"}

E2E_SCORE = PromptTemplate(
    name="e2e_score",
    system=(
        "You grade how useful an answer is to the person who asked the question, using the "
        "ground-truth answer as the reference.\n"
        "Score from 0 to 1:\n"
        "1.0 = conveys all essential information of the ground truth, nothing contradicts it;\n"
        "0.7 = mostly right, misses a minor point or adds harmless noise;\n"
        "0.3 = partly right, misses essential information;\n"
        "0.0 = wrong, contradicts the ground truth, or does not answer.\n"
        "Judge substance, not wording or length.\n" + format_instructions(RubricReply)
    ),
    user=(
        "<question>\n$question\n</question>\n\n<ground_truth>\n$ground_truth\n</ground_truth>\n\n"
        "<answer>\n$answer\n</answer>"
    ),
)


def e2e_score_prompt(question: str, answer: str, ground_truth: str) -> Messages:
    """A 0–1 usefulness score of the answer against the ground-truth answer."""
    return E2E_SCORE.render(question=question, answer=answer, ground_truth=ground_truth)


parse = parse_rubric
"""Reads the reply: its 0–1 score (JSON, bare or labelled) and its JSON reason."""

interpret = rubric
"""The parsed rubric reply is the score; its reason is kept."""


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD token F1: harmonic mean of token precision and recall (multiset overlap), over the
    tokens of each text's first `MAX_JUDGED_CHARS` characters (longer rows are flagged
    `truncated`)."""
    predicted = word_tokens(prediction[:MAX_JUDGED_CHARS])
    expected = word_tokens(reference[:MAX_JUDGED_CHARS])
    overlap = sum((Counter(predicted) & Counter(expected)).values())
    return overlap_f1(overlap, len(predicted), len(expected))


def heuristic_row(
    cosine: float | None, answer: str, ground_truth: str, semantic_weight: float
) -> dict[str, Any]:
    """The offline row from the answer–ground-truth cosine (None for an empty answer: 0)."""
    if cosine is None:
        return rubric_row(0.0, "empty answer")
    overlap = token_f1(answer, ground_truth)
    score = semantic_weight * min(max(cosine, 0.0), 1.0) + (1 - semantic_weight) * overlap
    return rubric_row(score, f"cosine={cosine:.4f}, token_f1={overlap:.4f}")


def offline_rows(
    judge: OfflineJudge, texts: Sequence[Texts], problems: Problems
) -> list[dict[str, Any]]:
    """The offline judge's rows: cosine and token F1 of the answer and the ground truth."""
    answers = [" ".join(split_sentences(row["answer"] or "")) for row in texts]
    skipped = [p or not a for p, a in zip(problems, answers, strict=True)]
    answer_vectors = embed_sentences(judge.embedder, unless(skipped, ([a] for a in answers)))
    truths = ([row["ground_truth"]] for row in texts)
    truth_vectors = embed_sentences(judge.embedder, unless(skipped, truths))
    rows = []
    for i, (problem, row) in enumerate(zip(problems, texts, strict=True)):
        if problem:
            rows.append(error_row(problem))
            continue
        cosine = None if skipped[i] else first_cosine(answer_vectors[i], truth_vectors[i])
        answer, truth = row["answer"] or "", row["ground_truth"] or ""
        rows.append(heuristic_row(cosine, answer, truth, judge.e2e_semantic_weight))
    return rows


METRIC = JudgedMetric(
    name=NAME,
    scorecard_name=SCORECARD_NAME,
    inputs=("question", "answer", "ground_truth"),
    detail_columns=DETAIL_COLUMNS,
    prompt=lambda texts: e2e_score_prompt(
        texts["question"], texts["answer"], texts["ground_truth"]
    ),
    parse=parse,
    interpret=lambda payload, _: interpret(payload),
    heuristic=offline_rows,
    reads=("answer", "ground_truth"),
    tiers=("tier3",),
    reply=RubricReply,
)
