"""The Dagster UI's view of the project: a real `dagster-webserver` queried over GraphQL.

A cheap slice of the pipeline (the golden dataset and Tier 1 of `scifact-test`, which has no
corpus, on two dates) is materialized in-process on a temporary instance while
`dagster-webserver` starts as a subprocess on that same instance (`tier1_webserver`, conftest);
its GraphQL API must then show what a user sees: the tiers as asset groups with their lineage, the
two-dimensional partitions, the latest materialization with the float metadata the UI plots, and
the scorecard's checks.
"""

from __future__ import annotations

import json
import urllib.request

import pytest

from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION
from rag_eval_pipeline_tests.conftest import TIER1_DATES, TIER1_VERSION
from rag_eval_pipeline_tests.ui_browser import graphql

pytestmark = [pytest.mark.integration]

VERSION, DATE = TIER1_VERSION, TIER1_DATES[-1]

GROUPS = {
    "golden_dataset": "0_dataset",
    "corpus_embeddings": "1_embedding",
    "embedding_quality": "1_embedding",
    "retrieval_runs": "2_retrieval",
    "retrieval_metrics": "2_retrieval",
    "retrieval_quality": "2_retrieval",
    "ideal_context_generations": "3_generation",
    "generation_judgments": "3_generation",
    "generation_quality": "3_generation",
    "e2e_generations": "4_end_to_end",
    "e2e_judgments": "4_end_to_end",
    "e2e_quality": "4_end_to_end",
    "judge_reliability": "5_judges",
    "show_judge_quality": "5_judges",
    "ux_metrics": "6_ux",
    "evaluation_scorecard": "7_scorecard",
    "evaluation_report": "7_scorecard",
    "system_comparison": "8_comparison",
}

ASSET_GRAPH_QUERY = """
query AssetGraph {
  assetNodes {
    assetKey { path }
    groupName
    description
    isPartitioned
    dependencyKeys { path }
    dependedByKeys { path }
    partitionDefinition {
      type
      dimensionTypes { name type dynamicPartitionsDefinitionName }
    }
    assetChecksOrError {
      __typename
      ... on AssetChecks { checks { name description } }
    }
  }
}
"""

LATEST_MATERIALIZATION_QUERY = """
query Latest($key: AssetKeyInput!) {
  assetOrError(assetKey: $key) {
    __typename
    ... on Asset {
      assetMaterializations(limit: 1) {
        partition
        runId
        metadataEntries {
          __typename
          label
          ... on FloatMetadataEntry { floatValue floatRepr }
        }
      }
      definition { partitionKeysByDimension { name partitionKeys } }
    }
  }
}
"""

PARTITION_STATUS_QUERY = """
query Partitions($key: AssetKeyInput!) {
  assetNodeOrError(assetKey: $key) {
    __typename
    ... on AssetNode {
      partitionStats { numMaterialized numPartitions }
    }
  }
}
"""


@pytest.fixture(scope="module")
def asset_nodes(tier1_webserver: str) -> dict[str, dict]:
    nodes = graphql(tier1_webserver, ASSET_GRAPH_QUERY)["assetNodes"]
    return {"/".join(node["assetKey"]["path"]): node for node in nodes}


def keys(entries: list[dict]) -> set[str]:
    return {"/".join(entry["path"]) for entry in entries}


def test_server_info_names_the_installed_dagster(tier1_webserver: str) -> None:
    with urllib.request.urlopen(f"{tier1_webserver}/server_info", timeout=5) as response:
        info = json.loads(response.read())
    import dagster

    assert info["dagster_version"] == dagster.__version__


def test_every_tier_asset_is_in_its_group(asset_nodes: dict[str, dict]) -> None:
    assert {name: asset_nodes.get(name, {}).get("groupName") for name in GROUPS} == GROUPS
    ungrouped = [name for name, node in asset_nodes.items() if node["groupName"] == "default"]
    assert not ungrouped, f"assets in Dagster's 'default' group: {ungrouped}"
    for name, node in asset_nodes.items():
        assert node["description"], f"{name} has no description in the UI"
        assert node["isPartitioned"], name


