"""`rag-eval run`: register dataset versions and materialize their partitions here, day by day,
or side by side in processes."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from rag_eval_pipeline.cli.backfill import add_backfill_arguments, launch_backfill
from rag_eval_pipeline.cli.common import (
    Once,
    UsageError,
    check_partition_date,
    configuration_problem,
    day_count,
    ensure_dagster_home,
    open_instance,
    process_count,
    today,
    valid_date,
    worst_exit,
)
from rag_eval_pipeline.cli.estimate import cmd_estimate
from rag_eval_pipeline.cli.printed import print_next_steps, print_summary
from rag_eval_pipeline.cli.selection import check_upstream_stored, selected_assets_of
from rag_eval_pipeline.text.escaping import terminal_text

if TYPE_CHECKING:
    from dagster import (
        AssetKey,
        DagsterInstance,
        ExecuteInProcessResult,
        JobDefinition,
    )


def cmd_run(args: argparse.Namespace) -> int:
    """Register dataset versions, then materialize the selected assets for each on one date in
    this process, or launch a backfill over a date range (`--from`/`--to`) for the daemon.

    A partition that is up to date (`up_to_date.partition_freshness`: the latest materialization
    of every selected asset carries the current fingerprint of its inputs and reads back) is
    skipped unless ``--force`` is given.
    """
    if (problem := configuration_problem()) is not None:
        print(terminal_text(problem), file=sys.stderr)
        return 2
    if args.dry_run:
        return _dry_run(args)
    from rag_eval_pipeline.definitions import defs
    from rag_eval_pipeline.defs.shared.resources import DatasetsResource

    for day in (args.from_date, args.to_date) if args.from_date else (args.date,):
        check_partition_date(day)
    days = last_days(args.days) if args.days else [args.date]
    check_partition_date(days[0])
    selection = selected_assets_of(args.select, defs) if args.select else None
    datasets = DatasetsResource()
    verdicts = (
        {version: datasets.verdict(version) for version in args.dataset_version}
        if args.dataset_version
        else datasets.scan().verdicts
    )
    for verdict in verdicts.values():
        if not verdict.valid:
            print(terminal_text(verdict.refusal), file=sys.stderr)
    versions = [version for version, verdict in verdicts.items() if verdict.valid]
    if args.dataset_version and len(versions) < len(verdicts):
        return 2
    if not versions:
        reason = (
            f"all {len(verdicts)} folder(s) under {datasets.root} are invalid (reasons above)"
            if verdicts
            else f"{datasets.root} holds no dataset folder"
        )
        print(terminal_text(f"no valid dataset version to evaluate: {reason}"), file=sys.stderr)
        return 2
    instance = open_instance()
    _fail_runs_of_dead_cli_processes(instance)
    _register(instance, versions)
    if args.from_date:
        return launch_backfill(instance, versions, args)
    if selection:
        check_upstream_stored(defs, selection, versions, days)
    if args.parallel > 1 and len(versions) > 1:
        code = _run_side_by_side(versions, args)
        print_next_steps(instance, versions, days)
        return code
    code = 0
    for day in days:
        code = worst_exit(
            code, _materialize_date(instance, versions, args, selection, day, len(days) > 1)
        )
    if not args.quiet_end:
        print_next_steps(instance, versions, days)
    return code


def _dry_run(args: argparse.Namespace) -> int:
    """`rag-eval run --dry-run`: `rag-eval estimate` for the run's versions and date; the
    options of a real run that an estimate does not take are refused."""
    given = {
        "--days": args.days,
        "--from/--to": args.from_date,
        "--select": args.select,
        "--parallel": args.parallel > 1,
        "--force": args.force,
        "--fail-on-regression": args.fail_on_regression,
    }
    refused = [flag for flag, value in given.items() if value]
    if refused:
        raise UsageError(
            f"--dry-run estimates whole runs on one --date; it takes no {', '.join(refused)}"
        )
    return cmd_estimate(args)


def _run_side_by_side(versions: Sequence[str], args: argparse.Namespace) -> int:
    """Evaluate the versions in `args.parallel` processes side by side (version i in process
    i mod N, each version's dates in order, as the run queue runs partitions side by side);
    their lines are relayed whole, the days in date order (`reporting.day_lines`). Returns the
    worst exit code."""
    import threading

    from rag_eval_pipeline.reporting.day_lines import DayOrder

    groups = [g for i in range(args.parallel) if (g := list(versions[i :: args.parallel]))]
    common = ["run", "--log-level", args.log_level, "--quiet-end"]
    common += ["--days", str(args.days)] if args.days else ["--date", args.date]
    common += ["--force"] if args.force else []
    common += ["--fail-on-regression"] if args.fail_on_regression else []
    common += ["--select", args.select] if args.select else []
    order = DayOrder(len(groups), lambda text: print(text, end="", flush=True))

    def relay(process: int, stream: Any) -> None:
        for line in stream:
            order.line(process, line)
        order.end(process)

    processes = []
    for index, group in enumerate(groups):
        named = [arg for version in group for arg in ("--dataset-version", version)]
        process = subprocess.Popen(
            [sys.executable, "-m", "rag_eval_pipeline.cli", *common, *named],
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        thread = threading.Thread(target=relay, args=(index, process.stdout), daemon=True)
        thread.start()
        processes.append((process, thread))
    codes = []
    for process, thread in processes:
        codes.append(process.wait())
        thread.join()
    return worst_exit(*codes)


def last_days(count: int) -> list[str]:
    """The `count` dates up to today (UTC), oldest first."""
    return [d.strftime("%Y-%m-%d") for d in pd.date_range(end=today(), periods=count, freq="D")]


def _fail_runs_of_dead_cli_processes(instance: DagsterInstance) -> None:
    from rag_eval_pipeline.defs.runs.ownership import fail_runs_of_dead_owners

    for run_id in fail_runs_of_dead_owners(instance):
        print(
            f"run {run_id} was left unfinished by a process that ended (a rag-eval run or a "
            "run worker): marked failed",
            file=sys.stderr,
        )


def _register(instance: DagsterInstance, versions: Sequence[str]) -> None:
    """Register the (valid) versions that are not dataset_version partitions yet."""
    from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION

    registered = set(instance.get_dynamic_partitions(DATASET_VERSION))
    new = [v for v in versions if v not in registered]
    if new:
        instance.add_dynamic_partitions(DATASET_VERSION, new)


def _materialize_date(
    instance: DagsterInstance,
    versions: Sequence[str],
    args: argparse.Namespace,
    selection: Sequence[AssetKey] | None,
    day: str,
    compact: bool = False,
) -> int:
    """Materialize each version's partition on `day` (the `selection`'s assets, or all), one
    run after another, here; `compact` prints one line per partition (a range of days)."""
    from rag_eval_pipeline.definitions import defs
    from rag_eval_pipeline.storage.warehouse import REGRESSIONS_ASSET

    asset_graph = defs.resolve_asset_graph()
    selected_assets = [
        "/".join(key.path) for key in (selection or asset_graph.materializable_asset_keys)
    ]
    pending = []
    run_ids: dict[str, str] = {}
    for version in versions:
        tags, current_run = _fingerprint_tags(
            instance, version, day, args, selected_assets, quiet=compact
        )
        if current_run is None:
            pending.append((version, tags))
        else:
            run_ids[version] = current_run
    if pending and not compact:
        keys = ", ".join(f"{version}|{day}" for version, _ in pending)
        print(f"materializing {keys} ...", flush=True)
    failed, refused = _run_pending(instance, pending, args, selection, day, compact, run_ids)
    gated = print_summary(
        instance,
        [version for version in versions if version not in refused],
        day,
        run_ids,
        REGRESSIONS_ASSET in selected_assets,
        compact,
        failed,
    )
    if failed or refused:
        if failed:
            print(f"failed versions: {', '.join(failed)}", file=sys.stderr)
        return 1
    if gated and args.fail_on_regression:
        print(f"--fail-on-regression: {', '.join(gated)}", file=sys.stderr)
        return worst_exit(*gated.values())
    return 0


def _run_pending(
    instance: DagsterInstance,
    pending: Sequence[tuple[str, dict[str, str]]],
    args: argparse.Namespace,
    selection: Sequence[AssetKey] | None,
    day: str,
    compact: bool,
    run_ids: dict[str, str],
) -> tuple[list[str], list[str]]:
    """Run the evaluation job on each (version, fingerprint tags) of `pending` on `day`, one
    after another, each run tagged with its owner and its cost; record each run's id in
    `run_ids`. Returns the versions whose run failed, and those refused (partition busy)."""
    from rag_eval_pipeline.definitions import defs
    from rag_eval_pipeline.defs.outcome.cost import tag_run_cost
    from rag_eval_pipeline.defs.runs.jobs import EVALUATION_JOB_NAME
    from rag_eval_pipeline.defs.runs.ownership import RunOwner

    job = defs.resolve_job_def(EVALUATION_JOB_NAME)
    owner = RunOwner.current().tags()
    run_config = {"loggers": {"console": {"config": {"log_level": args.log_level}}}}
    failed, refused = [], []
    for version, tags in pending:
        result = _execute_held(
            instance,
            job,
            f"{version}|{day}",
            asset_selection=selection,
            tags={**tags, **owner},
            run_config=run_config,
        )
        if result is None:
            refused.append(version)
            continue
        if not compact or not result.success:
            print(
                f"  {'ok' if result.success else 'FAILED'}: {version}|{day}, run {result.run_id}",
                flush=True,
            )
        run_ids[version] = result.run_id
        tag_run_cost(instance, result.run_id)
        if not result.success:
            failed.append(version)
    return failed, refused


def _execute_held(
    instance: DagsterInstance, job: JobDefinition, partition_key: str, **options: Any
) -> ExecuteInProcessResult | None:
    """Execute `job` on `partition_key` here while holding the partition
    (`partition_lock.partition_held`); None, after one line on standard error, when another run
    of it is in progress."""
    from rag_eval_pipeline.defs.runs.partition_lock import PartitionBusyError, partition_held
    from rag_eval_pipeline.defs.shared.partitions import evaluation_partition_key

    version, day = partition_key.split("|", 1)
    try:
        with partition_held(instance, ensure_dagster_home(), partition_key):
            return job.execute_in_process(
                partition_key=evaluation_partition_key(version, day),
                instance=instance,
                raise_on_error=False,
                **options,
            )
    except PartitionBusyError as busy:
        print(terminal_text(str(busy)), file=sys.stderr, flush=True)
        return None


def _fingerprint_tags(
    instance: DagsterInstance,
    version: str,
    day: str,
    args: argparse.Namespace,
    selected_assets: Sequence[str],
    quiet: bool = False,
) -> tuple[dict[str, str], str | None]:
    """The fingerprint tags of `version`'s run on `day`, and, when the partition is up to date
    for `selected_assets` (`up_to_date.partition_freshness`) and ``--force`` is not given, the
    id of the run that materialized it last (after saying so unless `quiet`), else None."""
    from rag_eval_pipeline.defs.runs.up_to_date import evaluation_freshness, fingerprint_tags
    from rag_eval_pipeline.defs.shared.resources import DatasetsResource

    tags = fingerprint_tags(DatasetsResource().folder(version), version, day)
    if args.force:
        return tags, None
    freshness = evaluation_freshness(instance, version, day, selected_assets, tags)
    if freshness.up_to_date and not quiet:
        print(
            f"{version}|{day} is up to date: run {freshness.run_id} materialized it from the "
            "same data, code and configuration (--force runs it again)"
        )
    return tags, freshness.run_id if freshness.up_to_date else None


def add_parser(commands: argparse._SubParsersAction) -> None:
    """`rag-eval run ...`: the partitions to run, how, and what makes it fail."""
    run = commands.add_parser("run", help="materialize the evaluation for versions on a date")
    run.add_argument("--dataset-version", action="append", help="repeatable; default: all")
    run.add_argument(
        "--date", type=valid_date, action=Once, default=today(), help="default: today (UTC)"
    )
    run.add_argument(
        "--days",
        type=day_count,
        help=(
            "evaluate the last N days up to today, oldest first, here (the runs a backfill "
            "makes, without waiting for the daemon): `make demo` uses --days 7"
        ),
    )
    run.add_argument(
        "--parallel",
        type=process_count,
        default=1,
        help=(
            "evaluate the versions in N processes side by side (each version's dates in order): "
            "`make demo` uses 2, like the run queue's max_concurrent_runs"
        ),
    )
    run.add_argument("--quiet-end", action="store_true", help=argparse.SUPPRESS)
    add_backfill_arguments(run)
    run.add_argument("--select", help="Dagster asset selection, e.g. 'retrieval_metrics+'")
    run.add_argument("--log-level", default="WARNING", help="Dagster console log level")
    run.add_argument(
        "--force", action="store_true", help="materialize even partitions that are up to date"
    )
    run.add_argument(
        "--fail-on-regression",
        action="store_true",
        help=(
            "a CI gate: exit 3 when a partition has an alert (a regressed metric, one missing "
            "today, a judge outage) or an ERROR check; exit 4 when, with no alert, a primary "
            "metric moved the bad way beyond its tolerance on too few items to test"
        ),
    )
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="run nothing: print what `rag-eval estimate` prints for these versions and date",
    )
    run.set_defaults(handler=cmd_run)
