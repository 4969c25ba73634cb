"""The evidence behind each verdict row: one `Evidence` per quality metric of either date.

`gather_evidence` lines the two dates up (`pairing`), says why a row cannot be compared (no
baseline, a missing value, a judge outage, a model change, no traffic), and runs the row's
test (`significance`). `family.correct_family` then adds each row's bar and q-values and
`planner.plan` its planner figures; `decide.decide` turns one `Evidence` into its verdict.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import pandas as pd

from rag_eval_pipeline.evaluation.scorecard import (
    MONITOR,
    PRIMARY,
    REAL_USERS_SYSTEM,
    SECONDARY,
)
from rag_eval_pipeline.evaluation.verdicts import wording
from rag_eval_pipeline.evaluation.verdicts.columns import KEY
from rag_eval_pipeline.evaluation.verdicts.model_roles import changed_roles, model_feeds
from rag_eval_pipeline.evaluation.verdicts.pairing import (
    Key,
    PairedItems,
    paired_items,
    scorecard_rows,
    unpaired_samples,
)
from rag_eval_pipeline.evaluation.verdicts.partition import PartitionScores, RegressionRule
from rag_eval_pipeline.evaluation.verdicts.significance import (
    TestResult,
    paired_test,
    unpaired_test,
)

# A metric most of whose judgments failed today is an outage, alerted whatever its value.
OUTAGE_ERROR_RATE = 0.5
TRAFFIC_TIER, VOLUME = "traffic", "volume"


@dataclass(frozen=True)
class Counts:
    """The items behind a row: paired, with a value on the baseline only and today only, and
    today's items asked, scored or not (0 without paired items)."""

    n_paired: int = 0
    n_only_baseline: int = 0
    n_only_current: int = 0
    asked: int = 0


@dataclass(frozen=True)
class Family:
    """A row's place in its multiple-testing family: its lone-rejection bar α·w/m, its
    Benjamini–Hochberg q-values in both directions (NaN outside a family) and its resamples."""

    bar: float
    resamples: int
    member: bool = False
    q_worse: float = math.nan
    q_better: float = math.nan


@dataclass(frozen=True)
class Plan:
    """The planner's figures (`planner.plan`)."""

    noise: float = math.nan
    detectable_change: float = math.nan
    items_needed: float = math.nan
    items_needed_basis: str = ""
    items_to_detect: float = math.nan


@dataclass(frozen=True, eq=False)
class Evidence:
    """Everything one metric row's verdict is decided on."""

    key: Key
    role: str
    higher_is_better: bool
    baseline_value: float
    value: float
    tolerance: float
    allowed: float  # the change tolerated: max(tolerance · |baseline|, the metric's min change)
    count: float  # the scorecard's count today (judgments, interactions)
    blocked: str  # why the row is not comparable; "" when it is
    counts: Counts = field(default_factory=Counts)
    test: TestResult | None = None
    rerun: Callable[[int], TestResult] | None = None  # the test again with other resamples
    differences: np.ndarray | None = None  # the paired items' changes in the bad direction
    traffic_lost: bool = False  # the `volume` row of a day without traffic, expected daily
    family: Family | None = None
    plan: Plan = field(default_factory=Plan)

    @property
    def comparable(self) -> bool:
        return not self.blocked

    @property
    def primary(self) -> bool:
        return self.role == PRIMARY

    @property
    def monitor(self) -> bool:
        return self.role == MONITOR

    @property
    def worsening(self) -> float:
        """The change in the metric's bad direction (negative: it improved)."""
        if self.higher_is_better:
            return self.baseline_value - self.value
        return self.value - self.baseline_value

    @property
    def testable(self) -> bool:
        """Comparable, tested, and something moved: the row joins a family."""
        return self.comparable and self.test is not None and not self.test.degenerate


def gather_evidence(
    current: PartitionScores, baseline: PartitionScores | None, rule: RegressionRule
) -> list[Evidence]:
    """One `Evidence` per quality metric of `current` or `baseline`, tested (not yet corrected
    for the family)."""
    base_card = baseline.scorecard if baseline is not None else current.scorecard.iloc[0:0]
    rows = scorecard_rows(current.scorecard, base_card)
    if rows.empty:
        return []
    base, cur = rows["value_b"].to_numpy(dtype=float), rows["value_c"].to_numpy(dtype=float)
    silence, lost = _no_traffic(rows, base, cur, current.traffic_every_day)
    blocked = _blocked_reasons(rows, current, baseline)
    paired = paired_items(current.items, baseline.items) if baseline is not None else {}
    samples = unpaired_samples(current.samples, baseline.samples) if baseline is not None else {}
    higher = rows["higher_is_better"].astype(bool).to_numpy()
    tolerance = rows["regression_threshold"].to_numpy(dtype=float)
    allowed = np.maximum(tolerance * np.abs(base), rows["regression_min_change"].to_numpy(float))
    role = rows["role"].fillna(SECONDARY).astype(str).to_numpy()
    count = rows.get("count_c", pd.Series(np.nan, index=rows.index)).to_numpy(float)
    keys = list(zip(*(rows[k] for k in KEY), strict=True))
    evidence = []
    for i, key in enumerate(keys):
        row = Evidence(
            key,
            str(role[i]),
            bool(higher[i]),
            float(base[i]),
            float(cur[i]),
            float(tolerance[i]),
            float(allowed[i]),
            float(count[i]),
            silence[i] or blocked[i],
            traffic_lost=bool(lost[i]),
        )
        evidence.append(_tested(row, paired.get(key), samples.get(key), rule))
    return evidence


