"""Counts and costs are honest: a table's `n_errors` matches its metadata, and a model without a
known price reports its cost as unknown, not 0.0 (real loopback OpenAI-compatible server)."""

import math
from pathlib import Path
from typing import Any

import pytest
from dagster import DagsterInstance

from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline_tests.conftest import loopback_llm, materialize_demo_assets
from rag_eval_pipeline_tests.openai_server import run_openai_server

pytestmark = [pytest.mark.integration]

SHOW = {"golden_dataset", "show_judge_quality"}


def unreadable(request: dict[str, Any]) -> str:
    """A show/hide judge that never says yes or no."""
    return "It depends on the user."


def test_show_judge_errors_match_metadata_and_unpriced_cost_is_unknown(
    tmp_path: Path, embedder: Embedder, dagster_instance: DagsterInstance
) -> None:
    with run_openai_server(responder=unreadable) as server:
        judge = loopback_llm(server.base_url, "openai/unpriced-judge", tmp_path)
        result = materialize_demo_assets(
            dagster_instance, tmp_path, embedder, SHOW, judge_llm=judge
        )
    assert result.success
    quality = result.output_for_node("show_judge_quality")
    metadata = result.asset_materializations_for_node("show_judge_quality")[0].metadata
    n_errors = metadata["n_errors"].value
    assert n_errors == 40
    assert set(quality["n_errors"]) == {n_errors}
    assert set(quality["error_rate"]) == {1.0}
    assert math.isnan(metadata["judge_cost_usd"].value)
    assert (
        metadata["judge_cost"].value == "unknown: no price for openai/unpriced-judge (40 call(s))"
    )
