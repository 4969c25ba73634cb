"""`rag-eval`: validate dataset folders, run evaluations on the persistent instance, read results.

rag-eval validate PATH
rag-eval run [--dataset-version V ...] [--date YYYY-MM-DD] [--select ASSET_SELECTION] [--force]
rag-eval run [--dataset-version V ...] --days N     (the last N days up to today, here, in order)
rag-eval run [--dataset-version V ...] --from YYYY-MM-DD --to YYYY-MM-DD   (a Dagster backfill)
             [--fail-on-regression]
rag-eval run [--dataset-version V ...] [--date D] --dry-run   (what `estimate` prints; no run)
rag-eval estimate [--dataset-version V ...] [--date D]   (LLM prompts, tokens, cost; no calls)
rag-eval scorecard [--dataset-version V ...] [--date D] [--tier T] [--system S] [--format F]
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pandas as pd

from rag_eval_pipeline.datasets.golden import DatasetLimits
from rag_eval_pipeline.datasets.location import DatasetLocation
from rag_eval_pipeline.datasets.validity import located_verdict, version_verdict
from rag_eval_pipeline.settings import (
    DATASETS_MIRROR,
    MAX_FILE_MB,
    MAX_TEXT_CHARS,
    PROJECT_ROOT,
    REPORTS_URL,
    WAREHOUSE_URL,
)
from rag_eval_pipeline.storage.objects import is_local, storage_path
from rag_eval_pipeline.text.escaping import terminal_text

if TYPE_CHECKING:
    from dagster import (
        AssetKey,
        DagsterInstance,
        Definitions,
        ExecuteInProcessResult,
        JobDefinition,
    )

    from rag_eval_pipeline.defs.shared.resources import LLMResource


# Exit codes of `rag-eval run` from least to most severe: an undecided gate (4) is overridden
# by a failed run (1) and by a regression alert (3).
EXIT_SEVERITY = (0, 4, 1, 2, 3)


def worst_exit(*codes: int) -> int:
    """The most severe of `codes` (`EXIT_SEVERITY`; an unknown code counts as most severe)."""
    rank = {code: i for i, code in enumerate(EXIT_SEVERITY)}
    return max(codes, key=lambda code: rank.get(code, len(rank)), default=0)


def _today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


def _day_count(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 366:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of days from 1 to 366")
    return int(text)


def _process_count(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of processes from 1 to 64")
    return int(text)


def _valid_date(text: str) -> str:
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date (YYYY-MM-DD)") from error


class _Once(argparse.Action):
    """Store an option's value, refusing a second occurrence instead of replacing the first."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if getattr(namespace, f"_{self.dest}_given", False):
            parser.error(f"{option_string} given twice (use --from and --to for a date range)")
        setattr(namespace, f"_{self.dest}_given", True)
        setattr(namespace, self.dest, values)


def _ensure_dagster_home() -> Path:
    """`DAGSTER_HOME` (default `.dagster_home/`), created with the shipped `dagster.yaml`."""
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(PROJECT_ROOT / ".dagster_home")))
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists() and (PROJECT_ROOT / "dagster.yaml").exists():
        temporary = config.with_name(f".dagster.yaml.{os.getpid()}.tmp")
        temporary.write_text((PROJECT_ROOT / "dagster.yaml").read_text())
        os.replace(temporary, config)
    return home


def open_instance() -> DagsterInstance:
    """The persistent instance, created under a file lock so that two first uses of a fresh
    `DAGSTER_HOME` do not race on creating its databases' schema, with its concurrency pools
    (`pools.ensure_pools`: on PostgreSQL, two runs creating a pool at once fail one)."""
    from dagster import DagsterInstance
    from filelock import FileLock

    from rag_eval_pipeline.defs.runs.pools import ensure_pools
    from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION

    home = _ensure_dagster_home()
    with FileLock(home / ".rag-eval-instance.lock"):
        instance = DagsterInstance.get()
        # Touch every storage, so that each creates its schema while the lock is held.
        instance.get_runs(limit=1)
        instance.get_dynamic_partitions(DATASET_VERSION)
        instance.all_instigator_state()
        ensure_pools(instance)
    return instance


