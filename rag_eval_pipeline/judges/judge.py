"""Judges score whole tables: one call per metric returns one row per input row.

`Judge` is the protocol every judge implements; `LLMJudge` asks an LLM through `LLMClient`
and turns the JSON replies into scores. Each metric's prompt, reply interpretation and formula
live in its module of `rag_eval_pipeline.judges.metrics`; this module sends the prompts in one
batch, keeps failures as error rows and builds the frames. The offline, deterministic
implementation lives in `rag_eval_pipeline.judges.offline`.

Every method returns a DataFrame with `COMMON_COLUMNS` then the metric's `DETAIL_COLUMNS`:

- `score` is a float in [0, 1], NaN **only** together with a non-null `error`;
- `error` says why a row has no score: a missing input (`missing answer`), an undefined metric
  (`no claims`, `no contexts`), a prompt over `llm.prompts.MAX_PROMPT_CHARS` that is never sent
  (`prompt too long: ...`), a failed call (`llm call failed: ...`), an unreadable reply
  (`unparseable reply: ...` when no JSON object or score is found, `invalid reply: ...` when the
  JSON breaks the schema the prompt asked for); `raw_reply` keeps the reply text whenever there
  is one, so failures can be inspected;
- `latency_ms`, `judge_model`, `judge_version` (the prompt set or heuristic version), `cached`,
  `prompt_tokens`, `completion_tokens`, `cost_usd` describe how the score was obtained;
- `truncated` is True when the row's texts exceed what the judge reads (the offline judge's
  bounds `embedding.sentences.MAX_JUDGED_CHARS` and `MAX_SENTENCES`), so it may have scored only a
  part of them; False otherwise (always for the LLM judge, which sends texts whole).

Inputs: a missing (None/NaN) or blank question or ground truth and a missing answer give an
error row without any LLM call; an empty answer is judged like any other answer, except for
faithfulness, where it has no claims. Rubric replies (answer relevance, e2e) are read with
`parse_score`, so a bare "0.8" or "Score: 4/5" also counts; out-of-range scores are errors.
Boolean verdicts accept true/false, 1/0 and "yes"/"no".
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import pandas as pd

from rag_eval_pipeline.datasets.values import (
    aligned,
    as_chunks,
    as_text,
    missing_answer,
    missing_input,
)
from rag_eval_pipeline.judges.criteria import DETAIL_COLUMNS as CRITERION_DETAILS
from rag_eval_pipeline.judges.criteria import Criterion
from rag_eval_pipeline.judges.metrics import (
    DETAIL_COLUMNS,
    answer_correctness,
    answer_relevance,
    answer_relevance_ragas,
    coherence,
    context_precision,
    context_recall,
    e2e_score,
    faithfulness,
)
from rag_eval_pipeline.judges.parsing import ReplyParseError, parse_json_object
from rag_eval_pipeline.judges.prompts import PROMPT_VERSION
from rag_eval_pipeline.judges.replies import Interpretation, InvalidReplyError
from rag_eval_pipeline.llm.prompts import Messages, oversized
from rag_eval_pipeline.metrics.ragas import (
    DEFAULT_CORRECTNESS_WEIGHTS,
    rowwise_cosine,
    validate_weights,
)

if TYPE_CHECKING:
    from rag_eval_pipeline.embedding.embedder import Embedder
    from rag_eval_pipeline.llm.client import LLMClient, LLMReply

COMMON_COLUMNS: dict[str, str] = {
    "score": "float64",
    "error": "str",
    "raw_reply": "str",
    "latency_ms": "float64",
    "judge_model": "str",
    "judge_version": "str",
    "cached": "bool",
    "prompt_tokens": "int64",
    "completion_tokens": "int64",
    "cost_usd": "float64",
    "truncated": "bool",
}


class Judge(Protocol):
    """Scores whole tables; every method returns one row per input row (see module docstring)."""

    @property
    def judge_model(self) -> str: ...

    @property
    def judge_version(self) -> str: ...

    def faithfulness(
        self,
        questions: Sequence[str],
        contexts: Sequence[Sequence[str]],
        answers: Sequence[str],
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame: ...

    def answer_relevance(
        self, questions: Sequence[str], answers: Sequence[str], *, use_cache: bool = True
    ) -> pd.DataFrame: ...

    def coherence(
        self, questions: Sequence[str], answers: Sequence[str], *, use_cache: bool = True
    ) -> pd.DataFrame: ...

    def answer_relevance_ragas(
        self,
        questions: Sequence[str],
        answers: Sequence[str],
        n: int = 3,
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame: ...

    def e2e_score(
        self,
        questions: Sequence[str],
        answers: Sequence[str],
        ground_truths: Sequence[str],
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame: ...

    def context_precision(
        self,
        questions: Sequence[str],
        contexts: Sequence[Sequence[str]],
        ground_truths: Sequence[str],
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame: ...

    def context_recall(
        self,
        contexts: Sequence[Sequence[str]],
        ground_truths: Sequence[str],
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame: ...

    def answer_correctness(
        self,
        answers: Sequence[str],
        ground_truths: Sequence[str],
        weights: tuple[float, float] = DEFAULT_CORRECTNESS_WEIGHTS,
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame: ...


def judgment_frame(
    metric: str, rows: Sequence[dict[str, Any]], details: dict[str, str] | None = None
) -> pd.DataFrame:
    """Rows → the metric's DataFrame with fixed columns and dtypes (its `DETAIL_COLUMNS`, or
    `details` for a metric declared in configuration).

    Enforces the score/error contract: a row with an error has a NaN score, and a row whose
    score is NaN without an error gets the error `undefined score` (never a silent NaN).
    """
    dtypes = COMMON_COLUMNS | (DETAIL_COLUMNS[metric] if details is None else details)
    frame = pd.DataFrame(list(rows), columns=list(dtypes))
    has_error = frame["error"].notna()
    frame.loc[~has_error & frame["score"].isna(), "error"] = "undefined score"
    frame.loc[frame["error"].notna(), "score"] = math.nan
    frame["truncated"] = frame["truncated"].astype("boolean").fillna(False)
    return frame.astype(dtypes)


@dataclass(frozen=True)
class _Skip:
    """A row decided without calling the LLM."""

    error: str


@dataclass(frozen=True)
class _Call:
    """One row's LLM exchange: the reply (None when skipped), its parsed payload or an error."""

    reply: LLMReply | None
    payload: dict[str, Any] | None
    error: str | None
    prompt: Messages | None = None


