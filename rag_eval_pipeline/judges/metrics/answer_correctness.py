"""Answer correctness: factual agreement with the ground truth, plus semantic similarity.

score = w_f · F1 + w_s · similarity with F1 = TP / (TP + ½ (FP + FN)) over statements and
similarity = clip(cos(E(a), E(g)), 0, 1), weights (0.75, 0.25) by default
(`metrics.ragas.answer_correctness` and `factual_f1`, the RAGAS formulas).

- LLM judge: `ANSWER_CORRECTNESS` asks for the statements of both texts classified TP (answer,
  supported), FP (answer, unsupported), FN (ground truth, missed); reply
  {"TP": [str], "FP": [str], "FN": [str]} (`interpret`).
- Offline judge: TP = answer sentences supported by a ground-truth sentence, FP = the other
  answer sentences, FN = ground-truth sentences supported by no answer sentence
  (`OfflineJudge.support` ≥ threshold; `heuristic_row`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from rag_eval_pipeline.embedding.sentences import Sentences
from rag_eval_pipeline.judges.heuristics import dumps
from rag_eval_pipeline.judges.prompts import JSON_ONLY
from rag_eval_pipeline.judges.replies import Interpretation, attempt, list_field
from rag_eval_pipeline.llm.prompts import Messages, PromptTemplate
from rag_eval_pipeline.metrics.ragas import answer_correctness, factual_f1

NAME = "answer_correctness"
SCORECARD_NAME = "avg_answer_correctness"
DETAIL_COLUMNS: dict[str, str] = {
    "n_tp": "Int64",
    "n_fp": "Int64",
    "n_fn": "Int64",
    "factual_f1": "float64",
    "semantic_similarity": "float64",
}

ANSWER_CORRECTNESS = PromptTemplate(
    name="answer_correctness",
    system=(
        "You compare an answer with a ground-truth answer.\n"
        "Break both into atomic, self-contained statements, then classify:\n"
        "TP: statements of the answer that the ground truth supports;\n"
        "FP: statements of the answer that the ground truth does not support;\n"
        "FN: statements of the ground truth that the answer misses.\n"
        "Every answer statement goes to TP or FP, every missed ground-truth statement to FN.\n"
        'Schema: {"TP": ["<statement>", ...], "FP": [...], "FN": [...]}\n' + JSON_ONLY
    ),
    user="<ground_truth>\n$ground_truth\n</ground_truth>\n\n<answer>\n$answer\n</answer>",
)


def answer_correctness_prompt(answer: str, ground_truth: str) -> Messages:
    """Answer and ground-truth statements classified TP / FP / FN."""
    return ANSWER_CORRECTNESS.render(answer=answer, ground_truth=ground_truth)


def scored(
    counts: Sequence[int], similarity: float, weights: tuple[float, float]
) -> Interpretation:
    """The (TP, FP, FN) counts and the similarity → answer correctness, with its parts."""
    f1, _ = attempt(factual_f1, *counts)
    score, error = attempt(answer_correctness, *counts, similarity, weights)
    details = dict(zip(("n_tp", "n_fp", "n_fn"), counts, strict=True))
    details |= {"factual_f1": f1, "semantic_similarity": similarity}
    return score, error, details


def interpret(
    payload: dict[str, Any], similarity: float, weights: tuple[float, float]
) -> Interpretation:
    """The reply's TP / FP / FN statements → answer correctness."""
    return scored(
        [len(list_field(payload, key)) for key in ("TP", "FP", "FN")], similarity, weights
    )


def heuristic_row(
    answer: Sentences,
    truth: Sentences,
    answer_support: np.ndarray,
    truth_support: np.ndarray,
    threshold: float,
    similarity: float,
    weights: tuple[float, float],
) -> dict[str, Any]:
    """The offline row: `answer_support[i]` is answer sentence i's best support by a ground-truth
    sentence, `truth_support[j]` ground-truth sentence j's best support by an answer sentence."""
    supported = answer_support >= threshold
    covered = truth_support >= threshold
    reply = {
        "TP": [s for s, ok in zip(answer.texts, supported, strict=True) if ok],
        "FP": [s for s, ok in zip(answer.texts, supported, strict=True) if not ok],
        "FN": [s for s, ok in zip(truth.texts, covered, strict=True) if not ok],
    }
    score, error, details = scored(
        [len(reply[key]) for key in ("TP", "FP", "FN")], similarity, weights
    )
    return {"score": score, "error": error, "raw_reply": dumps(reply), **details}
