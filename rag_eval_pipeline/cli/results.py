"""`rag-eval scorecard` and `rag-eval alerts`: read the stored scorecards and verdicts."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pandas as pd

from rag_eval_pipeline.cli.common import today, valid_date
from rag_eval_pipeline.settings import (
    WAREHOUSE_URL,
)
from rag_eval_pipeline.text.escaping import terminal_text

if TYPE_CHECKING:
    pass


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
    date = args.date or (stored[-1] if stored else today())
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


def add_parsers(commands: argparse._SubParsersAction) -> None:
    """`rag-eval scorecard ...` and `rag-eval alerts ...`."""
    scorecard = commands.add_parser("scorecard", help="print stored scorecards")
    scorecard.add_argument("--dataset-version", action="append", help="default: all")
    scorecard.add_argument(
        "--date", type=valid_date, default=None, help="default: the latest date evaluated"
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
