"""Regression detection: each scorecard metric against its baseline, tested and FDR-controlled.

`compare_partitions` gives one row per (tier, system, metric) with a verdict:

- **paired test** on the items both dates scored (`PartitionScores.items`): 0/1 metrics use the
  exact one-sided sign test on the discordant pairs (McNemar), other metrics the one-sided
  paired sign-flip randomization test (seeded); items scored on one date only are counted
  (`n_only_baseline`, `n_only_current`), not silently dropped;
- **unpaired test** on samples of each date (`PartitionScores.samples`: the system under
  test's per-question latencies, and the traffic tier's interactions, which differ from day to
  day): latency percentiles use the one-sided quantile exceedance test (the share of each
  day's values above the pooled percentile, compared by Fisher's exact test), 0/1 metrics the
  one-sided Fisher's exact test, other metrics the one-sided two-sample permutation test of
  the difference in means (seeded). No item is paired, so `n_paired` (and `n_worse`,
  `n_better`) is 0, and the sample sizes are `n_only_baseline` (the baseline date's values)
  and `n_only_current` (today's); the `reason` repeats them. Error rows (NaN) are left out of
  both samples;
- **Benjamini–Hochberg** q-values over the partition's tested metrics, paired and unpaired in
  one family (one family per direction);
- `regressed` needs q < α (0.05 by default) **and** a change in the bad direction beyond the
  metric's tolerance: `regression_threshold × |baseline|` (5% by default, per metric in
  `config/thresholds.yaml`) and `regression_min_change` in absolute terms. `improved` mirrors
  it. Metrics without per-item values (silhouette, the judge's latency, traffic volume and
  total cost, single numbers) are judged by the effect rule alone, and the row says so in
  `test`;
- `not comparable` with the `reason`: no baseline yet; a new metric; `missing today` (a value
  on the baseline, NaN or absent today: an alert, e.g. a judge outage); `judge outage` (more
  than half of the metric's judgments failed today, whatever its value: an alert); or
  `judge changed` /
  `generator changed` / `embedder changed` for the tiers the model feeds (shown, never alerted).

Dataset statistics (tier `dataset`) and descriptive counts (`total_pairs`, `n_*`, sample sizes)
are not quality and are not compared.

`detect_regressions` is the previous unpaired rule (relative drop beyond the tolerance and the
baseline outside today's bootstrap CI), kept so `benchmarks/regression_power.py` can measure
both side by side.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from rag_eval_pipeline.metrics.sensitivity import sign_flip_min_shift, sign_test_min_worse
from rag_eval_pipeline.metrics.stats import (
    benjamini_hochberg,
    fisher_exact_tails,
    paired_randomization_tails,
    permutation_tails,
    quantile_exceedance_tails,
    sign_test,
)
from rag_eval_pipeline.metrics.traffic import LATENCY_QUANTILES

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


REGRESSED, IMPROVED, NO_CHANGE, NOT_COMPARABLE = (
    "regressed",
    "improved",
    "no significant change",
    "not comparable",
)
VERDICTS = (REGRESSED, IMPROVED, NO_CHANGE, NOT_COMPARABLE)
MISSING_TODAY = "missing today"
# The reason of a metric compared across a judge change (`evaluation.judge_bridge`) starts so.
REJUDGED = "baseline re-judged by the new judge"
# A metric most of whose judgments failed today is an outage, alerted whatever its value.
OUTAGE_ERROR_RATE = 0.5
OUTAGE = "judge outage"
EFFECT_ONLY = "effect rule only (no per-item scores)"
SIGN_TEST = "exact sign test (McNemar)"
RANDOMIZATION_TEST = "paired sign-flip randomization"
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
    "threshold",
    "higher_is_better",
    "n_paired",
    "n_only_baseline",
    "n_only_current",
    "n_worse",
    "n_better",
    "test",
    "p_value",
    "q_value",
    "detectable_change",
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
    # A baseline re-scored by today's judge (`evaluation.judge_bridge`): the keys re-scored,
    # compared although the judge changed, and why the others could not be.
    bridged: frozenset[tuple[str, str, str]] = frozenset()
    bridge_note: str | None = None


@dataclass(frozen=True)
class RegressionRule:
    """FDR level α and the randomization test's resamples and seed (a re-run gives the same)."""

    alpha: float = 0.05
    n_resamples: int = 10000
    seed: int = 0


def model_feeds(role: str, tier: str, metric: str) -> bool:
    """Whether the `role` model's output goes into `metric` of `tier` (its change makes the
    metric incomparable with the baseline)."""
    partial = ROLE_TIER_METRICS.get(role, {}).get(tier, frozenset())
    return tier in ROLE_TIERS[role] or metric in partial


def is_quality_metric(tier: str, metric: str) -> bool:
    """False for dataset statistics and descriptive counts, which are never compared."""
    return tier != "dataset" and not DESCRIPTIVE.search(metric)


