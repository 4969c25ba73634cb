"""Criteria a team declares in `config/criteria.yaml`, judged like the built-in judge metrics.

A criterion is G-Eval-style (Liu et al., 2023): a name, the criterion in words, optional
evaluation steps, a scale (`1-5` or `yes/no`), the inputs the judge sees (`question`, `answer`,
`contexts`, `ground_truth`), the tiers it runs on (`tier3`, `traffic`), and optionally its
scorecard `role` and threshold `bands` (`excellent`, `good`, `higher_is_better`,
`regression`, `min_change`, as in `config/thresholds.yaml`). Its scorecard name is its `name`,
verbatim.

- LLM judge: `Criterion.template` asks for {"score": 1–5, "reason": str}, scaled to
  (s − 1) / 4 as the built-in 1–5 rubrics are (a score outside 1–5 is an error row), or for
  {"verdict": "yes" | "no", "reason": str}, scored 1 / 0. Every input is XML-escaped between
  its tags and the system message ends with `llm.prompts.DATA_NOT_INSTRUCTIONS`, as for every
  built-in prompt; the criterion's own text is configuration, trusted, and kept literal (a `$`
  in it is not a placeholder).
- Offline judge: not computed (`NEEDS_LLM`); the heuristic judge has no way to read a
  criterion written in words, and a made-up number would be worse than none.

`load_criteria` validates the file and raises one `CriteriaError` naming the file, the key and
the offending value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AfterValidator, BaseModel, BeforeValidator, Field

from rag_eval_pipeline.judges.metrics import BUILT_IN
from rag_eval_pipeline.judges.parsing import parse_json_object, parse_score
from rag_eval_pipeline.judges.prompts import format_instructions
from rag_eval_pipeline.judges.replies import (
    Interpretation,
    LikertReply,
    YesNoReply,
    read,
    reply_reason,
)
from rag_eval_pipeline.judges.spec import JudgedMetric
from rag_eval_pipeline.llm.prompts import Messages, PromptTemplate, format_contexts
from rag_eval_pipeline.settings import PROJECT_ROOT
from rag_eval_pipeline.storage.config_files import Bands, ConfigError, ConfigModel, validated
from rag_eval_pipeline.storage.yaml_files import load_yaml_file

CRITERIA_ENV = "RAG_EVAL_CRITERIA"
DEFAULT_CRITERIA_FILE = PROJECT_ROOT / "config" / "criteria.yaml"
NEEDS_LLM = "needs an LLM judge"
DETAIL_COLUMNS: dict[str, str] = {"reason": "str"}
_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
# Names a criterion cannot take: the built-in judge metrics, their scorecard names, and the
# prefixes of generated scorecard names.
RESERVED = frozenset(m.name for m in BUILT_IN) | frozenset(m.scorecard_name for m in BUILT_IN)
RESERVED_PREFIXES = ("avg_", "ppi_", "classical_")
LIKERT_LOW, LIKERT_HIGH = 1.0, 5.0
# Inputs in the order the user message shows them, with their tags.
_TAGS = {
    "question": "question",
    "contexts": "context",
    "ground_truth": "ground_truth",
    "answer": "answer",
}


class CriteriaError(ValueError):
    """An invalid criteria file: the message names the file, the key and the value."""


@dataclass(frozen=True)
class Criterion:
    """One declared criterion (see the module docstring)."""

    name: str
    criterion: str
    scale: str = "1-5"
    steps: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ("question", "answer")
    tiers: tuple[str, ...] = ("tier3",)
    role: str | None = None
    bands: Mapping[str, Any] = field(default_factory=dict)

    @property
    def reply(self) -> type[BaseModel]:
        """The model of the reply its prompt asks for: a yes/no verdict or a 1–5 score."""
        return YesNoReply if self.scale == "yes/no" else LikertReply

    @property
    def template(self) -> PromptTemplate:
        """The judge prompt: criterion, steps, scale and schema; one tagged field per input."""
        steps = "".join(f"{i}. {step}\n" for i, step in enumerate(self.steps, 1))
        if self.scale == "yes/no":
            scale = "Decide whether the answer meets the criterion.\n"
        else:
            scale = (
                "Score from 1 to 5: 5 = fully meets the criterion, 3 = partly, 1 = not at all.\n"
            )
        system = (
            f"You evaluate an answer against one criterion, {self.name}.\n"
            f"Criterion: {self.criterion}\n"
            + (f"Evaluation steps:\n{steps}" if steps else "")
            + scale
            + format_instructions(self.reply)
        )
        user = "\n\n".join(f"<{_TAGS[i]}>\n${i}\n</{_TAGS[i]}>" for i in _TAGS if i in self.inputs)
        return PromptTemplate(name=self.name, system=system.replace("$", "$$"), user=user)

    def prompt(self, texts: Mapping[str, Any]) -> Messages:
        """The messages for one item: `texts` maps each input to its text (`contexts`: chunks,
        numbered one per line as in the built-in prompts)."""
        fields = {
            i: format_contexts(texts[i]) if i == "contexts" else str(texts[i]) for i in self.inputs
        }
        return self.template.render(**fields)

    def parse(self, text: str) -> dict[str, Any]:
        """A 1–5 reply scaled to (s − 1) / 4 (outside 1–5: `ReplyParseError`), or the JSON
        object of a yes/no reply."""
        if self.scale == "yes/no":
            return parse_json_object(text)
        score = parse_score(text, low=LIKERT_LOW, high=LIKERT_HIGH)
        scaled = (score - LIKERT_LOW) / (LIKERT_HIGH - LIKERT_LOW)
        return {"score": scaled, "reason": reply_reason(text)}

    def interpret(self, payload: dict[str, Any]) -> Interpretation:
        """The parsed reply → (score, None, {"reason"}); a yes/no verdict is 1 or 0."""
        if self.scale == "yes/no":
            reply = read(YesNoReply, payload)
            return float(reply.verdict == "yes"), None, {"reason": reply.reason}
        reason = payload.get("reason")
        return payload["score"], None, {"reason": None if reason is None else str(reason)}

    def interpret_reply(self, payload: dict[str, Any], _: Any = None) -> Interpretation:
        """`interpret` in the form `JudgedMetric.interpret` takes."""
        return self.interpret(payload)

    @property
    def metric(self) -> JudgedMetric:
        """The criterion as a judged metric: scored by the LLM judge only (no heuristic), named
        as declared in the judgments and the scorecard."""
        return JudgedMetric(
            name=self.name,
            scorecard_name=self.name,
            inputs=self.inputs,
            detail_columns=DETAIL_COLUMNS,
            prompt=self.prompt,
            parse=self.parse,
            interpret=self.interpret_reply,
            tiers=self.tiers,
            role=self.role,
            reply=self.reply,
        )

    def rule(self) -> dict[str, Any]:
        """The criterion's threshold rule (its bands, and its role when it has one)."""
        return {**self.bands, **({"role": self.role} if self.role else {})}


