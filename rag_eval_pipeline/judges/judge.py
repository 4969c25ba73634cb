"""Judges score whole tables: one call per metric returns one row per input row.

`Judge` is the protocol every judge implements; `LLMJudge` asks an LLM through `LLMClient`
with the prompts of `rag_eval_pipeline.judges.prompts` and turns the JSON replies into scores
with the RAGAS formulas of `rag_eval_pipeline.metrics.ragas`. The offline, deterministic
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
from collections.abc import Callable, Sequence
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
from rag_eval_pipeline.judges.parsing import ReplyParseError, parse_json_object, parse_score
from rag_eval_pipeline.judges.prompts import (
    PROMPT_VERSION,
    answer_correctness_prompt,
    answer_relevance_prompt,
    answer_relevance_ragas_prompt,
    coherence_prompt,
    context_precision_prompt,
    context_recall_prompt,
    e2e_score_prompt,
    faithfulness_prompt,
)
from rag_eval_pipeline.llm.prompts import Messages, oversized
from rag_eval_pipeline.metrics.ragas import (
    DEFAULT_CORRECTNESS_WEIGHTS,
    UndefinedScoreError,
    answer_correctness,
    context_precision,
    context_recall,
    factual_f1,
    faithfulness_score,
    ragas_answer_relevance,
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

DETAIL_COLUMNS: dict[str, dict[str, str]] = {
    "faithfulness": {"n_claims": "Int64", "n_supported": "Int64"},
    "answer_relevance": {"reason": "str"},
    "answer_relevance_ragas": {"n_questions": "Int64", "noncommittal": "boolean"},
    "coherence": {"reason": "str"},
    "e2e_score": {"reason": "str"},
    "context_precision": {"n_contexts": "Int64", "n_relevant": "Int64"},
    "context_recall": {"n_claims": "Int64", "n_attributed": "Int64"},
    "answer_correctness": {
        "n_tp": "Int64",
        "n_fp": "Int64",
        "n_fn": "Int64",
        "factual_f1": "float64",
        "semantic_similarity": "float64",
    },
}


class InvalidReplyError(ValueError):
    """A reply is valid JSON but does not follow the schema the prompt asked for."""


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


def attempt(metric: Callable[..., float], *args: Any) -> tuple[float, str | None]:
    """(score, None), or (NaN, reason) when the metric is undefined for these arguments."""
    try:
        return metric(*args), None
    except UndefinedScoreError as exc:
        return math.nan, str(exc)


def judgment_frame(metric: str, rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Rows → the metric's DataFrame with fixed columns and dtypes.

    Enforces the score/error contract: a row with an error has a NaN score, and a row whose
    score is NaN without an error gets the error `undefined score` (never a silent NaN).
    """
    dtypes = COMMON_COLUMNS | DETAIL_COLUMNS[metric]
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


