"""Judged@k (the share of the top k retrieved documents that the qrels judge at all) equals
ir_measures' `Judged@k`, per query, on random runs; and its unjudged documents are listed."""

from __future__ import annotations

from pathlib import Path

import ir_measures
import numpy as np
import pandas as pd
import pytest
from dagster import DagsterInstance, materialize

from rag_eval_pipeline.definitions import ALL_ASSETS
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.defs.shared.resources import DatasetsResource
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.rater_tasks import unjudged_top_k
from rag_eval_pipeline.metrics.retrieval import evaluate_run
from rag_eval_pipeline_tests.conftest import evaluation_resources, report_config
from rag_eval_pipeline_tests.test_dataset_formats import RAGAS_ROWS, write_table
from rag_eval_pipeline_tests.test_one_validity_rule import TIER1

pytestmark = [pytest.mark.integration]

CUTOFFS = (1, 3, 10)


def random_case(seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Qrels with grades -1..3 (every query has a relevant one) and a run of distinct scores in
    which some queries retrieve fewer than 10 documents and one retrieves nothing."""
    rng = np.random.default_rng(seed)
    qrels, run = [], []
    for q in range(12):
        docs = rng.choice(40, size=int(rng.integers(2, 12)), replace=False)
        grades = rng.integers(-1, 4, size=len(docs))
        grades[0] = 1 + int(rng.integers(0, 3))
        qrels += [(f"q{q}", f"d{d}", int(g)) for d, g in zip(docs, grades, strict=True)]
        if q == 11:
            continue
        retrieved = rng.choice(40, size=int(rng.integers(1, 16)), replace=False)
        scores = rng.permutation(len(retrieved)) + rng.random()
        run += [(f"q{q}", f"d{d}", float(s)) for d, s in zip(retrieved, scores, strict=True)]
    return (
        pd.DataFrame(run, columns=["query_id", "doc_id", "score"]),
        pd.DataFrame(qrels, columns=["query_id", "doc_id", "relevance"]),
    )


@pytest.mark.parametrize("seed", range(5))
def test_judged_at_k_equals_ir_measures(seed: int) -> None:
    run, qrels = random_case(seed)
    ours = evaluate_run(run, qrels, [f"judged@{k}" for k in CUTOFFS]).set_index("query_id")
    measures = [ir_measures.Judged @ k for k in CUTOFFS]
    theirs = {
        (m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run)
    }
    assert len(ours) == 12
    for k in CUTOFFS:
        expected = [theirs[(q, f"Judged@{k}")] for q in ours.index]
        assert ours[f"judged@{k}"].tolist() == pytest.approx(expected, abs=1e-12)
    assert ours.loc["q11"].tolist() == [0.0] * len(CUTOFFS)  # retrieved nothing
    assert 0 < ours["judged@10"].mean() < 1


def test_judged_at_k_by_hand() -> None:
    run = pd.DataFrame(
        {"query_id": ["a"] * 4, "doc_id": ["x", "y", "z", "w"], "score": [4.0, 3.0, 2.0, 1.0]}
    )
    qrels = pd.DataFrame(
        {"query_id": ["a", "a", "a"], "doc_id": ["x", "z", "v"], "relevance": [1, -1, 2]}
    )
    scored = evaluate_run(run, qrels, ["judged@1", "judged@2", "judged@3", "judged@10"])
    # top 1: x judged; top 2: x, y → 1/2; top 3: x, y, z (z judged at -1) → 2/3; top 10: 2/4.
    assert scored.iloc[0, 1:].tolist() == [1.0, 0.5, pytest.approx(2 / 3), 0.5]


def test_unjudged_top_k_lists_what_judged_at_k_misses_best_ranked_first() -> None:
    qrels = pd.DataFrame(
        {
            "query_id": ["a", "a", "b", "c"],
            "doc_id": ["x", "z", "y", "x"],
            "relevance": [1, -1, 2, 0],  # c has no relevant judgment: not scored
        }
    )
    bm25 = pd.DataFrame(
        {
            "system": "bm25",
            "query_id": ["a"] * 4 + ["c"],
            "doc_id": ["x", "u", "w", "z", "q"],
            "score": [4.0, 3.0, 3.0, 1.0, 9.0],  # u and w tie: w ranks first (doc id desc)
        }
    )
    dense = pd.DataFrame(
        {"system": "dense", "query_id": ["a", "b"], "doc_id": ["u", "v"], "score": [1.0, 1.0]}
    )
    tasks, total = unjudged_top_k([bm25, dense], qrels, k=3)
    assert total == 4  # bm25: w (rank 2), u (3); dense: u (1), v (1)
    assert tasks.values.tolist() == [
        ["a", "u", "dense", 1],
        ["b", "v", "dense", 1],
        ["a", "w", "bm25", 2],
    ]
    per_query = evaluate_run(pd.concat([bm25, dense.iloc[:0]]), qrels, ["judged@3"])
    assert per_query["judged@3"].tolist() == [pytest.approx(1 / 3), 0.0]  # a: x of x, w, u
    assert unjudged_top_k([bm25, dense], qrels, k=3, limit=1)[0]["doc_id"].tolist() == ["u"]


def test_rater_export_writes_the_unjudged_top_k_as_qrels_to_fill_in(
    tmp_path: Path, embedder: Embedder, dagster_instance: DagsterInstance
) -> None:
    root = tmp_path / "datasets"
    write_table(root / "migrated", "ragas", RAGAS_ROWS, "jsonl")
    dagster_instance.add_dynamic_partitions(DATASET_VERSION, ["migrated"])
    names = {*TIER1, "e2e_generations", "rater_export"}
    result = materialize(
        [asset for asset in ALL_ASSETS if asset.key.to_user_string() in names],
        partition_key=evaluation_partition_key("migrated", "2026-11-22"),
        instance=dagster_instance,
        resources=evaluation_resources(
            tmp_path, embedder, datasets=DatasetsResource(root=str(root))
        ),
        run_config={"ops": {"rater_export": report_config(tmp_path)["ops"]["rater_export"]}},
    )
    assert result.success
    metrics = result.output_for_node("retrieval_metrics")
    runs = result.output_for_node("retrieval_runs").to_pandas()
    shown = runs.groupby(["system", "query_id"]).size().clip(upper=10).rename("shown")
    expected = metrics.join(shown, on=["system", "query_id"])
    n_unjudged = round(((1 - expected["judged@10"]) * expected["shown"]).sum())
    metadata = result.asset_materializations_for_node("rater_export")[0].metadata
    exported = pd.read_csv(metadata["qrels_csv_path"].value)
    assert n_unjudged > 0
    # and the system under test (the logged answers): one unjudged context ("Other") each.
    assert metadata["n_unjudged_top_10"].value == n_unjudged + 2
    assert len(exported) == metadata["n_qrels_tasks"].value > 0
    assert exported.columns.tolist() == [
        "query_id",
        "doc_id",
        "system",
        "rank",
        "question",
        "title",
        "text",
        "relevance",
    ]
    assert exported["relevance"].isna().all()
    qrels = result.output_for_node("golden_dataset")["qrels"]
    judged = set(zip(qrels["query_id"], qrels["doc_id"], strict=True))
    assert not judged & set(zip(exported["query_id"], exported["doc_id"], strict=True))
    assert exported["rank"].is_monotonic_increasing
    quality = result.output_for_node("retrieval_quality")
    assert "judged@10" in set(quality["metric"])