def _name(value: Any) -> str:
    if not isinstance(value, str) or not _NAME.fullmatch(value):
        raise ValueError(f"{value!r}: expected lower_snake_case, 1-64 characters")
    if value in RESERVED or value.startswith(RESERVED_PREFIXES):
        raise ValueError(f"{value!r}: a built-in metric's name or a reserved prefix (avg_, ...)")
    return value


def _words(value: str) -> str:
    if not value.strip():
        raise ValueError(f"{value!r}: expected the criterion in words")
    return value.strip()


class CriterionEntry(ConfigModel):
    """One criterion of `config/criteria.yaml` (see the module docstring)."""

    name: Annotated[str, BeforeValidator(_name)]
    criterion: Annotated[str, AfterValidator(_words)]
    scale: Literal["1-5", "yes/no"] = "1-5"
    steps: Annotated[list[str], Field(min_length=1)] | None = None
    inputs: Annotated[
        list[Literal["question", "answer", "contexts", "ground_truth"]], Field(min_length=1)
    ] = ("question", "answer")
    tiers: Annotated[list[Literal["tier3", "traffic"]], Field(min_length=1)] = ("tier3",)
    role: str | None = None
    bands: Bands | None = None

    def criterion_of(self) -> Criterion:
        return Criterion(
            name=self.name,
            criterion=self.criterion,
            scale=self.scale,
            steps=tuple(self.steps or ()),
            inputs=tuple(self.inputs),
            tiers=tuple(self.tiers),
            role=self.role,
            bands=self.bands.model_dump(exclude_none=True) if self.bands else {},
        )


class CriteriaFile(ConfigModel):
    """`config/criteria.yaml`: the criteria the LLM judge scores beside the built-in metrics."""

    criteria: list[CriterionEntry] | None = None


def load_criteria(path: Path) -> tuple[Criterion, ...]:
    """The criteria of `path` (none when the file is absent); a criterion cannot take a
    `RESERVED` name. Raises `CriteriaError` naming the file, key and value."""
    path = Path(path)
    if not path.exists():
        return ()
    try:
        raw = load_yaml_file(path) or {}
    except yaml.YAMLError as exc:
        raise CriteriaError(f"{path}: not valid YAML: {exc}") from exc
    try:
        entries = validated(CriteriaFile, raw, path).criteria or []
    except ConfigError as error:
        raise CriteriaError(str(error)) from None
    names = [entry.name for entry in entries]
    for name in names:
        if names.count(name) > 1:
            raise CriteriaError(f"{path}: criteria[].name = {name!r}: declared twice")
    return tuple(entry.criterion_of() for entry in entries)


def criteria_file() -> Path:
    """`$RAG_EVAL_CRITERIA`, else `config/criteria.yaml`."""
    return Path(os.environ.get(CRITERIA_ENV, DEFAULT_CRITERIA_FILE))


@cache
def _cached(path: Path, mtime_ns: int) -> tuple[Criterion, ...]:
    return load_criteria(path)


def configured_criteria(tier: str | None = None) -> tuple[Criterion, ...]:
    """The criteria of `criteria_file()` (those running on `tier` when given), read again
    whenever the file changes."""
    path = criteria_file()
    criteria = _cached(path, path.stat().st_mtime_ns if path.exists() else 0)
    return tuple(c for c in criteria if tier is None or tier in c.tiers)
