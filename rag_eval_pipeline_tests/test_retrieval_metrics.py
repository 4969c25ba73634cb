"""Tests for the Tier 1 IR-metric kernel, :func:`rag_eval_pipeline.metrics.retrieval.evaluate_run`.

Values are checked against pytrec_eval (trec_eval 9.0.8) on random runs full of score ties,
on the real SciFact run, and against hand-computed expectations; the exponential-gain NDCG is
checked against ranx ``ndcg_burges``.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_eval_pipeline.metrics.retrieval import DEFAULT_RETRIEVAL_METRICS, evaluate_run

pytestmark = [pytest.mark.integration]

SCIFACT = Path(__file__).resolve().parents[1] / "data" / "datasets" / "scifact-test"
CUTOFFS = (1, 3, 5, 10)
TREC_MEASURES = {
    "success.1,3,5,10",
    "recip_rank",
    "P.1,3,5,10",
    "recall.1,3,5,10",
    "ndcg_cut.5,10",
    "map",
    "Rprec",
}
TREC_NAME: dict[str, str] = {
    **{f"hit_rate@{k}": f"success_{k}" for k in CUTOFFS},
    **{f"precision@{k}": f"P_{k}" for k in CUTOFFS},
    **{f"recall@{k}": f"recall_{k}" for k in CUTOFFS},
    "mrr": "recip_rank",
    "ndcg@5": "ndcg_cut_5",
    "ndcg@10": "ndcg_cut_10",
    "map": "map",
    "r_precision": "Rprec",
}
MRR_CUTOFFS = (1, 3, 10)
CHECKED_METRICS = (*TREC_NAME, *(f"mrr@{k}" for k in MRR_CUTOFFS))
# Scores that collide once cast to float32, signed zeros, negatives: ties are the norm.
TIE_PRONE_SCORES = (-1.5, -0.0, 0.0, 0.1, 0.1 + 1e-12, 0.5, 1.0, 1.0 + 2.0**-30, 1.0 + 2.0**-22)
# Ids whose string order differs from their numeric order ("10" < "9"), non-ASCII ids, and
# long ids sharing 8-byte prefixes (the kernel fingerprints ids 8 bytes at a time).
DOC_POOL = (
    *(str(n) for n in range(40)),
    *("100", "doc-é", "doc-z", "doc-Ω", "Doc", "document-1", "document-10", "document-2"),
    *("msmarco_passage_00_491550", "msmarco_passage_00_491551", "msmarco_passage_0"),
)


def run_frame(rows: list[tuple[str, str, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"]).astype(
        {"query_id": "str", "doc_id": "str", "score": "float64"}
    )


def qrels_frame(rows: list[tuple[str, str, int]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "relevance"]).astype(
        {"query_id": "str", "doc_id": "str", "relevance": "int64"}
    )


def nested_dict(
    frame: pd.DataFrame, value_column: str, cast: type[float] | type[int]
) -> dict[str, dict[str, Any]]:
    """``{query_id: {doc_id: value}}``, the input format of pytrec_eval and ranx."""
    nested: dict[str, dict[str, Any]] = {}
    for query_id, doc_id, value in frame[["query_id", "doc_id", value_column]].itertuples(
        index=False
    ):
        nested.setdefault(query_id, {})[doc_id] = cast(value)
    return nested


def pytrec_eval_results(
    run: pd.DataFrame,
    qrels: pd.DataFrame,
    measures: set[str] = TREC_MEASURES,
    relevance_level: int = 1,
) -> dict[str, dict[str, float]]:
    evaluator = pytrec_eval.RelevanceEvaluator(
        nested_dict(qrels, "relevance", int), measures, relevance_level=relevance_level
    )
    return evaluator.evaluate(nested_dict(run, "score", float))


def expected_from_trec(measures: dict[str, float]) -> dict[str, float]:
    """Our metric values implied by one query's pytrec_eval measures."""
    expected = {name: measures[trec_name] for name, trec_name in TREC_NAME.items()}
    reciprocal_rank = measures["recip_rank"]
    first_relevant_rank = round(1 / reciprocal_rank) if reciprocal_rank else math.inf
    for k in MRR_CUTOFFS:
        expected[f"mrr@{k}"] = reciprocal_rank if first_relevant_rank <= k else 0.0
    return expected


