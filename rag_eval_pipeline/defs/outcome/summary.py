"""What `rag-eval run` prints after the runs: per partition, alerted metrics and failed checks,
and what the run's LLM calls cost (the sum of its assets' `<role>_cost_usd` metadata; unknown
when litellm could not price a call) and how many prompts a spent ``RAG_EVAL_MAX_COST_USD``
kept from being sent.

The regressions come from the partition's stored `metric_regressions` table (the same rows the
check, the report and the alert sensor read); the failed checks from the run's asset check
evaluations on the instance; the LLM usage from the run's materializations' metadata (every
`<role>_model` with its `<role>_calls`, `_cache_hits`, `_cost_usd`: the judge, the generator,
and the model bridge's re-judging and re-generation, `bridge_judge` and `bridge_generator`;
`defs.shared.llm_metadata.run_llm_usage`, the rule the scorecard's cost tier and the run's cost
tag use too).
`--fail-on-regression` turns alerts or ERROR checks into exit 3, and untestable primary metrics
that moved the bad way (with nothing alerted) into exit 4 (`evaluation.headline`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd
from dagster import (
    AssetCheckEvaluation,
    AssetCheckSeverity,
    DagsterEventType,
    DagsterInstance,
)

from rag_eval_pipeline.defs.scorecard.assets import HEADLINE_METRICS
from rag_eval_pipeline.defs.shared.llm_metadata import run_llm_usage
from rag_eval_pipeline.evaluation.cost import total_cost_usd
from rag_eval_pipeline.evaluation.headline import (
    ALERT,
    GATE_EXIT,
    UNDECIDED,
    Headline,
    headline,
    undecided_rows,
)
from rag_eval_pipeline.llm.budget import MAX_COST_ENV
from rag_eval_pipeline.reporting.alerting import alert_lines, ordered_alerts
from rag_eval_pipeline.reporting.commands import rag_eval_command
from rag_eval_pipeline.storage.warehouse import REGRESSIONS_ASSET, WarehouseStore
from rag_eval_pipeline.text.escaping import terminal_text

# Alerted metrics printed per partition before the rest is counted.
MAX_PRINTED = 10
NO_VERDICT = "evaluated (no verdict)"


# The check whose failure states levels (bands), not a change: a note, never "needs a look".
LEVEL_CHECK = "scorecard_thresholds"
# The check that fails on the alerts already listed (counted once, as alerts).
ALERTS_CHECK = "scorecard_regressions"


@dataclass(frozen=True)
class PartitionSummary:
    """The verdict lines of one partition and the exit code it gives a CI gate.

    `headline` is the partition's `evaluation.headline` (None without a verdict table); the
    summary line is its phrases with this run's failed checks and spent budget inserted.
    """

    lines: list[str] = field(default_factory=list)
    headline: Headline | None = None
    n_failed_checks: int = 0
    n_errors: int = 0
    n_below_band: int = 0
    n_budget_refused: int = 0

    @property
    def n_alerts(self) -> int:
        """Regression and outage alerts of the partition's verdict rows."""
        return self.headline.n_alerts if self.headline else 0

    @property
    def exit_code(self) -> int:
        """What `--fail-on-regression` exits with: 3 on an alert or an ERROR check, 4 when
        untestable primary metrics moved the bad way and nothing else alerted
        (`evaluation.headline.GATE_EXIT`), else 0."""
        if self.n_errors:
            return GATE_EXIT[ALERT]
        return GATE_EXIT[self.headline.state] if self.headline else 0

    @property
    def gates(self) -> bool:
        """True when `--fail-on-regression` should fail."""
        return self.exit_code != 0

    @property
    def needs_look(self) -> bool:
        """An alert, an undecided primary metric, a failed check other than the threshold
        bands, or a spent budget."""
        undecided = self.headline is not None and self.headline.state == UNDECIDED
        return self.gates or undecided or self.n_failed_checks > 0 or self.n_budget_refused > 0

    @property
    def verdict(self) -> str:
        """The headline's phrases (`3 regressions, 1 outage, untestable: ...`, `quiet: ...`)
        with the failed checks and a spent budget."""
        extra = [f"{self.n_failed_checks} failed check(s)"] if self.n_failed_checks else []
        if self.n_budget_refused:
            extra.append(f"budget exhausted ({self.n_budget_refused} prompt(s) not sent)")
        parts = self.headline.phrases(extra) if self.headline else extra or [NO_VERDICT]
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


