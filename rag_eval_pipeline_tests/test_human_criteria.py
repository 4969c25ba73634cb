"""Human evaluation on several criteria: kappa per criterion, judge↔rater and rater↔rater."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import cohen_kappa_score

from rag_eval_pipeline.datasets.golden import load_dataset
from rag_eval_pipeline.defs.shared.resources import LLMResource
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.judging import agreement_values, human_agreement
from rag_eval_pipeline.evaluation.rater_tasks import rater_tasks
from rag_eval_pipeline.judges.metrics import METRICS
from rag_eval_pipeline.metrics.agreement import bin_scores

pytestmark = [pytest.mark.integration]


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
    faithfulness = judge.score(
        METRICS["faithfulness"],
        {
            "question": frame["question"].tolist(),
            "contexts": [[c] for c in frame["context"]],
            "answer": frame["answer"].tolist(),
        },
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


def test_rater_tasks_sample_and_neutralize_formulas() -> None:
    generations = pd.DataFrame(
        {
            "system": "sut",
            "query_id": [f"q{i}" for i in range(6)],
            "question": ['=HYPERLINK("http://x")', "b?", "c?", "d?", "e?", "f?"],
            "answer": ["a", "-1 is the answer", None, "d", "e", "f"],
            "contexts": [["one", "two"], ["x"], ["y"], [], ["z"], ["w"]],
        }
    )
    everything = rater_tasks(generations, 50, 0, ["ann"], "2026-11-04")
    assert everything["query_id"].tolist() == ["q0", "q1", "q3", "q4", "q5"]  # q2: no answer
    assert everything.loc[0, "question"] == '\'=HYPERLINK("http://x")'
    assert everything.loc[1, "answer"] == "'-1 is the answer"
    assert everything.loc[0, "context"] == "one\n\n---\n\ntwo"
    assert everything.loc[0, "label_id"] == "2026-11-04-q0"
    assert {
        f"human_{c}_ann" for c in ("faithfulness", "relevance", "correctness", "overall")
    } <= set(everything.columns)
    sample = rater_tasks(generations, 2, 7, ["ann"], "2026-11-04")
    chosen = np.sort(np.random.default_rng(7).choice(5, 2, replace=False))
    assert sample["query_id"].tolist() == everything["query_id"].iloc[chosen].tolist()


def test_an_exported_file_filled_in_is_a_valid_labels_file(tmp_path: Path) -> None:
    generations = pd.DataFrame(
        {
            "system": "sut",
            "query_id": ["q1", "q2"],
            "question": ["How do I reset my password?", "When is the invoice generated?"],
            "answer": ["Under Account > Security.", "On the 1st."],
            "contexts": [["Reset it under Account > Security."], ["Invoices: the 1st."]],
        }
    )
    tasks = rater_tasks(generations, 10, 0, ["ann", "bob"], "2026-11-04")
    filled = tasks.drop(columns=["system", "query_id"])
    for column in [c for c in filled.columns if c.startswith("human_")]:
        filled[column] = [4, 5]
    folder = tmp_path / "v"
    folder.mkdir()
    (folder / "queries.jsonl").write_text('{"query_id": "q1", "question": "a?"}\n')
    (folder / "qrels.csv").write_text("query_id,doc_id,relevance\nq1,d1,1\n")
    filled.to_csv(folder / "judge_labels.csv", index=False)
    labels = load_dataset(folder, "v").judge_labels
    assert labels is not None and labels["human_overall_bob"].tolist() == [4.0, 5.0]
