"""Refusals are counted as `refusal_rate`, left out of faithfulness, and are not judge errors.

A callable system under test declines every fifth demo-v1 question ("I don't know.") and
answers the others from its context; the end-to-end tier runs on a real temporary instance.
"""

from pathlib import Path

from dagster import DagsterInstance, materialize

from rag_eval_pipeline.checks import judge_error_rate_check
from rag_eval_pipeline.definitions import ALL_ASSETS
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.resources import RagSystemResource
from rag_eval_pipeline_tests.conftest import evaluation_resources

CONTEXT = "Invoices are generated on the first day of each month and emailed to the owner."
E2E = {"golden_dataset", "e2e_generations", "e2e_judgments", "e2e_quality"}


def answer(question: str) -> dict:
    """Declines every question whose length is a multiple of 5, answers the others."""
    if len(question) % 5 == 0:
        return {"answer": "I don't know.", "contexts": [CONTEXT]}
    return {"answer": CONTEXT, "contexts": [CONTEXT]}


def test_refusals_are_a_rate_not_judge_errors(
    tmp_path: Path, embedder: Embedder, dagster_instance: DagsterInstance
) -> None:
    dagster_instance.add_dynamic_partitions(DATASET_VERSION, ["demo-v1"])
    system = RagSystemResource(kind="callable", target=f"{__name__}:answer")
    result = materialize(
        [a for a in ALL_ASSETS if a.key.to_user_string() in E2E]
        + [judge_error_rate_check("e2e_judgments")],
        partition_key=evaluation_partition_key("demo-v1", "2026-11-20"),
        instance=dagster_instance,
        resources=evaluation_resources(tmp_path, embedder, rag_system=system),
    )
    assert result.success
    generations = result.output_for_node("e2e_generations")
    declined = int((generations["answer"] == "I don't know.").sum())
    assert 0 < declined < len(generations)
    judgments = result.output_for_node("e2e_judgments")
    faith = judgments[judgments["metric"] == "faithfulness"]
    refused = faith["details"] == '{"refusal": true}'
    assert int(refused.sum()) == declined
    assert faith.loc[refused, "score"].isna().all() and faith.loc[refused, "error"].isna().all()
    assert judgments["error"].isna().all()
    quality = result.output_for_node("e2e_quality").set_index(["system", "metric"])
    name = generations["system"].iloc[0]
    rate = quality.loc[(name, "refusal_rate")]
    assert rate["mean"] == declined / len(generations) and rate["error_rate"] == 0.0
    faithfulness = quality.loc[(name, "avg_faithfulness")]
    assert faithfulness["count"] == len(generations) - declined
    assert faithfulness["n_errors"] == 0 and faithfulness["error_rate"] == 0.0
    (check,) = result.get_asset_check_evaluations()
    assert check.passed and check.metadata["error_rate"].value == 0.0
    metadata = result.asset_materializations_for_node("e2e_judgments")[0].metadata
    assert metadata["n_refusals"].value == declined
