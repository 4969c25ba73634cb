"""Coverage is part of a verdict: a metric whose scored items fall says so (alerted when
primary); a declined answer scores 0 in the composite and the E2E score; no change is infinite;
a day without traffic is one `no traffic` verdict."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.evaluation.composite import composite_rows
from rag_eval_pipeline.evaluation.declined import zero_declined
from rag_eval_pipeline.evaluation.generation import REFUSAL_METRIC
from rag_eval_pipeline.evaluation.headline import headline
from rag_eval_pipeline.evaluation.scorecard import REAL_USERS_SYSTEM
from rag_eval_pipeline.evaluation.verdicts.compare import compare_partitions
from rag_eval_pipeline.evaluation.verdicts.partition import PartitionScores, RegressionRule
from rag_eval_pipeline.reporting.alerting import alert_line, change_text
from rag_eval_pipeline.reporting.html_report import format_change
from rag_eval_pipeline_tests.conftest import rag_eval, rag_eval_process
from rag_eval_pipeline_tests.test_regression import card, quality
from rag_eval_pipeline_tests.test_verdict_roles import SHIPPED

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def day(date: str, values: dict[str, np.ndarray]) -> PartitionScores:
    """One system's Tier 1 metrics on `date`, per item (NaN: the item has no score today)."""
    rows = [quality(m, float(np.nanmean(v)), system="prod") for m, v in values.items()]
    items = pd.concat(
        pd.DataFrame(
            {
                "tier": "tier1_retrieval",
                "system": "prod",
                "metric": m,
                "item_id": [f"q{i}" for i in range(v.size)],
                "value": v,
            }
        )
        for m, v in values.items()
    )
    return PartitionScores("v1", date, card(*rows, date=date, thresholds=SHIPPED), items)


def test_a_metric_scored_on_half_its_items_says_coverage_dropped_and_alerts() -> None:
    full, half = np.ones(20), np.where(np.arange(20) < 10, 1.0, np.nan)
    verdicts = compare_partitions(
        day("d2", {"hit_rate@5": half, "mrr": half, "ndcg@10": np.ones(20)}),
        day("d1", {"hit_rate@5": full, "mrr": full, "ndcg@10": np.ones(20)}),
        RegressionRule(),
    ).set_index("metric")
    primary = verdicts.loc["hit_rate@5"]  # 1.0 → 1.0 on the 10 items left: not "no change"
    assert primary["value"] == primary["baseline_value"] == 1.0
    assert primary["reason"].startswith("coverage dropped: 10 of 20 items scored (was 20)")
    assert primary["verdict"] == "not comparable" and primary["alert"]
    secondary = verdicts.loc["mrr"]
    assert secondary["reason"].startswith("coverage dropped") and not secondary["alert"]
    assert verdicts.loc["ndcg@10", "verdict"] == "no significant change"
    told = headline(verdicts.reset_index())
    assert told.text == "1 outage" and told.n_alerts == 1
    # within the tolerance (1 of 20 = 5% < 10%): no coverage verdict
    almost = np.where(np.arange(20) < 19, 1.0, np.nan)
    quiet = compare_partitions(
        day("d2", {"hit_rate@5": almost}), day("d1", {"hit_rate@5": full}), RegressionRule()
    )
    assert not quiet["reason"].str.contains("coverage").any()


def test_a_change_from_zero_is_in_points_never_infinite() -> None:
    verdicts = compare_partitions(
        day("d2", {"hit_rate@5": np.r_[np.ones(10), np.zeros(10)]}),
        day("d1", {"hit_rate@5": np.zeros(20)}),
        RegressionRule(),
    )
    row = verdicts.iloc[0]
    assert np.isnan(row["relative_change"])
    assert "+50.0 points" in alert_line(row) and "inf" not in alert_line(row)
    assert format_change(np.nan, 0.0, 0.5) == "+50.0 points"
    assert format_change(np.nan, 0.0, 0.25).startswith("+25.0")
    assert change_text(np.nan, 0.0, 120.0) == "+120 from 0"
    assert change_text(-0.125, 0.8, 0.7) == "-12.5%" and change_text(np.nan) == "—"


