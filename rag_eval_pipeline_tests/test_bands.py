"""The shipped bands of config/thresholds.yaml, including `prefix*` rules (kappa per pair)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rag_eval_pipeline.evaluation.scorecard import Thresholds, band
from rag_eval_pipeline.settings import THRESHOLDS_FILE

pytestmark = [pytest.mark.unit]


@pytest.mark.parametrize(
    ("metric", "value", "expected"),
    [
        ("silhouette_score", 0.75, "excellent"),
        ("silhouette_score", 0.6, "good"),
        ("silhouette_score", 0.3, "needs attention"),
        ("kappa_judge_vs_rater_a", 0.85, "excellent"),
        ("kappa_faithfulness_rater_a_vs_rater_b", 0.7, "good"),
        ("weighted_kappa_judge_vs_rater_b", 0.5, "needs attention"),
        ("avg_context_precision", 0.72, "good"),
        ("avg_context_recall", 0.66, "good"),
        ("avg_context_recall", 0.6, "needs attention"),
        ("avg_faithfulness", 0.76, "good"),
        ("avg_answer_correctness", 0.69, "needs attention"),
        ("avg_bleu", 30.0, "good"),
        ("avg_rougeL_f", 0.45, "needs attention"),
        ("avg_rouge1_f", 0.45, "good"),
        ("cache_hit_rate", 0.05, "needs attention"),
        ("context_preservation", 0.8, "excellent"),
        ("spearman_judge_vs_rater_a", 0.9, None),
    ],
)
def test_shipped_bands(metric: str, value: float, expected: str | None) -> None:
    rule = Thresholds.load(THRESHOLDS_FILE).rule(metric, "any-version")
    assert band(value, rule) == expected


def test_exact_name_wins_over_the_longest_pattern(tmp_path: Path) -> None:
    path = tmp_path / "thresholds.yaml"
    path.write_text(
        "metrics:\n"
        "  kappa_*: {excellent: 0.8, good: 0.6}\n"
        "  kappa_judge_*: {excellent: 0.5, good: 0.4}\n"
        "  kappa_judge_vs_x: {excellent: 0.3, good: 0.2}\n"
    )
    thresholds = Thresholds.load(path)
    assert thresholds.rule("kappa_judge_vs_x", "v")["good"] == 0.2
    assert thresholds.rule("kappa_judge_vs_y", "v")["good"] == 0.4
    assert thresholds.rule("kappa_a_vs_b", "v")["good"] == 0.6
    assert "good" not in thresholds.rule("weighted_kappa_a_vs_b", "v")


def test_traffic_costs_are_lower_is_better_and_volume_tolerates_swings() -> None:
    thresholds = Thresholds.load(THRESHOLDS_FILE)
    assert thresholds.rule("avg_cost_usd", "v")["higher_is_better"] is False
    assert thresholds.rule("total_cost_usd", "v")["higher_is_better"] is False
    assert thresholds.rule("volume", "v")["regression"] == 0.5
    assert thresholds.rule("retrieval_latency_p95_ms", "v")["higher_is_better"] is False
