"""A judged metric is data: one `JudgedMetric` declared in a test-only module is judged by both
judges and reaches the scorecard, with no other file touched; its reply model's JSON Schema is
sent as `response_format` where the provider enforces one."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import DagsterInstance

from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.embedding.sentences import word_tokens
from rag_eval_pipeline.evaluation.scorecard import Thresholds, build_scorecard
from rag_eval_pipeline.judges.metrics import (
    METRICS,
    faithfulness,
    metrics_for,
    register,
    unregister,
)
from rag_eval_pipeline.judges.replies import response_format
from rag_eval_pipeline.judges.spec import JudgedMetric
from rag_eval_pipeline.llm.cache import cache_key
from rag_eval_pipeline_tests import word_count_metric
from rag_eval_pipeline_tests.conftest import loopback_llm, materialize_demo_assets
from rag_eval_pipeline_tests.openai_server import run_openai_server

pytestmark = [pytest.mark.integration]

E2E_ASSETS = {"golden_dataset", "e2e_generations", "e2e_judgments", "e2e_quality"}


@pytest.fixture
def brevity() -> Iterator[JudgedMetric]:
    metric = register(word_count_metric.METRIC)
    yield metric
    unregister(metric.name)


def test_a_registered_metric_reaches_the_scorecard_offline(
    brevity: JudgedMetric, tmp_path: Path, embedder: Embedder, dagster_instance: DagsterInstance
) -> None:
    assert metrics_for("tier3")[-1] == "answer_brevity"
    result = materialize_demo_assets(dagster_instance, tmp_path, embedder, E2E_ASSETS)
    assert result.success
    answers = result.output_for_node("e2e_generations")
    judged = result.output_for_node("e2e_judgments")
    rows = judged[judged["metric"] == "answer_brevity"].reset_index(drop=True)
    expected = [
        min(1.0, word_count_metric.SHORT_WORDS / max(len(word_tokens(a or "")), 1))
        for a in answers["answer"]
    ]
    assert rows["score"].tolist() == pytest.approx(expected)
    quality = result.output_for_node("e2e_quality")
    scorecard = build_scorecard([quality], "demo-v1", "2026-11-20", Thresholds())
    shown = scorecard[scorecard["metric"] == "avg_answer_brevity"].set_index("system")["value"]
    means = rows.groupby(judged.loc[judged["metric"] == "answer_brevity", "system"].to_numpy())
    assert shown.to_dict() == pytest.approx(means["score"].mean().to_dict())
    assert len(shown) == answers["system"].nunique() >= 1


def brevity_judge(body: dict) -> str:
    """The loopback LLM: 4 out of 5 for every answer."""
    return '{"score": 4, "reason": "short enough"}'


def test_the_llm_judge_scores_it_through_the_same_spec(
    brevity: JudgedMetric, tmp_path: Path
) -> None:
    with run_openai_server(responder=brevity_judge) as server:
        judge = loopback_llm(server.base_url, "openai/brevity-judge", tmp_path, max_retries=0)
        frame = judge.judge(None)[0].score(
            brevity, {"question": ["Why?", "How?"], "answer": ["Because.", None]}
        )
    assert frame["score"].tolist()[0] == 0.75
    assert frame["error"].isna().tolist() == [True, False]
    assert frame["error"][1] == "missing answer"
    assert server.request_count == 1


def test_the_builtin_registry_cannot_lose_a_metric() -> None:
    with pytest.raises(ValueError, match="built-in"):
        unregister("faithfulness")
    assert list(METRICS)[:3] == ["faithfulness", "answer_relevance", "coherence"]


def supported_claim(body: dict) -> str:
    """The loopback LLM: the answer's one claim, supported."""
    return '{"claims": [{"claim": "Paris is the capital of France.", "supported": true}]}'


@pytest.mark.parametrize(
    ("model", "enforced"), [("openai/gpt-4o-mini", True), ("openai/local-judge", False)]
)
def test_the_reply_schema_is_sent_where_the_provider_enforces_it(
    tmp_path: Path, model: str, enforced: bool
) -> None:
    """litellm says gpt-4o-mini's provider enforces a response schema and knows nothing of a
    local model: the first request carries the reply model's JSON Schema, the second the prompt
    alone; both replies are read the same way, and the second run of each is a cache hit."""
    items = {
        "question": ["Capital of France?"],
        "contexts": [["Paris is the capital of France."]],
        "answer": ["Paris is the capital of France."],
    }
    with run_openai_server(responder=supported_claim) as server:
        judge = loopback_llm(server.base_url, model, tmp_path, max_retries=0).judge(None)[0]
        first = judge.score(faithfulness.METRIC, items)
        again = judge.score(faithfulness.METRIC, items)
    assert server.request_count == 1 and again["cached"].all()
    body = server.requests[0].body
    assert ("response_format" in body) == enforced
    if enforced:
        sent = body["response_format"]["json_schema"]
        assert sent["name"] == "faithfulness"
        assert sent["schema"] == faithfulness.Reply.model_json_schema()
    assert first["score"].tolist() == [1.0] and first["n_claims"].tolist() == [1]


def test_a_request_with_a_response_format_is_another_cache_entry() -> None:
    fields = {
        "model": "openai/gpt-4o-mini",
        "endpoint": "0" * 64,
        "messages": [{"role": "user", "content": "q"}],
        "temperature": 0.0,
        "max_tokens": 512,
    }
    shape = response_format("faithfulness", faithfulness.Reply)
    assert cache_key(**fields) != cache_key(**fields, response_format=shape)
    assert cache_key(**fields, response_format=shape) == cache_key(**fields, response_format=shape)
