"""Judges score whole tables: `score(metric, frame)` returns one row per input row.

`Judge` is the protocol every judge implements; `LLMJudge` asks an LLM through `LLMClient`
and turns the JSON replies into scores. What a metric is (its inputs, prompt, reply
interpretation, heuristic) is a `judges.spec.JudgedMetric`, declared in its module of
`rag_eval_pipeline.judges.metrics` or in `config/criteria.yaml`; this module sends the prompts
in one batch, keeps failures as error rows and builds the frames. The offline, deterministic
implementation lives in `rag_eval_pipeline.judges.offline`.

`score` returns a DataFrame with `COMMON_COLUMNS` then the metric's `detail_columns`:

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

import pandas as pd

from rag_eval_pipeline.judges.parsing import ReplyParseError
from rag_eval_pipeline.judges.prompts import PROMPT_VERSION
from rag_eval_pipeline.judges.replies import Interpretation, InvalidReplyError, response_format
from rag_eval_pipeline.judges.spec import JudgedMetric, Skip
from rag_eval_pipeline.llm.prompts import Messages, oversized

if TYPE_CHECKING:
    from rag_eval_pipeline.embedding.embedder import Embedder
    from rag_eval_pipeline.llm.client import LLMClient, LLMReply

Frame = pd.DataFrame | Mapping[str, Sequence[Any]]
"""The rows to score: one column per input of the metric, named as in `judges.spec.INPUTS`."""

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
    """Scores whole tables: one row per input row (see the module docstring)."""

    @property
    def judge_model(self) -> str: ...

    @property
    def judge_version(self) -> str: ...

    def score(
        self, metric: JudgedMetric, frame: Frame, *, use_cache: bool = True
    ) -> pd.DataFrame: ...


def judgment_frame(details: Mapping[str, str], rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """Rows → a metric's DataFrame with fixed columns and dtypes (`COMMON_COLUMNS`, then the
    metric's `details` columns).

    Enforces the score/error contract: a row with an error has a NaN score, and a row whose
    score is NaN without an error gets the error `undefined score` (never a silent NaN).
    """
    dtypes = COMMON_COLUMNS | dict(details)
    frame = pd.DataFrame(list(rows), columns=list(dtypes))
    has_error = frame["error"].notna()
    frame.loc[~has_error & frame["score"].isna(), "error"] = "undefined score"
    frame.loc[frame["error"].notna(), "score"] = math.nan
    frame["truncated"] = frame["truncated"].astype("boolean").fillna(False)
    return frame.astype(dtypes)


def uncalled_columns(
    judge_model: str, judge_version: str, latency_ms: float = 0.0
) -> dict[str, Any]:
    """The columns describing how a row was scored when no provider was called (no tokens, no
    cost, not from the reply cache)."""
    return {
        "latency_ms": latency_ms,
        "judge_model": judge_model,
        "judge_version": judge_version,
        "cached": False,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost_usd": 0.0,
    }


@dataclass(frozen=True)
class _Call:
    """One row's LLM exchange: the reply (None when skipped), its parsed payload or an error."""

    reply: LLMReply | None
    payload: dict[str, Any] | None
    error: str | None
    prompt: Messages | None = None


def _bounded(request: Messages | Skip) -> Messages | Skip:
    """`request`, or a `Skip` when it is a prompt over `MAX_PROMPT_CHARS` characters."""
    if isinstance(request, Skip):
        return request
    problem = oversized(request)
    return request if problem is None else Skip(problem)


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

    def score(self, metric: JudgedMetric, frame: Frame, *, use_cache: bool = True) -> pd.DataFrame:
        """`metric` judged on every row of `frame`: rows with a problem (`JudgedMetric.problem`)
        or a `Skip` prompt are error rows without a call, the others are sent in one batch, with
        the JSON Schema of the metric's `reply` as `response_format` where it has one."""
        texts = metric.texts(frame)
        requests: list[Messages | Skip] = []
        for row in texts:
            problem = metric.problem(row)
            requests.append(Skip(problem) if problem else metric.prompt(row))
        sent = [not isinstance(request, Skip) for request in requests]
        shape = None if metric.reply is None else response_format(metric.name, metric.reply)
        calls = self._ask(requests, use_cache, metric.parse, shape)
        if metric.context is None:
            extra: Sequence[Any] = [None] * len(calls)
        else:
            extra = metric.context(self.embedder, texts, sent, [c.payload for c in calls])
        return self._frame(
            metric, calls, lambda i, payload: metric.interpret(payload, extra[i]), shape
        )

    def _ask(
        self,
        requests: Sequence[Messages | Skip],
        use_cache: bool,
        parse: Callable[[str], dict[str, Any]],
        shape: dict[str, Any] | None = None,
    ) -> list[_Call]:
        """Send every prompt in one batch; `parse` each reply (the JSON object by default).

        A prompt longer than `llm.prompts.MAX_PROMPT_CHARS` is not sent: its row gets the error
        `prompt too long`, so one huge dataset text cannot run up the provider bill."""
        requests = [_bounded(request) for request in requests]
        prompts = [request for request in requests if not isinstance(request, Skip)]
        answered = (
            self.client.complete_many(prompts, use_cache=use_cache, response_format=shape)
            if prompts
            else []
        )
        replies = iter(answered)
        calls = []
        for request in requests:
            if isinstance(request, Skip):
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
        self.client.forget([c.prompt for c in unusable if c.prompt and c.payload is None], shape)
        return calls

    def _frame(
        self,
        metric: JudgedMetric,
        calls: Sequence[_Call],
        interpret: Callable[[int, dict[str, Any]], Interpretation],
        shape: dict[str, Any] | None = None,
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
                        self.client.forget([call.prompt], shape)
                else:
                    row |= {"score": score, "error": error, **details}
            rows.append(row)
        return judgment_frame(metric.detail_columns, rows)

    def _reply_columns(self, reply: LLMReply | None) -> dict[str, Any]:
        if reply is None:
            return {"raw_reply": None} | uncalled_columns(self.judge_model, self.judge_version)
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