BRIDGE_ROLE_PREFIX = "bridge_"


def usage_line(usage: pd.DataFrame) -> str | None:
    """`LLM: N calls, M cache hits, $X` for the run, with the model bridge's share; None
    without LLM usage."""
    if usage.empty:
        return None

    def spent(rows: pd.DataFrame) -> str:
        cost = total_cost_usd(rows)
        price = f"${cost:.4f}" if math.isfinite(cost) else "cost unknown (unpriced model)"
        return (
            f"{int(rows['calls'].sum())} calls, {int(rows['cache_hits'].sum())} cache hits, {price}"
        )

    bridge = usage[usage["role"].str.startswith(BRIDGE_ROLE_PREFIX)]
    share = f" (the model bridge: {spent(bridge)})" if not bridge.empty else ""
    return f"  LLM: {spent(usage)}{share}"


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
    if verdicts is not None:
        lines += _verdict_lines(verdicts, version)
    usage_rows = run_llm_usage(instance, run_id) if run_id else None
    usage = usage_line(usage_rows) if usage_rows is not None else None
    if usage:
        lines.append(usage)
    failed = failed_checks(instance, run_id) if run_id else []
    n_errors = sum(1 for e in failed if e.severity == AssetCheckSeverity.ERROR)
    levels = [e for e in failed if e.check_name == LEVEL_CHECK]
    failed = [e for e in failed if e.check_name not in (LEVEL_CHECK, ALERTS_CHECK)]
    below = sum(int(_metadata_int(e, "n_needs_attention")) for e in levels)
    lines += _check_lines(failed, below)
    refused = 0 if usage_rows is None else int(usage_rows["budget_refused"].sum())
    if refused:
        lines.append(
            f"  budget exhausted: {refused} prompt(s) not sent once "
            f"{MAX_COST_ENV} was spent; their rows are errors 'budget exhausted'"
        )
    told = headline(verdicts) if verdicts is not None else None
    return PartitionSummary(lines, told, len(failed), n_errors, below, refused)


def _verdict_lines(verdicts: pd.DataFrame, version: str) -> list[str]:
    """The alerted rows of a partition's `metric_regressions` (at most `MAX_PRINTED`, headline
    metrics first) and its untestable primary changes."""
    lines: list[str] = []
    alerted = verdicts[verdicts["alert"].astype(bool)]
    n_alerts = len(alerted)
    if n_alerts:
        ordered = ordered_alerts(alerted, HEADLINE_METRICS)
        lines.append(f"  {n_alerts} alert(s) (asset metric_regressions):")
        lines += [f"    {terminal_text(line)}" for line in alert_lines(ordered.head(MAX_PRINTED))]
        if n_alerts > MAX_PRINTED:
            more = f"{rag_eval_command()} alerts --dataset-version {version}"
            lines.append(f"    ... and {n_alerts - MAX_PRINTED} more ({more}, the report)")
    undecided = undecided_rows(verdicts)
    if len(undecided):
        lines.append(f"  {len(undecided)} untestable primary change(s), not alerted:")
        shown = undecided.head(MAX_PRINTED)
        lines += [f"    {terminal_text(line)}" for line in alert_lines(shown)]
    return lines


def _check_lines(failed: list[AssetCheckEvaluation], below: int) -> list[str]:
    """The metrics below their 'good' band (one line) and every other failed check."""
    lines: list[str] = []
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
    return lines


def _metadata_int(evaluation: AssetCheckEvaluation, name: str) -> int:
    value = evaluation.metadata.get(name)
    return int(getattr(value, "value", 0) or 0)