def _tested(
    row: Evidence,
    items: PairedItems | None,
    sample: tuple[np.ndarray, np.ndarray] | None,
    rule: RegressionRule,
) -> Evidence:
    """`row` with its item counts and, when comparable, its test: paired on the items both
    dates scored, else unpaired on each date's sample."""
    rerun, differences, counts = None, None, Counts()
    if items is not None:
        counts = Counts(items.baseline.size, items.only_baseline, items.only_current, items.asked)
    elif sample is not None:
        counts = Counts(0, sample[0].size, sample[1].size)
    if row.comparable and items is not None and items.baseline.size:
        rerun = partial(paired_test, items.baseline, items.current, row.higher_is_better, rule.seed)
        changes = items.baseline - items.current
        differences = changes if row.higher_is_better else -changes
    elif row.comparable and sample is not None and sample[0].size and sample[1].size:
        higher = row.higher_is_better
        rerun = partial(unpaired_test, row.key[2], *sample, higher, rule.seed)
    test = rerun(rule.n_resamples) if rerun is not None else None
    return replace(row, counts=counts, test=test, rerun=rerun, differences=differences)


def _blocked_reasons(
    rows: pd.DataFrame, current: PartitionScores, baseline: PartitionScores | None
) -> list[str]:
    """Why each row is not comparable ("" when it is), in `wording`'s words."""
    if baseline is None:
        return [wording.NO_BASELINE_YET] * len(rows)
    changed = changed_roles(current.identities, baseline.identities)
    errors = rows.get("error_rate_c", pd.Series(0.0, index=rows.index)).fillna(0.0)
    reasons = []
    for (tier, system, metric), base, cur, error_rate in zip(
        zip(*(rows[k] for k in KEY), strict=True),
        rows["value_b"].to_numpy(dtype=float),
        rows["value_c"].to_numpy(dtype=float),
        errors.to_numpy(float),
        strict=True,
    ):
        moved = [
            wording.model_changed(who, ids, baseline.bridge_notes.get((who, tier)))
            for who, ids in changed.items()
            if model_feeds(who, tier, system, metric)
            and (tier, system, metric) not in baseline.bridged.get(who, frozenset())
        ]
        reasons.append(_blocked(base, cur, error_rate, moved))
    return reasons


def _blocked(base: float, cur: float, error_rate: float, moved: list[str]) -> str:
    """Why a row with a baseline is not comparable ("" when it is): a model change is named
    before `missing today` and `no baseline value` (Tiers 0 and 2 name their system after the
    model that changed)."""
    if not np.isfinite(base) and not np.isfinite(cur):
        return wording.NO_VALUE
    if not np.isfinite(cur):
        return "; ".join(moved) if moved else wording.MISSING_TODAY
    if error_rate > OUTAGE_ERROR_RATE:
        return wording.judge_outage(error_rate)
    if not np.isfinite(base):
        return "; ".join(moved) if moved else wording.NO_BASELINE_VALUE
    return "; ".join(moved)


def _no_traffic(
    rows: pd.DataFrame, base: np.ndarray, cur: np.ndarray, every_day: bool
) -> tuple[list[str], np.ndarray]:
    """The words of the rows that have no value because no interaction came today ("" for the
    others): the traffic tier's rows of systems with interactions on the baseline date and none
    today, and, on such a day, the rows computed from the logged interactions
    (`REAL_USERS_SYSTEM`) that have no value today. Only one row of each lost system (`volume`)
    carries the alert, when traffic is expected every day: one `no traffic` verdict, not one per
    metric."""
    tier, system, metric = (rows[k].to_numpy() for k in KEY)
    lost = (tier == TRAFFIC_TIER) & (metric == VOLUME) & (base > 0) & ~(cur > 0)
    from_logs = lost.any() & (system == REAL_USERS_SYSTEM) & ~np.isfinite(cur)
    silent = (np.isin(system, system[lost]) & (tier == TRAFFIC_TIER)) | from_logs
    words = [
        wording.no_traffic(bool(lost[i]), base[i], every_day) if silent[i] else ""
        for i in range(len(rows))
    ]
    return words, lost & every_day