def judgments(scores: dict[str, list[float]], declined: list[bool]) -> pd.DataFrame:
    rows = [
        {
            "system": "s",
            "query_id": f"q{i}",
            "metric": metric,
            "score": value,
            "error": None,
            "details": None,
            "scorer": "x",
        }
        for metric, values in scores.items()
        for i, value in enumerate(values)
    ]
    rows += [
        {
            "system": "s",
            "query_id": f"q{i}",
            "metric": REFUSAL_METRIC,
            "score": float(d),
            "error": None,
            "details": None,
            "scorer": "x",
        }
        for i, d in enumerate(declined)
    ]
    return pd.DataFrame(rows)


def test_declining_can_never_raise_the_composite_or_the_e2e_score() -> None:
    weights = {"answer_relevance": 0.4, "faithfulness": 0.4, "semantic_similarity": 0.2}
    answered = judgments(
        {
            "answer_relevance": [0.9, 0.2],
            "faithfulness": [1.0, 0.1],
            "semantic_similarity": [0.8, 0.1],
            "e2e_score": [0.9, 0.1],
        },
        [False, False],
    )
    # the second question declined: no faithfulness (no claim), some relevance and similarity
    declining = judgments(
        {
            "answer_relevance": [0.9, 0.3],
            "faithfulness": [1.0, np.nan],
            "semantic_similarity": [0.8, 0.2],
            "e2e_score": [0.9, 0.3],
        },
        [False, True],
    )
    before = composite_rows(answered, weights)["score"].to_numpy()
    after = composite_rows(declining, weights)["score"].to_numpy()
    np.testing.assert_allclose(before, [0.92, 0.14])
    np.testing.assert_allclose(after, [0.92, 0.0])  # counted, as 0: the mean falls
    zero_declined(declining)
    e2e = declining[declining["metric"] == "e2e_score"]
    assert e2e["score"].tolist() == [0.9, 0.0]
    assert json.loads(e2e["details"].iloc[1])["declined"] is True
    assert e2e["score"].mean() < answered.loc[answered["metric"] == "e2e_score", "score"].mean()


DECLINE = "I'm not sure, please contact support."
DAY1, DAY2 = "2026-11-20", "2026-11-21"


def write_logged_version(folder: Path, declined: set[int]) -> None:
    """A 20-question copy of demo-v1 whose system under test is its logged answers: the ground
    truth answer with the relevant documents, except the questions in `declined`."""
    source = Path(__file__).resolve().parents[1] / "data" / "datasets" / "demo-v1"
    queries = pd.read_json(source / "queries.jsonl", lines=True).head(20)
    qrels = pd.read_csv(source / "qrels.csv")
    qrels = qrels[qrels["query_id"].isin(queries["query_id"])]
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(source / "corpus.jsonl", folder / "corpus.jsonl")
    queries.to_json(folder / "queries.jsonl", orient="records", lines=True)
    qrels.to_csv(folder / "qrels.csv", index=False)
    relevant = qrels.groupby("query_id")["doc_id"].apply(list)
    answers = pd.DataFrame(
        {
            "query_id": queries["query_id"],
            "answer": [
                DECLINE if i in declined else truth
                for i, truth in enumerate(queries["ground_truth_answer"])
            ],
            "retrieved_doc_ids": [relevant[q] for q in queries["query_id"]],
        }
    )
    answers.to_json(folder / "answers.jsonl", orient="records", lines=True)
    (folder / "dataset.yaml").write_text("system: logged\n")


