"""One run per partition at a time: a second run of a partition in progress is refused with one
line naming the run in progress.

Runs the daemon launches (schedule, sensors, backfills, the UI) wait in the run queue: the
shipped instance files cap them with a tag limit per unique value of `dagster/partition`
(`tag_concurrency_limits: [{key: dagster/partition, value: {applyLimitPerUniqueValue: true},
limit: 1}]`), and the queue counts every run in progress with that tag, in-process ones too.
`rag-eval run` executes its runs in its own process, past the queue, so before each run it takes
`partition_held`: an exclusive, non-blocking file lock per partition under `DAGSTER_HOME` (two
processes of this machine), then a look at the instance for a run of the partition in progress
(a queued or launched run, or a `rag-eval run` on another machine sharing a PostgreSQL instance).
Across machines that look is not atomic: two machines starting the same partition within the
same instant can both run it; the queue's limit is exact.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dagster import DagsterInstance, DagsterRun, DagsterRunStatus, RunsFilter
from filelock import FileLock, Timeout

PARTITION_TAG = "dagster/partition"
VERSION_TAG = "dagster/partition/dataset_version"
LOCKS_FOLDER = ".partition-locks"
# A queued run is not in progress: the queue's tag limit holds it while this one runs.
IN_PROGRESS = [DagsterRunStatus.STARTING, DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]


class PartitionBusyError(RuntimeError):
    """Another run of the partition is in progress (the message names it)."""


def run_in_progress(instance: DagsterInstance, partition_key: str) -> DagsterRun | None:
    """A run of `partition_key` that is starting, running or being canceled, if any."""
    runs = instance.get_runs(
        filters=RunsFilter(tags={PARTITION_TAG: partition_key}, statuses=IN_PROGRESS),
        limit=1,
    )
    return runs[0] if runs else None


@contextmanager
def partition_held(instance: DagsterInstance, home: Path, partition_key: str) -> Iterator[None]:
    """Hold `partition_key` for a run of this process; `PartitionBusyError` when another run of
    it is in progress (this machine's other `rag-eval run`, or any run in the instance)."""
    digest = hashlib.sha256(partition_key.encode()).hexdigest()[:32]
    folder = home / LOCKS_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(folder / f"{digest}.lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        busy = run_in_progress(instance, partition_key)
        holder = f"run {busy.run_id}" if busy else "another rag-eval run on this machine"
        raise PartitionBusyError(_refusal(partition_key, holder)) from None
    try:
        busy = run_in_progress(instance, partition_key)
        if busy is not None:
            raise PartitionBusyError(_refusal(partition_key, f"run {busy.run_id}"))
        yield
    finally:
        lock.release()


def _refusal(partition_key: str, holder: str) -> str:
    return (
        f"{partition_key} is already being evaluated by {holder}: not run twice "
        "(run again once it has ended; an up-to-date partition is then skipped)"
    )


def versions_in_progress(instance: DagsterInstance, exclude_run: str | None = None) -> set[str]:
    """The dataset versions with a run in progress (other than `exclude_run`)."""
    runs = instance.get_runs(filters=RunsFilter(statuses=IN_PROGRESS))
    return {
        run.tags[VERSION_TAG]
        for run in runs
        if run.run_id != exclude_run and VERSION_TAG in run.tags
    }
