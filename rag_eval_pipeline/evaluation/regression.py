"""Regression detection: each scorecard metric against its baseline, tested and FDR-controlled.

`compare_partitions` gives one row per (tier, system, metric) with a verdict:

- **paired test** on the items both dates scored (`PartitionScores.items`): 0/1 metrics use the
  exact one-sided sign test on the discordant pairs (McNemar), other metrics the one-sided
  paired sign-flip test, exact (every sign pattern enumerated) up to 40 non-zero differences and
  seeded Monte Carlo beyond; items scored on one date only are counted (`n_only_baseline`,
  `n_only_current`), not silently dropped;
- **unpaired test** on samples of each date (`PartitionScores.samples`: the system under
  test's per-question latencies, and the traffic tier's interactions, which differ from day to
  day): latency percentiles use the one-sided quantile exceedance test, 0/1 metrics the
  one-sided Fisher's exact test, other metrics the one-sided two-sample permutation test of
  the difference in means. `n_paired` is 0 and the sample sizes are `n_only_baseline` and
  `n_only_current`; error rows (NaN) are left out of both samples;
- **metric roles** (`role`, from `config/thresholds.yaml`): `primary` metrics share
  `RegressionRule.primary_share` (0.8) of the family's weight, `secondary` ones the rest;
  **weighted Benjamini–Hochberg** (Genovese, Roeder & Wasserman, 2006) over the partition's
  primary and secondary tests, one family per direction, weights averaging 1, so a lone
  primary is rejected at p < α·0.8 / m_primary however many secondaries there are (`bar`
  holds each row's lone-rejection bar α·w/m). `monitor` metrics (agreement between judge and
  raters, descriptive figures) are tested in a family of their own and never alerted;
- **Monte Carlo resolution**: a sign-flip or permutation test drawn at random has p ≥
  1 / (n_resamples + 1); when a row's bar is finer than 10 / (n_resamples + 1), its floor is
  that of ⌈10 / bar⌉ resamples and, if its first p-value is at most 10 / (n_resamples + 1),
  the test is re-run with them (`_resolve_monte_carlo`), so a row is never untestable for want
  of resamples;
- a **degenerate** test (no discordant pair, no non-zero difference, all values equal) has
  p ≡ 1 and leaves the family: it cannot be rejected and would only raise every other bar;
- `regressed` needs q < α (0.05 by default) **and** a change in the bad direction beyond the
  metric's tolerance (`regression_threshold × |baseline|`, at least `regression_min_change`);
  `improved` mirrors it. Metrics without per-item values are judged by the effect rule alone;
- **`untestable`**: a test that did not decide and whose smallest reachable p-value on its
  items (2⁻ᵏ for k discordant pairs or non-zero differences; the most lopsided table for
  Fisher's) is above its bar: it could not have flagged anything alone, so it never reads as
  "no significant change"; the reason says about how many items would detect today's change.
  A primary metric that is untestable, moved the bad way by more than
  `RegressionRule.untested_tolerance` (20%) and whose own one-sided test alone has p < α is
  alerted, labeled "effect only: too few items to test" (a collapse on 6 questions, p = 1/64,
  is; one question out of 6 moving, p = 1/2, is not);
- **coverage**: a metric whose scored items fell by more than `RegressionRule.coverage_tolerance`
  (10%) of the baseline's (declined answers, failed generations, judge errors) reads
  `coverage dropped: 10 of 20 items scored (was 20)`: `not comparable` (its mean is over other
  items), or `regressed` with the words added when it regressed on the items left; alerted
  for a primary metric (so a system cannot improve by answering fewer questions);
- **no traffic**: a traffic tier with interactions on the baseline date and none today is one
  alert on its `volume` row, `no traffic: no interaction today (N on the baseline date)`; its
  other metrics read `no traffic today`, not alerted. `dataset.yaml`'s `traffic_every_day:
  false` (traffic that may pause, e.g. on weekends) makes it a note, not an alert;
- a **zero baseline** has no relative change (`relative_change` NaN, never infinite): the
  surfaces print the change in points (`reporting.alerting.change_text`);
- `not comparable` with the `reason`: no baseline yet; no value on either date (never
  alerted); `missing today` (a value on the baseline, none today: an alert); `judge outage`
  (more than half of the metric's judgments failed today: an alert); or `judge changed` /
  `generator changed` / `embedder changed` for the metrics the model feeds (shown, never
  alerted; `model_feeds`: the generator feeds Tier 3 only for the reference RAG, the embedder
  Tier 1 only for the reference RAG and the dense and hybrid reference retrievers) unless the
  baseline was rebuilt with today's model (`evaluation.model_bridge`, `PartitionScores.bridged`).
  A model change is named before `missing today` and `no baseline value`: Tiers 0 and 2 name
  their system after the model.

`n_items` is the number of items behind today's value (paired items, else the scorecard's
count: judgments, interactions); `noise`, the day's noise in its paired differences, robust to a
one-way change (`metrics.sensitivity.directional_noise`: the discordance rate of a 0/1 metric,
the mean square difference of a continuous one); `items_needed`, for primary metrics with paired
items, about how many items a 10% drop needs to be flagged alone at the row's bar, at the noise
pooled over today and the stored days given as `history` (`metrics.sensitivity.pooled_noise`),
at least `DISCORDANCE_FLOOR` (0/1) or a spread of `SPREAD_FLOOR` × |baseline| (continuous), so
a quiet day and a regression day give about the same figure; `items_needed_basis` states that
assumption; `items_to_detect`, for untestable rows, about how many paired
items would detect today's change alone. Dataset statistics (tier `dataset`) and descriptive
counts are not compared.

`detect_regressions` is the previous unpaired rule (relative drop beyond the tolerance and the
baseline outside today's bootstrap CI), kept so `benchmarks/regression_power.py` can measure
the rules side by side.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import pandas as pd

from rag_eval_pipeline.evaluation.scorecard import MONITOR, PRIMARY, SECONDARY
from rag_eval_pipeline.metrics.sensitivity import (
    directional_noise,
    pooled_noise,
    sign_flip_items_needed,
    sign_flip_min_shift,
    sign_test_items_needed,
    sign_test_min_worse,
)
from rag_eval_pipeline.metrics.stats import (
    EXACT_SIGN_FLIP_MAX,
    NORMAL_APPROXIMATION_ABOVE,
    benjamini_hochberg,
    fisher_exact_tails,
    fisher_p_floor,
    paired_randomization_tails,
    permutation_tails,
    quantile_exceedance_tails,
    role_weights,
    sign_flip_p_floor,
    sign_test,
)
from rag_eval_pipeline.metrics.traffic import LATENCY_QUANTILES
from rag_eval_pipeline.systems import REFERENCE_RAG
from rag_eval_pipeline.systems.retrievers import DENSE, HYBRID

KEY = ["tier", "system", "metric"]
# Which comparison a row belongs to, and what changed: shared by both rules' tables.
COMPARISON_IDS = ["alert_key", "dataset_version", "date", "baseline_version", "baseline_date"]
CHANGE_COLUMNS = [*KEY, "baseline_value", "value", "relative_change"]
REGRESSION_COLUMNS = [
    *COMPARISON_IDS,
    *CHANGE_COLUMNS,
    "threshold",
    "ci_low",
    "ci_high",
    "higher_is_better",
]


def alert_keys(frame: pd.DataFrame) -> pd.Series:
    """Each row's alert identity, `dataset_version|date|tier|system|metric`."""
    keys = frame["dataset_version"]
    for column in ("date", "tier", "system", "metric"):
        keys = keys + "|" + frame[column]
    return keys


