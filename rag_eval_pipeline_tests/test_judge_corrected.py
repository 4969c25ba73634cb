"""The judge's means corrected by human labels (PPI) per criterion: library, asset and report."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from dagster import AssetKey, DagsterInstance
from ppi_py import ppi_mean_ci as reference_ci

from rag_eval_pipeline.datasets.golden import load_dataset
from rag_eval_pipeline.defs.shared.resources import LLMResource
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.ppi_estimates import (
    human_means,
    judge_labeled_items,
    judged_criteria,
    ppi_estimates,
    ppi_quality,
    ppi_table,
)
from rag_eval_pipeline.evaluation.scorecard import Thresholds, build_scorecard
from rag_eval_pipeline.evaluation.summaries import summarize_judgments
from rag_eval_pipeline.metrics.ppi import EXPLANATION, PPIEstimate
from rag_eval_pipeline.reporting.html_report import judge_corrected_html
from rag_eval_pipeline_tests.conftest import DATASETS_DIR, materialize_demo_assets

pytestmark = [pytest.mark.integration]


def _labels() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "label_id": ["a", "b", "c", "d"],
            "question": ["Q1?", "Q2?", "Q3?", "Q4?"],
            "context": ["Invoices are sent on the 1st.", "Refunds take 5 days.", "x", "y"],
            "answer": ["Invoices are sent on the 1st.", "Refunds take 9 days.", "x", "y"],
            "human_faithfulness_r1": [5.0, 1.0, 4.0, np.nan],
            "human_faithfulness_r2": [4.0, 2.0, np.nan, np.nan],
            "human_correctness_r1": [5.0, 2.0, 3.0, 1.0],
        }
    )


def _judgments(system: str, metric: str, scores: list[float]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "system": system,
            "query_id": [f"q{i}" for i in range(len(scores))],
            "metric": metric,
            "score": scores,
            "error": [None if np.isfinite(s) else "llm call failed: 500" for s in scores],
        }
    )


def test_rater_means_are_mapped_like_the_judges_rubric() -> None:
    means = human_means(_labels(), "faithfulness")
    # (mean of the raters − 1) / 4; a label no rater scored stays NaN
    assert means.tolist()[:3] == [pytest.approx(0.875), pytest.approx(0.125), 0.75]
    assert np.isnan(means.iloc[3])
    assert human_means(_labels(), "overall").isna().all()


def test_estimates_per_system_match_ppi_python() -> None:
    labels = _labels()
    # correctness needs a ground truth the labels lack; overall has no human scores
    assert judged_criteria(labels) == ["faithfulness"]
    labeled = _judgments("judge_labels", "faithfulness", [1.0, 0.5, 1.0, 1.0]).assign(
        query_id=["a", "b", "c", "d"]
    )
    today = pd.concat(
        [
            _judgments("sut", "faithfulness", [1.0, 0.8, np.nan, 0.6, 0.9]),
            _judgments("other", "faithfulness", [0.2, 0.4, 0.3]),
            _judgments("sut", "answer_relevance", [0.1, 0.2]),
        ]
    )
    estimates = ppi_estimates(labels, labeled, today)
    assert set(estimates) == {("sut", "faithfulness"), ("other", "faithfulness")}
    sut = estimates[("sut", "faithfulness")]
    assert isinstance(sut, PPIEstimate)
    # labels a, b, c have both scores; the judge's error row is not an unlabeled item
    y, yhat = np.array([0.875, 0.125, 0.75]), np.array([1.0, 0.5, 1.0])
    unlabeled = np.array([1.0, 0.8, 0.6, 0.9])
    low, high = reference_ci(y, yhat, unlabeled, alpha=0.05)
    assert (sut.ci_low, sut.ci_high) == pytest.approx((float(low[0]), float(high[0])))
    assert (sut.n_labeled, sut.n_unlabeled) == (3, 4)
    quality = ppi_quality(estimates, "tier3_e2e")
    assert set(quality["metric"]) == {"ppi_faithfulness", "classical_faithfulness"}
    assert (quality["count"] == 3).all()
    table = ppi_table(estimates)
    assert table.loc[table["system"] == "sut", "n_unlabeled"].item() == 4


def test_too_few_labeled_items_is_a_reason_not_a_number() -> None:
    labels = _labels().assign(human_faithfulness_r1=[5.0, np.nan, np.nan, np.nan])
    labels["human_faithfulness_r2"] = np.nan
    labeled = _judgments("judge_labels", "faithfulness", [1.0] * 4).assign(
        query_id=["a", "b", "c", "d"]
    )
    estimates = ppi_estimates(labels, labeled, _judgments("sut", "faithfulness", [0.5, 0.7]))
    assert "PPI needs 2" in estimates[("sut", "faithfulness")]
    assert ppi_quality(estimates, "tier3_e2e").empty
    assert ppi_table(estimates)["note"].notna().all()


def test_ground_truth_in_labels_brings_correctness(embedder: Embedder, tmp_path: Path) -> None:
    labels = _labels().assign(ground_truth_answer=["On the 1st.", "In 5 days.", "x", "y"])
    labels["human_overall_r1"] = [5.0, 1.0, 3.0, 2.0]
    assert judged_criteria(labels) == ["faithfulness", "correctness", "overall"]
    judge, _ = LLMResource(cache_dir=str(tmp_path)).judge(embedder)
    labeled = judge_labeled_items(labels, judge)
    assert set(labeled["metric"]) == {"faithfulness", "answer_correctness", "e2e_score"}
    assert (labeled.groupby("metric").size() == 4).all()


def test_asset_scorecard_rows_and_report(
    dagster_instance: DagsterInstance, tmp_path: Path, embedder: Embedder
) -> None:
    result = materialize_demo_assets(
        dagster_instance,
        tmp_path,
        embedder,
        {"golden_dataset", "e2e_generations", "e2e_judgments", "judge_corrected_quality"},
    )
    assert result.success
    quality = result.output_for_node("judge_corrected_quality")
    n_labels = len(load_dataset(DATASETS_DIR / "demo-v1").judge_labels)
    ppi = quality[quality["metric"].str.startswith("ppi_")]
    assert set(ppi["metric"]) == {"ppi_faithfulness", "ppi_answer_relevance"}
    assert ((ppi["ci_low"] <= ppi["mean"]) & (ppi["mean"] <= ppi["ci_high"])).all()
    assert (quality["count"] <= n_labels).all() and (quality["count"] >= n_labels - 5).all()
    event = dagster_instance.get_latest_materialization_event(AssetKey("judge_corrected_quality"))
    metadata = event.asset_materialization.metadata
    assert (
        "n_unlabeled" in metadata["ppi"].value and metadata["what_ppi_means"].value == EXPLANATION
    )

    judgments = result.output_for_node("e2e_judgments")
    scorecard = build_scorecard(
        [summarize_judgments(judgments, "tier3_e2e"), quality],
        "demo-v1",
        "2026-11-20",
        Thresholds(),
    )
    html = judge_corrected_html(scorecard)
    assert "Judge corrected by human labels" in html and "answer_relevance" in html
    judged_n = scorecard.loc[scorecard["metric"] == "avg_faithfulness", "count"].item()
    assert f'<td class="num">{judged_n}</td>' in html
    assert judge_corrected_html(scorecard[~scorecard["metric"].str.startswith("ppi_")]) == ""
