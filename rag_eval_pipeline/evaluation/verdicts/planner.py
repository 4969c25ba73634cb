"""The planner's figures of each row: today's noise, the smallest change its test could flag
(`detectable_change`), about how many items a 10% drop needs (`items_needed`, with its
assumption in `items_needed_basis`), and for a row too small to test, about how many items
would detect today's change (`items_to_detect`)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pandas as pd

from rag_eval_pipeline.evaluation.verdicts import wording
from rag_eval_pipeline.evaluation.verdicts.columns import KEY
from rag_eval_pipeline.evaluation.verdicts.evidence import Evidence, Plan
from rag_eval_pipeline.evaluation.verdicts.pairing import Key
from rag_eval_pipeline.evaluation.verdicts.significance import (
    EFFECT_ONLY,
    PAIRED_TESTS,
    RANDOMIZATION_TEST,
    SIGN_TEST,
)
from rag_eval_pipeline.metrics.sensitivity import (
    directional_noise,
    pooled_noise,
    sign_flip_items_needed,
    sign_flip_min_shift,
    sign_test_items_needed,
    sign_test_min_worse,
)

# The drop `items_needed` is stated for: a 10% relative drop.
ITEMS_NEEDED_DROP = 0.1
# The planner's noise floors: a 0/1 metric is assumed to flip on at least 2% of its items from
# day to day, a continuous one to move by a root mean square of at least 10% of its baseline.
DISCORDANCE_FLOOR = 0.02
SPREAD_FLOOR = 0.1
# How many stored days before today the planner's noise is pooled over.
NOISE_DAYS = 7

NoiseDays = list[tuple[float, float]]


def plan(evidence: list[Evidence], history: pd.DataFrame | None) -> list[Evidence]:
    """`evidence` (corrected for its family) with each row's `Plan`; `history`: earlier
    verdict rows of the version (`tier`, `system`, `metric`, `n_paired`, `noise`) whose noise
    is pooled with today's."""
    earlier = noise_history([e.key for e in evidence], history)
    return [replace(e, plan=_plan(e, earlier.get(e.key, []))) for e in evidence]


def _plan(row: Evidence, earlier: NoiseDays) -> Plan:
    """One row's figures (NaN where they do not apply)."""
    figures = Plan()
    if row.differences is not None:
        figures = replace(figures, noise=directional_noise(row.differences))
    if not row.comparable or row.family is None:
        return figures
    name = row.test.name if row.test else EFFECT_ONLY
    n_better = row.test.n_better if row.test else 0
    bar, resamples = row.family.bar, row.family.resamples
    if row.baseline_value != 0:
        detectable = detectable_change(name, row.differences, n_better, bar, row.allowed, resamples)
        figures = replace(figures, detectable_change=detectable / abs(row.baseline_value))
    paired = row.differences is not None and name in PAIRED_TESTS
    if row.baseline_value != 0 and row.primary and paired:
        days = [*earlier, (figures.noise, row.counts.n_paired)]
        needed, basis = items_needed(name, days, row.baseline_value, bar, resamples)
        figures = replace(figures, items_needed=needed, items_needed_basis=basis)
    if row.family.member and not row.monitor and row.test is not None and row.test.floor > bar:
        to_detect = items_to_detect(row.differences, n_better, bar, resamples)
        figures = replace(figures, items_to_detect=to_detect)
    return figures


def noise_history(keys: list[Key], history: pd.DataFrame | None) -> dict[Key, NoiseDays]:
    """Per key of `keys`: the (noise, n_paired) of each earlier verdict row in `history`."""
    if history is None or history.empty or "noise" not in history.columns:
        return {}
    kept = history.merge(pd.DataFrame(keys, columns=KEY).drop_duplicates(), on=KEY)
    return {
        key: list(zip(g["noise"].astype(float), g["n_paired"].astype(float), strict=True))
        for key, g in kept.groupby(KEY, sort=False)
    }


def items_needed(
    test: str, days: NoiseDays, base: float, bar: float, n_resamples: int
) -> tuple[float, str]:
    """About how many paired items a 10% drop (`ITEMS_NEEDED_DROP`) of this metric needs to be
    flagged alone at `bar`, and the assumption in words: the noise of `days` ((noise,
    n_paired) of each day) pooled (`metrics.sensitivity.pooled_noise`) with the floor of the
    test's kind; the sign test's items moving back are half the pooled discordance, the
    sign-flip test's spread its square root."""
    counted = sum(1 for m, k in days if math.isfinite(m) and k > 0)
    noise, weights = [m for m, _ in days], [k for _, k in days]
    if test == SIGN_TEST:
        m2 = pooled_noise(noise, weights, DISCORDANCE_FLOOR)
        needed = sign_test_items_needed(abs(base), m2 / 2, ITEMS_NEEDED_DROP, bar)
        return needed, wording.discordance_basis(m2, m2 == DISCORDANCE_FLOOR, counted)
    floor = (SPREAD_FLOOR * base) ** 2
    m2 = pooled_noise(noise, weights, floor)
    spread = math.sqrt(m2)
    needed = sign_flip_items_needed(spread, ITEMS_NEEDED_DROP * abs(base), bar, n_resamples)
    return needed, wording.spread_basis(spread, SPREAD_FLOOR if m2 == floor else None, counted)


def items_to_detect(
    worsening: np.ndarray | None, n_better: int, bar: float, n_resamples: int
) -> float:
    """About how many paired items would detect today's change alone at `bar` (the sign test's
    for 0/±1 changes, the sign-flip test's else); NaN without paired items."""
    if worsening is None or worsening.size == 0:
        return math.nan
    if np.isin(worsening, (-1.0, 0.0, 1.0)).all():
        change = abs(float(worsening.sum())) / worsening.size
        return sign_test_items_needed(1.0, n_better / worsening.size, change, bar)
    spread = float(np.sqrt(np.mean((worsening - worsening.mean()) ** 2)))
    return sign_flip_items_needed(spread, abs(float(worsening.mean())), bar, n_resamples)


def detectable_change(
    test: str,
    worsening: np.ndarray | None,
    n_better: int,
    bar: float,
    allowed: float,
    n_resamples: int,
) -> float:
    """The smallest change in the bad direction (absolute, in the metric's unit) that the row's
    test could flag alone at p < `bar` given today's noise, and never below the tolerance.

    `worsening` holds the paired items' changes in the bad direction (baseline − today for a
    higher-is-better metric). Sign test: the fewest items moving the bad way with today's
    `n_better` moving back (`metrics.sensitivity.sign_test_min_worse`), as a change of the
    mean; randomization test: `sign_flip_min_shift` of the changes; effect rule: the tolerance;
    NaN for the unpaired tests, whose power this does not model.
    """
    if test == SIGN_TEST and worsening is not None:
        worse = sign_test_min_worse(n_better, bar, worsening.size - n_better)
        return max(allowed, (worse - n_better) / worsening.size)
    if test == RANDOMIZATION_TEST and worsening is not None:
        return max(allowed, sign_flip_min_shift(worsening, bar, n_resamples))
    return allowed if test == EFFECT_ONLY else math.nan
