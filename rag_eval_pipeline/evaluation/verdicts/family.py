"""The multiplicity correction: each partition's tests as families, weighted Benjamini–Hochberg.

The primary and secondary tests of a partition form one family per direction, the primaries
sharing `RegressionRule.primary_share` of the weight (`metrics.stats.role_weights`); `monitor`
metrics form a family of their own (plain BH). A degenerate test (nothing moved, p ≡ 1) joins
no family. A Monte Carlo test whose bar is finer than its resamples resolve gets more of them.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from rag_eval_pipeline.evaluation.verdicts.evidence import Evidence, Family
from rag_eval_pipeline.evaluation.verdicts.partition import RegressionRule
from rag_eval_pipeline.evaluation.verdicts.significance import TestResult
from rag_eval_pipeline.metrics.stats import benjamini_hochberg, role_weights

# A Monte Carlo test whose family's bar is finer than its resamples resolve gets enough of them
# to reach p = bar / MONTE_CARLO_RESOLUTION (`resolve_monte_carlo`).
MONTE_CARLO_RESOLUTION = 10


def correct_family(evidence: list[Evidence], rule: RegressionRule) -> list[Evidence]:
    """`evidence` with each row's `Family`: its bar (every row has one: the planner states
    figures at it), resamples and, for the rows of a family, its q-values."""
    testable = np.array([e.testable for e in evidence], dtype=bool)
    monitor = np.array([e.monitor for e in evidence], dtype=bool)
    primary = np.array([e.primary for e in evidence], dtype=bool)
    active, watched = testable & ~monitor, testable & monitor
    bars = role_bars(primary, int((active & primary).sum()), int((active & ~primary).sum()), rule)
    bars[watched] = rule.alpha / max(1, int(watched.sum()))
    weights = np.ones(len(evidence))
    weights[active] = role_weights(primary[active], rule.primary_share)
    resolved = [
        resolve_monte_carlo(e, bar, rule) if member else (e.test, rule.n_resamples)
        for e, bar, member in zip(evidence, bars, testable, strict=True)
    ]
    p_worse = np.array([t.p_worse if t else np.nan for t, _ in resolved])
    p_better = np.array([t.p_better if t else np.nan for t, _ in resolved])
    q_worse, q_better = np.full(len(evidence), np.nan), np.full(len(evidence), np.nan)
    for family, w in ((active, weights[active]), (watched, None)):
        q_worse[family] = benjamini_hochberg(p_worse[family], w)
        q_better[family] = benjamini_hochberg(p_better[family], w)
    return [
        replace(e, test=test, family=Family(float(bar), int(n), bool(member), qw, qb))
        for e, (test, n), bar, member, qw, qb in zip(
            evidence, resolved, bars, testable, q_worse, q_better, strict=True
        )
    ]


def role_bars(
    primary: np.ndarray, n_primary: int, n_secondary: int, rule: RegressionRule
) -> np.ndarray:
    """Each row's lone-rejection bar α · w / m in a family of `n_primary` primary and
    `n_secondary` secondary tests (weights of `metrics.stats.role_weights`)."""
    if n_primary == 0 or n_secondary == 0:
        return np.full(primary.shape, rule.alpha / max(1, n_primary + n_secondary))
    return np.where(
        primary,
        rule.alpha * rule.primary_share / n_primary,
        rule.alpha * (1.0 - rule.primary_share) / n_secondary,
    )


def resolve_monte_carlo(
    row: Evidence, bar: float, rule: RegressionRule
) -> tuple[TestResult | None, int]:
    """A family row's test and resamples: the rule's, or, for a Monte Carlo test whose bar is
    below `MONTE_CARLO_RESOLUTION / (n_resamples + 1)`, enough for p-values down to
    bar / `MONTE_CARLO_RESOLUTION`. Such a row's floor is the one those resamples reach, and
    its test is re-run with them when its first p-value (either tail) is at most
    `MONTE_CARLO_RESOLUTION / (n_resamples + 1)`; a larger first p-value stands (the two-stage
    p-value is still valid: it is never below both stages' own)."""
    test, run = row.test, row.rerun
    needed = math.ceil(MONTE_CARLO_RESOLUTION / bar)
    if test is None or run is None or test.exact_floor is None or needed <= rule.n_resamples:
        return test, rule.n_resamples
    if min(test.p_worse, test.p_better) <= MONTE_CARLO_RESOLUTION / (rule.n_resamples + 1):
        return run(needed), needed
    return replace(test, floor=test.floor_with(needed)), needed
