"""Tier 2's citation and regex rows through the real LLM generator path (loopback server)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from dagster import DagsterInstance

from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline_tests.conftest import DATASETS_DIR, loopback_llm, materialize_demo_assets
from rag_eval_pipeline_tests.openai_server import run_openai_server

pytestmark = [pytest.mark.integration]

TIER2 = {"golden_dataset", "ideal_context_generations", "generation_judgments"}
REPLY = "Invoices go out on the 1st [1] [2]."


def cite_first_two(request: dict[str, Any]) -> str:
    return REPLY


def test_generation_judgments_score_citations_of_the_ideal_context(
    tmp_path: Path, dagster_instance: DagsterInstance, embedder: Embedder
) -> None:
    with run_openai_server(cite_first_two) as server:
        generator = loopback_llm(server.base_url, "openai/test-generator", tmp_path)
        result = materialize_demo_assets(
            dagster_instance, tmp_path, embedder, TIER2, generator_llm=generator
        )
    assert result.success
    generations = result.output_for_node("ideal_context_generations")
    assert (generations["answer"] == REPLY).all()
    judgments = result.output_for_node("generation_judgments")
    scores = judgments.pivot_table(index="query_id", columns="metric", values="score")
    # Every document of the ideal context is relevant: with n of them, [1] and [2] give
    # P = min(n, 2) / 2 and R = min(n, 2) / n.
    n_sources = generations.set_index("query_id")["context_doc_ids"].map(len)
    assert set(n_sources) == {1, 2, 3}  # [2] out of range, both cited, one of three left out
    cited = n_sources.clip(upper=2)
    precision, recall = cited / 2, cited / n_sources
    assert scores["citation_precision"].to_numpy() == pytest.approx(
        precision.reindex(scores.index).to_numpy()
    )
    assert scores["citation_recall"].to_numpy() == pytest.approx(
        recall.reindex(scores.index).to_numpy()
    )
    f1 = 2 * precision * recall / (precision + recall)
    assert scores["citation_f1"].to_numpy() == pytest.approx(f1.reindex(scores.index).to_numpy())
    # regex_match: the reply holds "1st" (matches \b1st\b) but neither "$49" nor a leading "no"
    queries = pd.read_json(DATASETS_DIR / "demo-v1" / "queries.jsonl", lines=True)
    patterns = queries.set_index("query_id")["expected_pattern"].dropna()
    regex = scores["regex_match"].dropna()
    assert sorted(regex.index) == sorted(patterns.index)
    expected = (patterns == r"\b1st\b").astype(float)
    assert regex.sort_index().tolist() == expected.sort_index().tolist()
    assert regex.sum() == 1.0
