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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from rag_eval_pipeline.judges.metrics import SCORECARD_NAMES
from rag_eval_pipeline.judges.parsing import parse_json_object, parse_score
from rag_eval_pipeline.judges.prompts import JSON_ONLY
from rag_eval_pipeline.judges.replies import Interpretation, as_bool, reply_reason
from rag_eval_pipeline.judges.replies import field as reply_field
from rag_eval_pipeline.llm.prompts import Messages, PromptTemplate, format_contexts
from rag_eval_pipeline.settings import PROJECT_ROOT
from rag_eval_pipeline.storage.yaml_files import load_yaml_file

CRITERIA_ENV = "RAG_EVAL_CRITERIA"
DEFAULT_CRITERIA_FILE = PROJECT_ROOT / "config" / "criteria.yaml"
NEEDS_LLM = "needs an LLM judge"
DETAIL_COLUMNS: dict[str, str] = {"reason": "str"}
SCALES = ("1-5", "yes/no")
INPUTS = ("question", "answer", "contexts", "ground_truth")
TIERS = ("tier3", "traffic")
BAND_KEYS = ("excellent", "good", "higher_is_better", "regression", "min_change")
_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
# Names a criterion cannot take: the built-in judge metrics, their scorecard names, and the
# prefixes of generated scorecard names.
RESERVED = frozenset(SCORECARD_NAMES) | frozenset(SCORECARD_NAMES.values())
RESERVED_PREFIXES = ("avg_", "ppi_", "classical_")
_KEYS = ("name", "criterion", "steps", "scale", "inputs", "tiers", "role", "bands")
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
    def template(self) -> PromptTemplate:
        """The judge prompt: criterion, steps, scale and schema; one tagged field per input."""
        steps = "".join(f"{i}. {step}\n" for i, step in enumerate(self.steps, 1))
        if self.scale == "yes/no":
            scale = (
                "Decide whether the answer meets the criterion.\n"
                'Schema: {"verdict": "yes" or "no", "reason": "<one sentence>"}\n'
            )
        else:
            scale = (
                "Score from 1 to 5: 5 = fully meets the criterion, 3 = partly, 1 = not at all.\n"
                'Schema: {"score": <integer from 1 to 5>, "reason": "<one sentence>"}\n'
            )
        system = (
            f"You evaluate an answer against one criterion, {self.name}.\n"
            f"Criterion: {self.criterion}\n"
            + (f"Evaluation steps:\n{steps}" if steps else "")
            + scale
            + JSON_ONLY
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
        reason = payload.get("reason")
        details = {"reason": None if reason is None else str(reason)}
        if self.scale == "yes/no":
            return float(as_bool(reply_field(payload, "verdict"), "verdict")), None, details
        return payload["score"], None, details

    def rule(self) -> dict[str, Any]:
        """The criterion's threshold rule (its bands, and its role when it has one)."""
        return {**self.bands, **({"role": self.role} if self.role else {})}


def _fail(path: Path, key: str, value: Any, expected: str) -> CriteriaError:
    return CriteriaError(f"{path}: {key} = {value!r}: {expected}")


def _strings(path: Path, key: str, value: Any, allowed: Sequence[str] | None) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise _fail(path, key, value, "expected a non-empty list of strings")
    for item in value:
        if allowed is not None and item not in allowed:
            raise _fail(path, key, item, f"expected one of {', '.join(allowed)}")
    return tuple(value)


def _criterion(path: Path, index: int, raw: Any) -> Criterion:
    where = f"criteria[{index}]"
    if not isinstance(raw, dict):
        raise _fail(path, where, raw, "expected a mapping with name, criterion, ...")
    for key in raw:
        if key not in _KEYS:
            raise _fail(path, f"{where}.{key}", raw[key], f"unknown key; known: {', '.join(_KEYS)}")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _fail(path, f"{where}.name", name, "expected lower_snake_case, 1-64 characters")
    if name in RESERVED or name.startswith(RESERVED_PREFIXES):
        raise _fail(
            path, f"{where}.name", name, "a built-in metric's name or a reserved prefix (avg_, ...)"
        )
    where = f"criteria[{index}] ({name})"
    text = raw.get("criterion")
    if not isinstance(text, str) or not text.strip():
        raise _fail(path, f"{where}.criterion", text, "expected the criterion in words")
    scale = str(raw.get("scale", "1-5"))
    if scale not in SCALES:
        raise _fail(path, f"{where}.scale", raw.get("scale"), "expected 1-5 or yes/no")
    bands = raw.get("bands") or {}
    if not isinstance(bands, dict):
        raise _fail(path, f"{where}.bands", bands, f"expected a mapping of {', '.join(BAND_KEYS)}")
    for key, value in bands.items():
        expected_type = bool if key == "higher_is_better" else (int, float)
        if key not in BAND_KEYS or not isinstance(value, expected_type):
            raise _fail(path, f"{where}.bands.{key}", value, f"expected one of {BAND_KEYS}")
    role = raw.get("role")
    if role is not None and not isinstance(role, str):
        raise _fail(path, f"{where}.role", role, "expected a string")
    return Criterion(
        name=name,
        criterion=text.strip(),
        scale=scale,
        steps=_strings(path, f"{where}.steps", raw["steps"], None) if "steps" in raw else (),
        inputs=_strings(path, f"{where}.inputs", raw.get("inputs", ["question", "answer"]), INPUTS),
        tiers=_strings(path, f"{where}.tiers", raw.get("tiers", ["tier3"]), TIERS),
        role=role,
        bands=dict(bands),
    )


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
    if not isinstance(raw, dict) or set(raw) - {"criteria"}:
        raise _fail(path, "top level", raw, "expected a mapping with one key, criteria")
    items = raw.get("criteria") or []
    if not isinstance(items, list):
        raise _fail(path, "criteria", items, "expected a list of criteria")
    criteria = tuple(_criterion(path, i, item) for i, item in enumerate(items))
    names = [c.name for c in criteria]
    for name in names:
        if names.count(name) > 1:
            raise _fail(path, "criteria[].name", name, "declared twice")
    return criteria


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
