"""Tolerant parsing of judge replies: the shapes real LLMs produce, and the ones that must fail."""

from __future__ import annotations

from typing import Any

import pytest

from rag_eval_pipeline.judges.parsing import ReplyParseError, parse_json_object, parse_score

pytestmark = [pytest.mark.unit]

JSON_CASES: list[tuple[str, dict[str, Any]]] = [
    ('{"score": 0.8, "reason": "ok"}', {"score": 0.8, "reason": "ok"}),
    ('  \n{"verdict": "yes"}\n', {"verdict": "yes"}),
    ('```json\n{"score": 1}\n```', {"score": 1}),
    ('```\n{"score": 1}\n```', {"score": 1}),
    ('Here is my verdict:\n```json\n{"a": [1, 2]}\n```\nHope it helps.', {"a": [1, 2]}),
    ('Sure! {"faithful": true, "claims": ["x"]} Let me know.', {"faithful": True, "claims": ["x"]}),
    ('Reasoning about {braces} first. Answer: {"score": 0.5}', {"score": 0.5}),
    ('{"outer": {"inner": "}"}} trailing', {"outer": {"inner": "}"}}),
    ('[1, 2] then {"k": "v"}', {"k": "v"}),
    ('{"unicode": "ünïcode ✓"}', {"unicode": "ünïcode ✓"}),
]

BAD_JSON = [
    "",
    "no json here",
    "[1, 2, 3]",
    "{'single': 'quotes'}",
    '{"unterminated": ',
    "```json\nnot json\n```",
]

SCORE_CASES: list[tuple[str, dict[str, float], float]] = [
    ('{"score": 0.8}', {}, 0.8),
    ('{"Score": "0.25", "reason": "partly"}', {}, 0.25),
    ('{"score": "4/5"}', {}, 0.8),
    ('```json\n{"reason": "fine", "score": 1}\n```', {}, 1.0),
    ("0.8", {}, 0.8),
    ("  1  ", {}, 1.0),
    ("0", {}, 0.0),
    (".5", {}, 0.5),
    ("**0.75**", {}, 0.75),
    ("0.6.", {}, 0.6),
    ("4/5", {}, 0.8),
    ("3 / 4", {}, 0.75),
    ("Score: 4/5", {}, 0.8),
    ("score = 0.9", {}, 0.9),
    ("Final score: **0.7** because the answer omits one claim.", {}, 0.7),
    ("The answer is grounded.\nSCORE: 1", {}, 1.0),
    ("{'score': 0.4}", {}, 0.4),
    ('Score: 0.3 {"reason": "no score key here"}', {}, 0.3),
    ("4", {"low": 1, "high": 5}, 4.0),
    ('{"score": 5}', {"low": 1, "high": 5}, 5.0),
    ("Score: 1", {"low": 1, "high": 5}, 1.0),
]

BAD_SCORES: list[tuple[str, dict[str, float], str]] = [
    ("", {}, "no score found"),
    ("The answer looks good.", {}, "no score found"),
    ("I would rate it 4 out of 5", {}, "no score found"),
    ('{"verdict": "yes"}', {}, "no 'score' key"),
    ('{"score": "high"}', {}, "not a number"),
    ('{"score": true}', {}, "boolean"),
    ('{"score": null}', {}, "not a number"),
    ("1.2", {}, "outside [0, 1]"),
    ("-0.1", {}, "outside [0, 1]"),
    ("Score: 4/5", {"low": 1, "high": 5}, "outside [1, 5]"),
    ("Score: 6", {"low": 1, "high": 5}, "outside [1, 5]"),
    ("4/0", {}, "divides by zero"),
    ("1e999", {}, "not finite"),
]


@pytest.mark.parametrize(("text", "expected"), JSON_CASES)
def test_parse_json_object_accepts_what_llms_write(text: str, expected: dict[str, Any]) -> None:
    assert parse_json_object(text) == expected


@pytest.mark.parametrize("text", BAD_JSON)
def test_parse_json_object_rejects_replies_without_an_object(text: str) -> None:
    with pytest.raises(ReplyParseError, match="no JSON object found") as raised:
        parse_json_object(text)
    assert raised.value.raw == text


@pytest.mark.parametrize(("text", "bounds", "expected"), SCORE_CASES)
def test_parse_score_accepts_numbers_fractions_and_json(
    text: str, bounds: dict[str, float], expected: float
) -> None:
    assert parse_score(text, **bounds) == pytest.approx(expected)


@pytest.mark.parametrize(("text", "bounds", "reason"), BAD_SCORES)
def test_parse_score_rejects_missing_malformed_and_out_of_range_scores(
    text: str, bounds: dict[str, float], reason: str
) -> None:
    with pytest.raises(ReplyParseError, match=reason.replace("[", r"\[")) as raised:
        parse_score(text, **bounds)
    assert raised.value.raw == text


def test_parse_error_message_quotes_a_bounded_preview_of_the_reply() -> None:
    reply = "x" * 1000
    with pytest.raises(ReplyParseError) as raised:
        parse_score(reply)
    message = str(raised.value)
    assert len(message) < 300 and message.endswith("…'")
    assert isinstance(raised.value, ValueError)


def test_parse_error_can_be_raised_with_just_the_raw_reply() -> None:
    error = ReplyParseError("garbled")
    assert (error.raw, error.reason) == ("garbled", "the reply could not be parsed")
    assert "garbled" in str(error)
