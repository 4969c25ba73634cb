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

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
from pydantic import BaseModel, Field

from rag_eval_pipeline.embedding.sentences import Sentences, embed_sentences, split_sentences
from rag_eval_pipeline.judges.heuristics import dumps, error_row, is_noncommittal, rounded, unless
from rag_eval_pipeline.judges.prompts import format_instructions
from rag_eval_pipeline.judges.replies import (
    Interpretation,
    InvalidReplyError,
    Text,
    attempt,
    read,
)
from rag_eval_pipeline.judges.spec import JudgedMetric, Problems, Texts
from rag_eval_pipeline.llm.prompts import Messages, PromptTemplate
from rag_eval_pipeline.metrics.ragas import ragas_answer_relevance

if TYPE_CHECKING:
    from rag_eval_pipeline.embedding.embedder import Embedder
    from rag_eval_pipeline.judges.offline import OfflineJudge

NAME = "answer_relevance_ragas"
SCORECARD_NAME = "avg_answer_relevance_ragas"
DETAIL_COLUMNS: dict[str, str] = {"n_questions": "Int64", "noncommittal": "boolean"}


class Reply(BaseModel):
    """The reply `ANSWER_RELEVANCE_RAGAS` asks for."""

    questions: list[Annotated[Text, Field(description="question")]]
    noncommittal: bool = Field(
        default=False, description="whether the answer is evasive, vague or a refusal"
    )


ANSWER_RELEVANCE_RAGAS = PromptTemplate(
    name="answer_relevance_ragas",
    system=(
        "Given an answer, write $n different questions that this answer answers, each one "
        "standalone and in the language of the answer.\n"
        "Also say whether the answer is noncommittal: evasive, vague or a refusal such as "
        "'I don't know' or 'I'm not sure'.\n" + format_instructions(Reply)
    ),
    user="<answer>\n$answer\n</answer>",
)


def answer_relevance_ragas_prompt(answer: str, n: int) -> Messages:
    """`n` questions generated back from the answer, plus the noncommittal flag (RAGAS)."""
    return ANSWER_RELEVANCE_RAGAS.render(answer=answer, n=str(n))


def generated_questions(payload: dict[str, Any]) -> tuple[list[str], bool]:
    """The reply's questions (non-empty strings, stripped) and its noncommittal flag."""
    reply = read(Reply, payload)
    return reply.questions, reply.noncommittal


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


Vectors = Callable[[], tuple[np.ndarray, np.ndarray]]


def reply_vectors(
    embedder: Embedder,
    texts: Sequence[Texts],
    _: Sequence[bool],
    payloads: Sequence[dict[str, Any] | None],
) -> list[Vectors | None]:
    """Per row whose reply follows the schema, the embeddings of its question and of the
    questions written back (all embedded in two batches); None for the other rows."""
    generated: dict[int, list[str]] = {}
    for i, payload in enumerate(payloads):
        if payload is not None:
            try:
                generated[i] = generated_questions(payload)[0]
            except InvalidReplyError:
                continue
    rows = sorted(generated)
    question_vectors = embedder.encode([texts[i]["question"] for i in rows])
    generated_vectors = embedder.encode([q for i in rows for q in generated[i]])
    offsets = np.cumsum([0] + [len(generated[i]) for i in rows])
    vectors: list[Vectors | None] = [None] * len(payloads)
    for k, i in enumerate(rows):
        pair = (question_vectors[k], generated_vectors[offsets[k] : offsets[k + 1]])
        vectors[i] = lambda pair=pair: pair
    return vectors


def offline_rows(
    judge: OfflineJudge, texts: Sequence[Texts], problems: Problems, n: int
) -> list[dict[str, Any]]:
    """The offline judge's rows: the answer's first `n` sentences stand in for the questions."""
    questions = unless(problems, ([row["question"]] for row in texts))
    question_vectors = embed_sentences(judge.embedder, questions)
    answers = (split_sentences(row["answer"] or "")[:n] for row in texts)
    probes = embed_sentences(judge.embedder, unless(problems, answers))
    rows = []
    for i, (problem, row) in enumerate(zip(problems, texts, strict=True)):
        if problem:
            rows.append(error_row(problem))
            continue
        vector = question_vectors[i].vectors[0]
        rows.append(heuristic_row(vector, probes[i], is_noncommittal(row["answer"])))
    return rows


def metric(n: int = 3) -> JudgedMetric:
    """The metric with `n` questions written back per answer."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    return JudgedMetric(
        name=NAME,
        scorecard_name=SCORECARD_NAME,
        inputs=("question", "answer"),
        detail_columns=DETAIL_COLUMNS,
        prompt=lambda texts: answer_relevance_ragas_prompt(texts["answer"], n),
        interpret=interpret,
        context=reply_vectors,
        heuristic=lambda judge, texts, problems: offline_rows(judge, texts, problems, n),
        tiers=("tier2",),
        parameters=(("n", n),),
        reply=Reply,
    )


METRIC = metric()
