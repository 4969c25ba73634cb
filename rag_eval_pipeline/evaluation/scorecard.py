"""The scorecard: every tier's quality rows in one table, with threshold bands and direction.

Thresholds come from a YAML file (`config/thresholds.yaml`, see its header), overridable per
dataset version. A metric is lower-is-better when the file says so or, by default, when its
name mentions latency, an error or refusal rate, an error count, a cost or a disagreement
(`mean_abs_diff`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

SCORECARD_COLUMNS = [
    "dataset_version",
    "date",
    "tier",
    "system",
    "metric",
    "value",
    "std",
    "count",
    "ci_low",
    "ci_high",
    "n_errors",
    "error_rate",
    "higher_is_better",
    "band",
    "regression_threshold",
    "regression_min_change",
]
LOWER_IS_BETTER_MARKERS = (
    "latency",
    "error_rate",
    "refusal_rate",
    "mean_abs_diff",
    "n_errors",
    "cost",
)
EXCELLENT, GOOD, NEEDS_ATTENTION = "excellent", "good", "needs attention"


@dataclass(frozen=True)
class Thresholds:
    """Bands and regression tolerances per metric, with per-version overrides."""

    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    versions: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    default_regression: float = 0.05

    @classmethod
    def load(cls, path: Path) -> Thresholds:
        """Read a thresholds YAML file; a missing file means no bands and 5% regressions."""
        if not Path(path).exists():
            return cls()
        raw = yaml.safe_load(Path(path).read_text()) or {}
        return cls(
            metrics=raw.get("metrics") or {},
            versions=raw.get("versions") or {},
            default_regression=float((raw.get("defaults") or {}).get("regression", 0.05)),
        )

    def with_defaults(self, rules: dict[str, dict[str, Any]]) -> Thresholds:
        """These thresholds with `rules` for metrics the file does not name (e.g. the bands
        declared with a criterion in `config/criteria.yaml`); the file's own rules win."""
        return replace(self, metrics={**rules, **self.metrics})

    def rule(self, metric: str, version: str) -> dict[str, Any]:
        """The merged rule of `metric` for `version` (version overrides win)."""
        rule = {
            **_lookup(self.metrics, metric),
            **_lookup(self.versions.get(version, {}), metric),
        }
        rule.setdefault("higher_is_better", not any(m in metric for m in LOWER_IS_BETTER_MARKERS))
        rule.setdefault("regression", self.default_regression)
        rule.setdefault("min_change", 0.0)
        return rule


def _lookup(rules: dict[str, dict[str, Any]], metric: str) -> dict[str, Any]:
    """The rule named `metric`, else that of the longest `prefix*` pattern it starts with
    (e.g. `kappa_*` for `kappa_judge_vs_rater_a`), else none."""
    if metric in rules:
        return rules[metric]
    prefixes = [k for k in rules if k.endswith("*") and metric.startswith(k[:-1])]
    return rules[max(prefixes, key=len)] if prefixes else {}


def band(value: float, rule: dict[str, Any]) -> str | None:
    """`excellent`, `good` or `needs attention` for `value` under `rule`; None without bounds."""
    if "excellent" not in rule or "good" not in rule or value is None or np.isnan(value):
        return None
    if rule["higher_is_better"]:
        if value > rule["excellent"]:
            return EXCELLENT
        return GOOD if value >= rule["good"] else NEEDS_ATTENTION
    if value < rule["excellent"]:
        return EXCELLENT
    return GOOD if value <= rule["good"] else NEEDS_ATTENTION


def build_scorecard(
    qualities: Sequence[pd.DataFrame], version: str, date: str, thresholds: Thresholds
) -> pd.DataFrame:
    """One row per (tier, system, metric) with value (the mean), CI, errors, band, direction."""
    present = [q for q in qualities if not q.empty]
    if not present:
        return pd.DataFrame(columns=SCORECARD_COLUMNS)
    rows = pd.concat(present, ignore_index=True).rename(columns={"mean": "value"})
    rules = [thresholds.rule(metric, version) for metric in rows["metric"]]
    rows["higher_is_better"] = [bool(r["higher_is_better"]) for r in rules]
    rows["band"] = [band(v, r) for v, r in zip(rows["value"], rules, strict=True)]
    rows["regression_threshold"] = [float(r["regression"]) for r in rules]
    rows["regression_min_change"] = [float(r["min_change"]) for r in rules]
    rows = rows.assign(dataset_version=version, date=date)
    return rows[SCORECARD_COLUMNS].sort_values(["tier", "system", "metric"], kind="stable")