def assert_matches_pytrec_eval(
    run: pd.DataFrame, qrels: pd.DataFrame, relevance_level: int = 1
) -> pd.DataFrame:
    """Every query with a relevant judgment: pytrec_eval's value, or 0 if it was not run.

    pytrec_eval gets grades below -1 as -1: trec_eval uses -2 internally for "unjudged in the
    pool", and pytrec_eval 0.5 crashes (segfault) on some qrels holding it. For every measure
    here both grades mean the same (not relevant, no gain; checked where it does not crash).
    """
    ours = evaluate_run(run, qrels, CHECKED_METRICS, relevance_level=relevance_level)
    as_trec_eval_reads = qrels.assign(relevance=qrels["relevance"].clip(lower=-1))
    theirs = pytrec_eval_results(run, as_trec_eval_reads, relevance_level=relevance_level)
    relevant_queries = sorted(set(qrels.loc[qrels["relevance"] >= relevance_level, "query_id"]))
    assert ours["query_id"].tolist() == relevant_queries
    for row in ours.to_dict("records"):
        query_id = row.pop("query_id")
        if query_id in theirs:
            expected = expected_from_trec(theirs[query_id])
        else:
            assert query_id not in set(run["query_id"])
            expected = dict.fromkeys(CHECKED_METRICS, 0.0)
        assert row == pytest.approx(expected, abs=1e-9, rel=0), query_id
    return ours


