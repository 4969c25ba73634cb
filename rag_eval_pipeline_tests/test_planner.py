"""The planner ("about N items to catch a 10% drop"): a day's noise robust to a one-way change,
pooled over the stored days with a floor, so a quiet day and a regression day agree."""

import math

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.evaluation.verdicts.compare import compare_partitions
from rag_eval_pipeline.evaluation.verdicts.partition import RegressionRule
from rag_eval_pipeline.evaluation.verdicts.planner import DISCORDANCE_FLOOR, ITEMS_NEEDED_DROP
from rag_eval_pipeline.metrics.sensitivity import (
    directional_noise,
    pooled_noise,
    sign_flip_items_needed,
    sign_test_items_needed,
)
from rag_eval_pipeline.reporting.alerting import items_needed_lines
from rag_eval_pipeline_tests.test_verdict_roles import TIER1, tier1_day

pytestmark = [pytest.mark.unit]

N = 120
KEYS = ["metric", "verdict", "p_value", "q_value", "alert", "reason"]


def test_directional_noise_is_the_quiet_side() -> None:
    quiet = np.array([1.0] * 3 + [-1.0] * 5 + [0.0] * 92)
    assert directional_noise(quiet) == pytest.approx(2 * 3 / 100)
    dropped = quiet.copy()
    dropped[10:30] = -1.0  # 20 more items move one way: the quiet side is unchanged
    assert directional_noise(dropped) == directional_noise(quiet)
    spread = np.array([0.1, -0.1, 0.3, -0.3])
    assert directional_noise(spread) == pytest.approx(np.mean(spread**2))
    assert math.isnan(directional_noise(np.array([])))
    with pytest.raises(ValueError, match="finite"):
        directional_noise(np.array([0.1, np.nan]))


def test_pooled_noise_weights_days_by_items_with_a_floor() -> None:
    assert pooled_noise([0.04, 0.10], [100, 50], 0.0) == pytest.approx((4 + 5) / 150)
    assert pooled_noise([0.001, np.nan], [100, 40], 0.02) == 0.02
    assert pooled_noise([], [], 0.03) == 0.03
    with pytest.raises(ValueError, match="shape"):
        pooled_noise([0.1], [1, 2], 0.0)


def week(rng: np.random.Generator, regression_on: str | None) -> dict[str, pd.DataFrame]:
    """Seven days of Tier 1 on N items, each day flipping ~4% of hit_rate@5 and moving every
    ndcg@10 a little both ways; `regression_on`'s date loses 30 hits and 0.3 of ndcg on 30
    items. The verdict rows of each day, each compared with the day before and pooled over the
    earlier days' rows, by date."""
    base = {m: (rng.uniform(size=N) < 0.8).astype(float) for m in TIER1}
    base["ndcg@10"] = rng.uniform(0.4, 1.0, N)
    days = [f"2026-01-0{d}" for d in range(1, 8)]
    previous, history, verdicts = tier1_day(base, days[0]), pd.DataFrame(), {}
    for day in days[1:]:
        today = {m: v.copy() for m, v in base.items()}
        flips = rng.uniform(size=N) < 0.04
        today["hit_rate@5"][flips] = 1 - today["hit_rate@5"][flips]
        today["ndcg@10"] = np.clip(base["ndcg@10"] + rng.normal(0, 0.08, N), 0, 1)
        if day == regression_on:
            lost = np.flatnonzero(today["hit_rate@5"] == 1)[:30]
            today["hit_rate@5"][lost] = 0.0
            today["ndcg@10"][:30] = np.clip(today["ndcg@10"][:30] - 0.3, 0, 1)
        current = tier1_day(today, day)
        verdicts[day] = compare_partitions(current, previous, RegressionRule(), history)
        history = pd.concat([history, verdicts[day]], ignore_index=True)
        previous = current
    return verdicts


def planned(verdicts: pd.DataFrame, metric: str) -> float:
    return float(verdicts.set_index("metric").loc[metric, "items_needed"])


