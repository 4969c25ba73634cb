"""What `rag-eval run` prints after the runs: per partition, alerted metrics and failed checks,
and what the run's LLM calls cost (the sum of its assets' `<role>_cost_usd` metadata; unknown
when litellm could not price a call) and how many prompts a spent ``RAG_EVAL_MAX_COST_USD``
kept from being sent.

The regressions come from the partition's stored `metric_regressions` table (the same rows the
check, the report and the alert sensor read); the failed checks from the run's asset check
evaluations on the instance. `--fail-on-regression` turns either into a non-zero exit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from dagster import (
    AssetCheckEvaluation,
    AssetCheckSeverity,
    DagsterEventType,
    DagsterInstance,
)

from rag_eval_pipeline.defs.scorecard.assets import HEADLINE_METRICS
from rag_eval_pipeline.evaluation.regression import IMPROVED
from rag_eval_pipeline.llm.budget import MAX_COST_ENV
from rag_eval_pipeline.reporting.alerting import alert_lines, ordered_alerts
from rag_eval_pipeline.reporting.escaping import terminal_text
from rag_eval_pipeline.storage.warehouse import REGRESSIONS_ASSET, WarehouseStore

# The metadata prefixes of the LLM clients' usage (`defs/llm_metadata.py`).
LLM_ROLES = ("judge", "generator", "bridge_judge")
COST_KEYS = frozenset(f"{role}_cost_usd" for role in LLM_ROLES)
CALL_KEYS = frozenset(f"{role}_calls" for role in LLM_ROLES)
REFUSED_KEYS = frozenset(f"{role}_budget_refused" for role in LLM_ROLES)
# Alerted metrics printed per partition before the rest is counted.
MAX_PRINTED = 10


# The check whose failure states levels (bands), not a change: a note, never "needs a look".
LEVEL_CHECK = "scorecard_thresholds"
# The check that fails on the alerts already listed (counted once, as alerts).
ALERTS_CHECK = "scorecard_regressions"


@dataclass(frozen=True)
class PartitionSummary:
    """The verdict lines of one partition and whether it should fail a CI gate."""

    lines: list[str] = field(default_factory=list)
    n_alerts: int = 0
    n_failed_checks: int = 0
    n_errors: int = 0
    n_improved: int = 0
    n_below_band: int = 0
    quiet_verdict: str = "quiet: no significant change"
    n_budget_refused: int = 0

    @property
    def gates(self) -> bool:
        """True when `--fail-on-regression` should fail: an alert or an ERROR check."""
        return self.n_alerts > 0 or self.n_errors > 0

    @property
    def needs_look(self) -> bool:
        """An alert, a failed check other than the threshold bands, or a spent budget."""
        return self.n_alerts > 0 or self.n_failed_checks > 0 or self.n_budget_refused > 0

    @property
    def verdict(self) -> str:
        """One phrase: `N regression(s)`, `N failed check(s)`, `N improvement(s)`, `quiet`."""
        parts = []
        if self.n_alerts:
            parts.append(f"{self.n_alerts} regression alert(s)")
        if self.n_failed_checks:
            parts.append(f"{self.n_failed_checks} failed check(s)")
        if self.n_improved:
            parts.append(f"{self.n_improved} improvement(s)")
        if self.n_budget_refused:
            parts.append(f"budget exhausted ({self.n_budget_refused} prompt(s) not sent)")
        if not parts:
            parts.append(self.quiet_verdict)
        return ("needs a look: " if self.needs_look else "") + ", ".join(parts)


def failed_checks(instance: DagsterInstance, run_id: str) -> list[AssetCheckEvaluation]:
    """The asset check evaluations of `run_id` that did not pass."""
    records = instance.get_records_for_run(
        run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION
    ).records
    evaluations = [
        record.event_log_entry.dagster_event.event_specific_data
        for record in records
        if record.event_log_entry.dagster_event is not None
    ]
    return [e for e in evaluations if isinstance(e, AssetCheckEvaluation) and not e.passed]


@dataclass(frozen=True)
class LLMSpend:
    """The LLM calls of one run, summed over its assets' metadata."""

    calls: int = 0
    cost_usd: float = 0.0
    unpriced: bool = False
    budget_refused: int = 0

    def line(self) -> str | None:
        """`LLM cost: $x for n call(s)`, or None when the run made no LLM call."""
        if not self.calls and not self.budget_refused:
            return None
        cost = "unknown (a model without a price)" if self.unpriced else f"${self.cost_usd:.4f}"
        return f"  LLM cost of this run: {cost} for {self.calls} provider call(s)"


