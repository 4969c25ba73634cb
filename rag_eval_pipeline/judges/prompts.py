"""The version of every prompt the LLM judge and the LLM generator send, and what they share.

The prompts themselves live with their metrics, one module each in
`rag_eval_pipeline.judges.metrics` (all listed in `judges.metrics.PROMPTS`).

Change any template ⇒ bump `PROMPT_VERSION`: judgments record it next to every score, so scores
from different prompt versions are never compared silently (the client's reply cache is keyed by
the rendered prompt, so edited prompts never hit stale replies either).

Judge prompts ask for one JSON object and nothing else. Each reply is declared as the metric's
pydantic `reply` model: `format_instructions` spells its schema out in the prompt, its JSON
Schema is sent as the request's `response_format` where the provider enforces one, and the
metric's `interpret` reads the reply back:

| prompt                    | reply                                                     |
|---------------------------|-----------------------------------------------------------|
| faithfulness              | {"claims": [{"claim": str, "supported": bool}]}           |
| answer_relevance          | {"score": float in [0, 1], "reason": str}                 |
| coherence                 | {"score": int in [1, 5], "reason": str}                   |
| answer_relevance_ragas    | {"questions": [str, ...], "noncommittal": bool}           |
| e2e_score                 | {"score": float in [0, 1], "reason": str}                 |
| context_precision         | {"verdicts": [1 | 0, ...]} one per numbered chunk         |
| context_recall            | {"claims": [{"claim": str, "attributed": bool}]}          |
| answer_correctness        | {"TP": [str], "FP": [str], "FN": [str]}                   |

The generator prompt (`rag_eval_pipeline.systems.generators.GENERATOR`) is versioned with them.
Every field is XML-escaped and every system message ends with `DATA_NOT_INSTRUCTIONS`
(`rag_eval_pipeline.llm.prompts`), so dataset texts cannot break out of their place.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

PROMPT_VERSION = "judge-prompts-v3"

JSON_ONLY = (
    "Reply with a single JSON object and nothing else: no markdown fences, no text before or "
    "after it."
)


def format_instructions(reply: type[BaseModel]) -> str:
    """The format instructions of a judge prompt, generated from its `reply` model: `Schema: `
    and a skeleton of the reply's JSON Schema, then `JSON_ONLY`.

    Every field is named as the reply spells it (its alias); a string reads `"<description>"`
    (its description, else its name), a number `<number between 0 and 1>` from its bounds, a
    boolean `true or false`, a choice its values joined by `or`, a list `[item, ...]`; the
    description of a field that is not a string follows its value in parentheses.
    """
    schema = reply.model_json_schema()
    return f"Schema: {_skeleton(schema, schema.get('$defs', {}), 'value')}\n{JSON_ONLY}"


def _skeleton(schema: dict[str, Any], defs: dict[str, Any], name: str) -> str:
    """One value's skeleton (see `format_instructions`); `name` is its field's name."""
    if "$ref" in schema:
        return _skeleton(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, name)
    if "anyOf" in schema:  # an optional field: shown as its value that is not null
        value = next(s for s in schema["anyOf"] if s.get("type") != "null")
        return _skeleton({**value, **_described(schema)}, defs, name)
    kind = schema.get("type")
    if kind == "object":
        fields = schema.get("properties", {})
        return "{" + ", ".join(_member(key, sub, defs) for key, sub in fields.items()) + "}"
    if kind == "array":
        return f"[{_skeleton(schema.get('items', {}), defs, name)}, ...]"
    if kind == "string" and "enum" not in schema:
        return json.dumps(f"<{schema.get('description', name)}>")
    return _scalar(schema)


def _member(key: str, schema: dict[str, Any], defs: dict[str, Any]) -> str:
    """`"key": value` of one object field, its description after a value that is no string."""
    value = _skeleton(schema, defs, key.lower())
    described = "description" in schema and not value.startswith('"<')
    return f"{json.dumps(key)}: {value}" + (f" ({schema['description']})" if described else "")


def _described(schema: dict[str, Any]) -> dict[str, Any]:
    """The description of `schema`, as a schema fragment (empty when it has none)."""
    return {"description": schema["description"]} if "description" in schema else {}


def _scalar(schema: dict[str, Any]) -> str:
    """A choice, boolean or number's skeleton."""
    if "enum" in schema or "const" in schema:
        return " or ".join(json.dumps(v) for v in schema.get("enum", [schema.get("const")]))
    if schema.get("type") == "boolean":
        return "true or false"
    kind = "integer" if schema.get("type") == "integer" else "number"
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is None or high is None:
        return f"<{kind}>"
    joiner = ("from", "to") if kind == "integer" else ("between", "and")
    return f"<{kind} {joiner[0]} {low:g} {joiner[1]} {high:g}>"
