"""Reading a parsed judge reply against the schema its prompt asked for.

`rag_eval_pipeline.judges.parsing` finds the JSON object (or score) in a reply; the helpers here
check its fields and raise `InvalidReplyError` when it breaks the schema, which the LLM judge
records as an `invalid reply: ...` error row. Each metric module of
`rag_eval_pipeline.judges.metrics` interprets its reply with them into an `Interpretation`:
(score, error or None, the metric's detail columns).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from rag_eval_pipeline.judges.parsing import ReplyParseError, parse_json_object, parse_score
from rag_eval_pipeline.metrics.ragas import UndefinedScoreError

Interpretation = tuple[float, str | None, dict[str, Any]]


class InvalidReplyError(ValueError):
    """A reply is valid JSON but does not follow the schema the prompt asked for."""


def attempt(metric: Callable[..., float], *args: Any) -> tuple[float, str | None]:
    """(score, None), or (NaN, reason) when the metric is undefined for these arguments."""
    try:
        return metric(*args), None
    except UndefinedScoreError as exc:
        return math.nan, str(exc)


def as_bool(value: Any, field: str) -> bool:
    """A verdict: true/false, 1/0 or "yes"/"no" (any case); anything else is invalid."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in {"true", "yes", "1", "false", "no", "0"}:
        return value.strip().lower() in {"true", "yes", "1"}
    raise InvalidReplyError(f"{field} must be true or false, got {value!r}")


def field(payload: dict[str, Any], key: str) -> Any:
    """`payload[key]`; a missing key is invalid."""
    if key not in payload:
        raise InvalidReplyError(f"missing key {key!r}")
    return payload[key]


def list_field(payload: dict[str, Any], key: str) -> list[Any]:
    """`payload[key]`, which must be a list."""
    value = field(payload, key)
    if not isinstance(value, list):
        raise InvalidReplyError(f"{key!r} must be a list, got {type(value).__name__}")
    return value


def claim_flags(payload: dict[str, Any], flag: str) -> list[bool]:
    """The `flag` verdict of every object in the reply's `claims` list."""
    flags = []
    for claim in list_field(payload, "claims"):
        if not isinstance(claim, dict):
            raise InvalidReplyError(f"each claim must be an object, got {claim!r}")
        flags.append(as_bool(field(claim, flag), flag))
    return flags


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
    reason: str


class LikertReply(BaseModel):
    """A 1–5 rubric reply."""

    score: int = Field(ge=1, le=5)
    reason: str


class YesNoReply(BaseModel):
    """A yes/no verdict with its reason."""

    verdict: Literal["yes", "no"]
    reason: str


def response_format(name: str, reply: type[BaseModel]) -> dict[str, Any]:
    """The `response_format` that asks a provider for a reply following `reply`'s JSON Schema
    (OpenAI's `json_schema` type, which litellm translates for the providers that enforce one)."""
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": reply.model_json_schema()},
    }