def detect_regressions(
    current: pd.DataFrame, baseline: pd.DataFrame, baseline_version: str, baseline_date: str
) -> pd.DataFrame:
    """The regressions of `current` (a scorecard) against `baseline` (an earlier scorecard)."""
    merged = current[current["tier"] != "dataset"].merge(
        baseline[[*KEY, "value"]].rename(columns={"value": "baseline_value"}), on=KEY, how="inner"
    )
    merged = merged[merged["value"].notna() & merged["baseline_value"].notna()]
    if merged.empty:
        return pd.DataFrame(columns=REGRESSION_COLUMNS)
    value = merged["value"].to_numpy(dtype=float)
    base = merged["baseline_value"].to_numpy(dtype=float)
    higher = merged["higher_is_better"].to_numpy(dtype=bool)
    threshold = merged["regression_threshold"].to_numpy(dtype=float)
    worsening = np.where(higher, base - value, value - base)
    floor = merged.get("regression_min_change", pd.Series(0.0, index=merged.index))
    allowed = np.maximum(threshold * np.abs(base), floor.fillna(0.0).to_numpy(float))
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(
            base != 0, (value - base) / np.abs(base), np.sign(value - base) * np.inf
        )
    low = merged["ci_low"].to_numpy(dtype=float)
    high = merged["ci_high"].to_numpy(dtype=float)
    has_ci = ~np.isnan(low) & ~np.isnan(high)
    outside_ci = ~has_ci | (base < low) | (base > high)
    regressed = (worsening > allowed) & (worsening > 0) & outside_ci
    found = merged[regressed].assign(
        relative_change=relative[regressed],
        threshold=threshold[regressed],
        baseline_version=baseline_version,
        baseline_date=baseline_date,
    )
    found["alert_key"] = alert_keys(found)
    return found[REGRESSION_COLUMNS].reset_index(drop=True)