def write_traffic(folder: Path, day: str) -> int:
    """demo-v1's logged interactions, all on `day` at their time of day."""
    source = Path(__file__).resolve().parents[1] / "data" / "datasets" / "demo-v1"
    logs = pd.read_json(source / "logs.jsonl", lines=True, dtype={"timestamp": str})
    logs["timestamp"] = [f"{day}T{str(t)[11:19]}Z" for t in logs["timestamp"]]
    logs.to_json(folder / "logs.jsonl", orient="records", lines=True)
    return len(logs)


def test_declining_half_the_questions_and_a_day_without_traffic(tmp_path: Path) -> None:
    """Day 2 of a logged system: half its answers decline, and no interaction is logged (the
    logs hold day 1 only). Its faithfulness (1.0 on the answers left) says coverage dropped
    and alerts; its composite and E2E score fall; the traffic tier is one `no traffic` alert;
    with `traffic_every_day: false` that is a note."""
    data, home = tmp_path / "data", tmp_path / "home"
    folder = data / "datasets" / "declines"
    write_logged_version(folder, set())
    n_logs = write_traffic(folder, DAY1)
    rag_eval(data, home, "run", "--date", DAY1)
    write_logged_version(folder, set(range(10, 20)))
    completed = rag_eval_process(data, home, "run", "--date", DAY2, "--fail-on-regression")
    assert completed.returncode == 3, completed.stdout + completed.stderr
    stored = data / "warehouse" / "metric_regressions" / "declines" / f"{DAY2}.parquet"
    verdicts = pd.read_parquet(stored)
    e2e = verdicts[verdicts["tier"] == "tier3_e2e"].set_index("metric")
    faithful = e2e.loc["avg_faithfulness"]
    assert faithful["reason"].startswith("coverage dropped: 10 of 20 items scored (was 20)")
    assert faithful["alert"] and faithful["role"] == "primary"
    for metric in ("avg_composite", "avg_e2e_score"):
        assert e2e.loc[metric, "value"] < e2e.loc[metric, "baseline_value"], metric
    refusals = e2e.loc["refusal_rate"]
    assert (refusals["baseline_value"], refusals["value"]) == (0.0, 0.5)
    assert np.isnan(refusals["relative_change"])
    assert "inf" not in completed.stdout
    traffic = verdicts[verdicts["tier"] == "traffic"]
    assert len(traffic) > 5 and set(traffic["verdict"]) == {"not comparable"}
    assert traffic.loc[traffic["alert"], "metric"].tolist() == ["volume"]
    assert traffic.loc[traffic["alert"], "reason"].iloc[0] == (
        f"no traffic: no interaction today ({n_logs} on the baseline date)"
    )
    assert (traffic.loc[~traffic["alert"], "reason"] == "no traffic today").all()
    from_logs = verdicts[verdicts["system"] == REAL_USERS_SYSTEM]  # Tier 1 on real users, UX
    assert {"tier1_retrieval", "ux"} <= set(from_logs["tier"]) and not from_logs["alert"].any()
    assert (from_logs["reason"] == "no traffic today").all()
    summary = next(x for x in completed.stdout.splitlines() if x.startswith("declines|"))
    told = headline(verdicts)
    assert told.counts["outage"] == 2  # faithfulness's coverage, and no traffic
    assert summary == f"declines|{DAY2}: needs a look: {told.text}", summary
    n_alerts = int(verdicts["alert"].sum())
    (folder / "dataset.yaml").write_text("system: logged\ntraffic_every_day: false\n")
    again = rag_eval_process(data, home, "run", "--date", DAY2)
    assert again.returncode == 0, again.stdout + again.stderr
    verdicts = pd.read_parquet(stored)
    assert not verdicts.loc[verdicts["tier"] == "traffic", "alert"].any()
    assert int(verdicts["alert"].sum()) == n_alerts - 1
    volume = verdicts.loc[verdicts["metric"] == "volume", "reason"].iloc[0]
    assert volume.endswith("(not expected every day: dataset.yaml traffic_every_day)")