def _paired(
    current: pd.DataFrame, baseline: pd.DataFrame
) -> dict[tuple[str, str, str], tuple[np.ndarray, np.ndarray, int, int]]:
    """Per key: paired (baseline, current) values of items finite on both dates, and the counts
    of items with a value on the baseline only and on today only."""
    both = baseline.merge(current, on=[*KEY, "item_id"], how="outer", suffixes=("_b", "_c"))
    paired = {}
    for key, rows in both.groupby(KEY, sort=False):
        base = rows["value_b"].to_numpy(dtype=float)
        cur = rows["value_c"].to_numpy(dtype=float)
        has_b, has_c = np.isfinite(base), np.isfinite(cur)
        ok = has_b & has_c
        paired[key] = (base[ok], cur[ok], int((has_b & ~has_c).sum()), int((has_c & ~has_b).sum()))
    return paired


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


def _paired_p(
    base: np.ndarray, cur: np.ndarray, higher: bool, rule: RegressionRule
) -> tuple[str, float, float, int, int]:
    """(test, p worse, p better, n worse, n better) for one metric's paired items."""
    worse = (cur < base) if higher else (cur > base)
    better = (cur > base) if higher else (cur < base)
    n_worse, n_better = int(worse.sum()), int(better.sum())
    if _binary(base, cur):
        p_worse = float(sign_test(np.array([n_worse]), np.array([n_better]))[0])
        p_better = float(sign_test(np.array([n_better]), np.array([n_worse]))[0])
        return SIGN_TEST, p_worse, p_better, n_worse, n_better
    p_less, p_greater = paired_randomization_tails(
        base, cur, n_resamples=rule.n_resamples, seed=rule.seed
    )
    p_worse, p_better = (p_less, p_greater) if higher else (p_greater, p_less)
    return RANDOMIZATION_TEST, p_worse, p_better, n_worse, n_better


def _unpaired_p(
    metric: str, base: np.ndarray, cur: np.ndarray, higher: bool, rule: RegressionRule
) -> tuple[str, float, float]:
    """(test, p worse, p better) for one metric's two independent samples: the quantile test
    for a latency percentile, Fisher's for 0/1 values, the permutation test of means else."""
    if metric in LATENCY_QUANTILES:
        quantile = LATENCY_QUANTILES[metric]
        test, (p_less, p_greater) = QUANTILE_TEST, quantile_exceedance_tails(base, cur, quantile)
    elif _binary(base, cur):
        test, (p_less, p_greater) = FISHER_TEST, fisher_exact_tails(base, cur)
    else:
        test = PERMUTATION_TEST
        p_less, p_greater = permutation_tails(
            base, cur, n_resamples=rule.n_resamples, seed=rule.seed
        )
    return (test, p_less, p_greater) if higher else (test, p_greater, p_less)


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
        "error_rate",
        "higher_is_better",
        "regression_threshold",
        "regression_min_change",
    ]
    present = [c for c in columns if c in scorecard.columns]
    frame = scorecard[present]
    keep = [is_quality_metric(t, m) for t, m in zip(frame["tier"], frame["metric"], strict=True)]
    frame = frame[np.asarray(keep, dtype=bool)]
    return frame.rename(columns={c: c + suffix for c in present if c not in KEY})


