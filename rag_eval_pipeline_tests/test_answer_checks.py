"""Exact match, regex match (whole output) and citation scores wired into the judgment rows."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from rag_eval_pipeline.datasets.errors import DatasetError
from rag_eval_pipeline.datasets.golden import GoldenDataset, load_dataset
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.generation import answer_checks, ideal_contexts, reference_scores

pytestmark = [pytest.mark.integration]


def dataset() -> GoldenDataset:
    queries = pd.DataFrame(
        {
            "query_id": ["q1", "q2", "q3", "q4"],
            "question": ["Support phone?", "Region?", "Invoice day?", "Free tier?"],
            "expected_pattern": [r"^\d{3}-\d{3}-\d{4}$", None, r"\b1st\b", None],
        }
    )
    qrels = pd.DataFrame(
        {
            "query_id": ["q1", "q2", "q2", "q3", "q4"],
            "doc_id": ["d1", "d2", "d3", "d4", "d5"],
            "relevance": [1, 2, 1, 0, 1],
        }
    )
    return GoldenDataset(version="t", queries=queries, qrels=qrels)


def answers() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "system": "sut",
            "query_id": ["q1", "q2", "q3", "q4"],
            "answer": ["call me\n555-123-4567", "eu-west [1] and [3] [9]", "On the 1st.", None],
            "retrieved_doc_ids": [["d1"], ["d2", "d7", "d3"], ["d4"], ["d5"]],
            "ground_truth_answer": ["555-123-4567", "eu-west", "On the 1st", "No."],
        }
    )


def test_answer_checks_by_hand() -> None:
    rows = answer_checks(answers(), dataset())
    got = {(r.query_id, r.metric): r.score for r in rows.itertuples()}
    # q1: multi-line answer fails the anchored pattern; q3 matches; q4 has no pattern
    assert got[("q1", "regex_match")] == 0.0
    assert got[("q3", "regex_match")] == 1.0
    # q2 cites [1]=d2 (relevant), [3]=d3 (relevant), [9] (invalid): P = 2/3, R = 2/2
    assert got[("q2", "citation_precision")] == pytest.approx(2 / 3)
    assert got[("q2", "citation_recall")] == 1.0
    assert got[("q2", "citation_f1")] == pytest.approx(2 * (2 / 3) / (2 / 3 + 1))
    # q1 cites nothing though d1 was relevant and retrieved: recall 0 and F1 0, no precision
    assert got[("q1", "citation_recall")] == 0.0 and got[("q1", "citation_f1")] == 0.0
    assert ("q1", "citation_precision") not in got
    # q3: nothing relevant retrieved and nothing cited: undefined, no rows
    assert not [key for key in got if key[0] == "q3" and key[1].startswith("citation")]
    # q4 has no answer: no citation rows (nothing to score), no pattern either
    assert not [key for key in got if key[0] == "q4"]
    assert rows["error"].isna().all()


def test_exact_match_is_a_reference_score(embedder: Embedder) -> None:
    rows = reference_scores(answers(), embedder)
    exact = rows[rows["metric"] == "exact_match"].set_index("query_id")
    # q1 has extra words, q2 extra citations; q3 differs only by punctuation (normalized away)
    assert exact["score"].iloc[:3].tolist() == [0.0, 0.0, 1.0]
    assert math.isnan(exact.loc["q4", "score"]) and exact.loc["q4", "error"] == "no answer to score"


def test_an_invalid_expected_pattern_names_file_row_and_column(tmp_path: Path) -> None:
    (tmp_path / "queries.jsonl").write_text(
        '{"query_id": "q1", "question": "a?", "expected_pattern": "^ok$"}\n'
        '{"query_id": "q2", "question": "b?", "expected_pattern": "([unclosed"}\n'
    )
    (tmp_path / "qrels.csv").write_text("query_id,doc_id,relevance\nq1,d1,1\n")
    with pytest.raises(DatasetError, match=r"queries.jsonl, row 2 \(line 2\), column "):
        load_dataset(tmp_path, "t")


def test_tier2_answer_checks_cite_the_ideal_context_by_hand() -> None:
    golden = dataset()
    corpus = pd.DataFrame({"doc_id": [f"d{i}" for i in range(1, 6)], "text": list("abcde")})
    golden = GoldenDataset(version="t", queries=golden.queries, qrels=golden.qrels, corpus=corpus)
    ideal = ideal_contexts(golden)
    # q3's only judged document has grade 0: no ideal context, no question
    assert ideal["query_id"].tolist() == ["q1", "q2", "q4"]
    assert [list(ids) for ids in ideal["context_doc_ids"]] == [["d1"], ["d2", "d3"], ["d5"]]
    frame = ideal.assign(system="gen", answer=["555-123-4567", "eu-west [2] [3]", "No [1]."])
    rows = answer_checks(frame, golden, sources="context_doc_ids")
    got = {(r.query_id, r.metric): r.score for r in rows.itertuples()}
    assert got == {
        # q1 matches its anchored pattern; q4 has none
        ("q1", "regex_match"): 1.0,
        # q1 cites nothing of its relevant context [d1]: recall 0, F1 0, no precision
        ("q1", "citation_recall"): 0.0,
        ("q1", "citation_f1"): 0.0,
        # q2: [2] = d3 (relevant), [3] is out of its 2-document context: P = 1/2, R = 1/2
        ("q2", "citation_precision"): 0.5,
        ("q2", "citation_recall"): 0.5,
        ("q2", "citation_f1"): 0.5,
        # q4: [1] = d5, its one relevant document
        ("q4", "citation_precision"): 1.0,
        ("q4", "citation_recall"): 1.0,
        ("q4", "citation_f1"): 1.0,
    }
    no_sources = answer_checks(frame.drop(columns="context_doc_ids"), golden, "context_doc_ids")
    assert no_sources["metric"].tolist() == ["regex_match"]