def random_tables(
    seed: int, num_queries: int = 25, grades: tuple[int, int] = (0, 3)
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run and qrels with ties everywhere, empty and short rankings, unrun and unjudged queries;
    grades drawn from the inclusive range `grades`."""
    rng = np.random.default_rng(seed)
    query_ids = rng.choice(
        ["1", "2", "9", "10", "11", "100", "q-é", *map(str, range(200, 260))],
        num_queries,
        replace=False,
    )
    run_rows, qrels_rows = [], []
    for position, query_id in enumerate(query_ids):
        depth = int(rng.integers(0, 16)) if position % 5 else 0
        for doc_id in rng.choice(DOC_POOL, depth, replace=False):
            run_rows.append((query_id, doc_id, float(rng.choice(TIE_PRONE_SCORES))))
        if position % 7 == 3:
            continue  # a run-only query: must be ignored
        judged = int(rng.integers(1, 12))
        for doc_id in rng.choice(DOC_POOL, judged, replace=False):
            qrels_rows.append((query_id, doc_id, int(rng.integers(grades[0], grades[1] + 1))))
    return run_frame(run_rows), qrels_frame(qrels_rows)


# --- equality with pytrec_eval -----------------------------------------------------------------


@pytest.mark.parametrize("seed", range(40))
def test_random_tied_runs_match_pytrec_eval(seed: int) -> None:
    run, qrels = random_tables(seed)
    assert_matches_pytrec_eval(run, qrels)


@pytest.mark.parametrize("relevance_level", [1, 2, 3, 4])
@pytest.mark.parametrize("seed", range(10))
def test_graded_qrels_from_minus_2_to_4_match_pytrec_eval_at_every_level(
    seed: int, relevance_level: int
) -> None:
    run, qrels = random_tables(seed, grades=(-2, 4))
    assert set(qrels["relevance"]) == set(range(-2, 5))
    ours = assert_matches_pytrec_eval(run, qrels, relevance_level)
    assert len(ours) > 0


def test_relevance_level_by_hand() -> None:
    """Grades 4, 1, -1, 0, 2 at ranks 5, 4, 3, 2, 6 (an unjudged document at rank 1).

    Level 2: relevant = {a: 4, e: 2, f: 3 (not retrieved)}, R = 3. First relevant at rank 5:
    MRR 0.2; P@5 = 1/5; MAP = (1/5 + 2/6) / 3. NDCG ignores the level: gains 1 at rank 4,
    4 at rank 5, 2 at rank 6; the ideal is 4, 3, 2, 1.
    """
    run = run_frame(
        [
            ("q", "g", 9.0),
            ("q", "d", 8.0),
            ("q", "c", 7.0),
            ("q", "b", 6.0),
            ("q", "a", 5.0),
            ("q", "e", 4.0),
        ]
    )
    qrels = qrels_frame(
        [("q", "a", 4), ("q", "b", 1), ("q", "c", -1), ("q", "d", 0), ("q", "e", 2), ("q", "f", 3)]
    )
    row = evaluate_run(
        run, qrels, ["mrr", "precision@5", "map", "recall@5", "ndcg@10"], relevance_level=2
    ).iloc[0]
    ideal = 4 + 3 / math.log2(3) + 2 / 2 + 1 / math.log2(5)
    dcg = 1 / math.log2(5) + 4 / math.log2(6) + 2 / math.log2(7)
    assert row["mrr"] == pytest.approx(0.2)
    assert row["precision@5"] == pytest.approx(0.2)
    assert row["recall@5"] == pytest.approx(1 / 3)
    assert row["map"] == pytest.approx((1 / 5 + 2 / 6) / 3)
    assert row["ndcg@10"] == pytest.approx(dcg / ideal)
    level_1 = evaluate_run(run, qrels, ["ndcg@10", "recall@5"], relevance_level=1).iloc[0]
    assert level_1["ndcg@10"] == pytest.approx(row["ndcg@10"])
    assert level_1["recall@5"] == pytest.approx(2 / 4)


def test_queries_without_a_grade_at_the_level_are_not_scored() -> None:
    qrels = qrels_frame([("q1", "a", 1), ("q2", "b", 2)])
    run = run_frame([("q1", "a", 1.0), ("q2", "b", 1.0)])
    assert evaluate_run(run, qrels, ["mrr"], relevance_level=2)["query_id"].tolist() == ["q2"]


@pytest.mark.parametrize("level", [0, -1, 1.5, True])
def test_relevance_level_below_1_or_not_an_integer_raises(level: object) -> None:
    qrels = qrels_frame([("q", "a", 1)])
    with pytest.raises(ValueError, match="relevance_level"):
        evaluate_run(run_frame([]), qrels, ["mrr"], relevance_level=level)  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["1", "10", "9"]), st.sampled_from(DOC_POOL[:12])),
        unique=True,
        max_size=30,
    ),
    st.data(),
)
def test_hypothesis_runs_match_pytrec_eval(
    pairs: list[tuple[str, str]], data: st.DataObject
) -> None:
    scores = data.draw(
        st.lists(st.sampled_from(TIE_PRONE_SCORES), min_size=len(pairs), max_size=len(pairs))
    )
    judged = data.draw(
        st.lists(
            st.tuples(st.sampled_from(["1", "10", "9"]), st.sampled_from(DOC_POOL[:12])),
            unique=True,
            min_size=1,
            max_size=20,
        )
    )
    grades = data.draw(st.lists(st.integers(0, 3), min_size=len(judged), max_size=len(judged)))
    run = run_frame([(q, d, s) for (q, d), s in zip(pairs, scores, strict=True)])
    qrels = qrels_frame([(q, d, g) for (q, d), g in zip(judged, grades, strict=True)])
    assert_matches_pytrec_eval(run, qrels)


def test_many_queries_across_blocks_and_chunks_match_pytrec_eval() -> None:
    """40k rows: several processing blocks, a multi-chunk Arrow column, deep rankings."""
    rng = np.random.default_rng(7)
    num_queries, depth = 800, 50
    query_ids = np.repeat([f"q{n}" for n in range(num_queries)], depth)
    doc_numbers = [rng.choice(500, depth, replace=False) for _ in range(num_queries)]
    doc_ids = [f"d{n}" * (1 + n % 4) for n in np.concatenate(doc_numbers)]  # 2-13 bytes
    run = pd.DataFrame(
        {
            "query_id": query_ids,
            "doc_id": doc_ids,
            "score": np.round(rng.random(len(query_ids)), 2),
        }
    ).astype({"query_id": "str", "doc_id": "str"})
    run = run.sample(frac=1.0, random_state=1)  # queries interleaved
    run = pd.concat([run.iloc[: len(run) // 3], run.iloc[len(run) // 3 :]], ignore_index=True)
    assert isinstance(pa.array(run["doc_id"]), pa.ChunkedArray)  # two chunks, one offset
    judged = rng.random(len(run)) < 0.1
    qrels = run.loc[judged, ["query_id", "doc_id"]].assign(
        relevance=rng.integers(0, 4, int(judged.sum()))
    )
    assert_matches_pytrec_eval(run, qrels)


def test_scifact_reranked_run_matches_pytrec_eval_on_all_300_queries() -> None:
    qrels = pd.read_csv(
        SCIFACT / "qrels.trec",
        sep=r"\s+",
        header=None,
        names=["query_id", "iteration", "doc_id", "relevance"],
        dtype={"query_id": "str", "doc_id": "str", "relevance": "int64"},
    )[["query_id", "doc_id", "relevance"]]
    run = pd.read_csv(
        SCIFACT / "runs" / "reranked.trec",
        sep=r"\s+",
        header=None,
        names=["query_id", "q0", "doc_id", "rank", "score", "tag"],
        dtype={"query_id": "str", "doc_id": "str", "score": "float64"},
    )
    ours = assert_matches_pytrec_eval(run, qrels)
    assert len(ours) == 300
    assert ours["map"].mean() > 0.5  # a real re-ranker, not an all-zero artefact


def test_precision_at_any_integer_k_matches_trec_p() -> None:
    run, qrels = random_tables(seed=3)
    ours = evaluate_run(run, qrels, ["precision@7", "recall@7", "hit_rate@2", "ndcg@3"])
    trec = pytrec_eval_results(run, qrels, {"P.7", "recall.7", "success.2", "ndcg_cut.3"})
    trec_names = ["P_7", "recall_7", "success_2", "ndcg_cut_3"]
    for row in ours.itertuples(index=False):
        measures = trec.get(row.query_id, dict.fromkeys(trec_names, 0.0))
        assert list(row[1:]) == pytest.approx([measures[name] for name in trec_names], abs=1e-12)


# --- exponential-gain NDCG -------------------------------------------------------------------


# ranx's own code, run by the interpreter: NUMBA_DISABLE_JIT skips numba compilation, which
# costs ranx 0.5-2 minutes per process (its typed-dict constructors are recompiled every time).
RANX_SCRIPT = """
import json, sys
import ranx
payload = json.load(sys.stdin)
run, qrels = ranx.Run(payload["run"]), ranx.Qrels(payload["qrels"])
ranx.evaluate(qrels, run, payload["metrics"])
json.dump({metric: dict(run.scores[metric]) for metric in payload["metrics"]}, sys.stdout)
"""


def ranx_scores(
    run: pd.DataFrame, qrels: pd.DataFrame, metrics: list[str]
) -> dict[str, dict[str, float]]:
    payload = {
        "run": nested_dict(run, "score", float),
        "qrels": nested_dict(qrels, "relevance", int),
        "metrics": metrics,
    }
    completed = subprocess.run(
        [sys.executable, "-c", RANX_SCRIPT],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
        env={**os.environ, "NUMBA_DISABLE_JIT": "1"},
    )
    return json.loads(completed.stdout)


@pytest.mark.skipif(importlib.util.find_spec("ranx") is None, reason="ranx is not installed")
def test_ndcg_exp_matches_ranx_ndcg_burges_on_a_tie_free_run() -> None:
    """ranx orders equal scores with an unstable argsort, not by doc id: no ties here."""
    rng = np.random.default_rng(11)
    run_rows, qrels_rows = [], []
    for query in range(12):
        docs = rng.choice(DOC_POOL, 15, replace=False)
        scores = rng.permutation(15) / 15 + query
        run_rows += [(f"q{query}", d, float(s)) for d, s in zip(docs, scores, strict=True)]
        judged = [*docs[rng.permutation(15)[:6]], "not-retrieved"]
        grades = rng.integers(0, 4, len(judged))
        qrels_rows += [(f"q{query}", d, int(g)) for d, g in zip(judged, grades, strict=True)]
    run, qrels = run_frame(run_rows), qrels_frame(qrels_rows)

    ours = evaluate_run(run, qrels, ["ndcg_exp@5", "ndcg_exp@10"]).set_index("query_id")
    theirs = ranx_scores(run, qrels, ["ndcg_burges@5", "ndcg_burges@10"])
    for k in (5, 10):
        expected = theirs[f"ndcg_burges@{k}"]
        assert ours[f"ndcg_exp@{k}"].to_dict() == pytest.approx(expected, abs=1e-9)
        assert sum(0 < value < 1 for value in expected.values()) >= 8


# --- hand-computed values --------------------------------------------------------------------


def three_doc_example() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Ranking d1 (unjudged), d2 (grade 3), d3 (grade 1); d9 (grade 2) is never retrieved."""
    run = run_frame([("q", "d1", 3.0), ("q", "d2", 2.0), ("q", "d3", 1.0)])
    qrels = qrels_frame([("q", "d2", 3), ("q", "d3", 1), ("q", "d9", 2), ("q", "d4", 0)])
    return run, qrels


def test_three_doc_example_by_hand() -> None:
    run, qrels = three_doc_example()
    names = [
        "hit_rate@1", "hit_rate@3", "mrr", "mrr@1", "precision@1", "precision@3", "precision@5",
        "recall@1", "recall@3", "ndcg@3", "ndcg_exp@3", "map", "r_precision",
    ]  # fmt: skip
    row = evaluate_run(run, qrels, names).iloc[0]
    log2_3 = math.log2(3)
    ideal_linear = 3 / 1 + 2 / log2_3 + 1 / 2  # grades 3, 2, 1 at ranks 1..3
    ideal_exponential = 7 / 1 + 3 / log2_3 + 1 / 2  # gains 2^g - 1: 7, 3, 1
    expected = {
        "hit_rate@1": 0.0,
        "hit_rate@3": 1.0,
        "mrr": 1 / 2,
        "mrr@1": 0.0,
        "precision@1": 0.0,
        "precision@3": 2 / 3,
        "precision@5": 2 / 5,  # divided by k although only 3 were retrieved
        "recall@1": 0.0,
        "recall@3": 2 / 3,  # R = 3 counts the unretrieved d9
        "ndcg@3": (3 / log2_3 + 1 / 2) / ideal_linear,
        "ndcg_exp@3": (7 / log2_3 + 1 / 2) / ideal_exponential,
        "map": (1 / 2 + 2 / 3) / 3,
        "r_precision": 2 / 3,
    }
    assert row["query_id"] == "q"
    assert row[names].to_dict() == pytest.approx(expected, abs=1e-12)
    assert row["ndcg@3"] == pytest.approx(0.502490, abs=1e-6)


def test_equal_scores_rank_doc_ids_in_descending_string_order() -> None:
    run = run_frame([("q", "10", 1.0), ("q", "9", 1.0), ("q", "2", 1.0)])
    qrels = qrels_frame([("q", "10", 1)])
    # trec_eval order: "9", "2", "10" (a numeric sort would put "10" first)
    assert evaluate_run(run, qrels, ["mrr"])["mrr"].iloc[0] == pytest.approx(1 / 3)
    assert_matches_pytrec_eval(run, qrels)


def test_scores_equal_in_float32_are_ties() -> None:
    run = run_frame([("q", "a", 0.1 + 1e-12), ("q", "b", 0.1), ("q", "c", -0.0), ("q", "d", 0.0)])
    qrels = qrels_frame([("q", "a", 1), ("q", "c", 2)])
    row = evaluate_run(run, qrels, ["mrr", "map"]).iloc[0]
    # "b" outranks "a" (tie, larger id); "d" outranks "c" (-0.0 == 0.0): ranks 2 and 4
    assert row["mrr"] == pytest.approx(1 / 2)
    assert row["map"] == pytest.approx((1 / 2 + 2 / 4) / 2)
    assert_matches_pytrec_eval(run, qrels)


def test_negative_grades_are_not_relevant_like_trec_eval_unjudged() -> None:
    run, qrels = three_doc_example()
    qrels = pd.concat([qrels, qrels_frame([("q", "d1", -1), ("p", "d1", -2), ("p", "d2", 1)])])
    assert evaluate_run(run, qrels, ["mrr"])["mrr"].tolist() == [0.0, 0.5]
    assert_matches_pytrec_eval(run, qrels)


def test_rank_column_and_row_order_are_ignored() -> None:
    run, qrels = three_doc_example()
    shuffled = run.iloc[::-1].assign(rank=[1, 2, 3], system="bm25")
    pd.testing.assert_frame_equal(evaluate_run(shuffled, qrels), evaluate_run(run, qrels))


# --- queries, empty inputs, output shape -----------------------------------------------------


def test_output_has_one_row_per_relevant_query_sorted_as_strings() -> None:
    run = run_frame([("9", "a", 1.0), ("unjudged", "a", 1.0), ("10", "b", 1.0)])
    qrels = qrels_frame([("9", "a", 1), ("10", "a", 2), ("x", "a", 1), ("only-zero", "a", 0)])
    ours = evaluate_run(run, qrels)
    assert ours.columns.tolist() == ["query_id", *DEFAULT_RETRIEVAL_METRICS]
    assert ours["query_id"].tolist() == ["10", "9", "x"]
    assert (ours.dtypes.iloc[1:] == np.float64).all()
    nine = ours.set_index("query_id").loc["9"]
    assert nine["precision@3"] == pytest.approx(1 / 3)
    assert nine.drop([f"precision@{k}" for k in CUTOFFS]).eq(1.0).all()
    assert ours.set_index("query_id").loc[["10", "x"]].eq(0.0).all().all()


def test_empty_run_scores_zero_everywhere() -> None:
    _, qrels = three_doc_example()
    ours = evaluate_run(run_frame([]), qrels)
    assert ours["query_id"].tolist() == ["q"]
    assert ours.drop(columns="query_id").eq(0.0).all().all()


def test_qrels_without_relevant_documents_give_an_empty_frame() -> None:
    run, _ = three_doc_example()
    for qrels in (qrels_frame([("q", "d1", 0)]), qrels_frame([])):
        ours = evaluate_run(run, qrels, ["mrr", "ndcg@10"])
        assert ours.empty
        assert ours.columns.tolist() == ["query_id", "mrr", "ndcg@10"]
        assert (ours.dtypes.iloc[1:] == np.float64).all()


def test_non_string_and_object_ids_are_read_as_strings() -> None:
    run, qrels = three_doc_example()
    expected = evaluate_run(run, qrels)
    as_object = run.astype({"query_id": object, "doc_id": object})
    pd.testing.assert_frame_equal(evaluate_run(as_object, qrels), expected)
    numeric_run = run_frame([("7", "1", 2.0), ("7", "2", 1.0)]).astype({"doc_id": "int64"})
    numeric_qrels = qrels_frame([("7", "2", 1)]).astype({"query_id": "int64"})
    assert evaluate_run(numeric_run, numeric_qrels, ["mrr"])["mrr"].tolist() == [0.5]


# --- errors ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["foo", "ndcg@0", "map@5", "r_precision@3", "hit_rate", "precision@x", "MRR", "P@5"]
)
def test_unknown_metric_names_raise_naming_the_metric(name: str) -> None:
    run, qrels = three_doc_example()
    with pytest.raises(ValueError, match=name):
        evaluate_run(run, qrels, ["mrr", name])