REGRESSED, IMPROVED, NO_CHANGE, UNTESTABLE, NOT_COMPARABLE = (
    "regressed",
    "improved",
    "no significant change",
    "untestable",
    "not comparable",
)
VERDICTS = (REGRESSED, IMPROVED, NO_CHANGE, UNTESTABLE, NOT_COMPARABLE)
MISSING_TODAY = "missing today"
NO_VALUE = "no value on either date"
# The reason of a metric compared across a model change (`evaluation.model_bridge`) starts so.
BRIDGED = "baseline rebuilt with today's"
# A metric most of whose judgments failed today is an outage, alerted whatever its value.
OUTAGE_ERROR_RATE = 0.5
OUTAGE = "judge outage"
# A metric that lost more than `RegressionRule.coverage_tolerance` of its scored items.
COVERAGE_DROPPED = "coverage dropped"
# A traffic tier without interactions today, after some on the baseline date: one alert.
NO_TRAFFIC = "no traffic"
TRAFFIC_TIER, VOLUME = "traffic", "volume"
# The label of a primary metric alerted on its effect alone (its items are too few to test).
TOO_FEW_ITEMS = "effect only: too few items to test"
# A Monte Carlo test whose family's bar is finer than its resamples resolve gets enough of them
# to reach p = bar / MONTE_CARLO_RESOLUTION (`_resolve_monte_carlo`).
MONTE_CARLO_RESOLUTION = 10
# The drop `items_needed` is stated for: a 10% relative drop.
ITEMS_NEEDED_DROP = 0.1
# The planner's noise floors: a 0/1 metric is assumed to flip on at least 2% of its items from
# day to day, a continuous one to move by a root mean square of at least 10% of its baseline.
DISCORDANCE_FLOOR = 0.02
SPREAD_FLOOR = 0.1
# How many stored days before today the planner's noise is pooled over.
NOISE_DAYS = 7
EFFECT_ONLY = "effect rule only (no per-item scores)"
SIGN_TEST = "exact sign test (McNemar)"
RANDOMIZATION_TEST = "paired sign-flip test"
FISHER_TEST = "Fisher's exact test (unpaired)"
PERMUTATION_TEST = "two-sample permutation (unpaired)"
QUANTILE_TEST = "quantile exceedance test (unpaired, Fisher)"
UNPAIRED_TESTS = (FISHER_TEST, PERMUTATION_TEST, QUANTILE_TEST)
IDENTITY_ROLES = ("judge", "generator", "embedder")
# Which tiers each model's output feeds: a change of that model makes their metrics incomparable.
ROLE_TIERS: dict[str, frozenset[str]] = {
    "judge": frozenset({"tier2_generation", "tier3_e2e", "judge_reliability", "show_judge"}),
    "generator": frozenset({"tier2_generation", "tier3_e2e", "ux"}),
    "embedder": frozenset(
        {"tier0_embedding", "tier1_retrieval", "tier2_generation", "tier3_e2e", "ux"}
    ),
}
# Tiers of which a model feeds only the rows of the pipeline's own systems: the built-in
# reference RAG (`systems.rag`) and, for the embedder, the dense and hybrid reference retrievers
# of Tier 1. The dataset's runs, a callable system's and logged answers are made without the
# pipeline's embedder and generator (Tier 3's scores of them use the embedder, not the generator).
ROLE_REFERENCE_TIERS: dict[str, dict[str, frozenset[str]]] = {
    "generator": {"tier3_e2e": frozenset({REFERENCE_RAG})},
    "embedder": {"tier1_retrieval": frozenset({REFERENCE_RAG, DENSE, HYBRID})},
}
# Tiers only some of whose metrics a model feeds: the traffic tier's judged sample (its
# latency, errors, cost and feedback come from the logs, whatever the judge).
ROLE_TIER_METRICS: dict[str, dict[str, frozenset[str]]] = {
    "judge": {"traffic": frozenset({"avg_faithfulness", "avg_answer_relevance"})},
    # the offline judge reads embeddings; context relevance is a cosine
    "embedder": {
        "traffic": frozenset({"avg_faithfulness", "avg_answer_relevance", "avg_context_relevance"})
    },
}
DESCRIPTIVE = re.compile(r"^(n_|num_)|(_count|_sample_size|_volume)$|^total_pairs$")
METRIC_REGRESSION_COLUMNS = [
    *COMPARISON_IDS,
    *CHANGE_COLUMNS,
    "role",
    "threshold",
    "higher_is_better",
    "n_items",
    "n_paired",
    "n_only_baseline",
    "n_only_current",
    "n_worse",
    "n_better",
    "test",
    "p_value",
    "q_value",
    "bar",
    "detectable_change",
    "noise",
    "items_needed",
    "items_needed_basis",
    "items_to_detect",
    "verdict",
    "reason",
    "alert",
    *IDENTITY_ROLES,
]


@dataclass(frozen=True)
class PartitionScores:
    """What one partition is compared on: its scorecard, per-item scores paired by `item_id`
    with the baseline's, model identities, and per-item scores of independent samples (compared
    unpaired; None: no such sample). Both tables have the `evaluation.item_scores` layout."""

    version: str
    date: str
    scorecard: pd.DataFrame
    items: pd.DataFrame
    identities: dict[str, str | None] = field(default_factory=dict)
    samples: pd.DataFrame | None = None
    # A baseline rebuilt with today's models (`evaluation.model_bridge`): per changed model
    # (role), the keys compared although it changed; per (role, tier), why the others of that
    # tier could not be bridged.
    bridged: Mapping[str, frozenset[tuple[str, str, str]]] = field(default_factory=dict)
    bridge_notes: Mapping[tuple[str, str], str] = field(default_factory=dict)
    # `dataset.yaml`'s `traffic_every_day`: a day without traffic is an outage (else a note).
    traffic_every_day: bool = True


@dataclass(frozen=True)
class RegressionRule:
    """FDR level α; the primary metrics' share of the weighted-BH budget; the relative bad
    change beyond which an untestable primary metric is alerted on its effect; the share of
    the baseline's scored items a metric may lose before its coverage dropped; the
    randomization tests' resamples and seed (a re-run gives the same)."""

    alpha: float = 0.05
    n_resamples: int = 10000
    seed: int = 0
    primary_share: float = 0.8
    untested_tolerance: float = 0.2
    coverage_tolerance: float = 0.1


