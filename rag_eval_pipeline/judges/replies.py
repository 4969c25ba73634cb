"""Reading a parsed judge reply against the schema its prompt asked for.

`rag_eval_pipeline.judges.parsing` finds the JSON object (or score) in a reply; `read` validates
it with the metric's pydantic reply model after a small repair (`repaired`) and raises
`InvalidReplyError` naming the first field that breaks the schema, which the LLM judge records
as an `invalid reply: ...` error row. Each metric module of
`rag_eval_pipeline.judges.metrics` interprets its reply with them into an `Interpretation`:
(score, error or None, the metric's detail columns).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, Field, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from rag_eval_pipeline.judges.parsing import ReplyParseError, parse_json_object, parse_score
from rag_eval_pipeline.metrics.ragas import UndefinedScoreError
from rag_eval_pipeline.text.shown import shown_value

Interpretation = tuple[float, str | None, dict[str, Any]]


class InvalidReplyError(ValueError):
    """A reply is valid JSON but does not follow the schema the prompt asked for."""


def attempt(metric: Callable[..., float], *args: Any) -> tuple[float, str | None]:
    """(score, None), or (NaN, reason) when the metric is undefined for these arguments."""
    try:
        return metric(*args), None
    except UndefinedScoreError as exc:
        return math.nan, str(exc)


Reply = TypeVar("Reply", bound=BaseModel)
_BOOL = TypeAdapter(bool)


def repaired(value: Any) -> Any:
    """The tolerant repair before validation: every string of a parsed reply stripped of the
    whitespace around it (`" yes "` is a yes), at any depth. The rest of the tolerance is the
    models' lax validation: true/false, 1/0 and yes/no words (any case) are booleans, numbers
    written as strings are numbers."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, list):
        return [repaired(item) for item in value]
    if isinstance(value, dict):
        return {key: repaired(item) for key, item in value.items()}
    return value


def read(reply: type[Reply], payload: dict[str, Any]) -> Reply:
    """`payload` validated by the `reply` model (after `repaired`); `InvalidReplyError` naming
    the first field that breaks it."""
    try:
        return reply.model_validate(repaired(payload))
    except ValidationError as exc:
        raise InvalidReplyError(_problem(exc.errors()[0])) from None


def _problem(error: ErrorDetails) -> str:
    """One validation error in the words of an invalid reply: the key and the value shown."""
    name = next((p for p in reversed(error["loc"]) if isinstance(p, str)), "reply")
    got = error.get("input")
    kind = error["type"]
    if kind == "missing":
        return f"missing key {name!r}"
    if kind == "list_type":
        return f"{name!r} must be a list, got {type(got).__name__}"
    if kind.startswith("bool"):
        return f"{name} must be true or false, got {shown_value(got)}"
    if kind == "value_error":
        return f"{name} {error.get('ctx', {}).get('error')}"
    path = ".".join(str(part) for part in error["loc"]) or "reply"
    return f"{path}: {error['msg']}, got {shown_value(got)}"


def _flag(value: Any) -> int:
    """A 1/0 verdict, also written true/false or yes/no."""
    try:
        return int(_BOOL.validate_python(value))
    except ValidationError:
        raise ValueError(f"must be 1 or 0, got {shown_value(value)}") from None


def _yes_no(value: Any) -> str:
    """A yes/no verdict, also written true/false or 1/0 (any case)."""
    try:
        return "yes" if _BOOL.validate_python(value) else "no"
    except ValidationError:
        raise ValueError(f"must be yes or no, got {shown_value(value)}") from None


def _text(value: Any) -> str:
    """A non-empty string."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError("must be non-empty strings")
    return value.strip()


Flag = Annotated[int, BeforeValidator(_flag), Field(ge=0, le=1)]
"""A verdict the prompt asks as 1 or 0."""
Text = Annotated[str, BeforeValidator(_text)]
"""A non-empty string, stripped."""


def reply_reason(text: str) -> str | None:
    """The `reason` of the reply's JSON object, None when there is none."""
    try:
        return parse_json_object(text).get("reason")
    except ReplyParseError:
        return None


def parse_rubric(text: str) -> dict[str, Any]:
    """A 0–1 rubric reply: its score by `parse_score` (JSON, bare or labelled), its JSON reason."""
    return {"score": parse_score(text), "reason": reply_reason(text)}


def rubric(payload: dict[str, Any]) -> Interpretation:
    """A parsed rubric reply: its score, with its reason as the `reason` detail."""
    reason = payload.get("reason")
    return payload["score"], None, {"reason": None if reason is None else str(reason)}


class RubricReply(BaseModel):
    """A 0–1 rubric reply."""

    score: float = Field(ge=0.0, le=1.0)
    reason: str = Field(description="one sentence")


class LikertReply(BaseModel):
    """A 1–5 rubric reply."""

    score: int = Field(ge=1, le=5)
    reason: str = Field(description="one sentence")


class YesNoReply(BaseModel):
    """A yes/no verdict with its reason."""

    verdict: Annotated[Literal["yes", "no"], BeforeValidator(_yes_no)]
    reason: str | None = Field(default=None, description="one sentence")


def response_format(name: str, reply: type[BaseModel]) -> dict[str, Any]:
    """The `response_format` that asks a provider for a reply following `reply`'s JSON Schema
    (OpenAI's `json_schema` type, which litellm translates for the providers that enforce one)."""
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": reply.model_json_schema()},
    }
