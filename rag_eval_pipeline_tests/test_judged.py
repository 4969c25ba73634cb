"""Judged@k (the share of the top k retrieved documents that the qrels judge at all) equals
ir_measures' `Judged@k`, per query, on random runs; and its unjudged documents are listed."""

from __future__ import annotations

import ir_measures
import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.metrics.retrieval import evaluate_run

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
