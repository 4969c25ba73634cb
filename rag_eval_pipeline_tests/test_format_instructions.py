"""The format instructions of every judge prompt are generated from its reply model by one
function, `format_instructions`: names, types, bounds, choices and descriptions come from the
model's JSON Schema, so the prompt and the `response_format` cannot disagree."""

import json
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from rag_eval_pipeline.judges.criteria import Criterion
from rag_eval_pipeline.judges.metrics import BUILT_IN, PROMPTS
from rag_eval_pipeline.judges.prompts import JSON_ONLY, format_instructions

pytestmark = [pytest.mark.unit]


class Part(BaseModel):
    label: str = Field(description="a short label")
    kept: bool = Field(description="whether it stays")


class Sample(BaseModel):
    weight: float = Field(ge=0.0, le=1.0)
    rank: int = Field(ge=1, le=5)
    count: int
    kind: Literal["a", "b"]
    parts: list[Part]
    tags: list[Annotated[str, Field(description="tag")]] = Field(alias="Tags")


def test_a_model_becomes_a_skeleton_of_its_json_schema() -> None:
    assert format_instructions(Sample) == (
        'Schema: {"weight": <number between 0 and 1>, "rank": <integer from 1 to 5>, '
        '"count": <integer>, "kind": "a" or "b", "parts": [{"label": "<a short label>", '
        '"kept": true or false (whether it stays)}, ...], "Tags": ["<tag>", ...]}\n' + JSON_ONLY
    )


@pytest.mark.parametrize("metric", BUILT_IN, ids=lambda m: m.name)
def test_every_builtin_prompt_carries_its_reply_models_instructions(metric) -> None:
    template = PROMPTS[metric.name]
    instructions = format_instructions(metric.reply)
    assert template.system.endswith(instructions)
    assert template.system.count("Schema:") == 1
    for name in metric.reply.model_json_schema(by_alias=True)["properties"]:
        assert json.dumps(name) in instructions


@pytest.mark.parametrize(
    ("scale", "expected"),
    [
        ("1-5", '{"score": <integer from 1 to 5>, "reason": "<one sentence>"}'),
        ("yes/no", '{"verdict": "yes" or "no", "reason": "<one sentence>"}'),
    ],
)
def test_a_criterion_prompt_uses_the_same_function(scale: str, expected: str) -> None:
    criterion = Criterion(name="cites_clause", criterion="Costs $5: names a clause.", scale=scale)
    system = criterion.prompt({"question": "q", "answer": "a"})[0]["content"]
    assert f"Schema: {expected}\n{JSON_ONLY}" in system
    assert format_instructions(criterion.reply) in system
    assert "Costs $5" in system