def test_lineage_edges_follow_the_tiers(asset_nodes: dict[str, dict]) -> None:
    def upstream(name: str) -> set[str]:
        return keys(asset_nodes[name]["dependencyKeys"])

    def downstream(name: str) -> set[str]:
        return keys(asset_nodes[name]["dependedByKeys"])

    assert upstream("golden_dataset") == set()
    assert upstream("corpus_embeddings") == {"golden_dataset"}
    assert upstream("embedding_quality") >= {"corpus_embeddings"}
    assert upstream("retrieval_runs") >= {"golden_dataset", "corpus_embeddings"}
    assert upstream("retrieval_metrics") >= {"retrieval_runs"}
    assert upstream("retrieval_quality") == {"retrieval_metrics"}
    assert "generation_judgments" in downstream("ideal_context_generations")
    assert "generation_quality" in downstream("generation_judgments")
    assert "e2e_judgments" in downstream("e2e_generations")
    assert "e2e_quality" in downstream("e2e_judgments")
    quality_assets = {
        "embedding_quality",
        "retrieval_quality",
        "generation_quality",
        "e2e_quality",
        "judge_reliability",
        "show_judge_quality",
        "ux_metrics",
    }
    assert quality_assets <= upstream("evaluation_scorecard")
    for name in quality_assets:
        assert "evaluation_scorecard" in downstream(name), name
    # the edges are symmetric: every upstream edge is someone's downstream edge
    for name, node in asset_nodes.items():
        for parent in keys(node["dependencyKeys"]):
            assert name in downstream(parent), (parent, name)


def test_partitions_are_dataset_version_by_date(asset_nodes: dict[str, dict]) -> None:
    for name, node in asset_nodes.items():
        definition = node["partitionDefinition"]
        assert definition["type"] == "MULTIPARTITIONED", name
        dimensions = {d["name"]: d for d in definition["dimensionTypes"]}
        assert set(dimensions) == {"dataset_version", "date"}, name
        assert dimensions["dataset_version"]["type"] == "DYNAMIC"
        assert dimensions["dataset_version"]["dynamicPartitionsDefinitionName"] == DATASET_VERSION
        assert dimensions["date"]["type"] == "TIME_WINDOW"


def test_latest_materialization_has_partition_key_and_float_metadata(
    tier1_webserver: str,
) -> None:
    data = graphql(
        tier1_webserver, LATEST_MATERIALIZATION_QUERY, {"key": {"path": ["retrieval_quality"]}}
    )["assetOrError"]
    assert data["__typename"] == "Asset"
    [latest] = data["assetMaterializations"]
    assert latest["partition"] == f"{VERSION}|{DATE}"
    floats = {
        entry["label"]: entry["floatValue"]
        for entry in latest["metadataEntries"]
        if entry["__typename"] == "FloatMetadataEntry"
    }
    # plotted keys are `<version>/<system>/<metric>` (one plotted series per version);
    # scifact-test's one system is its `reranked` run
    metrics = ("hit_rate@1", "mrr", "ndcg@10", "recall@10", "map")
    expected = {f"{VERSION}/reranked/{m}" for m in metrics}
    assert expected <= set(floats), sorted(floats)
    assert all(value is None or 0.0 <= value <= 1.0 for value in floats.values()), floats
    assert any(entry["label"] == "summary" for entry in latest["metadataEntries"])
    dimensions = {
        d["name"]: d["partitionKeys"] for d in data["definition"]["partitionKeysByDimension"]
    }
    assert dimensions["dataset_version"] == [VERSION]
    assert DATE in dimensions["date"]


def test_partition_stats_count_the_materialized_partitions(tier1_webserver: str) -> None:
    node = graphql(
        tier1_webserver, PARTITION_STATUS_QUERY, {"key": {"path": ["retrieval_quality"]}}
    )["assetNodeOrError"]
    assert node["__typename"] == "AssetNode"
    assert node["partitionStats"]["numMaterialized"] == len(TIER1_DATES)


def test_scorecard_checks_are_listed(asset_nodes: dict[str, dict]) -> None:
    checks = asset_nodes["evaluation_scorecard"]["assetChecksOrError"]
    assert checks["__typename"] == "AssetChecks"
    names = {check["name"] for check in checks["checks"]}
    assert {"scorecard_thresholds", "scorecard_regressions"} <= names
    assert all(check["description"] for check in checks["checks"])
    for judged in ("generation_judgments", "e2e_judgments"):
        judged_checks = asset_nodes[judged]["assetChecksOrError"]["checks"]
        assert {check["name"] for check in judged_checks} == {f"{judged}_error_rate"}