def test_repeated_metric_name_raises() -> None:
    run, qrels = three_doc_example()
    with pytest.raises(ValueError, match="mrr"):
        evaluate_run(run, qrels, ["mrr", "map", "mrr"])


def test_duplicate_run_document_raises_naming_query_and_doc() -> None:
    run, qrels = three_doc_example()
    duplicated = pd.concat([run, run_frame([("q", "d2", 0.5)])], ignore_index=True)
    with pytest.raises(ValueError, match=r"'d2'.*'q'"):
        evaluate_run(duplicated, qrels)


def test_duplicate_far_apart_in_a_large_run_raises() -> None:
    rows = [(f"q{n % 7}", f"doc-{n}", 1.0) for n in range(50_000)]
    run = run_frame([*rows, ("q3", "doc-3", 0.5)])
    qrels = qrels_frame([("q3", "doc-3", 1)])
    with pytest.raises(ValueError, match=r"'doc-3'.*'q3'"):
        evaluate_run(run, qrels)
    # all scores tie, so doc-3 ranks after every q3 doc id that is larger as a string
    rank = 1 + sum(doc_id > "doc-3" for query_id, doc_id, _ in rows if query_id == "q3")
    assert evaluate_run(run_frame(rows), qrels)["mrr"].tolist() == [1 / rank]


def test_duplicate_qrels_judgment_raises() -> None:
    run, qrels = three_doc_example()
    with pytest.raises(ValueError, match=r"qrels.*'d3'.*'q'"):
        evaluate_run(run, pd.concat([qrels, qrels_frame([("q", "d3", 2)])]))


@pytest.mark.parametrize(
    ("table", "change", "message"),
    [
        ("run", lambda frame: frame.drop(columns="score"), "missing column"),
        ("qrels", lambda frame: frame.drop(columns="relevance"), "missing column"),
        ("run", lambda frame: frame.assign(score=np.nan), "NaN"),
        ("run", lambda frame: frame.assign(doc_id=[None, "x", "y"]), "missing values"),
        ("run", lambda frame: frame.assign(query_id=["q", None, "q"]), "missing values"),
        ("qrels", lambda frame: frame.assign(query_id=None), "missing values"),
    ],
)
def test_invalid_tables_raise(
    table: str, change: Callable[[pd.DataFrame], pd.DataFrame], message: str
) -> None:
    run, qrels = three_doc_example()
    if table == "run":
        run = change(run)
    else:
        qrels = change(qrels)
    with pytest.raises(ValueError, match=message):
        evaluate_run(run, qrels)
