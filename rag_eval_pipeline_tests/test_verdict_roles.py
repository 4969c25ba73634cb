"""Verdicts v2: metric roles and weighted BH, untestable rows, the collapse of a small golden
set, NaN-free alerts and the items a primary metric needs."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rag_eval_pipeline.evaluation.item_scores import empty_items
from rag_eval_pipeline.evaluation.scorecard import Thresholds
from rag_eval_pipeline.evaluation.verdicts.compare import compare_partitions
from rag_eval_pipeline.evaluation.verdicts.partition import PartitionScores, RegressionRule
from rag_eval_pipeline.evaluation.verdicts.wording import TOO_FEW_ITEMS
from rag_eval_pipeline.metrics.sensitivity import (
    sign_flip_items_needed,
    sign_test_items_needed,
)
from rag_eval_pipeline.metrics.stats import benjamini_hochberg, fisher_p_floor, role_weights
from rag_eval_pipeline.reporting.alerting import alert_lines, items_needed_lines
from rag_eval_pipeline.settings import THRESHOLDS_FILE
from rag_eval_pipeline_tests.test_regression import card, quality

pytestmark = [pytest.mark.unit]

SHIPPED = Thresholds.load(THRESHOLDS_FILE)
TIER1 = [
    *(f"hit_rate@{k}" for k in (1, 3, 5, 10)),
    *(f"precision@{k}" for k in (1, 3, 5, 10)),
    *(f"recall@{k}" for k in (1, 3, 5, 10)),
    *(f"ndcg@{k}" for k in (1, 3, 5, 10)),
    "mrr",
    "map",
    "r_precision",
    "bpref",
]


def brute_force_weighted_bh(p: np.ndarray, w: np.ndarray) -> np.ndarray:
    """q_i = the smallest α at which the weighted BH step-up (Genovese et al.) rejects i, found
    by trying every α at which some test meets some step k."""
    m = p.size
    scaled = p / w
    candidates = sorted({min(1.0, m * s / k) for s in scaled for k in range(1, m + 1)})
    q = np.ones(m)
    for alpha in candidates:
        steps = [k for k in range(1, m + 1) if (scaled <= k * alpha / m + 1e-15).sum() >= k]
        if steps:
            rejected = scaled <= max(steps) * alpha / m + 1e-15
            q = np.where(rejected & (q == 1.0), alpha, q)
    return q


@pytest.mark.parametrize("seed", range(6))
def test_weighted_bh_equals_brute_force(seed: int) -> None:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0, 0.08, 9)
    w = role_weights(rng.uniform(size=9) < 0.3, 0.8)
    assert w.mean() == pytest.approx(1.0)
    np.testing.assert_allclose(benjamini_hochberg(p, w), brute_force_weighted_bh(p, w), atol=1e-12)


def test_weighted_bh_with_unit_weights_is_plain_bh() -> None:
    p = np.random.default_rng(3).uniform(0, 0.2, 40)
    expected = stats.false_discovery_control(p, method="bh")
    np.testing.assert_allclose(benjamini_hochberg(p, np.ones(40)), expected, rtol=1e-12)
    np.testing.assert_allclose(benjamini_hochberg(p), expected, rtol=1e-12)


def test_role_weights_keep_a_lone_primarys_bar_whatever_joins() -> None:
    for n_secondary in (1, 10, 200):
        primary = np.array([True, True] + [False] * n_secondary)
        w = role_weights(primary, 0.8)
        assert w.mean() == pytest.approx(1.0)
        assert 0.05 * w[0] / primary.size == pytest.approx(0.05 * 0.8 / 2)  # α·w/m
    assert (role_weights(np.array([True, True]), 0.8) == 1.0).all()


def test_fisher_floor_is_the_most_lopsided_table() -> None:
    assert fisher_p_floor(1, 1, 1) == pytest.approx(0.5)
    assert fisher_p_floor(10, 10, 10) == pytest.approx(
        stats.fisher_exact([[0, 10], [10, 0]], alternative="less").pvalue
    )
    assert fisher_p_floor(5, 5, 0) == 1.0


def test_items_needed_for_a_sign_test_equals_brute_force() -> None:
    """A 10% drop of a 0/1 metric at 0.8 with nothing moving back: 0.08·N items go 1 → 0, so
    the sign test needs ⌈0.08·N⌉ ≥ 6 at a bar of 0.02 (2⁻⁶ < 0.02 ≤ 2⁻⁵): N = 63."""
    assert sign_test_items_needed(0.8, 0.0, 0.1, 0.02) == 63
    for back, bar in ((0.02, 0.01), (0.05, 0.002), (0.0, 0.0005)):
        found = sign_test_items_needed(0.6, back, 0.1, bar)
        brute = next(
            n
            for n in range(1, 100_000)
            if stats.binomtest(
                math.ceil(n * (back + 0.06) - 1e-9),
                math.ceil(n * (back + 0.06) - 1e-9) + math.floor(n * back + 1e-9),
                0.5,
                alternative="greater",
            ).pvalue
            < bar
        )
        assert found == brute, (back, bar)
    assert sign_test_items_needed(0.8, 0.1, 0.0, 0.02) == math.inf


def test_items_needed_for_a_continuous_metric_inverts_the_min_shift() -> None:
    z = stats.norm.ppf(1 - 0.01)
    assert sign_flip_items_needed(0.1, 0.02, 0.01, 10000) == math.floor(z * z + (z * 5) ** 2) + 1
    assert sign_flip_items_needed(0.0, 0.02, 0.01, 10000) == 7  # 2⁻⁷ < 0.01 ≤ 2⁻⁶
    assert sign_flip_items_needed(0.1, 0.0, 0.01, 10000) == math.inf


def tier1_day(values: dict[str, np.ndarray], date: str, extra: pd.DataFrame | None = None):
    """A Tier 1 partition of one system: per-item 0/1 values of every metric."""
    n = len(next(iter(values.values())))
    rows = [quality(m, float(v.mean()), system="logged") for m, v in values.items()]
    items = pd.concat(
        [
            pd.DataFrame(
                {
                    "tier": "tier1_retrieval",
                    "system": "logged",
                    "metric": m,
                    "item_id": [f"q{i}" for i in range(n)],
                    "value": v.astype(float),
                }
            )
            for m, v in values.items()
        ]
    )
    scorecard = card(*rows, date=date, thresholds=SHIPPED)
    if extra is not None:
        scorecard = pd.concat([scorecard, extra[0]], ignore_index=True)
        items = pd.concat([items, extra[1]], ignore_index=True)
    return PartitionScores("golden", date, scorecard, items)


def noisy_judged(date: str, seed: int, n: int = 6):
    """60 more continuous tests on the same 6 questions, pure noise around 0.7: Tier 3's three
    primary metrics for two systems, and 54 secondary ones."""
    rng = np.random.default_rng(seed)
    names = [
        ("tier3_e2e", system, metric)
        for system in ("rag-a", "rag-b")
        for metric in ("avg_e2e_score", "avg_faithfulness", "avg_answer_correctness")
    ]
    names += [("ux", "s", f"avg_extra_{j}") for j in range(54)]
    cards, items = [], []
    for tier, system, metric in names:
        values = np.clip(0.7 + rng.normal(0, 0.05, n), 0, 1)
        cards.append(quality(metric, float(values.mean()), tier=tier, system=system))
        items.append(
            pd.DataFrame(
                {
                    "tier": tier,
                    "system": system,
                    "metric": metric,
                    "item_id": [f"q{i}" for i in range(n)],
                    "value": values,
                }
            )
        )
    return card(*cards, date=date, thresholds=SHIPPED), pd.concat(items, ignore_index=True)


def test_a_six_question_collapse_is_alerted() -> None:
    """hit_rate@1 1.0 → 0.0 on all 6 questions: Tier 1 alone is alerted by the test; among 60
    more tests (6 of them primary) its primary metrics are untestable and alerted on their
    effect."""
    ones, zeros = np.ones(6), np.zeros(6)
    before = {m: ones for m in TIER1}
    after = {m: zeros for m in TIER1}
    alone = compare_partitions(
        tier1_day(after, "d2"), tier1_day(before, "d1"), RegressionRule()
    ).set_index("metric")
    for metric in ("ndcg@10", "hit_rate@5"):
        assert alone.loc[metric, "verdict"] == "regressed" and alone.loc[metric, "alert"]
        assert alone.loc[metric, "p_value"] == pytest.approx(1 / 64)
    crowded = compare_partitions(
        tier1_day(after, "d2", noisy_judged("d2", 2)),
        tier1_day(before, "d1", noisy_judged("d1", 1)),
        RegressionRule(),
    )
    tier1 = crowded[crowded["tier"] == "tier1_retrieval"].set_index("metric")
    for metric in ("ndcg@10", "hit_rate@5"):
        row = tier1.loc[metric]
        assert row["verdict"] == "untestable" and row["alert"], metric
        assert row["reason"].startswith(f"{TOO_FEW_ITEMS}: n = 6 (smallest reachable p 0.0156")
        assert "its own test alone: p = 0.0156" in row["reason"]
    secondary = tier1.loc["hit_rate@1"]
    assert secondary["verdict"] == "untestable" and not secondary["alert"]
    lines = alert_lines(crowded[crowded["alert"]])
    assert any("hit_rate@5 [primary]: 1.0000 → 0.0000 (-100.0%" in line for line in lines)
    assert any("effect only" in line and TOO_FEW_ITEMS in line for line in lines)
    assert not any("nan" in line for line in lines)


def test_nan_on_both_dates_is_not_comparable_and_never_alerted() -> None:
    def day(date: str, coherence: float, error_rate: float, judge_errors: float) -> pd.DataFrame:
        rows = [
            quality("avg_coherence", coherence, tier="tier3_e2e", system="rag").assign(
                error_rate=1.0
            ),
            quality("error_rate", error_rate, tier="judge_reliability", system="judge").assign(
                count=24
            ),
        ]
        frame = card(*rows, date=date, thresholds=SHIPPED)
        frame.loc[frame["metric"] == "avg_coherence", "error_rate"] = judge_errors
        return frame

    verdicts = compare_partitions(
        PartitionScores("v", "d2", day("d2", np.nan, 0.125, 1.0), empty_items()),
        PartitionScores("v", "d1", day("d1", np.nan, 0.0833, 1.0), empty_items()),
        RegressionRule(),
    ).set_index("metric")
    coherence = verdicts.loc["avg_coherence"]
    assert coherence["verdict"] == "not comparable" and not coherence["alert"]
    assert coherence["reason"] == "no value on either date"
    errors = verdicts.loc["error_rate"]
    assert errors["alert"] and errors["n_items"] == 24
    (line,) = alert_lines(verdicts.reset_index()[verdicts["alert"].to_numpy()])
    assert "error_rate [secondary]: 0.0833 → 0.1250 (+50.1%, effect only, n = 24)" in line
    assert "nan" not in line


def test_monitored_metrics_are_tested_but_never_alerted() -> None:
    kappa = "kappa_judge_vs_rater_a"
    assert SHIPPED.role("judge_reliability", "judge-model", kappa, "v") == "monitor"
    verdicts = compare_partitions(
        PartitionScores(
            "v",
            "d2",
            card(quality(kappa, 0.1, tier="judge_reliability"), thresholds=SHIPPED),
            empty_items(),
        ),
        PartitionScores(
            "v",
            "d1",
            card(quality(kappa, 0.9, tier="judge_reliability"), thresholds=SHIPPED),
            empty_items(),
        ),
        RegressionRule(),
    )
    (row,) = verdicts.itertuples()
    assert row.role == "monitor" and row.verdict == "regressed" and not row.alert
    assert row.reason.endswith("(monitored: never alerted)")


def test_items_needed_is_stated_for_primary_metrics() -> None:
    rng = np.random.default_rng(0)
    base = {m: (rng.uniform(size=56) < 0.8).astype(float) for m in TIER1}
    today = {m: v.copy() for m, v in base.items()}
    today["ndcg@10"][:2] = 1 - today["ndcg@10"][:2]  # a little noise both ways
    verdicts = compare_partitions(tier1_day(today, "d2"), tier1_day(base, "d1"), RegressionRule())
    primary = verdicts[verdicts["role"] == "primary"].set_index("metric")
    assert primary["items_needed"].notna().all()
    assert verdicts.loc[verdicts["role"] != "primary", "items_needed"].isna().all()
    lines = items_needed_lines(verdicts)
    assert len(lines) == 2 and all("; you have 56" in line for line in lines)
    assert any(line.startswith("to catch a 10% drop of ndcg@10 (logged): ≈ ") for line in lines)


def test_unknown_role_in_thresholds_names_file_key_and_value(tmp_path) -> None:
    bad = tmp_path / "thresholds.yaml"
    bad.write_text("metrics:\n  mrr: {role: primery}\n")
    with pytest.raises(
        ValueError, match=r"thresholds.yaml: metrics.mrr.role: unknown role 'primery'"
    ):
        Thresholds.load(bad)
    bad.write_text("alert_budget: {primary: 1.5}\n")
    with pytest.raises(ValueError, match=r"alert_budget.primary: 1.5"):
        Thresholds.load(bad)


def test_shipped_roles_match_the_decision_metrics() -> None:
    expected = {
        ("tier1_retrieval", "ndcg@10"),
        ("tier1_retrieval", "hit_rate@5"),
        ("tier2_generation", "avg_faithfulness"),
        ("tier3_e2e", "avg_e2e_score"),
        ("tier3_e2e", "avg_faithfulness"),
        ("tier3_e2e", "avg_answer_correctness"),
        ("traffic", "error_rate"),
        ("traffic", "latency_p95_ms"),
        ("traffic", "positive_feedback_rate"),
    }
    for tier, metric in itertools.product(
        ["tier1_retrieval", "tier2_generation", "tier3_e2e", "traffic"],
        ["ndcg@10", "hit_rate@5", "mrr", "avg_faithfulness", "error_rate", "avg_e2e_score"],
    ):
        role = SHIPPED.role(tier, "reference-rag", metric, "any")
        assert (role == "primary") == ((tier, metric) in expected), (tier, metric)


def test_a_monte_carlo_test_gets_the_resamples_its_bar_needs() -> None:
    """150 noisy continuous secondaries and 2 primaries on 200 items: a secondary's bar
    (0.05 · 0.2 / 150 ≈ 6.7e-5) is finer than 10,000 sign flips resolve (p ≥ 1 / 10,001), so
    a large drop of one of them is re-tested with enough resamples and regressed, never
    called untestable for want of items."""
    rng = np.random.default_rng(7)
    ids = [f"q{i}" for i in range(200)]
    names = [("tier3_e2e", f"rag-{s}", "avg_e2e_score") for s in "ab"]
    names += [("ux", "s", f"avg_extra_{j}") for j in range(150)]

    def day(date: str, shift: float) -> PartitionScores:
        cards, items = [], []
        for tier, system, metric in names:
            values = np.clip(0.7 + rng.normal(0, 0.05, 200), 0, 1)
            values = values - (shift if metric == "avg_extra_0" else 0.0)
            cards.append(quality(metric, float(values.mean()), tier=tier, system=system))
            items.append(
                pd.DataFrame(
                    {"tier": tier, "system": system, "metric": metric, "item_id": ids}
                ).assign(value=values)
            )
        scorecard = card(*cards, date=date, thresholds=SHIPPED)
        return PartitionScores("v", date, scorecard, pd.concat(items, ignore_index=True))

    verdicts = compare_partitions(day("d2", 0.2), day("d1", 0.0), RegressionRule())
    row = verdicts.set_index("metric").loc["avg_extra_0"]
    assert row["role"] == "secondary" and row["bar"] < 1 / 10_001
    assert row["p_value"] < row["bar"] / 5  # resolved below the bar, not stuck at 1 / 10,001
    assert row["verdict"] == "regressed" and row["alert"]
    quiet = verdicts[verdicts["metric"] != "avg_extra_0"]
    assert (quiet["verdict"] != "untestable").all()  # 200 items are enough for every row
