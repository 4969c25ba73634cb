"""What `rag-eval run` prints after its runs: each partition's verdict, alerts and failed
checks; where the reports are and what to try next."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from rag_eval_pipeline.settings import REPORTS_URL, WAREHOUSE_URL
from rag_eval_pipeline.text.escaping import terminal_text

if TYPE_CHECKING:
    from dagster import DagsterInstance


def print_summary(
    instance: DagsterInstance,
    versions: Sequence[str],
    day: str,
    run_ids: Mapping[str, str],
    regressions_selected: bool,
    compact: bool = False,
    failed: Sequence[str] = (),
) -> dict[str, int]:
    """Print each partition's verdict, regression alerts and failed checks (`compact`: one
    line per date, details only for partitions that need a look); return the partitions a CI
    gate fails on, with their exit codes (`PartitionSummary.exit_code`)."""
    from rag_eval_pipeline.defs.outcome.summary import partition_summary
    from rag_eval_pipeline.storage.warehouse import WarehouseStore

    store = WarehouseStore(WAREHOUSE_URL)
    gated: dict[str, int] = {}
    verdicts, details = [], []
    for version in versions:
        if version in failed:
            verdicts.append(f"{version}: run failed")
            continue
        summary = partition_summary(
            instance, store, version, day, run_ids.get(version), regressions_selected
        )
        verdicts.append(f"{version}: {summary.verdict}")
        if not compact or summary.needs_look:
            details += [f"{version}|{day}: {summary.verdict}", *summary.lines]
        if summary.gates:
            gated[f"{version}|{day}"] = summary.exit_code
    if compact:
        print(terminal_text(f"{day}  " + " · ".join(verdicts)), flush=True)
        for line in details:
            print(terminal_text(line))
    else:
        print(f"summary for {day}:")
        for line in details:
            print(terminal_text(line))
    return gated


def print_next_steps(
    instance: DagsterInstance, versions: Sequence[str], days: Sequence[str]
) -> None:
    """Where the report is and what to try next (the last lines `rag-eval run` prints); a
    partition whose latest run failed shows no report (the one stored is an older run's)."""
    from dagster import DagsterRunStatus, RunsFilter

    from rag_eval_pipeline.reporting.paths import report_path

    def latest_run_failed(version: str) -> bool:
        tags = {"dagster/partition": f"{version}|{days[-1]}"}
        latest = instance.get_runs(filters=RunsFilter(tags=tags), limit=1)
        return bool(latest) and latest[0].status != DagsterRunStatus.SUCCESS

    reports = [report_path(REPORTS_URL, v, days[-1]) for v in versions if not latest_run_failed(v)]
    present = [path for path in reports if path.exists()]
    if present:
        print("\nreports:")
        for path in present:
            print(terminal_text(f"  {path.as_uri()}"))
    from rag_eval_pipeline.reporting.commands import make_ui_command, rag_eval_command

    command, ui = rag_eval_command(), make_ui_command()
    hints = [
        (f"{command} scorecard --tier tier1", "the numbers, grouped by version and tier"),
        (f"{command} scorecard --system rag", "one system's metrics (part of its name)"),
        (ui, "the asset graph and the plots over dates"),
    ]
    width = max(len(hint) for hint, _ in hints) + 2
    print("next: open the report above, or try")
    for hint, meaning in hints:
        print(terminal_text(f"  {hint:<{width}} {meaning}"))
