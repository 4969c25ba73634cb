"""A reply is never reused across endpoints: the endpoint litellm really calls (the `api_base`,
or the provider's own variables such as `OPENAI_API_BASE`) is in the reply cache's key, hashed,
and in the run fingerprint.

Two real OpenAI-compatible servers on 127.0.0.1: the judge's endpoint is switched from the first
to the second through `OPENAI_API_BASE` alone (the resource's `api_base` stays unset), and the
second must receive every judgment of its run.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from dagster import DagsterInstance

from rag_eval_pipeline.defs.shared.resources import LLMResource
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.run_fingerprint import llm_endpoints
from rag_eval_pipeline.llm.endpoint import endpoint_digest, endpoint_identity
from rag_eval_pipeline_tests.conftest import materialize_demo_assets
from rag_eval_pipeline_tests.openai_server import run_openai_server

pytestmark = [pytest.mark.integration]

JUDGE = "openai/test-judge"


def test_the_endpoint_is_resolved_as_litellm_resolves_it() -> None:
    assert endpoint_identity(JUDGE, "http://a/v1", {}) == "api_base=http://a/v1"
    default = endpoint_identity(JUDGE, None, {})
    assert "provider=openai" in default and "api.openai.com" in default
    by_variable = endpoint_identity(JUDGE, None, {"OPENAI_API_BASE": "http://b/v1"})
    assert by_variable != default and "OPENAI_API_BASE=http://b/v1" in by_variable
    assert endpoint_identity(JUDGE, None, {"OPENAI_BASE_URL": "http://c/v1"}) != default
    assert endpoint_identity(
        JUDGE, None, {"OPENAI_API_KEY": "sk-1", "ANTHROPIC_API_BASE": "x"}
    ) == (default), "a key, or another provider's variable, is not the endpoint"
    vllm = endpoint_identity("hosted_vllm/m", None, {"HOSTED_VLLM_API_BASE": "http://d"})
    assert "HOSTED_VLLM_API_BASE=http://d" in vllm


def test_the_digest_holds_no_secret_and_the_offline_model_has_no_endpoint() -> None:
    secret = "http://user:hunter2@proxy.internal/v1"
    digest = endpoint_digest(JUDGE, secret, {})
    assert len(digest) == 64 and "hunter2" not in digest
    assert digest != endpoint_digest(JUDGE, "http://proxy.internal/v1", {})
    assert endpoint_digest("offline", None, {}) == "offline"


def test_the_fingerprint_follows_the_provider_variable() -> None:
    judged = {"RAG_EVAL_JUDGE_MODEL": JUDGE}
    first = llm_endpoints({**judged, "OPENAI_API_BASE": "http://127.0.0.1:1/v1"})
    second = llm_endpoints({**judged, "OPENAI_API_BASE": "http://127.0.0.1:2/v1"})
    assert first[0] != second[0] and first[1] == second[1] == "offline"
    assert llm_endpoints({}) == ["offline", "offline"]


def judged_run(
    instance: DagsterInstance, tmp_path: Path, embedder: Embedder
) -> tuple[bool, pd.DataFrame]:
    """Tier 2's judgments of demo-v1 with the judge reached through `OPENAI_API_BASE`, the
    reply cache shared between runs; the run's success and its judgments table."""
    judge = LLMResource(
        model=JUDGE, api_key="sk-test", cache_dir=str(tmp_path / "llm-cache"), max_tokens=64
    )
    result = materialize_demo_assets(
        instance,
        tmp_path,
        embedder,
        {"golden_dataset", "ideal_context_generations", "generation_judgments"},
        judge_llm=judge,
    )
    stored = tmp_path / "warehouse" / "generation_judgments" / "demo-v1" / "2026-11-20.parquet"
    return result.success, pd.read_parquet(stored)


def test_a_second_endpoint_receives_every_judgment_of_its_run(
    tmp_path: Path,
    embedder: Embedder,
    dagster_instance: DagsterInstance,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with run_openai_server() as first, run_openai_server() as second:
        monkeypatch.setenv("OPENAI_API_BASE", first.base_url)
        success, judged_first = judged_run(dagster_instance, tmp_path, embedder)
        assert success and first.request_count > 0
        sent_first = first.request_count

        monkeypatch.setenv("OPENAI_API_BASE", second.base_url)
        success, judgments = judged_run(dagster_instance, tmp_path, embedder)
        assert success
        assert first.request_count == sent_first, "the first endpoint is not called again"
        assert second.request_count == sent_first, "every prompt reaches the second endpoint"
        # Rows marked cached are the same in both runs: prompts repeated within the run.
        assert judgments["cached"].tolist() == judged_first["cached"].tolist()
