"""The system under test, end to end: its own retrieval scored in Tier 1 like every system.

A user callable (this module's `known_retrieval`) returns known document ids per question,
including ids that are not in the corpus; its rows in `retrieval_metrics` must equal
pytrec_eval on that run, and the unknown ids must be reported.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from dagster import DagsterInstance, materialize

from rag_eval_pipeline.defs.dataset.assets import golden_dataset
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.defs.shared.resources import RagSystemResource
from rag_eval_pipeline.defs.tier0_embedding.assets import corpus_embeddings
from rag_eval_pipeline.defs.tier3_e2e.assets import e2e_generations
from rag_eval_pipeline.defs.tier3_e2e.system_under_test import (
    system_retrieval_metrics,
    system_retrieval_quality,
)
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.metrics.retrieval import DEFAULT_RETRIEVAL_METRICS
from rag_eval_pipeline_tests.conftest import DATASETS_DIR, evaluation_resources
from rag_eval_pipeline_tests.test_retrieval_metrics import (
    CHECKED_METRICS,
    expected_from_trec,
    pytrec_eval_results,
)

pytestmark = [pytest.mark.integration]

VERSION, DATE = "demo-v1", "2026-11-21"
TARGET = f"{__name__}:known_retrieval"
# Every Tier 1 metric pytrec_eval also computes (all defaults but ndcg_exp, checked by ranx).
COMPARED = [m for m in DEFAULT_RETRIEVAL_METRICS if m in CHECKED_METRICS]


def _known_ids() -> dict[str, list[str]]:
    """Per question: relevant documents at ranks that vary, corpus noise (sometimes repeating a
    relevant document lower down), an id that is not in the corpus, or nothing at all."""
    folder = DATASETS_DIR / VERSION
    queries = [json.loads(line) for line in (folder / "queries.jsonl").read_text().splitlines()]
    corpus = [
        json.loads(line)["doc_id"] for line in (folder / "corpus.jsonl").read_text().splitlines()
    ]
    qrels = pd.read_csv(folder / "qrels.csv", dtype={"query_id": str, "doc_id": str})
    relevant = qrels[qrels["relevance"] >= 1].groupby("query_id")["doc_id"].agg(sorted)
    known: dict[str, list[str]] = {}
    for i, query in enumerate(queries):
        noise = [corpus[(7 * i + j) % len(corpus)] for j in range(4)]
        hits = relevant.get(query["query_id"], [])[: i % 3]
        ids = noise[: i % 4] + hits + noise[i % 4 :]
        if i % 5 == 0:
            ids.insert(1, f"ghost-{i}")
        known[query["question"]] = [] if i % 11 == 10 else ids
    return known


KNOWN = _known_ids()


def known_retrieval(question: str) -> dict[str, object]:
    """A user's RAG system: answers every question with the ids chosen in `KNOWN`."""
    return {"answer": f"Answer to: {question}", "retrieved_doc_ids": KNOWN[question]}


def test_callable_system_retrieval_equals_pytrec_eval(
    dagster_instance: DagsterInstance, embedder: Embedder, tmp_path: Path
) -> None:
    dagster_instance.add_dynamic_partitions(DATASET_VERSION, [VERSION])
    result = materialize(
        [
            golden_dataset,
            corpus_embeddings,
            e2e_generations,
            system_retrieval_metrics,
            system_retrieval_quality,
        ],
        partition_key=evaluation_partition_key(VERSION, DATE),
        instance=dagster_instance,
        resources=evaluation_resources(
            tmp_path, embedder, rag_system=RagSystemResource(kind="callable", target=TARGET)
        ),
    )
    assert result.success
    warehouse = tmp_path / "warehouse"
    per_query = pd.read_parquet(
        warehouse / "system_retrieval_metrics" / VERSION / f"{DATE}.parquet"
    )
    ours = per_query[per_query["system"] == TARGET]
    assert set(per_query["source"]) == {"system_under_test"}
    assert len(ours) == len(per_query)

    folder = DATASETS_DIR / VERSION
    queries = pd.read_json(folder / "queries.jsonl", lines=True, dtype={"query_id": str})
    expected_run = pd.DataFrame(
        [
            (query_id, doc_id, -float(rank))
            for query_id, question in zip(queries["query_id"], queries["question"], strict=True)
            for rank, doc_id in enumerate(KNOWN[question], start=1)
        ],
        columns=["query_id", "doc_id", "score"],
    ).drop_duplicates(["query_id", "doc_id"])  # a repeated id keeps its first rank
    qrels = pd.read_csv(folder / "qrels.csv", dtype={"query_id": str, "doc_id": str})
    theirs = pytrec_eval_results(expected_run, qrels)
    relevant_queries = sorted(set(qrels.loc[qrels["relevance"] >= 1, "query_id"]))
    assert sorted(ours["query_id"]) == relevant_queries
    unretrieved = 0
    for row in ours.to_dict("records"):
        if row["query_id"] in theirs:
            expected = expected_from_trec(theirs[row["query_id"]])
            expected = {metric: expected[metric] for metric in COMPARED}
        else:
            unretrieved += 1
            expected = dict.fromkeys(COMPARED, 0.0)
        got = {metric: row[metric] for metric in COMPARED}
        assert got == pytest.approx(expected, abs=1e-9, rel=0), row["query_id"]
    assert unretrieved == sum(1 for ids in KNOWN.values() if not ids)
    assert 0 < ours["mrr"].mean() < 1

    quality = pd.read_parquet(warehouse / "system_retrieval_quality" / VERSION / f"{DATE}.parquet")
    assert set(quality["tier"]) == {"tier1_retrieval"}
    assert set(quality["metric"]) == set(DEFAULT_RETRIEVAL_METRICS)
    mrr = quality[(quality["system"] == TARGET) & (quality["metric"] == "mrr")]
    assert mrr["mean"].tolist() == pytest.approx([ours["mrr"].mean()])
    assert mrr["count"].tolist() == [len(relevant_queries)]

    event = result.asset_materializations_for_node("system_retrieval_metrics")[0]
    ghosts = [ids[1] for ids in KNOWN.values() if ids and ids[1].startswith("ghost-")]
    assert event.metadata["n_unknown_doc_ids"].value == len(ghosts)
    assert ghosts[0] in event.metadata["unknown_doc_ids"].value