def llm_spend(instance: DagsterInstance, run_id: str) -> LLMSpend:
    """Sum `<role>_calls`, `<role>_cost_usd` and `<role>_budget_refused` over the run's
    materializations (a NaN cost, litellm's unknown price, makes the total unknown)."""
    records = instance.get_records_for_run(
        run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION
    ).records
    calls, cost, unpriced, refused = 0, 0.0, False, 0
    for record in records:
        materialization = record.asset_materialization
        if materialization is None:
            continue
        for name, entry in materialization.metadata.items():
            value = getattr(entry, "value", None)
            if not isinstance(value, int | float) or isinstance(value, bool):
                continue
            if name in COST_KEYS:
                unpriced = unpriced or math.isnan(value)
                cost += 0.0 if math.isnan(value) else float(value)
            elif name in CALL_KEYS:
                calls += int(value)
            elif name in REFUSED_KEYS:
                refused += int(value)
    return LLMSpend(calls, cost, unpriced, refused)


def partition_summary(
    instance: DagsterInstance,
    store: WarehouseStore,
    version: str,
    date: str,
    run_id: str | None,
    regressions_selected: bool = True,
) -> PartitionSummary:
    """Alerted `metric_regressions` rows and failed checks of one partition, as text lines.

    When the run did not select `metric_regressions`, its stored table may be stale: it is
    neither printed nor gated on, and a line says so.
    """
    lines: list[str] = []
    if not regressions_selected:
        lines.append("  metric_regressions was not in this run's selection: no verdict")
    verdicts = (
        store.read_partition(REGRESSIONS_ASSET, version, date) if regressions_selected else None
    )
    alerted = verdicts[verdicts["alert"].astype(bool)] if verdicts is not None else None
    n_alerts = 0 if alerted is None else len(alerted)
    if alerted is not None and n_alerts:
        ordered = ordered_alerts(alerted, HEADLINE_METRICS)
        lines.append(f"  {n_alerts} regression alert(s) (asset metric_regressions):")
        lines += [f"    {terminal_text(line)}" for line in alert_lines(ordered.head(MAX_PRINTED))]
        if n_alerts > MAX_PRINTED:
            lines.append(f"    ... and {n_alerts - MAX_PRINTED} more (rag-eval alerts, the report)")
    failed = failed_checks(instance, run_id) if run_id else []
    n_errors = sum(1 for e in failed if e.severity == AssetCheckSeverity.ERROR)
    levels = [e for e in failed if e.check_name == LEVEL_CHECK]
    failed = [e for e in failed if e.check_name not in (LEVEL_CHECK, ALERTS_CHECK)]
    below = sum(int(_metadata_int(e, "n_needs_attention")) for e in levels)
    if below:
        lines.append(
            f"  {below} metric(s) below their 'good' band (levels, not changes: the report's "
            "tier tables)"
        )
    for evaluation in failed:
        level = "ERROR" if evaluation.severity == AssetCheckSeverity.ERROR else "WARN"
        note = f": {evaluation.description}" if evaluation.description else ""
        lines.append(
            f"  check {evaluation.check_name} on {evaluation.asset_key.to_user_string()} "
            f"failed ({level}){terminal_text(note)}"
        )
    spend = llm_spend(instance, run_id) if run_id else LLMSpend()
    if (spend_line := spend.line()) is not None:
        lines.append(spend_line)
    if spend.budget_refused:
        lines.append(
            f"  budget exhausted: {spend.budget_refused} prompt(s) not sent once "
            f"{MAX_COST_ENV} was spent; their rows are errors 'budget exhausted'"
        )
    n_improved = 0 if verdicts is None else int((verdicts["verdict"] == IMPROVED).sum())
    if verdicts is None:
        quiet = "evaluated (no verdict)"
    elif verdicts.empty or verdicts["baseline_date"].isna().all():
        quiet = "first evaluation: no baseline yet"
    else:
        quiet = f"quiet: no significant change since {verdicts['baseline_date'].dropna().iloc[0]}"
    return PartitionSummary(
        lines, n_alerts, len(failed), n_errors, n_improved, below, quiet, spend.budget_refused
    )


def _metadata_int(evaluation: AssetCheckEvaluation, name: str) -> int:
    value = evaluation.metadata.get(name)
    return int(getattr(value, "value", 0) or 0)
