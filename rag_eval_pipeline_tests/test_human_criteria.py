"""Human evaluation on several criteria: kappa per criterion, judge↔rater and rater↔rater."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.judging import agreement_values, human_agreement
from rag_eval_pipeline.metrics.agreement import bin_scores
from rag_eval_pipeline.resources import LLMResource


def labels() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    n = 24
    frame = pd.DataFrame(
        {
            "question": [f"How do I reset password {i}?" for i in range(n)],
            "context": ["Reset your password under Account > Security."] * n,
            "answer": ["Open Account > Security and reset it."] * (n // 2)
            + ["Call support on Sundays."] * (n - n // 2),
        }
    )
    for criterion in ("faithfulness", "relevance", "correctness", "overall"):
        base = rng.integers(1, 6, n)
        frame[f"human_{criterion}_rater_a"] = base
        frame[f"human_{criterion}_rater_b"] = np.clip(base + rng.integers(-1, 2, n), 1, 5)
    frame["human_score_rater_a"] = frame["human_overall_rater_a"]
    frame.loc[3, "human_correctness_rater_b"] = np.nan  # one label not scored by rater b
    return frame


def test_kappa_per_criterion_equals_sklearn(embedder: Embedder, tmp_path: Path) -> None:
    judge, _ = LLMResource(cache_dir=str(tmp_path)).judge(embedder)
    frame = labels()
    table = human_agreement(frame, judge)
    got = {(r.criterion, r.rater_a, r.rater_b): (r.kappa, r.n) for r in table.itertuples()}
    for criterion in ("faithfulness", "relevance", "correctness", "overall"):
        a, b = frame[f"human_{criterion}_rater_a"], frame[f"human_{criterion}_rater_b"]
        both = a.notna() & b.notna()
        kappa, n = got[(criterion, "rater_a", "rater_b")]
        assert kappa == pytest.approx(cohen_kappa_score(a[both], b[both], labels=range(1, 6)))
        assert n == both.sum()
    faithfulness = judge.faithfulness(
        frame["question"].tolist(), [[c] for c in frame["context"]], frame["answer"].tolist()
    )
    judge_bins = bin_scores(faithfulness["score"].to_numpy(dtype=float))
    kappa, n = got[("faithfulness", "judge", "rater_a")]
    expected = cohen_kappa_score(
        judge_bins, frame["human_faithfulness_rater_a"], labels=range(1, 6)
    )
    assert kappa == pytest.approx(expected) and n == len(frame)
    # no judge metric for correctness and overall: raters only
    assert ("correctness", "judge", "rater_a") not in got
    assert ("relevance", "judge", "rater_b") in got
    # the single-score column keeps its historical name; criteria are named in the value
    names = {name for _, values in agreement_values(table) for name in values}
    assert {"kappa_judge_vs_rater_a", "kappa_correctness_rater_a_vs_rater_b"} <= names
    counts = {name: n for n, values in agreement_values(table) for name in values}
    assert counts["kappa_correctness_rater_a_vs_rater_b"] == len(frame) - 1
