"""The decision: one row's evidence and the rule in, its verdict out (a pure function).

- `regressed` needs q < α **and** a change in the bad direction beyond the metric's tolerance;
  `improved` mirrors it; a row without per-item values is judged by the effect rule alone;
- `untestable`: a family test that did not decide and whose floor is above its bar; a primary
  metric so, moved the bad way by more than `RegressionRule.untested_tolerance` and whose own
  test alone has p < α, is alerted on its effect (`too_few_items`);
- coverage: a row whose scored items fell by more than `RegressionRule.coverage_tolerance` is
  `not comparable` (or stays `regressed`, on the items left), alerted for a primary metric;
- a row that is not comparable is alerted when missing today, on a judge outage or on a day
  without traffic; `monitor` rows are never alerted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from rag_eval_pipeline.evaluation.verdicts import wording
from rag_eval_pipeline.evaluation.verdicts.evidence import Evidence, Family
from rag_eval_pipeline.evaluation.verdicts.partition import RegressionRule
from rag_eval_pipeline.evaluation.verdicts.significance import EFFECT_ONLY, UNPAIRED_TESTS
from rag_eval_pipeline.evaluation.verdicts.wording import (
    IMPROVED,
    MISSING_TODAY,
    NO_CHANGE,
    NOT_COMPARABLE,
    OUTAGE,
    REGRESSED,
    UNTESTABLE,
)


@dataclass(frozen=True)
class Verdict:
    """A row's verdict, its reason in words, whether it is alerted, and the p- and q-value in
    the direction it moved (NaN without a test); `items_to_detect` for an untestable row."""

    verdict: str
    reason: str
    alert: bool
    p_value: float = math.nan
    q_value: float = math.nan
    items_to_detect: float = math.nan


def decide(row: Evidence, rule: RegressionRule) -> Verdict:
    """The verdict of one row (`row.family` set by `family.correct_family`, its `plan` by
    `planner.plan`)."""
    if not row.comparable:
        alert = row.traffic_lost or row.blocked == MISSING_TODAY or row.blocked.startswith(OUTAGE)
        return Verdict(NOT_COMPARABLE, row.blocked, alert and not row.monitor)
    family = row.family or Family(math.nan, rule.n_resamples)
    bad = row.worsening > 0
    p_worse = row.test.p_worse if row.test else math.nan
    p_better = row.test.p_better if row.test else math.nan
    p_value, q_value = (p_worse, family.q_worse) if bad else (p_better, family.q_better)
    verdict = _label(row, family, q_value, rule)
    too_few = (
        verdict == UNTESTABLE
        and row.primary
        and _beyond_bad(row)
        and row.worsening > rule.untested_tolerance * abs(row.baseline_value)
        and p_worse < rule.alpha
    )
    reason = _reason(row, family, verdict, q_value, p_worse if too_few else None, rule)
    coverage = _coverage_dropped(row, rule)
    alert = verdict == REGRESSED or too_few or bool(coverage and row.primary)
    to_detect = row.plan.items_to_detect if verdict == UNTESTABLE else math.nan
    if coverage:
        reason = wording.with_coverage(reason, coverage, verdict == REGRESSED)
        verdict = verdict if verdict == REGRESSED else NOT_COMPARABLE
    return Verdict(verdict, reason, alert and not row.monitor, p_value, q_value, to_detect)


def _beyond_bad(row: Evidence) -> bool:
    return row.worsening > row.allowed and row.worsening > 0


def _label(row: Evidence, family: Family, q_value: float, rule: RegressionRule) -> str:
    """Regressed, improved, untestable or no significant change (a comparable row)."""
    effect_only = row.test is None
    if _beyond_bad(row) and (effect_only or family.q_worse < rule.alpha):
        return REGRESSED
    beyond_good = -row.worsening > row.allowed and row.worsening < 0
    if beyond_good and (effect_only or family.q_better < rule.alpha):
        return IMPROVED
    floor = row.test.floor if row.test else math.nan
    active = family.member and not row.monitor
    if active and floor > family.bar and not q_value < rule.alpha:
        return UNTESTABLE
    return NO_CHANGE


def _reason(
    row: Evidence,
    family: Family,
    verdict: str,
    q_value: float,
    alerted_p: float | None,
    rule: RegressionRule,
) -> str:
    """Why a comparable row got `verdict` (before its coverage), in `wording`'s words."""
    name = row.test.name if row.test else EFFECT_ONLY
    unpaired = name in UNPAIRED_TESTS
    if verdict == UNTESTABLE:
        floor = row.test.floor if row.test else math.nan
        needed = row.plan.items_to_detect
        n_paired = row.counts.n_paired
        reason = wording.untestable(n_paired, floor, family.bar, needed, alerted_p)
    elif row.test is not None and not family.member:
        reason = wording.nothing_to_test(unpaired)
    else:
        effect_only = row.test is None
        reason = wording.tested(verdict, effect_only, q_value, rule.alpha, row.tolerance)
    if unpaired:
        reason += wording.unpaired_sizes(row.counts.n_only_baseline, row.counts.n_only_current)
    if row.monitor:
        reason += wording.MONITORED
    return reason


def _coverage_dropped(row: Evidence, rule: RegressionRule) -> str:
    """`coverage dropped: ...` when the row's scored items fell by more than the rule's share
    of the baseline's, else ""."""
    counts = row.counts
    was = counts.n_paired + counts.n_only_baseline
    now = counts.n_paired + counts.n_only_current
    if counts.asked > 0 and was - now > rule.coverage_tolerance * was:
        return wording.coverage_dropped(now, counts.asked, was)
    return ""
