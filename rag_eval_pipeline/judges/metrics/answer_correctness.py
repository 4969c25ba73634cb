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
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
from pydantic import BaseModel, Field

from rag_eval_pipeline.embedding.sentences import Sentences, embed_sentences, split_sentences
from rag_eval_pipeline.judges.heuristics import dumps, error_row, unless
from rag_eval_pipeline.judges.prompts import format_instructions
from rag_eval_pipeline.judges.replies import Interpretation, attempt, read
from rag_eval_pipeline.judges.spec import JudgedMetric, Problems, Texts
from rag_eval_pipeline.llm.prompts import Messages, PromptTemplate
from rag_eval_pipeline.metrics.ragas import (
    DEFAULT_CORRECTNESS_WEIGHTS,
    answer_correctness,
    factual_f1,
    rowwise_cosine,
    validate_weights,
)

if TYPE_CHECKING:
    from rag_eval_pipeline.embedding.embedder import Embedder
    from rag_eval_pipeline.judges.offline import OfflineJudge

NAME = "answer_correctness"
SCORECARD_NAME = "avg_answer_correctness"
DETAIL_COLUMNS: dict[str, str] = {
    "n_tp": "Int64",
    "n_fp": "Int64",
    "n_fn": "Int64",
    "factual_f1": "float64",
    "semantic_similarity": "float64",
}

Statement = Annotated[str, Field(description="statement")]


class Reply(BaseModel):
    """The reply `ANSWER_CORRECTNESS` asks for: the statements of each class."""

    tp: list[Statement] = Field(alias="TP")
    fp: list[Statement] = Field(alias="FP")
    fn: list[Statement] = Field(alias="FN")


ANSWER_CORRECTNESS = PromptTemplate(
    name="answer_correctness",
    system=(
        "You compare an answer with a ground-truth answer.\n"
        "Break both into atomic, self-contained statements, then classify:\n"
        "TP: statements of the answer that the ground truth supports;\n"
        "FP: statements of the answer that the ground truth does not support;\n"
        "FN: statements of the ground truth that the answer misses.\n"
        "Every answer statement goes to TP or FP, every missed ground-truth statement to FN.\n"
        + format_instructions(Reply)
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
    reply = read(Reply, payload)
    return scored([len(reply.tp), len(reply.fp), len(reply.fn)], similarity, weights)


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


def similarities(
    embedder: Embedder, texts: Sequence[Texts], sent: Sequence[bool], _: Any
) -> list[float | None]:
    """Per row sent to the LLM, the cosine of the answer and ground-truth embeddings clipped to
    [0, 1] (one batch each); None for the other rows."""
    rows = [i for i, was_sent in enumerate(sent) if was_sent]
    cosines = rowwise_cosine(
        embedder.encode([texts[i]["answer"] for i in rows]),
        embedder.encode([texts[i]["ground_truth"] for i in rows]),
    )
    similarity: list[float | None] = [None] * len(texts)
    for i, value in zip(rows, np.clip(cosines, 0.0, 1.0).tolist(), strict=True):
        similarity[i] = value
    return similarity


def offline_rows(
    judge: OfflineJudge,
    texts: Sequence[Texts],
    problems: Problems,
    weights: tuple[float, float],
) -> list[dict[str, Any]]:
    """The offline judge's rows: TP / FP / FN by sentence support, and the similarity of the
    whole texts."""
    answers = unless(problems, (split_sentences(row["answer"] or "") for row in texts))
    truths = unless(problems, (split_sentences(row["ground_truth"] or "") for row in texts))
    statements = embed_sentences(judge.embedder, answers + truths)
    whole = embed_sentences(
        judge.embedder,
        [[" ".join(a), " ".join(g)] if a else [] for a, g in zip(answers, truths, strict=True)],
    )
    rows = []
    for i, problem in enumerate(problems):
        if problem:
            rows.append(error_row(problem))
            continue
        answer, truth = statements[i], statements[len(problems) + i]
        vectors = whole[i].vectors
        similarity = min(max(float(vectors[0] @ vectors[1]), 0.0), 1.0) if len(whole[i]) else 0.0
        supports = (judge.support(answer, truth), judge.support(truth, answer))
        rows.append(heuristic_row(answer, truth, *supports, judge.threshold, similarity, weights))
    return rows


def metric(weights: tuple[float, float] = DEFAULT_CORRECTNESS_WEIGHTS) -> JudgedMetric:
    """The metric with `weights` (factual F1, similarity)."""
    validate_weights(weights)
    return JudgedMetric(
        name=NAME,
        scorecard_name=SCORECARD_NAME,
        inputs=("answer", "ground_truth"),
        detail_columns=DETAIL_COLUMNS,
        prompt=lambda texts: answer_correctness_prompt(texts["answer"], texts["ground_truth"]),
        interpret=lambda payload, similarity: interpret(payload, similarity, weights),
        context=similarities,
        heuristic=lambda judge, texts, problems: offline_rows(judge, texts, problems, weights),
        tiers=("tier3",),
        parameters=(("weights", tuple(weights)),),
        reply=Reply,
    )


METRIC = metric()
