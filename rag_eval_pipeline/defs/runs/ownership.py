"""Every run names the process that executes it; a dead owner's unfinished runs fail.

`rag-eval run` executes each partition's run in process, so no run launcher watches it: a CLI
killed mid-run (SIGKILL, OOM, Ctrl-C twice) would leave its run STARTED forever, and with the
run queue's `max_concurrent_runs` such runs block every scheduled, sensor, backfill and UI run.
A run the daemon launches has the same problem when its run worker dies together with the code
server that launched it (a reboot, a SIGKILLed `dagster dev`): the code server fails a run
whose worker exits, but once it is gone too, nothing does until run monitoring's
`max_runtime_seconds`. Every run is therefore tagged with its owner process (host, pid and the
process's start time, so a recycled pid is not mistaken for the owner): a CLI run when it is
created, any other run by its run worker when the worker creates the IO manager
(`claim_run`; the code location's only executor is the in-process one, so that process runs
every step of the run). A run whose owner on this host is gone is reported failed through the
instance:

- by `rag-eval run` itself before it starts its own runs, and
- by `dead_owner_run_sensor` in the daemon every 30 seconds, so the queue is unblocked even when
  no CLI runs again.

Runs of owners on other hosts are left alone: their liveness cannot be seen from here.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass

from dagster import (
    DagsterInstance,
    DagsterRun,
    DagsterRunStatus,
    DefaultSensorStatus,
    RunsFilter,
    SensorEvaluationContext,
    SkipReason,
    sensor,
)

from rag_eval_pipeline.storage.processes import process_ended, process_start_time

OWNER_HOST_TAG = "rag_eval/owner_host"
OWNER_PID_TAG = "rag_eval/owner_pid"
OWNER_STARTED_TAG = "rag_eval/owner_started"
# A run an owner executes in process passes through these statuses before it ends.
OWNED_RUN_STATUSES = [
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
    DagsterRunStatus.CANCELING,
]


@dataclass(frozen=True)
class RunOwner:
    """The process that executes a run in process: host name, pid, start time ("" if unknown)."""

    host: str
    pid: int
    started: str

    @classmethod
    def current(cls) -> RunOwner:
        """This process."""
        return cls(socket.gethostname(), os.getpid(), process_start_time(os.getpid()))

    @classmethod
    def from_tags(cls, tags: dict[str, str]) -> RunOwner | None:
        """The owner recorded in a run's tags; None for runs without (well-formed) owner tags."""
        pid = tags.get(OWNER_PID_TAG, "")
        if OWNER_HOST_TAG not in tags or not pid.isdigit():
            return None
        return cls(tags[OWNER_HOST_TAG], int(pid), tags.get(OWNER_STARTED_TAG, ""))

    def tags(self) -> dict[str, str]:
        """The run tags naming this owner."""
        return {
            OWNER_HOST_TAG: self.host,
            OWNER_PID_TAG: str(self.pid),
            OWNER_STARTED_TAG: self.started,
        }

    def is_dead(self) -> bool:
        """Whether this owner, on this host, has ended (its pid is gone, a zombie, or another
        process's). An owner on another host is never declared dead."""
        if self.host != socket.gethostname():
            return False
        return process_ended(self.pid, self.started)


def claim_run(instance: DagsterInstance | None, run_id: str | None) -> None:
    """Tag run `run_id` with this process as its owner, unless it already names one (a run
    of `rag-eval run`, or claimed before); no-op outside a run."""
    if instance is None or not run_id:
        return
    run = instance.get_run_by_id(run_id)
    if run is None or RunOwner.from_tags(dict(run.tags)) is not None:
        return
    instance.add_run_tags(run_id, RunOwner.current().tags())


def runs_of_dead_owners(instance: DagsterInstance) -> list[tuple[DagsterRun, RunOwner]]:
    """Unfinished runs owned by a process of this host that has ended."""
    runs = instance.get_runs(
        filters=RunsFilter(statuses=OWNED_RUN_STATUSES, tags={OWNER_HOST_TAG: socket.gethostname()})
    )
    found = []
    for run in runs:
        owner = RunOwner.from_tags(dict(run.tags))
        if owner is not None and owner.is_dead():
            found.append((run, owner))
    return found


def fail_runs_of_dead_owners(instance: DagsterInstance) -> list[str]:
    """Report every unfinished run of a dead owner on this host failed; returns their run ids."""
    failed = []
    for run, owner in runs_of_dead_owners(instance):
        instance.report_run_failed(
            run,
            message=(
                f"The process that executed this run (pid {owner.pid} on {owner.host}: a "
                "`rag-eval run` or a run worker) ended before the run did; marked failed so the "
                "run queue no longer counts it as in progress."
            ),
        )
        failed.append(run.run_id)
    return failed


@sensor(
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.RUNNING,
    description=(
        "Marks failed the runs whose process on this host (a `rag-eval run` or a run worker) "
        "died before they ended, so they stop counting against max_concurrent_runs."
    ),
)
def dead_owner_run_sensor(context: SensorEvaluationContext) -> SkipReason:
    failed = fail_runs_of_dead_owners(context.instance)
    for run_id in failed:
        context.log.warning(f"Run {run_id} lost its process: marked failed.")
    if failed:
        return SkipReason(f"Marked {len(failed)} run(s) of ended processes failed.")
    return SkipReason("No run of an ended process.")
