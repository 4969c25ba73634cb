"""`rag-eval run --from D --to D`: a Dagster backfill of the evaluation job over a date range,
queued for the daemon (the partitions that are not up to date)."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from rag_eval_pipeline.cli.common import Once, valid_date
from rag_eval_pipeline.settings import (
    PROJECT_ROOT,
)
from rag_eval_pipeline.text.escaping import terminal_text

if TYPE_CHECKING:
    from dagster import (
        DagsterInstance,
    )


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


def launch_backfill(
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


def add_backfill_arguments(run: argparse.ArgumentParser) -> None:
    """`--from D --to D` of `rag-eval run`."""
    run.add_argument(
        "--from",
        dest="from_date",
        type=valid_date,
        action=Once,
        help="first date of a backfill (with --to): queued for the Dagster daemon",
    )
    run.add_argument(
        "--to", dest="to_date", type=valid_date, action=Once, help="last date of a backfill"
    )


def check_date_range(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
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
