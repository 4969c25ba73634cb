"""The scorecard: every tier's quality rows in one table, with threshold bands and direction.

Thresholds come from a YAML file (`config/thresholds.yaml`, see its header), overridable per
dataset version. A metric is lower-is-better when the file says so or, by default, when its
name mentions latency, an error or refusal rate, an error count, a cost or a disagreement
(`mean_abs_diff`), or is one of the `cost` tier's counts. The `cost` tier is monitored
(`DEFAULT_TIER_ROLES`) unless the file gives its tier roles.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pandas as pd
from pydantic import AfterValidator, BeforeValidator, WithJsonSchema

from rag_eval_pipeline.storage.config_files import Bands, ConfigModel, validated
from rag_eval_pipeline.storage.yaml_files import load_yaml_file

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
    "role",
]
LOWER_IS_BETTER_MARKERS = (
    "latency",
    "error_rate",
    "refusal_rate",
    "mean_abs_diff",
    "n_errors",
    "cost",
    "llm_calls",  # the `cost` tier's (`evaluation.cost`)
    "input_tokens",
    "output_tokens",
    "budget_refused",
)
EXCELLENT, GOOD, NEEDS_ATTENTION = "excellent", "good", "needs attention"
# Metric roles: primary metrics share most of the alert budget, secondary ones the rest,
# monitored ones are tested and shown but never alerted (see `evaluation.verdicts`).
PRIMARY, SECONDARY, MONITOR = "primary", "secondary", "monitor"
ROLES = (PRIMARY, SECONDARY, MONITOR)
# The tier of what a run's LLM calls cost (`evaluation.cost`).
COST_TIER = "cost"
REAL_USERS_SYSTEM = "real-users"
"""The system of every row computed from the version's logged interactions (Tier 1 on the
real-user queries, UX): with no interaction on a date, these rows have no value."""
# Tier roles that hold unless the thresholds file lists the tier: what the LLM calls cost is
# watched, never alerted.
DEFAULT_TIER_ROLES: dict[str, dict[str, list[str]]] = {COST_TIER: {MONITOR: ["*"]}}


def _role(value: Any) -> str:
    if value not in ROLES:
        raise ValueError(f"unknown role {value!r} (one of {', '.join(ROLES)})")
    return str(value)


def _system_name(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{value!r} is not a system name")
    return value


def _system_names(value: Any) -> Any:
    if value is not None and not isinstance(value, list):
        raise ValueError(f"{value!r} is not a list of system names")
    return value


def _share(value: float) -> float:
    if not 0.0 < value < 1.0:
        raise ValueError(f"{value!r} is not in (0, 1)")
    return value


def _coverage(value: float) -> float:
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{value!r} is not in [0, 1)")
    return value


def _positive(value: float) -> float:
    if not value > 0.0:
        raise ValueError(f"{value!r} is not > 0")
    return value


Role = Annotated[str, BeforeValidator(_role), WithJsonSchema({"enum": list(ROLES)})]


class MetricRule(Bands):
    """The band and regression settings of one metric (or `prefix*` family), and its role."""

    role: Role | None = None


class ThresholdDefaults(ConfigModel):
    regression: float = 0.05


class RoleSettings(ConfigModel):
    default: Role = SECONDARY
    baseline_systems: Annotated[
        list[Annotated[str, BeforeValidator(_system_name)]] | None,
        BeforeValidator(_system_names),
    ] = None
    tiers: dict[str, dict[Role, list[str]]] | None = None


class AlertBudget(ConfigModel):
    primary: Annotated[float, AfterValidator(_share)] = 0.8


class ThresholdsFile(ConfigModel):
    """`config/thresholds.yaml` (docs/verdicts.md): bands, tolerances and roles of metrics."""

    defaults: ThresholdDefaults | None = None
    roles: RoleSettings | None = None
    alert_budget: AlertBudget | None = None
    untested_tolerance: Annotated[float, AfterValidator(_positive)] = 0.2
    coverage_tolerance: Annotated[float, AfterValidator(_coverage)] = 0.1
    metrics: dict[str, MetricRule] | None = None
    versions: dict[str, dict[str, MetricRule]] | None = None


def _rules(rules: Mapping[str, MetricRule] | None) -> dict[str, dict[str, Any]]:
    return {name: rule.model_dump(exclude_none=True) for name, rule in (rules or {}).items()}


@dataclass(frozen=True)
class Thresholds:
    """Bands and regression tolerances per metric, with per-version overrides."""

    metrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    versions: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    default_regression: float = 0.05
    tier_roles: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    default_role: str = SECONDARY
    # systems whose rows are comparison baselines (`name` or `prefix*`): never primary
    baseline_systems: Sequence[str] = ()
    primary_share: float = 0.8
    untested_tolerance: float = 0.2
    coverage_tolerance: float = 0.1

    @classmethod
    def load(cls, path: Path) -> Thresholds:
        """Read a thresholds YAML file; a missing file means no bands and 5% regressions."""
        if not Path(path).exists():
            return cls()
        raw = load_yaml_file(path) or {}
        settings = validated(ThresholdsFile, raw, path)
        roles = settings.roles or RoleSettings()
        return cls(
            metrics=_rules(settings.metrics),
            versions={v: _rules(rules) for v, rules in (settings.versions or {}).items()},
            default_regression=(settings.defaults or ThresholdDefaults()).regression,
            tier_roles={t: dict(by) for t, by in (roles.tiers or {}).items()},
            default_role=roles.default,
            baseline_systems=tuple(roles.baseline_systems or ()),
            primary_share=(settings.alert_budget or AlertBudget()).primary,
            untested_tolerance=settings.untested_tolerance,
            coverage_tolerance=settings.coverage_tolerance,
        )

    def role(self, tier: str, system: str, metric: str, version: str) -> str:
        """The role of `metric` of `system`: a `role` in the metric's rule (version overrides
        win), else the first role of its tier whose patterns match it (`name` or `prefix*`; the
        file's tiers, else `DEFAULT_TIER_ROLES`), else the default role; last, a `primary` role
        is `secondary` when `system` is a comparison baseline (`baseline_systems`, same
        patterns): the primaries' budget is the systems under test's."""
        rule = self.rule(metric, version)
        role = rule.get("role")
        if role is None:
            tier_roles = self.tier_roles.get(tier, DEFAULT_TIER_ROLES.get(tier, {}))
            matching = (
                r
                for r, patterns in tier_roles.items()
                if _match(dict.fromkeys(patterns, True), metric)
            )
            role = next(matching, self.default_role)
        if role == PRIMARY and _match(dict.fromkeys(self.baseline_systems, True), str(system)):
            return SECONDARY
        return str(role)

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
    return _match(rules, metric) or {}


def _match(rules: dict[str, Any], metric: str) -> Any:
    """The value of key `metric`, else of the longest `prefix*` key it starts with, else None."""
    if metric in rules:
        return rules[metric]
    prefixes = [k for k in rules if k.endswith("*") and metric.startswith(k[:-1])]
    return rules[max(prefixes, key=len)] if prefixes else None


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
    rows["role"] = [
        thresholds.role(t, s, m, version)
        for t, s, m in zip(rows["tier"], rows["system"], rows["metric"], strict=True)
    ]
    rows = rows.assign(dataset_version=version, date=date)
    return rows[SCORECARD_COLUMNS].sort_values(["tier", "system", "metric"], kind="stable")
