"""`rag-eval`: validate dataset folders, run evaluations on the persistent instance, read results.

rag-eval validate PATH
rag-eval run [--dataset-version V ...] [--date YYYY-MM-DD] [--select ASSET_SELECTION] [--force]
             [--fail-on-regression]
rag-eval scorecard [--dataset-version V ...] [--date D] [--format table|json]
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import sys
from collections.abc import Mapping, Sequence
from datetime import UTC, date, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pandas as pd

from rag_eval_pipeline.datasets.errors import DatasetError, InvalidVersionName
from rag_eval_pipeline.datasets.golden import load_dataset
from rag_eval_pipeline.parallel_runs import PartitionRun, available_cores, run_partitions
from rag_eval_pipeline.settings import DATASETS_DIR, PROJECT_ROOT, REPORTS_DIR, WAREHOUSE_URL

if TYPE_CHECKING:
    from dagster import AssetKey, DagsterInstance, JobDefinition

FINGERPRINT_TAG = "rag_eval/fingerprint"


def _today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


def _valid_date(text: str) -> str:
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date (YYYY-MM-DD)") from error


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number")
    return int(text)


def _ensure_dagster_home() -> None:
    home = Path(os.environ.setdefault("DAGSTER_HOME", str(PROJECT_ROOT / ".dagster_home")))
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists() and (PROJECT_ROOT / "dagster.yaml").exists():
        config.write_text((PROJECT_ROOT / "dagster.yaml").read_text())


def cmd_validate(args: argparse.Namespace) -> int:
    """Validate a dataset version folder and print its table sizes."""
    try:
        dataset = load_dataset(Path(args.path))
    except (DatasetError, InvalidVersionName) as error:
        print(error, file=sys.stderr)
        return 1
    print(f"Dataset version '{dataset.version}' is valid:")
    for name, value in dataset.statistics().items():
        print(f"  {name}: {value}")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """Register dataset versions and materialize the selected assets for each on one date.

    A partition already materialized successfully from the same inputs (its `run_fingerprint`)
    whose outputs are still in the warehouse is skipped unless ``--force`` is given.
    """
    _ensure_dagster_home()
    from dagster import AssetSelection, DagsterInstance, DagsterRunStatus, RunsFilter
    from upath import UPath

    from rag_eval_pipeline.assets.report import evaluation_report, report_path
    from rag_eval_pipeline.definitions import defs
    from rag_eval_pipeline.evaluation.store import WarehouseStore
    from rag_eval_pipeline.jobs import EVALUATION_JOB_NAME
    from rag_eval_pipeline.partitions import DATASET_VERSION, evaluation_partition_key
    from rag_eval_pipeline.resources import DatasetsResource
    from rag_eval_pipeline.run_fingerprint import outputs_present, partition_fingerprint

    datasets = DatasetsResource()
    scan = datasets.scan()
    for name, reason in scan.invalid.items():
        print(f"skipping dataset folder {name!r}: {reason}", file=sys.stderr)
    versions = args.dataset_version or scan.valid
    unknown = [v for v in versions if v not in scan.valid]
    if unknown:
        print(f"unknown or invalid dataset version(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    instance = DagsterInstance.get()
    registered = set(instance.get_dynamic_partitions(DATASET_VERSION))
    new = [v for v in versions if v not in registered]
    if new:
        instance.add_dynamic_partitions(DATASET_VERSION, new)
    job = defs.resolve_job_def(EVALUATION_JOB_NAME)
    asset_graph = defs.resolve_asset_graph()
    selection = (
        sorted(AssetSelection.from_string(args.select).resolve(asset_graph))
        if args.select
        else None
    )
    selected_assets = [
        "/".join(key.path) for key in (selection or asset_graph.materializable_asset_keys)
    ]
    pending: list[PartitionRun] = []
    up_to_date: dict[str, str] = {}
    for version in versions:
        key = evaluation_partition_key(version, args.date)
        fingerprint = partition_fingerprint(
            version_dir=Path(datasets.root) / version,
            version=version,
            date=args.date,
            store=WarehouseStore(WAREHOUSE_URL),
            selection=selected_assets if selection else None,
        )
        tags = {FINGERPRINT_TAG: fingerprint} if fingerprint else {}
        if fingerprint and not args.force:
            previous = instance.get_runs(
                filters=RunsFilter(
                    tags={"dagster/partition": str(key), **tags},
                    statuses=[DagsterRunStatus.SUCCESS],
                ),
                limit=1,
            )
            reports = (
                [report_path(REPORTS_DIR, version, args.date)]
                if "/".join(evaluation_report.key.path) in selected_assets
                else []
            )
            if previous and outputs_present(
                UPath(WAREHOUSE_URL), selected_assets, version, args.date, files=reports
            ):
                up_to_date[version] = previous[0].run_id
                print(
                    f"{key} is up to date: run {previous[0].run_id} materialized it from the "
                    "same data, code and configuration (--force runs it again)"
                )
                continue
        pending.append(PartitionRun(version=version, key=str(key), tags=tags))
    if pending:
        at_once = min(args.jobs, len(pending))
        print(
            f"materializing {', '.join(run.key for run in pending)} ({at_once} at a time) ...",
            flush=True,
        )
    materialize = partial(
        _materialize_partition,
        job,
        instance,
        selection=selection,
        run_config={"loggers": {"console": {"config": {"log_level": args.log_level}}}},
    )
    failed = []
    run_ids = dict(up_to_date)
    for run, run_id, success in run_partitions(materialize, pending, args.jobs):
        print(f"  {'ok' if success else 'FAILED'}: {run.key}, run {run_id}", flush=True)
        run_ids[run.version] = run_id
        if not success:
            failed.append(run.version)
    gated = _print_summary(instance, versions, args.date, run_ids)
    if failed:
        print(f"failed versions: {', '.join(failed)}", file=sys.stderr)
        return 1
    if gated and args.fail_on_regression:
        print(f"--fail-on-regression: {', '.join(gated)}", file=sys.stderr)
        return 3
    return 0


def _print_summary(
    instance: DagsterInstance, versions: Sequence[str], day: str, run_ids: Mapping[str, str]
) -> list[str]:
    """Print each partition's regression alerts and failed checks; return the partitions a CI
    gate fails on (an alert or an ERROR check)."""
    from rag_eval_pipeline.evaluation.store import WarehouseStore
    from rag_eval_pipeline.run_summary import partition_summary

    store = WarehouseStore(WAREHOUSE_URL)
    gated = []
    print(f"summary for {day}:")
    for version in versions:
        summary = partition_summary(instance, store, version, day, run_ids.get(version))
        verdict = "needs a look" if summary.lines else "no regression, every check passed"
        print(f"{version}|{day}: {verdict}")
        for line in summary.lines:
            print(line)
        if summary.gates:
            gated.append(f"{version}|{day}")
    return gated


def _materialize_partition(
    job: JobDefinition,
    instance: DagsterInstance,
    run: PartitionRun,
    *,
    selection: Sequence[AssetKey] | None,
    run_config: Mapping[str, Any],
) -> tuple[str, bool]:
    """One Dagster run of `job` for `run`'s partition; returns its run id and success."""
    result = job.execute_in_process(
        partition_key=run.key,
        instance=instance,
        asset_selection=selection,
        raise_on_error=False,
        tags=dict(run.tags),
        run_config=dict(run_config),
    )
    return result.run_id, result.success