def _as_bool(value: Any, field: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in {"true", "yes", "1", "false", "no", "0"}:
        return value.strip().lower() in {"true", "yes", "1"}
    raise InvalidReplyError(f"{field} must be true or false, got {value!r}")


def _field(payload: dict[str, Any], key: str) -> Any:
    if key not in payload:
        raise InvalidReplyError(f"missing key {key!r}")
    return payload[key]


def _list_field(payload: dict[str, Any], key: str) -> list[Any]:
    value = _field(payload, key)
    if not isinstance(value, list):
        raise InvalidReplyError(f"{key!r} must be a list, got {type(value).__name__}")
    return value


def _claim_flags(payload: dict[str, Any], flag: str) -> list[bool]:
    flags = []
    for claim in _list_field(payload, "claims"):
        if not isinstance(claim, dict):
            raise InvalidReplyError(f"each claim must be an object, got {claim!r}")
        flags.append(_as_bool(_field(claim, flag), flag))
    return flags


def _reason(payload: dict[str, Any]) -> str | None:
    reason = payload.get("reason")
    return None if reason is None else str(reason)


def _generated_questions(payload: dict[str, Any]) -> tuple[list[str], bool]:
    questions = _list_field(payload, "questions")
    if not all(isinstance(q, str) and q.strip() for q in questions):
        raise InvalidReplyError("questions must be non-empty strings")
    noncommittal = _as_bool(payload.get("noncommittal", False), "noncommittal")
    return [q.strip() for q in questions], noncommittal


Interpretation = tuple[float, str | None, dict[str, Any]]


def _faithfulness(payload: dict[str, Any]) -> Interpretation:
    flags = _claim_flags(payload, "supported")
    score, error = attempt(faithfulness_score, flags)
    return score, error, {"n_claims": len(flags), "n_supported": sum(flags)}


def _parse_rubric(text: str) -> dict[str, Any]:
    """A rubric reply: its score by `parse_score` (JSON, bare or labelled), its JSON reason."""
    score = parse_score(text)
    try:
        reason = parse_json_object(text).get("reason")
    except ReplyParseError:
        reason = None
    return {"score": score, "reason": reason}


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


COHERENCE_LOW, COHERENCE_HIGH = 1.0, 5.0


def _parse_coherence(text: str) -> dict[str, Any]:
    """A 1–5 coherence reply, its score scaled to 0–1: (s − 1) / 4."""
    score = parse_score(text, low=COHERENCE_LOW, high=COHERENCE_HIGH)
    try:
        reason = parse_json_object(text).get("reason")
    except ReplyParseError:
        reason = None
    return {"score": (score - COHERENCE_LOW) / (COHERENCE_HIGH - COHERENCE_LOW), "reason": reason}


def _rubric(payload: dict[str, Any]) -> Interpretation:
    return payload["score"], None, {"reason": _reason(payload)}


def _context_recall(payload: dict[str, Any]) -> Interpretation:
    flags = _claim_flags(payload, "attributed")
    score, error = attempt(context_recall, flags)
    return score, error, {"n_claims": len(flags), "n_attributed": sum(flags)}


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
                requests.append(faithfulness_prompt(question, as_chunks(chunks), answer))
        calls = self._ask(requests, use_cache)
        return self._frame("faithfulness", calls, lambda _, payload: _faithfulness(payload))

    def answer_relevance(
        self, questions: Sequence[str], answers: Sequence[str], *, use_cache: bool = True
    ) -> pd.DataFrame:
        """A 0–1 rubric score of how directly the answer addresses the question."""
        requests = _question_answer_requests(questions, answers, answer_relevance_prompt)
        calls = self._ask(requests, use_cache, _parse_rubric)
        return self._frame("answer_relevance", calls, lambda _, payload: _rubric(payload))

    def coherence(
        self, questions: Sequence[str], answers: Sequence[str], *, use_cache: bool = True
    ) -> pd.DataFrame:
        """The answer's logical flow rated 1–5 by the LLM, scaled to 0–1 ((s − 1) / 4)."""
        requests = _question_answer_requests(questions, answers, coherence_prompt)
        calls = self._ask(requests, use_cache, _parse_coherence)
        return self._frame("coherence", calls, lambda _, payload: _rubric(payload))

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
            requests.append(_Skip(problem) if problem else answer_relevance_ragas_prompt(answer, n))
        calls = self._ask(requests, use_cache)
        generated: dict[int, list[str]] = {}
        for i, call in enumerate(calls):
            if call.payload is not None:
                try:
                    generated[i] = _generated_questions(call.payload)[0]
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

        def interpret(i: int, payload: dict[str, Any]) -> Interpretation:
            questions_back, noncommittal = _generated_questions(payload)
            score, error = attempt(ragas_answer_relevance, *vectors[i], noncommittal)
            return score, error, {"n_questions": len(questions_back), "noncommittal": noncommittal}

        return self._frame("answer_relevance_ragas", calls, interpret)

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
                _Skip(problem) if problem else e2e_score_prompt(question, answer, truth)
            )
        calls = self._ask(requests, use_cache, _parse_rubric)
        return self._frame("e2e_score", calls, lambda _, payload: _rubric(payload))

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
                _Skip(problem) if problem else context_precision_prompt(question, chunks, truth)
            )
        calls = self._ask(requests, use_cache)

        def interpret(i: int, payload: dict[str, Any]) -> Interpretation:
            verdicts = [int(_as_bool(v, "verdict")) for v in _list_field(payload, "verdicts")]
            if len(verdicts) != len(chunk_lists[i]):
                raise InvalidReplyError(
                    f"expected {len(chunk_lists[i])} verdicts, got {len(verdicts)}"
                )
            details = {"n_contexts": len(verdicts), "n_relevant": sum(verdicts)}
            return context_precision(verdicts), None, details

        return self._frame("context_precision", calls, interpret)

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
                _Skip(problem) if problem else context_recall_prompt(as_chunks(chunks), truth)
            )
        calls = self._ask(requests, use_cache)
        return self._frame("context_recall", calls, lambda _, payload: _context_recall(payload))

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
            requests.append(_Skip(problem) if problem else answer_correctness_prompt(answer, truth))
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

        def interpret(i: int, payload: dict[str, Any]) -> Interpretation:
            counts = [len(_list_field(payload, key)) for key in ("TP", "FP", "FN")]
            f1, _ = attempt(factual_f1, *counts)
            score, error = attempt(answer_correctness, *counts, similarity_of[i], weights)
            details = dict(zip(("n_tp", "n_fp", "n_fn"), counts, strict=True))
            details |= {"factual_f1": f1, "semantic_similarity": similarity_of[i]}
            return score, error, details

        return self._frame("answer_correctness", calls, interpret)

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
        return judgment_frame(metric, rows)

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
