"""Consistency checks of the shipped demo datasets (data/datasets/demo-v1 and demo-v2).

The files are read with plain json/pandas, independently of the project's loader, and compared
with a fresh build of `scripts/build_demo_datasets.py`.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest

pytestmark = [pytest.mark.integration]

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT / "data" / "datasets"
SCRIPT = ROOT / "scripts" / "build_demo_datasets.py"
VERSIONS = ("demo-v1", "demo-v2")
FILES = (
    "dataset.yaml",
    "DATASET.md",
    "corpus.jsonl",
    "queries.jsonl",
    "qrels.csv",
    "runs/production-bm25.trec",
    "logs.jsonl",
    "judge_labels.jsonl",
)


def read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_qrels(version: str) -> pd.DataFrame:
    return pd.read_csv(DATASETS / version / "qrels.csv", dtype={"query_id": str, "doc_id": str})


def read_run(version: str) -> pd.DataFrame:
    return pd.read_csv(
        DATASETS / version / "runs" / "production-bm25.trec",
        sep=r"\s+",
        header=None,
        names=["query_id", "q0", "doc_id", "rank", "score", "tag"],
        dtype={"query_id": str, "doc_id": str},
    )


def doc_ids(version: str) -> set[str]:
    return {d["doc_id"] for d in read_jsonl(DATASETS / version / "corpus.jsonl")}


def query_ids(version: str) -> set[str]:
    return {q["query_id"] for q in read_jsonl(DATASETS / version / "queries.jsonl")}


def test_committed_files_match_a_fresh_build(tmp_path: Path) -> None:
    subprocess.run([sys.executable, str(SCRIPT), "--out", str(tmp_path)], check=True)
    for version in VERSIONS:
        built = sorted(p.relative_to(tmp_path / version) for p in (tmp_path / version).rglob("*"))
        assert sorted(Path(f) for f in FILES) == [p for p in built if p.suffix]
        for name in FILES:
            fresh = (tmp_path / version / name).read_bytes()
            assert (DATASETS / version / name).read_bytes() == fresh, f"{version}/{name} is stale"


@pytest.mark.parametrize("version", VERSIONS)
def test_corpus(version: str) -> None:
    docs = read_jsonl(DATASETS / version / "corpus.jsonl")
    assert len({d["doc_id"] for d in docs}) == len(docs)
    for d in docs:
        assert set(d) == {"doc_id", "title", "text", "cluster"}
        assert d["title"].strip() and d["cluster"].strip()
        assert 2 <= len(re.findall(r"[.?!](?:\s|$)", d["text"])) <= 5, d["doc_id"]
    assert len({d["cluster"] for d in docs}) >= 6


@pytest.mark.parametrize("version", VERSIONS)
def test_queries_and_sessions(version: str) -> None:
    queries = read_jsonl(DATASETS / version / "queries.jsonl")
    assert len({q["query_id"] for q in queries}) == len(queries)
    sessions: dict[str, list[int]] = {}
    for q in queries:
        assert q["question"].strip() and q["ground_truth_answer"].strip()
        assert (q["session_id"] is None) == (q["turn"] is None)
        if q["session_id"] is not None:
            sessions.setdefault(q["session_id"], []).append(q["turn"])
    assert len(sessions) >= 5
    assert all(turns == [1, 2, 3] for turns in sessions.values())


@pytest.mark.parametrize("version", VERSIONS)
def test_qrels_reference_known_ids_and_every_question_has_an_answer_document(
    version: str,
) -> None:
    qrels = read_qrels(version)
    assert list(qrels.columns) == ["query_id", "doc_id", "relevance"]
    assert set(qrels["doc_id"]) <= doc_ids(version)
    assert set(qrels["query_id"]) == query_ids(version)
    assert qrels["relevance"].between(0, 3).all()
    assert not qrels.duplicated(["query_id", "doc_id"]).any()
    assert (qrels.groupby("query_id")["relevance"].max() >= 2).all()
    assert (qrels["relevance"] == 0).sum() >= 10  # explicit negative judgments


@pytest.mark.parametrize("version", VERSIONS)
def test_production_run(version: str) -> None:
    run = read_run(version)
    assert set(run["tag"]) == {"production-bm25"} and set(run["q0"]) == {"Q0"}
    assert set(run["doc_id"]) <= doc_ids(version)
    assert set(run["query_id"]) == query_ids(version)
    for _, ranking in run.groupby("query_id"):
        assert list(ranking["rank"]) == list(range(1, 11))
        assert ranking["doc_id"].is_unique
        assert ranking["score"].is_monotonic_decreasing


@pytest.mark.parametrize("version", VERSIONS)
def test_logs(version: str) -> None:
    logs = read_jsonl(DATASETS / version / "logs.jsonl")
    known = doc_ids(version)
    assert len({r["log_id"] for r in logs}) == len(logs) >= 40
    for r in logs:
        datetime.strptime(r["timestamp"], "%Y-%m-%dT%H:%M:%SZ")
        assert len(r["retrieved_doc_ids"]) == 5 and set(r["retrieved_doc_ids"]) <= known
        assert r["shown_doc_id"] in known
        assert r["latency_ms"] > 0 and r["question"].strip() and r["answer"].strip()
    shown_retrieved = sum(r["shown_doc_id"] in r["retrieved_doc_ids"] for r in logs)
    assert len(logs) // 2 < shown_retrieved < len(logs)  # usually retrieved, sometimes not
    assert [r["timestamp"] for r in logs] == sorted(r["timestamp"] for r in logs)


@pytest.mark.parametrize("version", VERSIONS)
def test_judge_labels(version: str) -> None:
    labels = pd.DataFrame(read_jsonl(DATASETS / version / "judge_labels.jsonl"))
    assert labels["label_id"].is_unique and len(labels) >= 40
    assert set(labels["ground_truth_show"]) == {"yes", "no"}
    scores = labels[["human_score_rater_a", "human_score_rater_b"]]
    assert scores.isin(range(1, 6)).all().all()
    mean = scores.mean(axis=1)
    assert (mean[labels["ground_truth_show"] == "yes"] >= 3).all()
    assert (mean[labels["ground_truth_show"] == "no"] <= 3).all()
    gap = (scores["human_score_rater_a"] - scores["human_score_rater_b"]).abs()
    assert (gap == 0).mean() > 0.5 and (gap >= 2).any()  # mostly agree, not always


def test_demo_v2_extends_demo_v1() -> None:
    v1_docs = read_jsonl(DATASETS / "demo-v1" / "corpus.jsonl")
    v2_docs = read_jsonl(DATASETS / "demo-v2" / "corpus.jsonl")
    assert v2_docs[: len(v1_docs)] == v1_docs
    assert len(v2_docs) > len(v1_docs)

    v1_queries = {q["query_id"]: q for q in read_jsonl(DATASETS / "demo-v1" / "queries.jsonl")}
    v2_queries = {q["query_id"]: q for q in read_jsonl(DATASETS / "demo-v2" / "queries.jsonl")}
    assert set(v1_queries) < set(v2_queries)
    for query_id, q in v1_queries.items():
        assert v2_queries[query_id]["question"] == q["question"]

    v1_logs = read_jsonl(DATASETS / "demo-v1" / "logs.jsonl")
    assert read_jsonl(DATASETS / "demo-v2" / "logs.jsonl")[: len(v1_logs)] == v1_logs

    merged = read_qrels("demo-v1").merge(
        read_qrels("demo-v2"), on=["query_id", "doc_id"], how="outer", suffixes=("_v1", "_v2")
    )
    changed = merged[
        merged["query_id"].isin(v1_queries) & (merged["relevance_v1"] != merged["relevance_v2"])
    ]
    notes = (DATASETS / "demo-v2" / "DATASET.md").read_text(encoding="utf-8")
    assert "## Changes from demo-v1" in notes
    assert 0 < len(changed) <= 10
    for row in changed.itertuples():
        assert f"{row.query_id} / {row.doc_id}:" in notes  # every correction is documented


@pytest.mark.parametrize("version", VERSIONS)
def test_logs_carry_production_traffic_columns(version: str) -> None:
    logs = pd.DataFrame(read_jsonl(DATASETS / version / "logs.jsonl"))
    days = pd.to_datetime(logs["timestamp"]).dt.date
    assert days.nunique() >= 3  # the traffic tier has several daily partitions
    split = logs["retrieval_latency_ms"] + logs["generation_latency_ms"]
    assert (split - logs["latency_ms"]).abs().max() < 0.11  # rounding to 0.1 ms
    assert logs["contexts"].map(len).eq(3).all()
    assert (logs["prompt_tokens"] > 0).all() and (logs["completion_tokens"] > 0).all()
    assert 0 < logs["error"].notna().sum() < len(logs) // 4
    assert {"up", "down"} <= set(logs["feedback"].dropna())
    assert logs["feedback"].isna().any()


@pytest.mark.parametrize("version", VERSIONS)
def test_expected_patterns_match_their_ground_truth(version: str) -> None:
    queries = pd.DataFrame(read_jsonl(DATASETS / version / "queries.jsonl"))
    with_pattern = queries.dropna(subset=["expected_pattern"])
    assert len(with_pattern) >= 3
    for row in with_pattern.itertuples():
        assert re.search(row.expected_pattern, row.ground_truth_answer, re.IGNORECASE), row


@pytest.mark.parametrize("version", VERSIONS)
def test_judge_labels_carry_scores_per_criterion(version: str) -> None:
    labels = pd.DataFrame(read_jsonl(DATASETS / version / "judge_labels.jsonl"))
    for rater in ("rater_a", "rater_b"):
        overall = labels[f"human_overall_{rater}"]
        assert overall.equals(labels[f"human_score_{rater}"])
        for criterion in ("faithfulness", "relevance", "correctness"):
            scores = labels[f"human_{criterion}_{rater}"]
            assert scores.isin(range(1, 6)).all() and (scores - overall).abs().max() == 1
