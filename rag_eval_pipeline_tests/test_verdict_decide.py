"""`decide(evidence, rule)`: one row's evidence in, its verdict out, worded by `wording`.

Each case builds the `Evidence` by hand (a test result, its family's bar and q-values, the
items behind it) and checks the verdict, the reason's words and the alert; the last one
checks that `compare_partitions` gives every row `decide`'s verdict of its evidence.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.evaluation.verdicts import wording
from rag_eval_pipeline.evaluation.verdicts.compare import compare_partitions
from rag_eval_pipeline.evaluation.verdicts.decide import decide
from rag_eval_pipeline.evaluation.verdicts.evidence import (
    Counts,
    Evidence,
    Family,
    Plan,
    gather_evidence,
)
from rag_eval_pipeline.evaluation.verdicts.family import correct_family
from rag_eval_pipeline.evaluation.verdicts.partition import PartitionScores, RegressionRule
from rag_eval_pipeline.evaluation.verdicts.planner import plan
from rag_eval_pipeline.evaluation.verdicts.significance import SIGN_TEST, TestResult

pytestmark = [pytest.mark.unit]

RULE = RegressionRule()
KEY = ("tier1_retrieval", "sut", "hit_rate@5")


def evidence(
    value: float,
    *,
    role: str = "primary",
    test: TestResult | None = None,
    family: Family | None = None,
    counts: Counts | None = None,
    blocked: str = "",
) -> Evidence:
    """A higher-is-better row from a baseline of 0.8, tolerance 5% (0.04)."""
    return Evidence(
        KEY,
        role,
        True,
        0.8,
        value,
        0.05,
        0.04,
        20.0,
        blocked,
        counts=counts or Counts(20, 0, 0, 20),
        test=test,
        family=family or Family(0.01, RULE.n_resamples, member=test is not None),
    )


def test_a_significant_drop_beyond_the_tolerance_regresses_and_is_alerted() -> None:
    test = TestResult(SIGN_TEST, 0.001, 1.0, 2.0**-10, n_worse=10)
    verdict = decide(evidence(0.3, test=test, family=Family(0.01, 10000, True, 0.002, 1.0)), RULE)
    assert (verdict.verdict, verdict.alert) == (wording.REGRESSED, True)
    assert verdict.reason == "q = 0.002 < α = 0.05, change beyond the 5% tolerance"
    assert (verdict.p_value, verdict.q_value) == (0.001, 0.002)


def test_the_same_drop_on_a_monitor_row_is_never_alerted() -> None:
    test = TestResult(SIGN_TEST, 0.001, 1.0, 2.0**-10, n_worse=10)
    row = evidence(0.3, role="monitor", test=test, family=Family(0.05, 10000, True, 0.002, 1.0))
    verdict = decide(row, RULE)
    assert (verdict.verdict, verdict.alert) == (wording.REGRESSED, False)
    assert verdict.reason.endswith(wording.MONITORED)


def test_an_untestable_collapse_is_alerted_on_its_effect_and_says_the_items_needed() -> None:
    test = TestResult(SIGN_TEST, 1 / 64, 1.0, 1 / 64, n_worse=6)
    row = replace(
        evidence(0.0, test=test, counts=Counts(6, 0, 0, 6), family=Family(0.004, 10000, True)),
        plan=Plan(items_to_detect=9.0),
    )
    row = replace(row, family=replace(row.family, q_worse=0.1, q_better=1.0))
    verdict = decide(row, RULE)
    assert (verdict.verdict, verdict.alert, verdict.items_to_detect) == (
        wording.UNTESTABLE,
        True,
        9.0,
    )
    assert verdict.reason == wording.untestable(6, 1 / 64, 0.004, 9.0, 1 / 64)
    assert verdict.reason.startswith(wording.TOO_FEW_ITEMS)


def test_a_coverage_drop_makes_a_quiet_primary_row_not_comparable_and_alerted() -> None:
    test = TestResult(SIGN_TEST, 0.62, 0.62, 2.0**-10, n_worse=5, n_better=5)
    row = evidence(
        0.8, test=test, counts=Counts(10, 10, 0, 20), family=Family(0.01, 10000, True, 1.0, 1.0)
    )
    verdict = decide(row, RULE)
    assert (verdict.verdict, verdict.alert) == (wording.NOT_COMPARABLE, True)
    assert verdict.reason == "coverage dropped: 10 of 20 items scored (was 20) (q = 1 ≥ α = 0.05)"
    assert not decide(replace(row, role="secondary"), RULE).alert


def test_rows_that_are_not_comparable_keep_their_reason_and_alert_only_on_an_outage() -> None:
    missing = decide(evidence(math.nan, blocked=wording.MISSING_TODAY), RULE)
    assert (missing.verdict, missing.reason, missing.alert) == (
        wording.NOT_COMPARABLE,
        wording.MISSING_TODAY,
        True,
    )
    assert decide(evidence(0.8, blocked=wording.judge_outage(0.75)), RULE).alert
    assert not decide(evidence(0.8, blocked=wording.NO_BASELINE_YET), RULE).alert
    changed = wording.model_changed("judge", "a → b", None)
    assert not decide(evidence(0.8, blocked=changed), RULE).alert


def test_decide_is_pure() -> None:
    test = TestResult(SIGN_TEST, 0.001, 1.0, 2.0**-10, n_worse=10)
    row = evidence(0.3, test=test, family=Family(0.01, 10000, True, 0.002, 1.0))
    assert decide(row, RULE) == decide(row, RULE)
    with pytest.raises(AttributeError):
        row.blocked = "changed"  # type: ignore[misc]


def test_compare_partitions_gives_every_row_the_verdict_decide_gives_its_evidence() -> None:
    rng = np.random.default_rng(7)
    base = (rng.random(30) < 0.8).astype(float)
    cur = base.copy()
    cur[:8] = 0.0
    card = pd.DataFrame(
        {
            "tier": ["tier1_retrieval"] * 2,
            "system": ["sut"] * 2,
            "metric": ["hit_rate@5", "ndcg@10"],
            "higher_is_better": True,
            "regression_threshold": 0.05,
            "role": ["primary", "secondary"],
        }
    )

    def day(date: str, values: np.ndarray) -> PartitionScores:
        items = pd.DataFrame(
            {
                "tier": "tier1_retrieval",
                "system": "sut",
                "metric": np.repeat(["hit_rate@5", "ndcg@10"], values.size),
                "item_id": [f"q{i}" for i in range(values.size)] * 2,
                "value": np.concatenate([values, values * 0.9]),
            }
        )
        scorecard = card.assign(value=[values.mean(), values.mean() * 0.9])
        return PartitionScores("v1", date, scorecard, items)

    today, before = day("2026-01-02", cur), day("2026-01-01", base)
    table = compare_partitions(today, before, RULE)
    rows = plan(correct_family(gather_evidence(today, before, RULE), RULE), None)
    decided = {row.key[2]: decide(row, RULE) for row in rows}
    for row in table.itertuples():
        verdict = decided[row.metric]
        assert (row.verdict, row.reason, row.alert) == (
            verdict.verdict,
            verdict.reason,
            verdict.alert,
        )
    primary = table.set_index("metric").loc["hit_rate@5"]
    assert (primary["verdict"], primary["alert"]) == (wording.REGRESSED, True)