def _question_answer_requests(
    questions: Sequence[str], answers: Sequence[str], prompt: Callable[[str, str], Messages]
) -> list[Messages | _Skip]:
    """One `prompt(question, answer)` per row, or a skip naming the missing input."""
    aligned(questions=questions, answers=answers)
    requests: list[Messages | _Skip] = []
    for question, answer in zip(questions, answers, strict=True):
        question, answer = as_text(question), as_text(answer)
        problem = missing_input(question=question) or missing_answer(answer)
        requests.append(_Skip(problem) if problem else prompt(question, answer))
    return requests


def _bounded(request: Messages | _Skip) -> Messages | _Skip:
    """`request`, or a `_Skip` when it is a prompt over `MAX_PROMPT_CHARS` characters."""
    if isinstance(request, _Skip):
        return request
    problem = oversized(request)
    return request if problem is None else _Skip(problem)


class LLMJudge:
    """RAGAS-style metrics judged by an LLM; see the module docstring for the output columns.

    `embedder` embeds generated questions (RAGAS answer relevancy) and answer/ground-truth pairs
    (the semantic half of answer correctness). `use_cache=False` bypasses the client's reply
    cache, which repeated reliability runs need.
    """

    def __init__(self, client: LLMClient, embedder: Embedder) -> None:
        self.client = client
        self.embedder = embedder

    @property
    def judge_model(self) -> str:
        """The litellm model string of the judge."""
        return self.client.config.model

    @property
    def judge_version(self) -> str:
        """The version of the prompt set."""
        return PROMPT_VERSION

    def faithfulness(
        self,
        questions: Sequence[str],
        contexts: Sequence[Sequence[str]],
        answers: Sequence[str],
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame:
        """Share of the answer's claims supported by the context (claims extracted by the LLM)."""
        aligned(questions=questions, contexts=contexts, answers=answers)
        requests: list[Messages | _Skip] = []
        for question, chunks, answer in zip(questions, contexts, answers, strict=True):
            question, answer = as_text(question), as_text(answer)
            problem = missing_input(question=question) or missing_answer(answer)
            if problem:
                requests.append(_Skip(problem))
            elif not answer.strip():
                requests.append(_Skip("no claims"))
            else:
                requests.append(
                    faithfulness.faithfulness_prompt(question, as_chunks(chunks), answer)
                )
        calls = self._ask(requests, use_cache)
        return self._frame(
            faithfulness.NAME, calls, lambda _, payload: faithfulness.interpret(payload)
        )

    def answer_relevance(
        self, questions: Sequence[str], answers: Sequence[str], *, use_cache: bool = True
    ) -> pd.DataFrame:
        """A 0–1 rubric score of how directly the answer addresses the question."""
        requests = _question_answer_requests(
            questions, answers, answer_relevance.answer_relevance_prompt
        )
        calls = self._ask(requests, use_cache, answer_relevance.parse)
        return self._frame(
            answer_relevance.NAME, calls, lambda _, payload: answer_relevance.interpret(payload)
        )

    def coherence(
        self, questions: Sequence[str], answers: Sequence[str], *, use_cache: bool = True
    ) -> pd.DataFrame:
        """The answer's logical flow rated 1–5 by the LLM, scaled to 0–1 ((s − 1) / 4)."""
        requests = _question_answer_requests(questions, answers, coherence.coherence_prompt)
        calls = self._ask(requests, use_cache, coherence.parse)
        return self._frame(coherence.NAME, calls, lambda _, payload: coherence.interpret(payload))

    def answer_relevance_ragas(
        self,
        questions: Sequence[str],
        answers: Sequence[str],
        n: int = 3,
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame:
        """RAGAS answer relevancy: mean cosine of the question and `n` questions generated back.

        The LLM writes the questions the answer answers and flags noncommittal answers (score 0).
        """
        if n < 1:
            raise ValueError(f"n must be at least 1, got {n}")
        aligned(questions=questions, answers=answers)
        texts = [as_text(q) for q in questions]
        requests: list[Messages | _Skip] = []
        for question, answer in zip(texts, answers, strict=True):
            answer = as_text(answer)
            problem = missing_input(question=question) or missing_answer(answer)
            requests.append(
                _Skip(problem)
                if problem
                else answer_relevance_ragas.answer_relevance_ragas_prompt(answer, n)
            )
        calls = self._ask(requests, use_cache)
        generated: dict[int, list[str]] = {}
        for i, call in enumerate(calls):
            if call.payload is not None:
                try:
                    generated[i] = answer_relevance_ragas.generated_questions(call.payload)[0]
                except InvalidReplyError:
                    continue
        rows = sorted(generated)
        question_vectors = self.embedder.encode([texts[i] for i in rows])
        generated_vectors = self.embedder.encode([q for i in rows for q in generated[i]])
        offsets = np.cumsum([0] + [len(generated[i]) for i in rows])
        vectors = {
            i: (question_vectors[k], generated_vectors[offsets[k] : offsets[k + 1]])
            for k, i in enumerate(rows)
        }

        return self._frame(
            answer_relevance_ragas.NAME,
            calls,
            lambda i, payload: answer_relevance_ragas.interpret(payload, lambda: vectors[i]),
        )

    def e2e_score(
        self,
        questions: Sequence[str],
        answers: Sequence[str],
        ground_truths: Sequence[str],
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame:
        """A 0–1 rubric score of the answer's usefulness against the ground-truth answer."""
        aligned(questions=questions, answers=answers, ground_truths=ground_truths)
        requests: list[Messages | _Skip] = []
        for question, answer, truth in zip(questions, answers, ground_truths, strict=True):
            question, answer, truth = as_text(question), as_text(answer), as_text(truth)
            problem = missing_input(question=question, ground_truth=truth) or missing_answer(answer)
            requests.append(
                _Skip(problem) if problem else e2e_score.e2e_score_prompt(question, answer, truth)
            )
        calls = self._ask(requests, use_cache, e2e_score.parse)
        return self._frame(e2e_score.NAME, calls, lambda _, payload: e2e_score.interpret(payload))

    def context_precision(
        self,
        questions: Sequence[str],
        contexts: Sequence[Sequence[str]],
        ground_truths: Sequence[str],
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame:
        """RAGAS context precision: average precision of the chunks the LLM finds useful."""
        aligned(questions=questions, contexts=contexts, ground_truths=ground_truths)
        chunk_lists = [as_chunks(chunks) for chunks in contexts]
        requests: list[Messages | _Skip] = []
        for question, chunks, truth in zip(questions, chunk_lists, ground_truths, strict=True):
            question, truth = as_text(question), as_text(truth)
            problem = missing_input(question=question, ground_truth=truth) or (
                None if chunks else "no contexts"
            )
            requests.append(
                _Skip(problem)
                if problem
                else context_precision.context_precision_prompt(question, chunks, truth)
            )
        calls = self._ask(requests, use_cache)

        return self._frame(
            context_precision.NAME,
            calls,
            lambda i, payload: context_precision.interpret(payload, len(chunk_lists[i])),
        )

    def context_recall(
        self,
        contexts: Sequence[Sequence[str]],
        ground_truths: Sequence[str],
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame:
        """RAGAS context recall: share of ground-truth claims attributable to the context."""
        aligned(contexts=contexts, ground_truths=ground_truths)
        requests: list[Messages | _Skip] = []
        for chunks, truth in zip(contexts, ground_truths, strict=True):
            truth = as_text(truth)
            problem = missing_input(ground_truth=truth)
            requests.append(
                _Skip(problem)
                if problem
                else context_recall.context_recall_prompt(as_chunks(chunks), truth)
            )
        calls = self._ask(requests, use_cache)
        return self._frame(
            context_recall.NAME, calls, lambda _, payload: context_recall.interpret(payload)
        )

    def answer_correctness(
        self,
        answers: Sequence[str],
        ground_truths: Sequence[str],
        weights: tuple[float, float] = DEFAULT_CORRECTNESS_WEIGHTS,
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame:
        """RAGAS answer correctness: weighted factual F1 (LLM TP/FP/FN) and embedding similarity.

        The similarity is the cosine of the answer and ground-truth embeddings, clipped to [0, 1].
        """
        validate_weights(weights)
        aligned(answers=answers, ground_truths=ground_truths)
        pairs = [(as_text(a), as_text(t)) for a, t in zip(answers, ground_truths, strict=True)]
        requests: list[Messages | _Skip] = []
        for answer, truth in pairs:
            problem = missing_input(ground_truth=truth) or missing_answer(answer)
            requests.append(
                _Skip(problem)
                if problem
                else answer_correctness.answer_correctness_prompt(answer, truth)
            )
        rows = [i for i, request in enumerate(requests) if not isinstance(request, _Skip)]
        similarity = np.clip(
            rowwise_cosine(
                self.embedder.encode([pairs[i][0] for i in rows]),
                self.embedder.encode([pairs[i][1] for i in rows]),
            ),
            0.0,
            1.0,
        )
        similarity_of = dict(zip(rows, similarity.tolist(), strict=True))
        calls = self._ask(requests, use_cache)

        return self._frame(
            answer_correctness.NAME,
            calls,
            lambda i, payload: answer_correctness.interpret(payload, similarity_of[i], weights),
        )

    def criterion(
        self,
        criterion: Criterion,
        texts: Mapping[str, Sequence[Any]],
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame:
        """A declared criterion (`judges.criteria`): `texts` maps each of its inputs to one
        value per row (`contexts`: lists of chunks). A missing input gives an error row without
        a call, a reply out of the criterion's scale an `unparseable reply` row."""
        aligned(**{i: texts[i] for i in criterion.inputs})
        requests: list[Messages | _Skip] = []
        for row in range(len(texts[criterion.inputs[0]])):
            values = {
                i: as_chunks(texts[i][row]) if i == "contexts" else as_text(texts[i][row])
                for i in criterion.inputs
            }
            problem = missing_input(
                **{i: v for i, v in values.items() if i not in ("contexts", "answer")}
            ) or (missing_answer(values["answer"]) if "answer" in values else None)
            requests.append(_Skip(problem) if problem else criterion.prompt(values))
        calls = self._ask(requests, use_cache, criterion.parse)
        return self._frame(
            criterion.name,
            calls,
            lambda _, payload: criterion.interpret(payload),
            detail_columns=CRITERION_DETAILS,
        )

    def _ask(
        self,
        requests: Sequence[Messages | _Skip],
        use_cache: bool,
        parse: Callable[[str], dict[str, Any]] = parse_json_object,
    ) -> list[_Call]:
        """Send every prompt in one batch; `parse` each reply (the JSON object by default).

        A prompt longer than `llm.prompts.MAX_PROMPT_CHARS` is not sent: its row gets the error
        `prompt too long`, so one huge dataset text cannot run up the provider bill."""
        requests = [_bounded(request) for request in requests]
        prompts = [request for request in requests if not isinstance(request, _Skip)]
        replies = iter(self.client.complete_many(prompts, use_cache=use_cache) if prompts else [])
        calls = []
        for request in requests:
            if isinstance(request, _Skip):
                calls.append(_Call(reply=None, payload=None, error=request.error))
                continue
            reply = next(replies)
            if reply.error is not None:
                calls.append(_Call(reply, None, f"llm call failed: {reply.error}", request))
            elif reply.text is None or not reply.text.strip():
                calls.append(_Call(reply, None, "empty reply", request))
            else:
                try:
                    calls.append(_Call(reply, parse(reply.text), None, request))
                except ReplyParseError as exc:
                    calls.append(_Call(reply, None, f"unparseable reply: {exc}", request))
        unusable = [c for c in calls if c.reply is not None and c.reply.error is None]
        self.client.forget([c.prompt for c in unusable if c.prompt and c.payload is None])
        return calls

    def _frame(
        self,
        metric: str,
        calls: Sequence[_Call],
        interpret: Callable[[int, dict[str, Any]], Interpretation],
        detail_columns: dict[str, str] | None = None,
    ) -> pd.DataFrame:
        rows = []
        for i, call in enumerate(calls):
            row = self._reply_columns(call.reply)
            if call.payload is None:
                row |= {"score": math.nan, "error": call.error}
            else:
                try:
                    score, error, details = interpret(i, call.payload)
                except InvalidReplyError as exc:
                    row |= {"score": math.nan, "error": f"invalid reply: {exc}"}
                    if call.prompt is not None:
                        self.client.forget([call.prompt])
                else:
                    row |= {"score": score, "error": error, **details}
            rows.append(row)
        return judgment_frame(metric, rows, detail_columns)

    def _reply_columns(self, reply: LLMReply | None) -> dict[str, Any]:
        if reply is None:
            return {
                "raw_reply": None,
                "latency_ms": 0.0,
                "judge_model": self.judge_model,
                "judge_version": self.judge_version,
                "cached": False,
                "prompt_tokens": 0,
                "completion_tokens": 0,
                "cost_usd": 0.0,
            }
        return {
            "raw_reply": reply.text,
            "latency_ms": reply.latency_ms,
            "judge_model": reply.model or self.judge_model,
            "judge_version": self.judge_version,
            "cached": reply.cached,
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "cost_usd": reply.cost_usd,
        }
