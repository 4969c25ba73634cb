"""Materialize the partitions of one `rag-eval run` side by side, in forked worker processes.

`rag-eval run` starts one Dagster run per partition (dataset version × date). A run spends its
time in single-threaded Python (Dagster's step bookkeeping, pandas, the offline judge), so on a
machine with several cores the partitions of a date finish sooner side by side. The workers are
forked from the CLI process once it has imported the code location and opened the instance, so a
worker starts in milliseconds instead of importing Dagster and the project again (about 3 s), as
a run launcher's subprocess would. Each partition stays its own Dagster run with its own events;
SQLite serializes the runs' writes (WAL mode, busy timeout), and every cache the steps share
(embeddings, judge replies, results) writes atomically; texts two versions share are embedded
once. The cores are split between the workers: each worker's PyTorch (its OpenMP and MKL pools,
sized when torch is first imported, in the worker) gets `cores // workers` threads unless
``OMP_NUM_THREADS`` or ``MKL_NUM_THREADS`` is set, because spinning thread pools that overcommit
the cores slow every worker down.

Forking needs Linux: elsewhere (macOS's fork is unsafe with some system libraries, Windows has
none), and with one job, the partitions run one after another in this process.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class PartitionRun:
    """One partition to materialize: its dataset version, partition key and run tags."""

    version: str
    key: str
    tags: Mapping[str, str]


# Materializes a partition; returns the run id and whether the run succeeded.
Materialize = Callable[[PartitionRun], tuple[str, bool]]

_worker_materialize: Materialize | None = None


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the platform reports it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether worker processes can be forked safely here (Linux)."""
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def _start_worker(materialize: Materialize, threads: int) -> None:
    global _worker_materialize
    _worker_materialize = materialize
    for variable in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(variable, str(threads))


def _materialize_in_worker(run: PartitionRun) -> tuple[PartitionRun, str, bool]:
    assert _worker_materialize is not None, "worker started without _start_worker"
    return run, *_worker_materialize(run)


def run_partitions(
    materialize: Materialize, runs: Sequence[PartitionRun], jobs: int
) -> Iterator[tuple[PartitionRun, str, bool]]:
    """Materialize every run, at most `jobs` at a time; yields (run, run id, success) as each ends.

    With one job, one run or no fork, the runs go one after another in this process, in order.
    `materialize` reaches the workers through the fork, not by pickling, so it may hold the job
    definition and the instance; only the `PartitionRun`s and the results cross the pipes.
    """
    workers = min(jobs, len(runs))
    if workers <= 1 or not can_fork():
        for run in runs:
            yield run, *materialize(run)
        return
    sys.stdout.flush()
    sys.stderr.flush()
    threads = max(1, available_cores() // workers)
    pool = multiprocessing.get_context("fork").Pool(
        workers, initializer=_start_worker, initargs=(materialize, threads)
    )
    try:
        yield from pool.imap_unordered(_materialize_in_worker, runs)
    except BaseException:
        pool.terminate()
        raise
    else:
        pool.close()
    finally:
        pool.join()
