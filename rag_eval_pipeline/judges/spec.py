"""A judged metric as data: everything a judge needs to score it, in one object.

A `JudgedMetric` names the metric (the judgments' `metric` column and the scorecard's name),
its inputs, how one row becomes a prompt, how a reply is parsed and interpreted into a score
with detail columns, and the offline heuristic; `LLMJudge.score` and `OfflineJudge.score` run
any of them. The built-in metrics are declared one per module of `judges.metrics`, the criteria
of `config/criteria.yaml` by `judges.criteria`; registered ones (`judges.metrics.register`) are
scored by the tiers they name.

Inputs are those of `INPUTS`: a row's `question`, `answer` and `ground_truth` are texts (None
when missing), its `contexts` a list of chunks. Before any call, a row gets an error instead of
a score when a text input other than the answer is missing or blank (`missing question`, ...),
when the answer is missing (`missing answer`; an empty answer is still judged), or when the
metric's `skip` says so (e.g. `no contexts`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd
from pydantic import BaseModel

from rag_eval_pipeline.datasets.values import (
    aligned,
    as_chunks,
    as_text,
    missing_answer,
    missing_input,
)
from rag_eval_pipeline.judges.parsing import parse_json_object
from rag_eval_pipeline.judges.replies import Interpretation
from rag_eval_pipeline.llm.prompts import Messages

if TYPE_CHECKING:
    from rag_eval_pipeline.embedding.embedder import Embedder
    from rag_eval_pipeline.judges.offline import OfflineJudge

INPUTS = ("question", "answer", "contexts", "ground_truth")
# The column of a tier's answer table that holds each input.
FRAME_COLUMNS = {
    "question": "question",
    "answer": "answer",
    "contexts": "contexts",
    "ground_truth": "ground_truth_answer",
}

Texts = Mapping[str, Any]
"""One row's inputs: each input name → its text, or its list of chunks for `contexts`."""
Problems = Sequence[str | None]
"""Per row, why it is not scored (None: it is)."""
Heuristic = Callable[["OfflineJudge", Sequence[Texts], Problems], list[dict[str, Any]]]
"""The offline judge's rows of a metric: score, error, raw reply and detail columns."""
Context = Callable[
    ["Embedder", Sequence[Texts], Sequence[bool], Sequence[dict[str, Any] | None]], list[Any]
]
"""Per row, what `interpret` needs beyond the reply (e.g. embeddings), given which rows were
sent to the LLM and their parsed replies (None for a row skipped or failed)."""


@dataclass(frozen=True)
class Skip:
    """A row decided without calling the LLM, with the reason it has no score."""

    error: str


@dataclass(frozen=True)
class JudgedMetric:
    """One judged metric (see the module docstring).

    `prompt` renders one row's messages, or returns a `Skip` for a row the LLM need not see;
    `parse` reads a reply's text into a payload (its JSON object by default; raise
    `ReplyParseError` when it holds none); `interpret(payload, context)` gives the score, an
    error or None, and the detail columns, raising `InvalidReplyError` for a payload that breaks
    the schema; `context` (optional) computes each row's extra argument of `interpret`.
    `heuristic` is the offline judge's scorer (None: the metric needs an LLM judge), `reads` the
    inputs it reads whole (which set `truncated`; default: every input). `tiers` are the answer
    tiers that judge the metric (`tier2`, `tier3`, `traffic`), `role` its verdict role when the
    thresholds file gives none, `parameters` the settings its functions were built with (part
    of the identity of its cached results). `reply` is the pydantic model of the reply the
    prompt asks for: its JSON Schema is sent as the request's `response_format` to providers
    that enforce one (`LLMClient`), so they can only answer in that shape.
    """

    name: str
    scorecard_name: str
    inputs: tuple[str, ...]
    detail_columns: Mapping[str, str]
    prompt: Callable[[Texts], Messages | Skip]
    interpret: Callable[[dict[str, Any], Any], Interpretation]
    heuristic: Heuristic | None = None
    parse: Callable[[str], dict[str, Any]] = parse_json_object
    context: Context | None = None
    skip: Callable[[Texts], str | None] | None = None
    reads: tuple[str, ...] | None = None
    tiers: tuple[str, ...] = ()
    role: str | None = None
    reply: type[BaseModel] | None = None
    parameters: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        unknown = [i for i in self.inputs if i not in INPUTS]
        if unknown or not self.inputs:
            raise ValueError(f"{self.name}: inputs must be some of {INPUTS}, got {self.inputs}")

    @property
    def needs_ground_truth(self) -> bool:
        """Whether rows without a ground-truth answer are left out (not errors)."""
        return "ground_truth" in self.inputs

    def texts(self, columns: pd.DataFrame | Mapping[str, Sequence[Any]]) -> list[Texts]:
        """Per row, the metric's inputs read from `columns` (one column per input name)."""
        values = {i: list(columns[i]) for i in self.inputs}
        n_rows = aligned(**values)
        return [
            {
                i: as_chunks(values[i][r]) if i == "contexts" else as_text(values[i][r])
                for i in values
            }
            for r in range(n_rows)
        ]

    def problem(self, texts: Texts) -> str | None:
        """Why a row is not scored, before any judge sees it (module docstring), or None."""
        present = {i: v for i, v in texts.items() if i not in ("contexts", "answer")}
        missing = missing_input(**present)
        if missing is None and "answer" in texts:
            missing = missing_answer(texts["answer"])
        return missing or (self.skip(texts) if self.skip else None)

    def read_columns(self, texts: Sequence[Texts]) -> list[list[Any]]:
        """The columns whose length sets each row's `truncated` (see `reads`)."""
        return [[row[i] for row in texts] for i in self.reads or self.inputs]


def frame_inputs(frame: pd.DataFrame) -> pd.DataFrame:
    """An answer table with its columns renamed to input names (`ground_truth_answer` →
    `ground_truth`), ready for `JudgedMetric.texts`."""
    return frame.rename(columns={v: k for k, v in FRAME_COLUMNS.items()})