def cmd_scorecard(args: argparse.Namespace) -> int:
    """Print the scorecard of one or more versions on a date, as a table or JSON."""
    from rag_eval_pipeline.datasets.versions import scan_versions
    from rag_eval_pipeline.evaluation.store import WarehouseStore

    store = WarehouseStore(WAREHOUSE_URL)
    versions = args.dataset_version or scan_versions(DATASETS_DIR).valid
    found = [store.read_scorecard(version, args.date) for version in versions]
    present = [frame for frame in found if frame is not None]
    if not present:
        print(
            f"No scorecard stored for {', '.join(versions)} on {args.date}: run "
            "`rag-eval run` first.",
            file=sys.stderr,
        )
        return 1
    scorecard = pd.concat(present, ignore_index=True)
    if args.format == "table" and not args.all:
        from rag_eval_pipeline.assets.scorecard import HEADLINE_METRICS

        shown = scorecard["band"].notna() | scorecard["metric"].isin(HEADLINE_METRICS)
        print(
            f"{int(shown.sum())} headline and banded metrics of {len(scorecard)} "
            "(--all for every row, --format json for machines):"
        )
        scorecard = scorecard[shown]
    _print_frame(
        scorecard,
        [
            "dataset_version",
            "tier",
            "system",
            "metric",
            "value",
            "ci_low",
            "ci_high",
            "count",
            "band",
        ],
        args.format,
    )
    return 0


def _print_frame(frame: pd.DataFrame, columns: Sequence[str], output_format: str) -> None:
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
        print(frame[[c for c in columns if c in frame.columns]].to_string(index=False))


def cmd_alerts(args: argparse.Namespace) -> int:
    """Print the recorded regression alerts, oldest first."""
    from rag_eval_pipeline.evaluation.store import WarehouseStore

    alerts = WarehouseStore(WAREHOUSE_URL).read_alerts(args.dataset_version)
    if alerts.empty:
        print("No regression alerts recorded.", file=sys.stderr)
        return 0
    _print_frame(
        alerts,
        [
            "dataset_version",
            "date",
            "baseline_date",
            "tier",
            "system",
            "metric",
            "baseline_value",
            "value",
            "relative_change",
            "delivered",
        ],
        args.format,
    )
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
    run.add_argument("--date", type=_valid_date, default=_today(), help="default: today (UTC)")
    run.add_argument("--select", help="Dagster asset selection, e.g. 'retrieval_metrics+'")
    run.add_argument("--log-level", default="WARNING", help="Dagster console log level")
    run.add_argument(
        "--force", action="store_true", help="materialize even partitions that are up to date"
    )
    run.add_argument(
        "--jobs",
        type=_positive_int,
        default=1,
        help=(
            "partitions materialized at once, each in a forked process (default: 1; "
            f"this machine has {available_cores()} cores)"
        ),
    )
    run.add_argument(
        "--fail-on-regression",
        action="store_true",
        help=(
            "exit 3 when a partition has a regression alert (a regressed metric, or one missing "
            "today) or an ERROR check such as a judge outage: a CI gate"
        ),
    )
    run.set_defaults(handler=cmd_run)
    scorecard = commands.add_parser("scorecard", help="print stored scorecards")
    scorecard.add_argument("--dataset-version", action="append", help="default: all")
    scorecard.add_argument("--date", type=_valid_date, default=_today())
    scorecard.add_argument("--format", choices=("table", "json"), default="table")
    scorecard.add_argument("--all", action="store_true", help="print every metric row")
    scorecard.set_defaults(handler=cmd_scorecard)
    alerts = commands.add_parser("alerts", help="print the regression alert history")
    alerts.add_argument("--dataset-version")
    alerts.add_argument("--format", choices=("table", "json"), default="table")
    alerts.set_defaults(handler=cmd_alerts)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `rag-eval` console script."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    args = build_parser().parse_args(argv)
    return int(args.handler(args))


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
