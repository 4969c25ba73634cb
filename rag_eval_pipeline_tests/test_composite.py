"""The composite score: weighted combination per question, judgment rows, the A/B winner."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.evaluation.comparison import (
    BETTER,
    NO_DIFFERENCE,
    WORSE,
    composite_winner,
    load_plan,
)
from rag_eval_pipeline.evaluation.composite import composite_rows, load_weights
from rag_eval_pipeline.metrics.composite import composite_score
from rag_eval_pipeline_tests.conftest import PROJECT_ROOT

pytestmark = [pytest.mark.unit]

SOURCE_WEIGHTS = {"answer_relevance": 0.4, "faithfulness": 0.4, "semantic_similarity": 0.2}


def test_composite_by_hand_with_the_source_weights() -> None:
    values = pd.DataFrame(
        {
            "answer_relevance": [1.0, 0.5, 0.8],
            "faithfulness": [0.5, 0.5, np.nan],
            "semantic_similarity": [0.0, 1.0, 0.9],
        }
    )
    got = composite_score(values, SOURCE_WEIGHTS)
    np.testing.assert_allclose(got[:2], [0.4 * 1 + 0.4 * 0.5, 0.4 * 0.5 + 0.4 * 0.5 + 0.2])
    assert np.isnan(got[2])  # a missing component: no composite
    # weights are normalized: 2/2/1 is the same combination as 0.4/0.4/0.2
    doubled = {metric: weight * 5 for metric, weight in SOURCE_WEIGHTS.items()}
    np.testing.assert_allclose(composite_score(values, doubled)[:2], got[:2])


@pytest.mark.parametrize("weights", [{}, {"a": -1.0}, {"a": 0.0}, {"a": float("nan")}])
def test_bad_weights_are_rejected(weights: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="composite weights"):
        composite_score(pd.DataFrame({"a": [1.0]}), weights)


def test_shipped_weights_are_the_source_example() -> None:
    assert load_weights(PROJECT_ROOT / "config" / "composite.yaml") == SOURCE_WEIGHTS
    assert "composite" in load_plan(PROJECT_ROOT / "config" / "variants.yaml").metrics


def test_a_bad_weights_file_names_itself(tmp_path: Path) -> None:
    path = tmp_path / "composite.yaml"
    path.write_text("weights: {faithfulness: lots}\n")
    with pytest.raises(ValueError, match=str(path)):
        load_weights(path)


def test_composite_rows_need_every_component() -> None:
    judgments = pd.DataFrame(
        {
            "system": "s",
            "query_id": ["q1", "q1", "q1", "q2", "q2"],
            "metric": ["answer_relevance", "faithfulness", "semantic_similarity"] + ["bleu"] * 2,
            "score": [0.5, 1.0, 0.25, 30.0, 40.0],
        }
    )
    rows = composite_rows(judgments, SOURCE_WEIGHTS)
    assert rows["query_id"].tolist() == ["q1"]
    assert rows["score"].tolist() == pytest.approx([0.4 * 0.5 + 0.4 * 1.0 + 0.2 * 0.25])
    assert rows["metric"].tolist() == ["composite"] and rows["error"].isna().all()


def comparison_rows(rows: list[tuple[str, str, float, str]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {
                "variant": variant,
                "baseline": "base",
                "metric": metric,
                "delta": delta,
                "ci_low": delta - 0.05,
                "ci_high": delta + 0.05,
                "p_value": 0.01 if verdict != NO_DIFFERENCE else 0.4,
                "verdict": verdict,
            }
            for variant, metric, delta, verdict in rows
        ]
    )


def test_winner_is_the_best_significantly_better_variant() -> None:
    comparison = comparison_rows(
        [
            ("a", "composite", 0.10, BETTER),
            ("b", "composite", 0.20, BETTER),
            ("c", "composite", 0.30, NO_DIFFERENCE),
            ("d", "mrr", 0.90, BETTER),
        ]
    )
    winner = composite_winner(comparison, "base")
    assert winner["winner"] == "b" and winner["delta"] == pytest.approx(0.20)
    assert (winner["ci_low"], winner["ci_high"]) == pytest.approx((0.15, 0.25))


def test_baseline_wins_when_no_variant_is_significantly_better() -> None:
    comparison = comparison_rows(
        [("a", "composite", -0.1, WORSE), ("b", "composite", 0.02, NO_DIFFERENCE)]
    )
    winner = composite_winner(comparison, "base")
    assert winner["winner"] == "base" and winner["compared_with"] == "b"
    assert winner["p_value"] == pytest.approx(0.4)
