"""A judge endpoint that is down: the circuit breaker stops calling it once most calls fail
after their retries, the error-rate check is
an ERROR, and the metrics it feeds are NaN (which `metric_regressions` alerts as missing today).

Everything runs against the real loopback OpenAI-compatible server answering 500.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from dagster import AssetCheckSeverity, DagsterInstance

from rag_eval_pipeline.defs.shared.judge_checks import judge_error_rate_check
from rag_eval_pipeline.defs.shared.resources import LLMResource
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.llm.client import CALLS_PER_SLOT
from rag_eval_pipeline_tests.conftest import materialize_demo_assets
from rag_eval_pipeline_tests.openai_server import run_openai_server
from rag_eval_pipeline_tests.test_llm_client import ask, make_client

pytestmark = [pytest.mark.integration]

E2E = {"golden_dataset", "e2e_generations", "e2e_judgments", "e2e_quality"}


def test_breaker_opens_when_calls_fail_after_retries_and_stops_calling(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with run_openai_server(faults=["500"] * 1000) as server:
        client = make_client(server, max_concurrency=4, max_retries=1, breaker_min_calls=5)
        with caplog.at_level(logging.WARNING, logger="rag_eval_pipeline.llm.client"):
            replies = client.complete_many([ask(f"q{i}") for i in range(100)])
    assert all(reply.error for reply in replies)
    # At most CALLS_PER_SLOT × 4 prompts are in progress when the 5th call fails for good,
    # each with 2 attempts.
    assert 5 * 2 <= server.request_count <= CALLS_PER_SLOT * 4 * 2
    assert client.usage.breaker_skipped >= 100 - server.request_count // 2
    assert sum("circuit breaker open" in (r.error or "") for r in replies) >= 80
    assert client.breaker.trips == 1
    assert len(caplog.records) <= 5 + CALLS_PER_SLOT * 4


def test_breaker_can_be_turned_off() -> None:
    with run_openai_server(faults=["500"] * 20) as server:
        client = make_client(server, max_concurrency=1, max_retries=0, breaker_min_calls=0)
        client.complete_many([ask(f"q{i}") for i in range(12)])
        assert server.request_count == 12


def test_total_outage_is_an_error_check_with_bounded_calls(
    tmp_path: Path, embedder: Embedder, dagster_instance: DagsterInstance
) -> None:
    with run_openai_server(faults=["500"] * 100_000) as server:
        judge = LLMResource(
            model="openai/down-judge",
            api_base=server.base_url,
            api_key="sk-test",
            cache_dir=str(tmp_path / "llm-cache"),
            max_retries=3,
        )
        check = judge_error_rate_check("e2e_judgments")
        result = materialize_demo_assets(
            dagster_instance, tmp_path, embedder, E2E, [check], judge_llm=judge
        )
        requests = server.request_count
    assert result.success
    (check,) = result.get_asset_check_evaluations()
    assert not check.passed and check.severity == AssetCheckSeverity.ERROR
    assert check.metadata["outage"].value is True
    assert check.description.startswith("Judge outage: ")
    # 56 questions × 4 judge metrics, 3 retries each, would be about 900 requests: the breaker
    # opens once the prompts in progress (at most CALLS_PER_SLOT × 8) have failed 4 attempts.
    assert requests <= CALLS_PER_SLOT * 8 * 4
    quality = result.output_for_node("e2e_quality").set_index("metric")
    faith = quality.loc["avg_faithfulness"]
    assert faith["count"] == 0 and faith["error_rate"] == 1.0
    metadata = result.asset_materializations_for_node("e2e_judgments")[0].metadata
    assert metadata["judge_breaker_skipped"].value > 150
