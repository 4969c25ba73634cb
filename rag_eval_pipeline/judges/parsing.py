"""Tolerant parsing of LLM judge replies into JSON objects and scores.

Judges are asked for JSON, but real replies wrap it in ```json fences, put prose before or after
it, or answer with a bare number. `parse_json_object` and `parse_score` accept those shapes and
raise `ReplyParseError` (carrying the raw reply) for anything else, so a caller can record the
failure per item instead of guessing.

Accepted score shapes, in order of precedence:

- a bare number or fraction: ``"0.8"``, ``"4/5"``, ``"**0.8**"``, ``"0.8."``;
- a JSON object (anywhere in the reply) with a ``"score"`` key (any case) whose value is a number,
  a numeric string or an ``"x/y"`` string;
- a labelled number or fraction: ``"Score: 0.8"``, ``"score = 4/5"``,
  ``"Final score: 4/5 because…"``, ``{'score': 0.8}``.

A fraction ``x/y`` means the number x/y (``"4/5"`` is 0.8); it is not rescaled onto
``[low, high]``. The resulting number must lie in ``[low, high]``, else `ReplyParseError`: an
out-of-range score is a judge that misunderstood its scale, which clamping would hide.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n?(.*?)```", re.DOTALL)
_NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
_BARE = re.compile(rf"\s*({_NUMBER})\s*(?:/\s*({_NUMBER}))?\s*")
_LABELLED = re.compile(
    rf"\bscore\b[\"']?\s*[:=]?\s*\**\s*({_NUMBER})\s*(?:/\s*({_NUMBER}))?", re.IGNORECASE
)
_DECORATION = "*`_ \t\r\n"
_PREVIEW_CHARS = 200


class ReplyParseError(ValueError):
    """A reply that does not contain what the judge was asked for; `raw` is the reply itself."""

    def __init__(self, raw: str, reason: str = "the reply could not be parsed") -> None:
        preview = raw if len(raw) <= _PREVIEW_CHARS else raw[:_PREVIEW_CHARS] + "…"
        super().__init__(f"{reason}; reply was: {preview!r}")
        self.raw = raw
        self.reason = reason


def _first_object(text: str) -> dict[str, Any] | None:
    """The first JSON object that starts at some '{' in `text`, if any."""
    decoder = json.JSONDecoder()
    position = text.find("{")
    while position != -1:
        try:
            value, _ = decoder.raw_decode(text, position)
        except ValueError:
            value = None
        if isinstance(value, dict):
            return value
        position = text.find("{", position + 1)
    return None


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON object of a reply: the whole reply, a fenced block, or the first `{...}` in it."""
    stripped = text.strip()
    try:
        whole = json.loads(stripped)
    except ValueError:
        whole = None
    if isinstance(whole, dict):
        return whole
    for block in [*_FENCE.findall(text), text]:
        found = _first_object(block)
        if found is not None:
            return found
    raise ReplyParseError(text, "no JSON object found in the reply")


def _to_number(raw: str, numerator: str, denominator: str | None) -> float:
    value = float(numerator)
    if denominator is not None:
        divisor = float(denominator)
        if divisor == 0:
            raise ReplyParseError(raw, f"score fraction {numerator}/{denominator} divides by zero")
        value /= divisor
    return value


def _number_from_string(raw: str, value: str) -> float | None:
    match = _BARE.fullmatch(value.strip(_DECORATION).rstrip("."))
    if match is None:
        return None
    return _to_number(raw, match.group(1), match.group(2))


def _score_key(obj: dict[str, Any]) -> str | None:
    return next((k for k in obj if isinstance(k, str) and k.lower() == "score"), None)


def _score_from_json(raw: str, value: Any) -> float:
    if isinstance(value, bool):
        raise ReplyParseError(raw, "'score' is a boolean, not a number")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        number = _number_from_string(raw, value)
        if number is not None:
            return number
    raise ReplyParseError(raw, f"'score' is not a number: {value!r}")


def _extract_score(text: str) -> float:
    number = _number_from_string(text, text)
    if number is not None:
        return number
    try:
        obj: dict[str, Any] | None = parse_json_object(text)
    except ReplyParseError:
        obj = None
    key = None if obj is None else _score_key(obj)
    if obj is not None and key is not None:
        return _score_from_json(text, obj[key])
    labelled = _LABELLED.search(text)
    if labelled is not None:
        return _to_number(text, labelled.group(1), labelled.group(2))
    if obj is not None:
        raise ReplyParseError(text, f"JSON reply has no 'score' key (keys: {sorted(obj)})")
    raise ReplyParseError(text, "no score found in the reply")


def parse_score(text: str, *, low: float = 0.0, high: float = 1.0) -> float:
    """The score in a judge reply, which must lie in ``[low, high]`` (see the module docstring)."""
    score = _extract_score(text)
    if not math.isfinite(score):
        raise ReplyParseError(text, f"score {score} is not finite")
    if not low <= score <= high:
        raise ReplyParseError(text, f"score {score:g} is outside [{low:g}, {high:g}]")
    return score
