"""Configuration files as pydantic models: one rule for reading a YAML mapping into settings.

Every configuration file (`config/thresholds.yaml`, `config/composite.yaml`, ...) is a
`ConfigModel`: its keys are the model's fields, a key the model does not know is refused (a
misspelt `excelent` is an error, not a silently ignored band), and each value is checked by its
field's type and validators. `validated` turns the first problem (an unknown key before any
other) into one line naming the file, the key (dotted, with list positions:
`roles.tiers.traffic.primary[0]`) and the value, and for an unknown key the closest valid one
(`difflib.get_close_matches`).

The models also give each file its JSON Schema (`model_json_schema`), which
`rag_eval_pipeline.config_schemas` writes into `docs/schemas/` for editors to check files while
they are typed.
"""

from __future__ import annotations

import difflib
import types
import typing
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic_core import ErrorDetails

from rag_eval_pipeline.text.shown import MAX_SHOWN_CHARS, capped, shown_value

Model = TypeVar("Model", bound="ConfigModel")


class ConfigModel(BaseModel):
    """A mapping of a configuration file: unknown keys are refused, values are not coerced
    between strings and numbers."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class Bands(ConfigModel):
    """A metric's bands and regression tolerance: a rule of `config/thresholds.yaml` and a
    criterion's `bands` in `config/criteria.yaml` share them."""

    excellent: float | None = None
    good: float | None = None
    higher_is_better: bool | None = None
    regression: float | None = None
    min_change: float | None = None


class ConfigError(ValueError):
    """An invalid configuration file; the message is one line naming file, key and value."""


def validated(model: type[Model], raw: Any, path: Path | str) -> Model:
    """`raw` (a parsed YAML document; None is an empty file) as `model`, or `ConfigError`."""
    try:
        return model.model_validate({} if raw is None else raw)
    except ValidationError as error:
        raise ConfigError(describe(model, error, path)) from None


def describe(model: type[BaseModel], error: ValidationError, path: Path | str) -> str:
    """The first problem of `error` as one line: `<path>: <key>: <problem>`."""
    problems = error.errors(include_url=False)
    # a misspelt key is also a missing one: name the misspelling
    problem = min(problems, key=lambda p: p["type"] != "extra_forbidden")
    return f"{path}: {problem_text(model, problem)}"


def problem_text(model: type[BaseModel], problem: ErrorDetails) -> str:
    """One problem of a validation by `model` as `<key>: <problem>` (`<key> = <value>: ...`)."""
    location = tuple(problem["loc"])
    key = dotted(location) or "top level"
    if problem["type"] == "extra_forbidden":
        return f"{key} = {shown(problem.get('input'))}: {unknown_key(model, location)}"
    message = str(problem["msg"]).removeprefix("Value error, ")
    if problem["type"] == "missing":
        return f"{key}: missing (required)"
    if problem["type"] == "value_error":
        return f"{key}: {message}"
    return f"{key} = {shown(problem.get('input'))}: {message}"


def unknown_key(model: type[BaseModel], location: tuple[Any, ...]) -> str:
    """`unknown key; did you mean '<the closest valid key>'?` (else the keys valid there) for
    the key at `location` of a validation by `model`."""
    known = field_names(model, location[:-1])
    close = difflib.get_close_matches(str(location[-1]), known, n=1)
    hint = f"did you mean {close[0]!r}?" if close else f"known keys: {', '.join(known)}"
    return f"unknown key; {hint}"


def dotted(location: tuple[Any, ...]) -> str:
    """A pydantic error location as a key path: `metrics.mrr.role`, `baselines[0]`."""
    text = ""
    for part in location:
        if part == "[key]":  # pydantic's marker of a mapping key (the key itself precedes it)
            continue
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def field_names(model: Any, location: tuple[Any, ...]) -> list[str]:
    """The keys valid at `location` inside `model` (empty where any key goes)."""
    current: Any = model
    for part in location:
        current = _inner(current, part)
    current = _model_of(current)
    return sorted(current.model_fields) if current is not None else []


def _inner(annotation: Any, part: Any) -> Any:
    """The type of what `part` (a field name, a mapping key or a list index) selects."""
    model = _model_of(annotation)
    if model is not None:
        field = model.model_fields.get(str(part))
        return field.annotation if field is not None else None
    annotation = _required(annotation)
    arguments = typing.get_args(annotation)
    return arguments[-1] if arguments else None


def _required(annotation: Any) -> Any:
    """`X` of `X | None`; `annotation` itself otherwise."""
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        kept = [a for a in typing.get_args(annotation) if a is not type(None)]
        return kept[0] if len(kept) == 1 else annotation
    return annotation


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """`annotation` as a model class, also inside `Model | None`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        models = [_model_of(a) for a in typing.get_args(annotation)]
        return next((m for m in models if m is not None), None)
    return None


def shown(value: Any) -> str:
    """A value as a message echoes it: a string by the `shown_value` rule, anything else by its
    `repr`, capped alike (its first `MAX_SHOWN_CHARS` characters, then its length)."""
    return shown_value(value) if isinstance(value, str) else capped(repr(value), MAX_SHOWN_CHARS)