def configuration_problem() -> str | None:
    """The first problem of the configuration files (`config/*.yaml`), as one line, or None."""
    from rag_eval_pipeline.evaluation.config_schemas import check_configuration

    try:
        check_configuration()
    except ValueError as error:
        return str(error)
    return None


def cmd_validate(args: argparse.Namespace) -> int:
    """Validate a dataset version folder (the rule `rag-eval run` and the sensor apply) and
    print its table sizes, or the line `rag-eval run` prints for it and every problem; a
    problem of the configuration files is printed first and fails it too."""
    if (problem := configuration_problem()) is not None:
        print(terminal_text(problem), file=sys.stderr)
        return 1
    limits = DatasetLimits(MAX_FILE_MB << 20, MAX_TEXT_CHARS)
    location = storage_path(args.path)
    verdict = (
        version_verdict(Path(args.path), limits)
        if is_local(location)
        else located_verdict(
            DatasetLocation(location.parent, DATASETS_MIRROR), location.name, limits
        )
    )
    if not verdict.valid:
        print(terminal_text(verdict.refusal), file=sys.stderr)
        for problem in verdict.problems if len(verdict.problems) > 1 else ():
            print(terminal_text(f"  - {problem}"), file=sys.stderr)
        return 1
    print(terminal_text(f"Dataset version '{verdict.version}' is valid:"))
    for name, value in verdict.statistics.items():
        print(terminal_text(f"  {name}: {value}"))
    settings = verdict.manifest
    system = settings.system or "from RAG_EVAL_SYSTEM"
    print(terminal_text(f"  relevance_level: {settings.relevance_level}, system: {system}"))
    return 0


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
        return _launch_backfill(instance, versions, args)
    if selection:
        check_upstream_stored(defs, selection, versions, days)
    if args.parallel > 1 and len(versions) > 1:
        code = _run_side_by_side(versions, args)
        _print_next_steps(instance, versions, days)
        return code
    code = 0
    for day in days:
        code = worst_exit(
            code, _materialize_date(instance, versions, args, selection, day, len(days) > 1)
        )
    if not args.quiet_end:
        _print_next_steps(instance, versions, days)
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


