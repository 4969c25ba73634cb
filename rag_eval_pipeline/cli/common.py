"""What every `rag-eval` command shares: exit codes, argument types, the instance, usage errors."""

from __future__ import annotations

import argparse
import os
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rag_eval_pipeline.settings import (
    PROJECT_ROOT,
)

if TYPE_CHECKING:
    from dagster import (
        DagsterInstance,
    )


# Exit codes of `rag-eval run` from least to most severe: an undecided gate (4) is overridden
# by a failed run (1) and by a regression alert (3).
EXIT_SEVERITY = (0, 4, 1, 2, 3)


def worst_exit(*codes: int) -> int:
    """The most severe of `codes` (`EXIT_SEVERITY`; an unknown code counts as most severe)."""
    rank = {code: i for i, code in enumerate(EXIT_SEVERITY)}
    return max(codes, key=lambda code: rank.get(code, len(rank)), default=0)


def today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


def day_count(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 366:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of days from 1 to 366")
    return int(text)


def process_count(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 64:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of processes from 1 to 64")
    return int(text)


def valid_date(text: str) -> str:
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date (YYYY-MM-DD)") from error


class Once(argparse.Action):
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


def ensure_dagster_home() -> Path:
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

    home = ensure_dagster_home()
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