def model_feeds(role: str, tier: str, system: str, metric: str) -> bool:
    """Whether the `role` model's output goes into `metric` of `system` in `tier` (its change
    makes the metric incomparable with the baseline)."""
    own_systems = ROLE_REFERENCE_TIERS.get(role, {}).get(tier)
    if own_systems is not None:
        return system in own_systems
    partial = ROLE_TIER_METRICS.get(role, {}).get(tier, frozenset())
    return tier in ROLE_TIERS[role] or metric in partial


def is_quality_metric(tier: str, metric: str) -> bool:
    """False for dataset statistics and descriptive counts, which are never compared."""
    return tier != "dataset" and not DESCRIPTIVE.search(metric)


def _paired(
    current: pd.DataFrame, baseline: pd.DataFrame
) -> dict[tuple[str, str, str], tuple[np.ndarray, np.ndarray, int, int, int]]:
    """Per key: paired (baseline, current) values of items finite on both dates, the counts of
    items with a value on the baseline only and on today only, and today's items with or
    without a value (declined, failed or errored items have none)."""
    both = baseline.merge(
        current, on=[*KEY, "item_id"], how="outer", suffixes=("_b", "_c"), indicator=True
    )
    paired = {}
    for key, rows in both.groupby(KEY, sort=False):
        base = rows["value_b"].to_numpy(dtype=float)
        cur = rows["value_c"].to_numpy(dtype=float)
        has_b, has_c = np.isfinite(base), np.isfinite(cur)
        ok = has_b & has_c
        today = int((rows["_merge"] != "left_only").sum())
        paired[key] = (
            base[ok],
            cur[ok],
            int((has_b & ~has_c).sum()),
            int((has_c & ~has_b).sum()),
            today,
        )
    return paired