def cmd_estimate(args: argparse.Namespace) -> int:
    """Print, per partition, the judge and generator prompts a run would send that the reply
    cache cannot answer, their tokens and (upper-bound) price, without calling any LLM.

    The assets that call an LLM (the `llm_judge` and `llm_generator` pools) and their upstream
    run in this process on a throw-away instance and warehouse, with the LLM resources in
    estimate-only mode (`llm.estimate`) and the result cache off; only the embedding cache (real
    vectors) is written outside a temporary folder.
    """
    import tempfile

    from dagster import (
        AssetSelection,
        DagsterInstance,
        Definitions,
        define_asset_job,
        in_process_executor,
    )

    from rag_eval_pipeline.definitions import ALL_ASSETS, default_resources
    from rag_eval_pipeline.defs.runs.pools import LLM_GENERATOR_POOL, LLM_JUDGE_POOL
    from rag_eval_pipeline.defs.shared.io_managers import ParquetIOManagerResource
    from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
    from rag_eval_pipeline.defs.shared.resources import (
        DatasetsResource,
        LLMResource,
        ResultCacheResource,
        WarehouseResource,
    )
    from rag_eval_pipeline.llm.estimate import run_estimate

    check_partition_date(args.date)
    scan = DatasetsResource().scan()
    versions = args.dataset_version or scan.valid
    unknown = [v for v in versions if v not in scan.valid]
    if unknown:
        raise UsageError(f"unknown or invalid dataset version(s): {', '.join(unknown)}")
    resources = default_resources()
    llms = {name: resources[name] for name in ("judge_llm", "generator_llm")}
    if all(cast_llm(llm).is_offline for llm in llms.values()):
        print("judge and generator are offline (RAG_EVAL_JUDGE_MODEL / _GENERATOR_MODEL unset):")
        print("nothing is sent to a provider, nothing to pay.")
        return 0
    llm_assets = [a.key for a in ALL_ASSETS if a.op.pool in (LLM_JUDGE_POOL, LLM_GENERATOR_POOL)]
    with tempfile.TemporaryDirectory() as scratch, DagsterInstance.ephemeral() as instance:
        warehouse = str(Path(scratch) / "warehouse")
        estimating = {
            name: LLMResource(**{**cast_llm(llm).model_dump(), "estimate_only": True})
            for name, llm in llms.items()
        }
        defs = Definitions(
            assets=ALL_ASSETS,
            jobs=[
                define_asset_job(
                    "estimate",
                    selection=AssetSelection.assets(*llm_assets).upstream(),
                    executor_def=in_process_executor,
                )
            ],
            resources={
                **resources,
                **estimating,
                "io_manager": ParquetIOManagerResource(base_path=warehouse),
                "warehouse": WarehouseResource(base_path=warehouse),
                # Results computed from stand-in replies must never be kept for real runs.
                "result_cache": ResultCacheResource(enabled=False),
            },
        )
        job = defs.resolve_job_def("estimate")
        instance.add_dynamic_partitions(DATASET_VERSION, list(versions))
        code = 0
        for version in versions:
            print(f"{version}|{args.date}:", flush=True)
            result = job.execute_in_process(
                partition_key=evaluation_partition_key(version, args.date),
                instance=instance,
                raise_on_error=False,
                run_config={"loggers": {"console": {"config": {"log_level": "ERROR"}}}},
            )
            for line in run_estimate(result.run_id).lines():
                print(terminal_text(f"  {line}"))
            if not result.success:
                failed = [e.step_key for e in result.get_step_failure_events()]
                print(f"  incomplete: step(s) failed: {', '.join(map(str, failed))}")
                code = 1
    return code


def cast_llm(resource: object) -> LLMResource:
    """`resource` as the `LLMResource` it is (the resources dict is typed loosely)."""
    from rag_eval_pipeline.defs.shared.resources import LLMResource

    if not isinstance(resource, LLMResource):
        raise TypeError(f"expected an LLMResource, got {type(resource).__name__}")
    return resource


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


def check_upstream_stored(
    defs: Definitions, selection: Sequence[AssetKey], versions: Sequence[str], days: Sequence[str]
) -> None:
    """Raise `UsageError` (one line saying what to select) when a selected asset reads an
    upstream asset that is neither selected nor stored for every partition to run."""
    from rag_eval_pipeline.evaluation.run_fingerprint import outputs_present

    graph = defs.resolve_asset_graph()
    chosen = set(selection)
    warehouse = storage_path(WAREHOUSE_URL)
    for key in selection:
        for parent in sorted(graph.get(key).parent_keys - chosen):
            name = "/".join(parent.path)
            absent = [
                f"{version}|{day}"
                for day in days
                for version in versions
                if not outputs_present(warehouse, [name], version, day)
            ]
            if absent:
                shown = "/".join(key.path)
                raise UsageError(
                    f"--select {shown} reads {name}, not stored for {absent[0]}"
                    f"{f' and {len(absent) - 1} more' if len(absent) > 1 else ''}: "
                    f"select its upstream too (--select '+{shown}') or run without --select"
                )


def last_days(count: int) -> list[str]:
    """The `count` dates up to today (UTC), oldest first."""
    return [d.strftime("%Y-%m-%d") for d in pd.date_range(end=_today(), periods=count, freq="D")]


