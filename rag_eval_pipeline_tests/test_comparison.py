"""A/B comparison of reference-RAG variants: verdicts, the variants file, retrievers, the asset."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from dagster import DagsterInstance, materialize

from rag_eval_pipeline.defs.comparison.assets import ComparisonConfig, system_comparison
from rag_eval_pipeline.defs.dataset.assets import golden_dataset
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.comparison import (
    BETTER,
    COMPARISON_COLUMNS,
    NO_DIFFERENCE,
    VERDICTS,
    WORSE,
    compare_variants,
    load_plan,
    parse_plan,
    score_answers,
)
from rag_eval_pipeline.judges.offline import OfflineJudge
from rag_eval_pipeline.settings import PROJECT_ROOT
from rag_eval_pipeline.systems.generators import OfflineGenerator
from rag_eval_pipeline.systems.variants import RagVariant
from rag_eval_pipeline_tests.conftest import evaluation_resources

pytestmark = [pytest.mark.integration]

N = 40
MIN_P_VALUE = 1 / 10_001  # (0 + 1) / (n_permutations + 1): no sign flip reaches the observed
PLAN = {
    "baseline": "a",
    "variants": {"a": {"retriever": "dense"}, "b": {"retriever": "bm25", "top_k": 5}},
    "metrics": ["mrr", "faithfulness", "error_rate"],
}


def scores(values: dict[str, np.ndarray]) -> pd.DataFrame:
    return pd.DataFrame({"query_id": [f"q{i:02d}" for i in range(N)], **values})


def test_clearly_better_variant_wins_in_the_metrics_direction() -> None:
    rng = np.random.default_rng(7)
    quality = rng.uniform(0.2, 0.6, N)
    latency = rng.uniform(800, 1200, N)
    gain = rng.uniform(0.1, 0.3, N)
    table = compare_variants(
        {
            "a": scores({"mrr": quality, "total_latency_ms": latency}),
            "b": scores({"mrr": quality + gain, "total_latency_ms": latency - 300}),
            "c": scores({"mrr": quality - gain, "total_latency_ms": latency + 300}),
        },
        "a",
        ["mrr", "total_latency_ms"],
    )
    assert list(table.columns) == COMPARISON_COLUMNS
    rows = table.set_index(["variant", "metric"])
    better = rows.loc[("b", "mrr")]
    assert better["n"] == N and better["baseline"] == "a"
    assert better["delta"] == pytest.approx(gain.mean())
    assert better["mean_variant"] - better["mean_baseline"] == pytest.approx(gain.mean())
    assert 0.1 < better["ci_low"] < gain.mean() < better["ci_high"] < 0.3
    assert better["p_value"] == pytest.approx(MIN_P_VALUE)
    assert rows.loc[("b", "total_latency_ms"), "delta"] == pytest.approx(-300)
    assert rows["verdict"].to_dict() == {
        ("b", "mrr"): BETTER,
        ("b", "total_latency_ms"): BETTER,  # lower latency is better
        ("c", "mrr"): WORSE,
        ("c", "total_latency_ms"): WORSE,
    }


def test_equal_systems_show_no_difference_and_unpaired_questions_are_dropped() -> None:
    quality = np.linspace(0.0, 1.0, N)
    other = quality.copy()
    other[:5] = np.nan  # e.g. judge errors of the variant: those pairs are left out
    table = compare_variants(
        {"a": scores({"mrr": quality}), "b": scores({"mrr": other})}, "a", ["mrr"]
    )
    row = table.iloc[0]
    assert (row["n"], row["delta"], row["ci_low"], row["ci_high"]) == (N - 5, 0.0, 0.0, 0.0)
    assert row["p_value"] == 1.0
    assert row["verdict"] == NO_DIFFERENCE


def test_small_noisy_difference_is_not_significant() -> None:
    noise = np.tile([0.05, -0.04], N // 2)
    table = compare_variants(
        {"a": scores({"mrr": np.full(N, 0.5)}), "b": scores({"mrr": 0.5 + noise})}, "a", ["mrr"]
    )
    row = table.iloc[0]
    assert row["delta"] == pytest.approx(0.005)
    assert row["ci_low"] < 0 < row["ci_high"]
    assert row["p_value"] > 0.05
    assert row["verdict"] == NO_DIFFERENCE


def test_shipped_variants_file_parses() -> None:
    plan = load_plan(PROJECT_ROOT / "config" / "variants.yaml")
    assert plan.baseline == "top3-dense"
    assert plan.variants[1] == RagVariant("top5-dense", "dense", 5, 0, None)
    assert {v.retriever for v in plan.variants} == {"dense", "bm25", "hybrid-rrf"}
    assert plan.alpha == 0.05 and "hit_rate@1" in plan.metrics


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"baseline": "z"}, "baseline 'z' is not among the variants ['a', 'b']"),
        (
            {"variants": {"a": {}, "b": {"retriever": "sparse"}}},
            "variants.b.retriever: unknown retriever 'sparse'; use one of "
            "['dense', 'bm25', 'hybrid-rrf']",
        ),
        ({"variants": {"a": {}, "b": {"top_k": 0}}}, "variants.b.top_k: must be an integer ≥ 1"),
        (
            {"variants": {"a": {}, "b": {"topk": 5}}},
            "variants.b.topk = 5: unknown key; did you mean 'top_k'?",
        ),
        ({"variants": {"a": {}}}, "variants: expected a mapping of at least two"),
        ({"metrics": ["mrr", "recal@5"]}, "metrics: unknown retrieval metric 'recal@5'"),
        ({"metrics": ["mrr", "mrr"]}, "metrics: listed more than once: ['mrr']"),
        ({"alpha": 1.5}, "alpha: must be a number in (0, 1), got 1.5"),
        ({"extra": 1}, "extra = 1: unknown key"),
    ],
)
def test_invalid_plans_are_explained(change: dict, message: str) -> None:
    with pytest.raises(ValueError) as error:
        parse_plan({**PLAN, **change})
    assert message in str(error.value)


def test_load_plan_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "variants.yaml"
    path.write_text("baseline: a\nvariants:\n  a: {retriever: dense}\n  b: {retriever: tfidf}\n")
    expected = rf"^{path}: variants.b.retriever: unknown retriever 'tfidf'"
    with pytest.raises(ValueError, match=expected):
        load_plan(path)
    with pytest.raises(ValueError, match="variants file not found"):
        load_plan(tmp_path / "missing.yaml")


CORPUS = pd.DataFrame(
    {
        "doc_id": ["d1", "d2", "d3", "d4"],
        "text": [
            "Error code E1042 means the disk quota is exceeded.",
            "Invoices are emailed on the first day of each month.",
            "Reset your password from the account security page.",
            "Snapshots of block volumes are kept for thirty days.",
        ],
    }
)
QUERIES = pd.DataFrame(
    {"query_id": ["q1", "q2"], "question": ["What is E1042?", "When are invoices sent?"]}
)


@pytest.mark.parametrize("retriever", ["dense", "bm25", "hybrid-rrf"])
def test_variant_retrievers_find_the_matching_document(embedder: Embedder, retriever: str) -> None:
    rag = RagVariant("v", retriever, top_k=2).build(embedder, CORPUS, OfflineGenerator(embedder))
    run = rag.retrieve(QUERIES)
    assert run.groupby("query_id")["doc_id"].first().to_dict() == {"q1": "d1", "q2": "d2"}
    assert run["rank"].tolist() == [1, 2, 1, 2] and set(run["system"]) == {"v"}
    skipped = RagVariant("v", retriever, top_k=2, skip_top=1).build(
        embedder, CORPUS, OfflineGenerator(embedder)
    )
    shifted = skipped.retrieve(QUERIES)
    assert (
        shifted[shifted["rank"] == 1]["doc_id"].tolist() == run[run["rank"] == 2]["doc_id"].tolist()
    )


def test_variant_embedder_is_a_copy_with_its_own_model(embedder: Embedder) -> None:
    rag = RagVariant("v", embedder="other/model").build(
        embedder, CORPUS, OfflineGenerator(embedder)
    )
    assert (rag.embedder.model, rag.embedder.cache_dir) == ("other/model", embedder.cache_dir)
    assert embedder.model != "other/model"
    assert RagVariant("v").build(embedder, CORPUS, OfflineGenerator(embedder)).embedder is embedder


def test_score_answers_scores_the_retrieved_documents(embedder: Embedder) -> None:
    answers = pd.DataFrame(
        {
            "query_id": ["q1", "q2", "q3"],
            "retrieved_doc_ids": [["d9", "d1"], ["d2"], []],
            "error": [None, None, "timeout"],
        }
    )
    qrels = pd.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["d1", "d2"], "relevance": [1, 2]})
    table = score_answers(
        answers, qrels, ["mrr", "hit_rate@1", "error_rate"], OfflineJudge(embedder), embedder
    )
    assert table.columns.tolist() == ["query_id", "mrr", "hit_rate@1", "error_rate"]
    values = table.set_index("query_id")
    assert values["mrr"].tolist()[:2] == [0.5, 1.0] and np.isnan(values.loc["q3", "mrr"])
    assert values["hit_rate@1"].tolist()[:2] == [0.0, 1.0]
    assert values["error_rate"].tolist() == [0.0, 0.0, 1.0]
    at_level_2 = score_answers(
        answers, qrels, ["mrr"], OfflineJudge(embedder), embedder, relevance_level=2
    ).set_index("query_id")
    assert at_level_2["mrr"].loc["q2"] == 1.0 and np.isnan(at_level_2["mrr"].loc["q1"])


def test_system_comparison_on_demo_v1(
    tmp_path: Path, dagster_instance: DagsterInstance, embedder: Embedder
) -> None:
    dagster_instance.add_dynamic_partitions(DATASET_VERSION, ["demo-v1", "scifact-test"])
    variants = tmp_path / "variants.yaml"
    variants.write_text(
        "baseline: top3-dense\n"
        "variants:\n"
        "  top3-dense: {retriever: dense, top_k: 3}\n"
        "  top5-dense: {retriever: dense, top_k: 5}\n"
        "  top3-hybrid: {retriever: hybrid-rrf, top_k: 3}\n"
        "metrics: [hit_rate@1, recall@3, recall@5, ndcg@5, semantic_similarity, error_rate]\n"
    )
    run_config = {"ops": {"system_comparison": {"config": {"variants_file": str(variants)}}}}
    metadata = {}
    for version in ("demo-v1", "scifact-test"):
        result = materialize(
            [golden_dataset, system_comparison],
            partition_key=evaluation_partition_key(version, "2026-11-21"),
            instance=dagster_instance,
            resources=evaluation_resources(tmp_path, embedder),
            run_config=run_config,
        )
        assert result.success
        (event,) = result.asset_materializations_for_node("system_comparison")
        metadata[version] = event.metadata
    path = tmp_path / "warehouse" / "system_comparison" / "demo-v1" / "2026-11-21.parquet"
    table = pd.read_parquet(path)
    assert len(table) == 2 * 6 and set(table["baseline"]) == {"top3-dense"}
    assert set(table["verdict"]) <= set(VERDICTS)
    assert (table["n"] == 56).all()  # every demo-v1 question has qrels and a ground truth
    rows = table.set_index(["variant", "metric"])
    same = rows.loc[("top5-dense", "recall@3")]  # the top 3 of both dense variants coincide
    assert (same["delta"], same["p_value"], same["verdict"]) == (0.0, 1.0, NO_DIFFERENCE)
    deeper = rows.loc[("top5-dense", "recall@5")]
    assert deeper["mean_variant"] > deeper["mean_baseline"] + 0.05
    assert deeper["ci_low"] > 0 and deeper["verdict"] == BETTER
    assert rows.loc[("top3-hybrid", "error_rate"), "verdict"] == NO_DIFFERENCE

    assert metadata["scifact-test"]["status"].value == "skipped"
    metadata = metadata["demo-v1"]
    assert metadata["top5-dense/recall@5/delta"].value == pytest.approx(deeper["delta"])
    assert "top5-dense/recall@3/delta" not in metadata  # not a headline metric
    counts = table["verdict"].value_counts()
    assert metadata["n_better"].value == counts.get(BETTER, 0) >= 1
    assert sum(metadata[f"n_{v.replace(' ', '_')}"].value for v in VERDICTS) == len(table)
    assert metadata["baseline"].value == "top3-dense"


def test_default_config_points_at_the_shipped_file() -> None:
    assert ComparisonConfig().variants_file == "config/variants.yaml"


def test_a_new_date_on_unchanged_data_reads_the_comparison_from_the_result_cache(
    tmp_path: Path, dagster_instance: DagsterInstance, embedder: Embedder
) -> None:
    dagster_instance.add_dynamic_partitions(DATASET_VERSION, ["demo-v1"])
    variants = tmp_path / "variants.yaml"
    plan = (
        "baseline: top3-dense\n"
        "variants:\n"
        "  top3-dense: {retriever: dense, top_k: 3}\n"
        "  top3-bm25: {retriever: bm25, top_k: 3}\n"
        "metrics: [mrr, recall@3, semantic_similarity%s]\n"
    )

    def materialize_on(day: str, metrics_suffix: str = "") -> tuple[str, pd.DataFrame]:
        variants.write_text(plan % metrics_suffix)
        result = materialize(
            [golden_dataset, system_comparison],
            partition_key=evaluation_partition_key("demo-v1", day),
            instance=dagster_instance,
            resources=evaluation_resources(tmp_path, embedder),
            run_config={"ops": {"system_comparison": {"config": {"variants_file": str(variants)}}}},
        )
        assert result.success
        (event,) = result.asset_materializations_for_node("system_comparison")
        stored = tmp_path / "warehouse" / "system_comparison" / "demo-v1" / f"{day}.parquet"
        return event.metadata["result_cache"].value, pd.read_parquet(stored)

    status, computed = materialize_on("2026-11-16")
    assert status == "miss"
    status, cached = materialize_on("2026-11-17")
    assert status == "hit"
    pd.testing.assert_frame_equal(cached, computed)

    status, changed_plan = materialize_on("2026-11-18", ", ndcg@5")
    assert status == "miss", "the variants file is part of the key"
    assert "ndcg@5" in set(changed_plan["metric"])
    assert materialize_on("2026-11-19", ", total_latency_ms")[0] == "off"
    assert materialize_on("2026-11-20", ", total_latency_ms")[0] == "off", "never stored"