def compare_partitions(
    current: PartitionScores, baseline: PartitionScores | None, rule: RegressionRule
) -> pd.DataFrame:
    """One verdict row per quality metric of `current` or `baseline` (see the module doc)."""
    base_card = baseline.scorecard if baseline is not None else current.scorecard.iloc[0:0]
    rows = _frame_values(current.scorecard, "_c").merge(
        _frame_values(base_card, "_b"), on=KEY, how="outer"
    )
    if rows.empty:
        return pd.DataFrame(columns=METRIC_REGRESSION_COLUMNS)
    for column in ("higher_is_better", "regression_threshold", "regression_min_change"):
        rows[column] = rows[column + "_c"].combine_first(rows[column + "_b"])
    rows["regression_min_change"] = rows["regression_min_change"].fillna(0.0)
    cur = rows["value_c"].to_numpy(dtype=float)
    errors = rows.get("error_rate_c", pd.Series(0.0, index=rows.index)).fillna(0.0).to_numpy(float)
    base = rows["value_b"].to_numpy(dtype=float)
    higher = rows["higher_is_better"].astype(bool).to_numpy()
    tolerance = rows["regression_threshold"].to_numpy(dtype=float)
    allowed = np.maximum(tolerance * np.abs(base), rows["regression_min_change"].to_numpy(float))
    worsening = np.where(higher, base - cur, cur - base)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(base != 0, (cur - base) / np.abs(base), np.sign(cur - base) * np.inf)
    paired = _paired(current.items, baseline.items) if baseline is not None else {}
    samples = _unpaired(current.samples, baseline.samples) if baseline is not None else {}
    tested: list[np.ndarray | None] = [None] * len(rows)
    changed = _changed_roles(current, baseline) if baseline is not None else {}
    n = len(rows)
    test = np.full(n, "", dtype=object)
    reason = np.full(n, "", dtype=object)
    p_worse, p_better = np.full(n, np.nan), np.full(n, np.nan)
    counts = np.zeros((n, 5), dtype=np.int64)
    for i, (tier, system, metric) in enumerate(zip(*(rows[k] for k in KEY), strict=True)):
        if baseline is None:
            reason[i] = "no baseline yet (first evaluation)"
            continue
        moved = [
            f"{role} changed ({ids})"
            + (f": {baseline.bridge_note}" if role == "judge" and baseline.bridge_note else "")
            for role, ids in changed.items()
            if model_feeds(role, tier, metric)
            and not (role == "judge" and (tier, system, metric) in baseline.bridged)
        ]
        if np.isfinite(base[i]) and not np.isfinite(cur[i]):
            reason[i] = MISSING_TODAY
        elif errors[i] > OUTAGE_ERROR_RATE:
            reason[i] = f"{OUTAGE}: {errors[i]:.0%} of its judgments failed today"
        elif not np.isfinite(base[i]):
            reason[i] = "no baseline value" if np.isfinite(cur[i]) else "no value on either date"
        elif moved:
            reason[i] = "; ".join(moved)
        items, sample = paired.get((tier, system, metric)), samples.get((tier, system, metric))
        if items is not None:
            counts[i, 0], counts[i, 1], counts[i, 2] = items[0].size, items[2], items[3]
        elif sample is not None:
            counts[i, 1], counts[i, 2] = sample[0].size, sample[1].size
        if reason[i]:
            continue
        if items is not None and items[0].size:
            test[i], p_worse[i], p_better[i], counts[i, 3], counts[i, 4] = _paired_p(
                items[0], items[1], bool(higher[i]), rule
            )
            tested[i] = np.where(higher[i], items[0] - items[1], items[1] - items[0])
        elif sample is not None and sample[0].size and sample[1].size:
            test[i], p_worse[i], p_better[i] = _unpaired_p(metric, *sample, bool(higher[i]), rule)
        else:
            test[i] = EFFECT_ONLY
    q_worse, q_better = benjamini_hochberg(p_worse), benjamini_hochberg(p_better)
    comparable = reason == ""
    effect_only = test == EFFECT_ONLY
    beyond_bad = comparable & (worsening > allowed) & (worsening > 0)
    beyond_good = comparable & (-worsening > allowed) & (worsening < 0)
    regressed = beyond_bad & (effect_only | (q_worse < rule.alpha))
    improved = beyond_good & (effect_only | (q_better < rule.alpha))
    verdict = np.where(
        regressed,
        REGRESSED,
        np.where(improved, IMPROVED, np.where(comparable, NO_CHANGE, NOT_COMPARABLE)),
    )
    towards_bad = worsening > 0
    p_value = np.where(towards_bad, p_worse, p_better)
    q_value = np.where(towards_bad, q_worse, q_better)
    for i in np.flatnonzero(comparable):
        reason[i] = _reason(verdict[i], effect_only[i], q_value[i], rule.alpha, tolerance[i])
        if test[i] in UNPAIRED_TESTS:
            reason[i] += (
                f" (unpaired: {counts[i, 1]} values on the baseline date, {counts[i, 2]} today)"
            )
    bar = rule.alpha / max(1, int(np.isfinite(p_worse).sum()))
    detectable = np.full(n, np.nan)
    for i in np.flatnonzero(comparable & (base != 0)):
        detectable[i] = _detectable_change(
            test[i], tested[i], int(counts[i, 4]), bar, allowed[i], rule.n_resamples
        ) / abs(base[i])
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
            "threshold": tolerance,
            "higher_is_better": higher,
            "n_paired": counts[:, 0],
            "n_only_baseline": counts[:, 1],
            "n_only_current": counts[:, 2],
            "n_worse": counts[:, 3],
            "n_better": counts[:, 4],
            "test": test,
            "p_value": p_value,
            "q_value": q_value,
            "detectable_change": detectable,
            "verdict": verdict,
            "reason": reason,
            "alert": regressed
            | (reason == MISSING_TODAY)
            | np.char.startswith(reason.astype(str), OUTAGE),
            **{role: current.identities.get(role) for role in IDENTITY_ROLES},
        }
    )
    result["alert_key"] = alert_keys(result)
    order = result.assign(_rank=~result["alert"]).sort_values(["_rank", *KEY], kind="stable")
    return order[METRIC_REGRESSION_COLUMNS].reset_index(drop=True)


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