def _no_traffic(
    rows: pd.DataFrame, base: np.ndarray, cur: np.ndarray, every_day: bool
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The traffic tier's rows of systems with interactions on the baseline date and none
    today, the one row of each (`volume`) that carries the alert (when traffic is expected
    every day), and their words: one `no traffic` verdict, not one per metric."""
    tier, system, metric = (rows[k].to_numpy() for k in KEY)
    lost = (tier == TRAFFIC_TIER) & (metric == VOLUME) & (base > 0) & ~(cur > 0)
    silent = {s for s, gone in zip(system, lost, strict=True) if gone}
    rows_of = (tier == TRAFFIC_TIER) & np.isin(system, list(silent))
    note = "" if every_day else " (not expected every day: dataset.yaml traffic_every_day)"
    words = [
        (
            f"{NO_TRAFFIC}: no interaction today ({base[i]:.0f} on the baseline date){note}"
            if lost[i]
            else f"{NO_TRAFFIC} today"
        )
        if rows_of[i]
        else ""
        for i in range(len(rows))
    ]
    return rows_of, lost & every_day, words


def _coverage_dropped(
    counts: np.ndarray, asked: np.ndarray, comparable: np.ndarray, rule: RegressionRule
) -> tuple[np.ndarray, list[str]]:
    """Rows whose scored items fell by more than `rule.coverage_tolerance` of the baseline's
    (`counts`: paired, baseline only, today only; `asked`: today's items, scored or not), and
    each one's words: `coverage dropped: 10 of 20 items scored (was 20)`."""
    was = counts[:, 0] + counts[:, 1]
    now = counts[:, 0] + counts[:, 2]
    dropped = comparable & (asked > 0) & (was - now > rule.coverage_tolerance * was)
    words = [
        f"{COVERAGE_DROPPED}: {now[i]} of {asked[i]} items scored (was {was[i]})"
        if dropped[i]
        else ""
        for i in range(len(counts))
    ]
    return dropped, words


def _unpaired(
    current: pd.DataFrame | None, baseline: pd.DataFrame | None
) -> dict[tuple[str, str, str], tuple[np.ndarray, np.ndarray]]:
    """Per key: the finite values of the baseline's sample and of today's (either may be empty)."""

    def by_key(frame: pd.DataFrame | None) -> dict[tuple[str, str, str], np.ndarray]:
        if frame is None:
            return {}
        finite = frame[np.isfinite(frame["value"].to_numpy(dtype=float))]
        return {
            key: rows["value"].to_numpy(dtype=float)
            for key, rows in finite.groupby(KEY, sort=False)
        }

    base, cur, none = by_key(baseline), by_key(current), np.empty(0)
    return {key: (base.get(key, none), cur.get(key, none)) for key in base.keys() | cur.keys()}


def _binary(base: np.ndarray, cur: np.ndarray) -> bool:
    return bool(np.isin(base, (0.0, 1.0)).all() and np.isin(cur, (0.0, 1.0)).all())


@dataclass
class _Test:
    """One row's test: its name, one-sided p-values, the smallest p-value it could reach on
    its items (conditional on what moved: 1 when nothing did), and the paired counts."""

    def floor_with(self, n_resamples: int) -> float:
        """The floor the same test reaches with `n_resamples` resamples."""
        if self.exact_floor is None:
            return self.floor
        return max(self.exact_floor, 1.0 / (n_resamples + 1))

    name: str
    p_worse: float
    p_better: float
    floor: float
    n_worse: int = 0
    n_better: int = 0
    # A Monte Carlo test's floor without its resampling limit (1 / the number of sign
    # patterns or splits); None for a test that enumerates or is exact.
    exact_floor: float | None = None


def _paired_test(
    base: np.ndarray, cur: np.ndarray, higher: bool, rule: RegressionRule, n_resamples: int
) -> _Test:
    """The exact sign test for 0/1 items, the paired sign-flip test else (`n_resamples` sign
    vectors beyond its exact enumeration)."""
    worse = (cur < base) if higher else (cur > base)
    better = (cur > base) if higher else (cur < base)
    n_worse, n_better = int(worse.sum()), int(better.sum())
    moved = n_worse + n_better
    if _binary(base, cur):
        p_worse = float(sign_test(np.array([n_worse]), np.array([n_better]))[0])
        p_better = float(sign_test(np.array([n_better]), np.array([n_worse]))[0])
        return _Test(SIGN_TEST, p_worse, p_better, 2.0**-moved, n_worse, n_better)
    p_less, p_greater = paired_randomization_tails(
        base, cur, n_resamples=n_resamples, seed=rule.seed
    )
    p_worse, p_better = (p_less, p_greater) if higher else (p_greater, p_less)
    floor = sign_flip_p_floor(moved, n_resamples)
    exact = 2.0**-moved if moved > EXACT_SIGN_FLIP_MAX else None
    return _Test(RANDOMIZATION_TEST, p_worse, p_better, floor, n_worse, n_better, exact)


def _unpaired_test(
    metric: str,
    base: np.ndarray,
    cur: np.ndarray,
    higher: bool,
    rule: RegressionRule,
    n_resamples: int,
) -> _Test:
    """The quantile test for a latency percentile, Fisher's for 0/1 values, the permutation
    test of means else (`n_resamples` random splits when they cannot all be enumerated); the
    floor of the permutation test is that of its resampling, 0 under its normal
    approximation."""
    if metric in LATENCY_QUANTILES:
        quantile = LATENCY_QUANTILES[metric]
        test, (p_less, p_greater) = QUANTILE_TEST, quantile_exceedance_tails(base, cur, quantile)
        cut = np.quantile(np.concatenate([base, cur]), quantile)
        floor = fisher_p_floor(base.size, cur.size, int((base > cut).sum() + (cur > cut).sum()))
    elif _binary(base, cur):
        test, (p_less, p_greater) = FISHER_TEST, fisher_exact_tails(base, cur)
        floor = fisher_p_floor(base.size, cur.size, int(base.sum() + cur.sum()))
    else:
        test = PERMUTATION_TEST
        p_less, p_greater = permutation_tails(base, cur, n_resamples=n_resamples, seed=rule.seed)
        splits = math.comb(base.size + cur.size, cur.size)
        normal = base.size + cur.size > NORMAL_APPROXIMATION_ABOVE
        floor = 0.0 if normal else 1.0 / min(splits, n_resamples + 1)
        if np.ptp(np.concatenate([base, cur])) == 0.0:
            floor = 1.0
        limited = floor < 1.0 and not normal and splits > n_resamples
        exact = (1.0 / splits if splits < 1e300 else 0.0) if limited else None
        p_worse, p_better = (p_less, p_greater) if higher else (p_greater, p_less)
        return _Test(test, p_worse, p_better, floor, exact_floor=exact)
    p_worse, p_better = (p_less, p_greater) if higher else (p_greater, p_less)
    return _Test(test, p_worse, p_better, floor)


def _changed_roles(current: PartitionScores, baseline: PartitionScores) -> dict[str, str]:
    """Role → "old → new" for every model whose identity differs (unknown ones are skipped)."""
    changed = {}
    for role in IDENTITY_ROLES:
        old, new = baseline.identities.get(role), current.identities.get(role)
        if old and new and old != new:
            changed[role] = f"{old} → {new}"
    return changed


def _frame_values(scorecard: pd.DataFrame, suffix: str) -> pd.DataFrame:
    columns = [
        *KEY,
        "value",
        "count",
        "error_rate",
        "higher_is_better",
        "regression_threshold",
        "regression_min_change",
        "role",
    ]
    present = [c for c in columns if c in scorecard.columns]
    frame = scorecard[present]
    keep = [is_quality_metric(t, m) for t, m in zip(frame["tier"], frame["metric"], strict=True)]
    frame = frame[np.asarray(keep, dtype=bool)]
    return frame.rename(columns={c: c + suffix for c in present if c not in KEY})


def _row_reason(
    baseline: PartitionScores | None,
    base: float,
    cur: float,
    errors: float,
    moved: list[str],
) -> str:
    """Why a row is not comparable ("" when it is), in words."""
    if baseline is None:
        return "no baseline yet (first evaluation)"
    if not np.isfinite(base) and not np.isfinite(cur):
        return NO_VALUE
    if not np.isfinite(cur):  # Tiers 0 and 2 name their system after the model that changed
        return "; ".join(moved) if moved else MISSING_TODAY
    if errors > OUTAGE_ERROR_RATE:
        return f"{OUTAGE}: {errors:.0%} of its judgments failed today"
    if not np.isfinite(base):
        return "; ".join(moved) if moved else "no baseline value"
    return "; ".join(moved)


def _role_bars(
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


def _resolve_monte_carlo(
    tests: list[_Test | None],
    runners: list[Callable[[int], _Test] | None],
    bars: np.ndarray,
    family: np.ndarray,
    rule: RegressionRule,
) -> np.ndarray:
    """Each row's resamples: the rule's, or, for a Monte Carlo test in a family whose bar is
    below `MONTE_CARLO_RESOLUTION / (n_resamples + 1)`, enough for p-values down to
    bar / `MONTE_CARLO_RESOLUTION`. Such a row's floor is the one those resamples reach, and
    its test is re-run with them when its first p-value (either tail) is at most
    `MONTE_CARLO_RESOLUTION / (n_resamples + 1)`; a larger first p-value stands (the two-stage
    p-value is still valid: it is never below both stages' own). Tests are updated in place."""
    resamples = np.full(len(tests), rule.n_resamples, dtype=np.int64)
    screen = MONTE_CARLO_RESOLUTION / (rule.n_resamples + 1)
    for i in np.flatnonzero(family):
        test, run = tests[i], runners[i]
        needed = math.ceil(MONTE_CARLO_RESOLUTION / bars[i])
        if test is None or run is None or test.exact_floor is None or needed <= rule.n_resamples:
            continue
        resamples[i] = needed
        if min(test.p_worse, test.p_better) <= screen:
            tests[i] = run(needed)
        else:
            tests[i] = replace(test, floor=test.floor_with(needed))
    return resamples


def compare_partitions(
    current: PartitionScores,
    baseline: PartitionScores | None,
    rule: RegressionRule,
    history: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One verdict row per quality metric of `current` or `baseline` (see the module doc);
    `history`: earlier verdict rows of the version (`tier`, `system`, `metric`, `n_paired`,
    `noise`) whose noise the planner pools with today's."""
    base_card = baseline.scorecard if baseline is not None else current.scorecard.iloc[0:0]
    rows = _frame_values(current.scorecard, "_c").merge(
        _frame_values(base_card, "_b"), on=KEY, how="outer"
    )
    if rows.empty:
        return pd.DataFrame(columns=METRIC_REGRESSION_COLUMNS)
    for column in ("higher_is_better", "regression_threshold", "regression_min_change", "role"):
        if column + "_c" not in rows:
            rows[column + "_c"] = rows.get(column + "_b", np.nan)
        rows[column] = rows[column + "_c"].combine_first(
            rows.get(column + "_b", rows[column + "_c"])
        )
    rows["regression_min_change"] = rows["regression_min_change"].fillna(0.0)
    role = rows["role"].fillna(SECONDARY).astype(str).to_numpy()
    cur = rows["value_c"].to_numpy(dtype=float)
    errors = rows.get("error_rate_c", pd.Series(0.0, index=rows.index)).fillna(0.0).to_numpy(float)
    count = rows.get("count_c", pd.Series(np.nan, index=rows.index)).to_numpy(float)
    base = rows["value_b"].to_numpy(dtype=float)
    higher = rows["higher_is_better"].astype(bool).to_numpy()
    tolerance = rows["regression_threshold"].to_numpy(dtype=float)
    allowed = np.maximum(tolerance * np.abs(base), rows["regression_min_change"].to_numpy(float))
    worsening = np.where(higher, base - cur, cur - base)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(base != 0, (cur - base) / np.abs(base), np.nan)
    paired = _paired(current.items, baseline.items) if baseline is not None else {}
    samples = _unpaired(current.samples, baseline.samples) if baseline is not None else {}
    changed = _changed_roles(current, baseline) if baseline is not None else {}
    n = len(rows)
    tests: list[_Test | None] = [None] * n
    runners: list[Callable[[int], _Test] | None] = [None] * n
    tested: list[np.ndarray | None] = [None] * n
    reason = np.full(n, "", dtype=object)
    counts = np.zeros((n, 3), dtype=np.int64)
    asked = np.zeros(n, dtype=np.int64)
    silent, outage, silence = _no_traffic(rows, base, cur, current.traffic_every_day)
    for i, (tier, system, metric) in enumerate(zip(*(rows[k] for k in KEY), strict=True)):
        moved = [
            f"{who} changed ({ids})"
            + (f": {note}" if (note := baseline.bridge_notes.get((who, tier))) else "")
            for who, ids in changed.items()
            if model_feeds(who, tier, system, metric)
            and (tier, system, metric) not in baseline.bridged.get(who, frozenset())
        ]
        reason[i] = _row_reason(baseline, base[i], cur[i], errors[i], moved)
        if silent[i] and baseline is not None:
            reason[i] = silence[i]
        items, sample = paired.get((tier, system, metric)), samples.get((tier, system, metric))
        if items is not None:
            counts[i], asked[i] = (items[0].size, items[2], items[3]), items[4]
        elif sample is not None:
            counts[i, 1:] = (sample[0].size, sample[1].size)
        if reason[i]:
            continue
        if items is not None and items[0].size:
            runners[i] = partial(_paired_test, items[0], items[1], bool(higher[i]), rule)
            tested[i] = np.where(higher[i], items[0] - items[1], items[1] - items[0])
        elif sample is not None and sample[0].size and sample[1].size:
            runners[i] = partial(_unpaired_test, metric, *sample, bool(higher[i]), rule)
        if runners[i] is not None:
            tests[i] = runners[i](rule.n_resamples)
    comparable = reason == ""
    has_test = np.array([t is not None for t in tests])
    floors = np.array([t.floor if t else np.nan for t in tests])
    monitor, primary = role == MONITOR, role == PRIMARY
    degenerate = has_test & (floors >= 1.0)
    active = comparable & has_test & ~degenerate & ~monitor
    bars = _role_bars(primary, int((active & primary).sum()), int((active & ~primary).sum()), rule)
    weights = np.ones(n)
    weights[active] = role_weights(primary[active], rule.primary_share)
    watched = comparable & has_test & ~degenerate & monitor
    bars[watched] = rule.alpha / max(1, int(watched.sum()))
    resamples = _resolve_monte_carlo(tests, runners, bars, active | watched, rule)
    floors = np.array([t.floor if t else np.nan for t in tests])
    p_worse = np.array([t.p_worse if t else np.nan for t in tests])
    p_better = np.array([t.p_better if t else np.nan for t in tests])
    q_worse, q_better = np.full(n, np.nan), np.full(n, np.nan)
    for family, w in ((active, weights[active]), (watched, None)):
        q_worse[family] = benjamini_hochberg(p_worse[family], w)
        q_better[family] = benjamini_hochberg(p_better[family], w)
    towards_bad = worsening > 0
    q_value = np.where(towards_bad, q_worse, q_better)
    untestable = active & (floors > bars) & ~(q_value < rule.alpha)
    effect_only = comparable & ~has_test
    beyond_bad = comparable & (worsening > allowed) & (worsening > 0)
    beyond_good = comparable & (-worsening > allowed) & (worsening < 0)
    regressed = beyond_bad & (effect_only | (q_worse < rule.alpha))
    improved = beyond_good & (effect_only | (q_better < rule.alpha))
    verdict = np.select(
        [regressed, improved, untestable, comparable],
        [REGRESSED, IMPROVED, UNTESTABLE, NO_CHANGE],
        NOT_COMPARABLE,
    ).astype(object)
    p_value = np.where(towards_bad, p_worse, p_better)
    too_few = (
        untestable
        & primary
        & beyond_bad
        & (worsening > rule.untested_tolerance * np.abs(base))
        & (p_worse < rule.alpha)
    )
    n_worse = np.array([t.n_worse if t else 0 for t in tests])
    n_better = np.array([t.n_better if t else 0 for t in tests])
    noise = np.array([directional_noise(t) if t is not None else np.nan for t in tested])
    earlier = _noise_history(rows, history)
    detectable, needed = np.full(n, np.nan), np.full(n, np.nan)
    basis = np.full(n, "", dtype=object)
    for i in np.flatnonzero(comparable & (base != 0)):
        name = tests[i].name if tests[i] else EFFECT_ONLY
        detectable[i] = _detectable_change(
            name, tested[i], int(n_better[i]), bars[i], allowed[i], int(resamples[i])
        ) / abs(base[i])
        if primary[i] and tested[i] is not None and name in (SIGN_TEST, RANDOMIZATION_TEST):
            days = [*earlier.get(tuple(rows[KEY].iloc[i]), [])]
            days.append((noise[i], counts[i, 0]))
            needed[i], basis[i] = _items_needed(name, days, base[i], bars[i], int(resamples[i]))
    to_detect = np.full(n, np.nan)
    for i in np.flatnonzero(comparable):
        name = tests[i].name if tests[i] else EFFECT_ONLY
        if untestable[i]:
            to_detect[i] = _items_to_detect(tested[i], int(n_better[i]), bars[i], int(resamples[i]))
            reason[i] = _untestable_reason(
                int(counts[i, 0]),
                floors[i],
                bars[i],
                to_detect[i],
                p_worse[i] if too_few[i] else None,
            )
        elif degenerate[i] and name in UNPAIRED_TESTS:
            reason[i] = "every value equal on both dates: nothing to test"
        elif degenerate[i]:
            reason[i] = "no item changed: nothing to test"
        else:
            reason[i] = _reason(verdict[i], effect_only[i], q_value[i], rule.alpha, tolerance[i])
        if name in UNPAIRED_TESTS:
            reason[i] += (
                f" (unpaired: {counts[i, 1]} values on the baseline date, {counts[i, 2]} today)"
            )
        if monitor[i]:
            reason[i] += " (monitored: never alerted)"
    dropped, coverage = _coverage_dropped(counts, asked, comparable, rule)
    for i in np.flatnonzero(dropped):
        keep = verdict[i] == REGRESSED
        reason[i] = f"{reason[i]}; {coverage[i]}" if keep else f"{coverage[i]} ({reason[i]})"
        verdict[i] = verdict[i] if keep else NOT_COMPARABLE
    alert = ~monitor & (
        regressed
        | too_few
        | (dropped & primary)
        | (outage & (baseline is not None))
        | (reason == MISSING_TODAY)
        | np.char.startswith(reason.astype(str), OUTAGE)
    )
    result = pd.DataFrame(
        {
            "dataset_version": current.version,
            "date": current.date,
            "baseline_version": baseline.version if baseline is not None else None,
            "baseline_date": baseline.date if baseline is not None else None,
            **{column: rows[column].to_numpy() for column in KEY},
            "baseline_value": base,
            "value": cur,
            "relative_change": relative,
            "role": role,
            "threshold": tolerance,
            "higher_is_better": higher,
            "n_items": np.where(counts[:, 0] > 0, counts[:, 0], count),
            "n_paired": counts[:, 0],
            "n_only_baseline": counts[:, 1],
            "n_only_current": counts[:, 2],
            "n_worse": n_worse,
            "n_better": n_better,
            "test": [
                t.name if t else (EFFECT_ONLY if c else "")
                for t, c in zip(tests, comparable, strict=True)
            ],
            "p_value": p_value,
            "q_value": q_value,
            "bar": np.where(comparable & has_test, bars, np.nan),
            "detectable_change": detectable,
            "noise": noise,
            "items_needed": needed,
            "items_needed_basis": basis,
            "items_to_detect": to_detect,
            "verdict": verdict,
            "reason": reason,
            "alert": alert,
            **{r: current.identities.get(r) for r in IDENTITY_ROLES},
        }
    )
    result["alert_key"] = alert_keys(result)
    order = result.assign(_rank=~result["alert"]).sort_values(["_rank", *KEY], kind="stable")
    return order[METRIC_REGRESSION_COLUMNS].reset_index(drop=True)


def _noise_history(
    rows: pd.DataFrame, history: pd.DataFrame | None
) -> dict[tuple[str, str, str], list[tuple[float, float]]]:
    """Per key of `rows`: the (noise, n_paired) of each earlier verdict row in `history`."""
    if history is None or history.empty or "noise" not in history.columns:
        return {}
    kept = history.merge(rows[KEY].drop_duplicates(), on=KEY)
    return {
        key: list(zip(g["noise"].astype(float), g["n_paired"].astype(float), strict=True))
        for key, g in kept.groupby(KEY, sort=False)
    }


def _items_needed(
    test: str, days: list[tuple[float, float]], base: float, bar: float, n_resamples: int
) -> tuple[float, str]:
    """About how many paired items a 10% drop (`ITEMS_NEEDED_DROP`) of this metric needs to be
    flagged alone at `bar`, and the assumption in words: the noise of `days` ((noise,
    n_paired) of each day) pooled (`metrics.sensitivity.pooled_noise`) with the floor of the
    test's kind; the sign test's items moving back are half the pooled discordance, the
    sign-flip test's spread its square root."""
    counted = sum(1 for m, k in days if math.isfinite(m) and k > 0)
    span = f"over {counted} day{'s' if counted != 1 else ''}"
    noise, weights = [m for m, _ in days], [k for _, k in days]
    if test == SIGN_TEST:
        m2 = pooled_noise(noise, weights, DISCORDANCE_FLOOR)
        floored = " (the floor)" if m2 == DISCORDANCE_FLOOR else ""
        needed = sign_test_items_needed(abs(base), m2 / 2, ITEMS_NEEDED_DROP, bar)
        return needed, f"assuming a discordance of {m2:.1%}{floored}, pooled {span}"
    floor = (SPREAD_FLOOR * base) ** 2
    m2 = pooled_noise(noise, weights, floor)
    floored = f" (the floor, {SPREAD_FLOOR:.0%} of the baseline)" if m2 == floor else ""
    spread = math.sqrt(m2)
    needed = sign_flip_items_needed(spread, ITEMS_NEEDED_DROP * abs(base), bar, n_resamples)
    return needed, f"assuming a per-item spread of {spread:.3g}{floored}, pooled {span}"


def _items_to_detect(
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


def _untestable_reason(
    n_paired: int, floor: float, bar: float, needed: float, alerted_p: float | None
) -> str:
    """Why a row cannot be tested, and about how many items (`needed`) would detect today's
    change; `alerted_p` (the metric's own one-sided p-value) when it is alerted on its effect."""
    bounds = f"smallest reachable p {floor:.3g} > this metric's bar {bar:.3g}"
    if alerted_p is None:
        text = f"n = {n_paired}: too few items to test ({bounds})"
    else:
        own = f"its own test alone: p = {alerted_p:.3g}"
        text = f"{TOO_FEW_ITEMS}: n = {n_paired} ({bounds}; {own})"
    if n_paired and math.isfinite(needed):
        text += f"; about {int(needed)} items would detect this change"
    return text


def _detectable_change(
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


def _reason(verdict: str, effect_only: bool, q: float, alpha: float, tolerance: float) -> str:
    """Why a comparable metric got its verdict, in words."""
    evidence = "no per-item scores: effect rule alone" if effect_only else f"q = {q:.4g}"
    if verdict in (REGRESSED, IMPROVED):
        bound = "" if effect_only else f" < α = {alpha:g}"
        return f"{evidence}{bound}, change beyond the {tolerance:.0%} tolerance"
    if effect_only or q < alpha:
        return f"{evidence}; change within the {tolerance:.0%} tolerance"
    return f"{evidence} ≥ α = {alpha:g}"