def _print_next_steps(
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
    from rag_eval_pipeline.defs.outcome.cost import tag_run_cost
    from rag_eval_pipeline.defs.runs.jobs import EVALUATION_JOB_NAME
    from rag_eval_pipeline.defs.runs.ownership import RunOwner
    from rag_eval_pipeline.storage.warehouse import REGRESSIONS_ASSET

    job = defs.resolve_job_def(EVALUATION_JOB_NAME)
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
    owner = RunOwner.current().tags()
    failed, refused = [], []
    for version, tags in pending:
        run_config = {"loggers": {"console": {"config": {"log_level": args.log_level}}}}
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
    gated = _print_summary(
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
        with partition_held(instance, _ensure_dagster_home(), partition_key):
            return job.execute_in_process(
                partition_key=evaluation_partition_key(version, day),
                instance=instance,
                raise_on_error=False,
                **options,
            )
    except PartitionBusyError as busy:
        print(terminal_text(str(busy)), file=sys.stderr, flush=True)
        return None


class UsageError(Exception):
    """A bad command line argument: `main` prints the message as one line and exits 2."""


def check_partition_date(day: str) -> None:
    """Raise `UsageError` unless `day` is one of the date partitions (start date to today)."""
    from rag_eval_pipeline.defs.shared.partitions import date_partitions

    days = date_partitions.get_partition_keys()
    if day not in days:
        raise UsageError(
            f"--date {day} is outside the date partitions {days[0]} to {days[-1]} "
            "(RAG_EVAL_PARTITIONS_START sets the first one; the last one is today, UTC)"
        )


def selected_assets_of(text: str, defs: Definitions) -> list[AssetKey]:
    """The asset keys an asset selection string selects; `UsageError` when it is invalid or
    selects no asset (Dagster's message, first line)."""
    from dagster import AssetSelection, DagsterError

    try:
        keys = sorted(AssetSelection.from_string(text).resolve(defs.resolve_asset_graph()))
    except DagsterError as error:
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise UsageError(f"invalid --select {text!r}: {reason}") from error
    if not keys:
        raise UsageError(f"--select {text!r} selects no asset")
    return keys


def _print_summary(
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


def backfill_partition_keys(versions: Sequence[str], first: str, last: str) -> list[str]:
    """The partition keys of `versions` on every date from `first` to `last`, both included."""
    days = pd.date_range(first, last, freq="D").strftime("%Y-%m-%d")
    return [f"{version}|{day}" for day in days for version in versions]


def _stale_partition_keys(instance: DagsterInstance, keys: Sequence[str]) -> list[str]:
    """`keys` without the partitions that are up to date (said in one line when there are)."""
    from rag_eval_pipeline.defs.runs.up_to_date import (
        evaluation_assets,
        evaluation_freshness,
        fingerprint_tags,
    )
    from rag_eval_pipeline.defs.shared.resources import DatasetsResource

    assets, datasets = evaluation_assets(), DatasetsResource()
    stale = []
    for key in keys:
        version, day = key.split("|", 1)
        tags = fingerprint_tags(datasets.folder(version), version, day)
        if not evaluation_freshness(instance, version, day, assets, tags).up_to_date:
            stale.append(key)
    if len(stale) < len(keys):
        print(f"{len(keys) - len(stale)} partition(s) of the range are up to date: not run again")
    return stale


BACKFILL_REQUEST_TAG = "rag_eval/backfill_request"
DAGSTER_LOG_RECORD = re.compile(r" - dagster[\w.]* - [A-Z]+ - ")


def _launch_backfill(
    instance: DagsterInstance, versions: Sequence[str], args: argparse.Namespace
) -> int:
    """Launch a Dagster backfill of the evaluation job over the date range: its runs enter the
    instance's run queue, one per partition, and the daemon executes them, at most
    `max_concurrent_runs` at a time.

    Dagster 1.13 has no public Python call that launches a backfill (its `DagsterInstance`
    methods that add one take private classes), so this runs its public command, `dagster job
    backfill`, with a tag of our own, and finds the queued runs, and the backfill's id on them,
    through the public `DagsterInstance.get_run_records`: nothing is read from its output but,
    on failure, its error message, printed as one line."""
    from dagster import RunsFilter

    keys = _stale_partition_keys(
        instance, backfill_partition_keys(versions, args.from_date, args.to_date)
    )
    if not keys:
        print("every partition of the range is up to date: nothing to backfill")
        return 0
    request = uuid.uuid4().hex
    failure = _dagster_job_backfill(keys, {BACKFILL_REQUEST_TAG: request})
    records = instance.get_run_records(RunsFilter(tags={BACKFILL_REQUEST_TAG: request}))
    backfills = {record.dagster_run.tags.get("dagster/backfill") for record in records}
    if failure is not None or len(records) != len(keys) or len(backfills) != 1:
        reason = failure or f"{len(records)} of {len(keys)} run(s) queued"
        print(terminal_text(f"the backfill could not be launched: {reason}"), file=sys.stderr)
        return 1
    (backfill_id,) = backfills
    print(
        f"backfill {backfill_id}: {len(records)} run(s) queued, one per partition "
        "(the range's partitions that are not up to date).\n"
        "The Dagster daemon executes them, max_concurrent_runs at a time: it runs with `make ui` "
        "(or `dagster-daemon run -w workspace.yaml`).\n"
        f"Watch it at http://127.0.0.1:3000/runs/b/{backfill_id} or with "
        f"`dagster run list`; `rag-eval scorecard --date D` once its runs succeed."
    )
    return 0


def _dagster_job_backfill(keys: Sequence[str], tags: Mapping[str, str]) -> str | None:
    """Run `dagster job backfill` of the evaluation job on `keys` with `tags` on its runs;
    `None` when it succeeded, else its error: its last `Error:` line (a usage error) or else its
    last line (a traceback's exception), Dagster's log records (its code server's) left out."""
    from rag_eval_pipeline.defs.runs.jobs import EVALUATION_JOB_NAME

    command = [
        str(Path(sys.executable).with_name("dagster")),
        *("job", "backfill", "-w", str(PROJECT_ROOT / "workspace.yaml")),
        *("-j", EVALUATION_JOB_NAME, "--partitions", ",".join(keys)),
        *("--tags", json.dumps(dict(tags)), "--noprompt"),
    ]
    completed = subprocess.run(command, capture_output=True, text=True, cwd=PROJECT_ROOT)
    if completed.returncode == 0:
        return None
    lines = [
        line.strip()
        for line in (completed.stdout + completed.stderr).splitlines()
        if line.strip() and not DAGSTER_LOG_RECORD.search(line)
    ]
    errors = [line.removeprefix("Error: ") for line in lines if line.startswith("Error: ")]
    return (errors or lines or [f"`dagster job backfill` exited with {completed.returncode}"])[-1]


def cmd_scorecard(args: argparse.Namespace) -> int:
    """Print the scorecard of one or more versions on a date, as a table or JSON."""
    from rag_eval_pipeline.datasets.versions import VERSION_NAME_PATTERN
    from rag_eval_pipeline.defs.shared.resources import DatasetsResource
    from rag_eval_pipeline.storage.warehouse import WarehouseStore

    store = WarehouseStore(WAREHOUSE_URL)
    versions = args.dataset_version or [
        name
        for name in DatasetsResource().location.version_names()
        if VERSION_NAME_PATTERN.fullmatch(name)
    ]
    stored = sorted({day for version in versions for day in store.scorecard_dates(version)})
    date = args.date or (stored[-1] if stored else _today())
    found = [store.read_scorecard(version, date) for version in versions]
    present = [frame for frame in found if frame is not None]
    if not present:
        print(
            terminal_text(
                f"No scorecard stored for {', '.join(versions)} on {date}: run "
                "`rag-eval run` first."
            ),
            file=sys.stderr,
        )
        return 1
    from rag_eval_pipeline.defs.scorecard.assets import HEADLINE_METRICS
    from rag_eval_pipeline.reporting.html_report import DATASET_TIER, TIER_ORDER
    from rag_eval_pipeline.reporting.terminal import filtered, scorecard_lines

    scorecard = filtered(pd.concat(present, ignore_index=True), args.tier or (), args.system or ())
    if scorecard.empty:
        print("No scorecard row matches --tier/--system.", file=sys.stderr)
        return 1
    if args.format == "json":
        _print_frame(scorecard, list(scorecard.columns), "json")
        return 0
    total = len(scorecard)
    if not args.all:
        shown = scorecard["band"].notna() | scorecard["metric"].isin(HEADLINE_METRICS)
        scorecard = scorecard[shown & (scorecard["tier"] != DATASET_TIER)]
    order = {tier: i for i, tier in enumerate(TIER_ORDER)}
    scorecard = scorecard.assign(
        _order=scorecard["tier"].map(lambda t: order.get(t, len(order)))
    ).sort_values(["dataset_version", "_order"], kind="stable")
    print("\n".join(scorecard_lines(scorecard)))
    if not args.all:
        print(
            f"{len(scorecard)} headline and banded metrics of {total}: --all for every row,\n"
            "--tier/--system to filter (e.g. --tier tier1 --system bm25), --format json"
        )
    return 0


def _print_frame(frame: pd.DataFrame, columns: Sequence[str], output_format: str) -> None:
    """`frame` as JSON (control characters escaped by `json.dumps`) or as a table with every
    control character shown as an escape (ids and system names come from dataset files)."""
    if output_format == "json":
        print(json.dumps(json.loads(frame.to_json(orient="records")), indent=2))
        return
    if "band" in frame.columns:
        frame = frame.assign(band=frame["band"].fillna("-"))
    with pd.option_context(
        "display.max_rows",
        None,
        "display.width",
        250,
        "display.max_colwidth",
        48,
        "display.float_format",
        "{:.4f}".format,
    ):
        print(
            terminal_text(frame[[c for c in columns if c in frame.columns]].to_string(index=False))
        )


def cmd_alerts(args: argparse.Namespace) -> int:
    """Print the alerts of every stored `metric_regressions` partition, oldest first: per
    partition its headline (`evaluation.headline`), then its alerted rows with what the alert
    sensor did with each (delivered, delivery failed, logged, not sent yet)."""
    from rag_eval_pipeline.evaluation.alerts import alert_history
    from rag_eval_pipeline.evaluation.headline import headline
    from rag_eval_pipeline.storage.warehouse import REGRESSIONS_ASSET, WarehouseStore

    store = WarehouseStore(WAREHOUSE_URL)
    alerts = alert_history(store, args.dataset_version)
    if alerts.empty:
        print("No regression alerts in the stored verdicts (metric_regressions).", file=sys.stderr)
        return 0
    columns = [
        "dataset_version",
        "date",
        "baseline_date",
        "kind",
        "tier",
        "system",
        "metric",
        "baseline_value",
        "value",
        "relative_change",
        "reason",
        "status",
    ]
    if args.format == "json":
        _print_frame(alerts, columns, "json")
        return 0
    for (version, day), _ in alerts.groupby(["dataset_version", "date"], sort=False):
        rows = store.read_partition(REGRESSIONS_ASSET, str(version), str(day))
        told = headline(rows if rows is not None else alerts.iloc[0:0])
        print(terminal_text(f"{version}|{day}: {told.text}"))
    _print_frame(alerts, columns, "table")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `rag-eval`."""
    parser = argparse.ArgumentParser(
        prog="rag-eval", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    validate = commands.add_parser("validate", help="validate a dataset version folder")
    validate.add_argument("path")
    validate.set_defaults(handler=cmd_validate)
    run = commands.add_parser("run", help="materialize the evaluation for versions on a date")
    run.add_argument("--dataset-version", action="append", help="repeatable; default: all")
    run.add_argument(
        "--date", type=_valid_date, action=_Once, default=_today(), help="default: today (UTC)"
    )
    run.add_argument(
        "--days",
        type=_day_count,
        help=(
            "evaluate the last N days up to today, oldest first, here (the runs a backfill "
            "makes, without waiting for the daemon): `make demo` uses --days 7"
        ),
    )
    run.add_argument(
        "--parallel",
        type=_process_count,
        default=1,
        help=(
            "evaluate the versions in N processes side by side (each version's dates in order): "
            "`make demo` uses 2, like the run queue's max_concurrent_runs"
        ),
    )
    run.add_argument("--quiet-end", action="store_true", help=argparse.SUPPRESS)
    run.add_argument(
        "--from",
        dest="from_date",
        type=_valid_date,
        action=_Once,
        help="first date of a backfill (with --to): queued for the Dagster daemon",
    )
    run.add_argument(
        "--to", dest="to_date", type=_valid_date, action=_Once, help="last date of a backfill"
    )
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
    estimate = commands.add_parser(
        "estimate",
        help="count the uncached LLM prompts, tokens and cost of a run, calling nothing",
    )
    estimate.add_argument("--dataset-version", action="append", help="repeatable; default: all")
    estimate.add_argument("--date", type=_valid_date, default=_today(), help="default: today")
    estimate.set_defaults(handler=cmd_estimate)
    scorecard = commands.add_parser("scorecard", help="print stored scorecards")
    scorecard.add_argument("--dataset-version", action="append", help="default: all")
    scorecard.add_argument(
        "--date", type=_valid_date, default=None, help="default: the latest date evaluated"
    )
    scorecard.add_argument("--format", choices=("table", "json"), default="table")
    scorecard.add_argument("--all", action="store_true", help="print every metric row")
    scorecard.add_argument(
        "--tier", action="append", help="repeatable; a prefix: tier1, traffic, judge..."
    )
    scorecard.add_argument(
        "--system", action="append", help="repeatable; part of a system name, any case"
    )
    scorecard.set_defaults(handler=cmd_scorecard)
    alerts = commands.add_parser(
        "alerts", help="print the alerts of the stored verdicts and their delivery status"
    )
    alerts.add_argument("--dataset-version")
    alerts.add_argument("--format", choices=("table", "json"), default="table")
    alerts.set_defaults(handler=cmd_alerts)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `rag-eval` console script."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "run":
        _check_date_range(parser, args)
    from rag_eval_pipeline.storage.machine import machine_failure_line
    from rag_eval_pipeline.storage.parquet import UnreadableFileError

    try:
        return int(args.handler(args))
    except UsageError as error:
        print(terminal_text(f"rag-eval {args.command}: error: {error}"), file=sys.stderr)
        return 2
    except UnreadableFileError as error:
        print(terminal_text(f"rag-eval {args.command}: error: {error}"), file=sys.stderr)
        return 1
    except Exception as error:
        line = machine_failure_line(error, os.environ.get("DAGSTER_HOME"))
        if line is None:
            raise
        print(terminal_text(f"rag-eval {args.command}: {line}"), file=sys.stderr)
        return 1


def _check_date_range(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """`--from` and `--to` come together, in order, and without `--date`, `--select` or
    `--force` (a backfill runs the whole evaluation job on every partition)."""
    if args.days and (getattr(args, "_date_given", False) or args.from_date or args.to_date):
        parser.error("--days does not go with --date, --from or --to")
    if args.from_date is None and args.to_date is None:
        return
    if args.from_date is None or args.to_date is None:
        parser.error("--from and --to go together")
    if args.from_date > args.to_date:
        parser.error(f"--from {args.from_date} is after --to {args.to_date}")
    for option, given in (
        ("--date", getattr(args, "_date_given", False)),
        ("--select", args.select),
        ("--force", args.force),
        ("--fail-on-regression", args.fail_on_regression),
        ("--parallel", args.parallel > 1),
    ):
        if given:
            parser.error(f"{option} does not apply to a --from/--to backfill")


def run_and_exit() -> NoReturn:
    """The `rag-eval` console script: `main`, then end the process without tearing it down.

    A process that imported Dagster, pandas and SQLAlchemy (over 2,000 modules) spends about a
    second in interpreter shutdown, tearing down modules and collecting garbage, after every
    command. What must happen at exit is registered with `atexit` (log handlers, Dagster's
    resource and instance exit stacks, file locks): those handlers run, the standard streams are
    flushed, then the process ends with `os._exit`. Everything stored was committed already.
    """
    code = main()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    run_and_exit()