def test_quiet_and_regression_days_of_one_history_plan_alike() -> None:
    quiet = week(np.random.default_rng(7), None)
    staged = week(np.random.default_rng(7), "2026-01-07")
    regressed = staged["2026-01-07"].set_index("metric")
    assert regressed.loc[["hit_rate@5", "ndcg@10"], "verdict"].eq("regressed").all()
    for metric in ("hit_rate@5", "ndcg@10"):
        a, b = planned(quiet["2026-01-07"], metric), planned(staged["2026-01-07"], metric)
        # the sign test's figure is jagged in N and a day's discordance is a count of a few
        # items: within 40%
        assert math.isfinite(a) and abs(a - b) <= 0.4 * a, (metric, a, b)
        # and it holds from day to day of the quiet week: within a factor of 2
        figures = [planned(v, metric) for v in quiet.values()]
        assert max(figures) <= 2 * min(figures), (metric, figures)
    basis = regressed.loc["hit_rate@5", "items_needed_basis"]
    assert basis.startswith("assuming a discordance of ") and basis.endswith("pooled over 6 days")
    lines = items_needed_lines(staged["2026-01-07"])
    assert any(f"≈ {int(planned(staged['2026-01-07'], 'ndcg@10'))} questions, " in x for x in lines)


def test_the_planned_figure_is_the_sensitivity_function_at_the_pooled_noise() -> None:
    verdicts = week(np.random.default_rng(3), None)
    history = pd.concat(verdicts.values(), ignore_index=True)
    rows = history[history["metric"].isin(["hit_rate@5", "ndcg@10"])]
    last = verdicts["2026-01-07"].set_index("metric")
    for metric, group in rows.groupby("metric"):
        m2 = float(np.average(group["noise"], weights=group["n_paired"]))
        row = last.loc[metric]
        if metric == "hit_rate@5":
            expected = sign_test_items_needed(
                row.baseline_value, max(m2, DISCORDANCE_FLOOR) / 2, ITEMS_NEEDED_DROP, row.bar
            )
        else:
            floor = (0.1 * row.baseline_value) ** 2
            expected = sign_flip_items_needed(
                math.sqrt(max(m2, floor)), ITEMS_NEEDED_DROP * row.baseline_value, row.bar, 10000
            )
        assert row.items_needed == expected, metric


def test_a_stable_history_gives_the_floor_not_one_item() -> None:
    values = {m: (np.arange(N) % 5 != 0).astype(float) for m in TIER1}
    values["ndcg@10"] = np.linspace(0.5, 1.0, N)
    first, second = tier1_day(values, "d1"), tier1_day(values, "d2")
    history = compare_partitions(second, first, RegressionRule())
    today = compare_partitions(
        tier1_day(values, "d3"), tier1_day(values, "d2"), RegressionRule(), history
    ).set_index("metric")
    row = today.loc["hit_rate@5"]
    assert row.noise == 0.0
    assert row.items_needed == sign_test_items_needed(
        0.8, DISCORDANCE_FLOOR / 2, ITEMS_NEEDED_DROP, row.bar
    )
    assert (
        row.items_needed_basis == "assuming a discordance of 2.0% (the floor), pooled over 2 days"
    )
    row = today.loc["ndcg@10"]
    shift = ITEMS_NEEDED_DROP * row.baseline_value
    assert row.items_needed == sign_flip_items_needed(shift, shift, row.bar, 10000)
    assert row.items_needed > sign_flip_items_needed(0.0, shift, row.bar, 10000)
    assert row.items_needed_basis.endswith("(the floor, 10% of the baseline), pooled over 2 days")


def test_history_changes_no_verdict_p_or_q() -> None:
    staged = week(np.random.default_rng(5), "2026-01-04")
    history = pd.concat(staged.values(), ignore_index=True)
    rng = np.random.default_rng(9)
    today = {m: (rng.uniform(size=N) < 0.7).astype(float) for m in TIER1}
    before = {m: (rng.uniform(size=N) < 0.8).astype(float) for m in TIER1}
    current, baseline = tier1_day(today, "2026-01-08"), tier1_day(before, "2026-01-07")
    alone = compare_partitions(current, baseline, RegressionRule())
    pooled = compare_partitions(current, baseline, RegressionRule(), history)
    pd.testing.assert_frame_equal(alone[KEYS], pooled[KEYS])
    assert not alone["items_needed"].equals(pooled["items_needed"])
