"""No run stays STARTED after its `rag-eval run` process dies, and the run queue moves on.

A `rag-eval run` is SIGKILLed mid-step on a temporary deployment whose run queue admits one run
at a time. Then either the Dagster daemon (`dagster-daemon run`, its `dead_owner_run_sensor`)
fails the orphaned run and launches the queued one, or the next `rag-eval run` fails it before
it queues a `--from/--to` backfill. Every wait is bounded.
"""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from dagster import (
    AssetExecutionContext,
    DagsterEventType,
    DagsterInstance,
    DagsterRun,
    DagsterRunStatus,
    RunsFilter,
    SkipReason,
    asset,
    build_sensor_context,
    in_process_executor,
    materialize,
    validate_run_config,
)
from filelock import FileLock

from rag_eval_pipeline.cli import build_parser, main
from rag_eval_pipeline.cli.backfill import launch_backfill
from rag_eval_pipeline.definitions import defs
from rag_eval_pipeline.defs.runs.ownership import (
    RunOwner,
    dead_owner_run_sensor,
    fail_runs_of_dead_owners,
    process_start_time,
)
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION
from rag_eval_pipeline_tests.conftest import (
    DATASETS_DIR,
    PROJECT_ROOT,
    SHIPPED_INSTANCE_CONFIG,
    deployment_env,
    rag_eval,
    stop_process_group,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

VERSION = "demo-v1"
KILLED_DATE = "2026-11-20"
QUEUED_DATE = "2026-11-21"
# a daemon launches a run in a fresh process that imports the project and evaluates demo-v1:
# about 2 minutes on 2 busy cores; the bound only matters when something is wrong
WAIT_S = 600
BIN = Path(sys.executable).parent


def test_this_process_is_a_live_owner_and_its_tags_round_trip() -> None:
    owner = RunOwner.current()
    assert owner.host == socket.gethostname() and owner.pid == os.getpid()
    assert not owner.is_dead()
    assert RunOwner.from_tags(owner.tags()) == owner
    assert RunOwner.from_tags({"rag_eval/owner_host": owner.host}) is None
    assert RunOwner.from_tags({**owner.tags(), "rag_eval/owner_pid": "12x"}) is None


def test_an_ended_or_recycled_pid_is_dead_and_another_host_never_is() -> None:
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait(timeout=60)
    assert RunOwner(socket.gethostname(), ended.pid, "").is_dead()
    if process_start_time(os.getpid()):
        recycled = RunOwner(socket.gethostname(), os.getpid(), "1")
        assert recycled.is_dead(), "same pid, another start time: another process"
    assert not RunOwner(f"not-{socket.gethostname()}", ended.pid, "").is_dead()


SEEN_FROM_A_RUN: dict[str, object] = {}


@asset
def looks_at_its_own_run(context: AssetExecutionContext) -> None:
    """While its run is STARTED, asks for dead owners' runs and evaluates the sensor."""
    run = context.instance.get_run_by_id(context.run_id)
    assert run is not None
    SEEN_FROM_A_RUN["status"] = run.status
    SEEN_FROM_A_RUN["failed"] = fail_runs_of_dead_owners(context.instance)
    SEEN_FROM_A_RUN["sensor"] = dead_owner_run_sensor(
        build_sensor_context(instance=context.instance)
    )


def test_a_live_owners_started_run_is_left_alone(dagster_instance: DagsterInstance) -> None:
    result = materialize(
        [looks_at_its_own_run], instance=dagster_instance, tags=RunOwner.current().tags()
    )
    assert result.success
    seen = SEEN_FROM_A_RUN
    assert seen["status"] == DagsterRunStatus.STARTED and seen["failed"] == []
    assert isinstance(seen["sensor"], SkipReason)
    assert seen["sensor"].skip_message == "No run of an ended process."


@pytest.mark.parametrize(
    "args",
    [
        ["--date", "2026-11-20", "--date", "2026-11-21"],
        ["--from", "2026-11-20"],
        ["--from", "2026-11-21", "--to", "2026-11-20"],
        ["--from", "2026-11-20", "--to", "2026-11-21", "--date", "2026-11-20"],
        ["--from", "2026-11-20", "--to", "2026-11-21", "--select", "golden_dataset"],
        ["--from", "2026-11-20", "--to", "2026-11-21", "--fail-on-regression"],
    ],
)
def test_conflicting_dates_are_an_error_not_a_silent_choice(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["run", *args])
    assert exited.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_a_date_range_parses_to_a_backfill() -> None:
    args = build_parser().parse_args(["run", "--from", "2026-11-20", "--to", "2026-11-22"])
    assert (args.from_date, args.to_date) == ("2026-11-20", "2026-11-22")


def test_a_backfill_that_dagster_refuses_fails_in_one_line(
    dagster_instance: DagsterInstance, capsys: pytest.CaptureFixture[str]
) -> None:
    """`dagster job backfill` refuses a partition the instance does not know: the command
    says so in one line (not Dagster's logs or traceback), returns 1 and queues nothing."""
    args = build_parser().parse_args(["run", "--from", "2026-11-20", "--to", "2026-11-21"])
    assert launch_backfill(dagster_instance, ["unregistered"], args) == 1
    assert capsys.readouterr().err.splitlines() == [
        "the backfill could not be launched: Unknown partitions: "
        "unregistered|2026-11-20, unregistered|2026-11-21"
    ]
    assert dagster_instance.get_run_records() == []


def test_a_run_is_one_process_with_step_retries_available() -> None:
    job = defs.resolve_job_def("evaluation_job")
    assert job.executor_def is in_process_executor
    config = yaml.safe_load((PROJECT_ROOT / "deploy" / "run_config.real_judge.yaml").read_text())
    resolved = validate_run_config(job, config)["execution"]
    assert resolved == {"in_process": {"retries": {"enabled": {}}}}


@pytest.fixture
def deployment(tmp_path: Path) -> tuple[Path, Path]:
    """A data folder with one dataset version, and a fresh DAGSTER_HOME whose instance is the
    shipped one with a run queue of one run at a time."""
    shutil.copytree(DATASETS_DIR / VERSION, tmp_path / "datasets" / VERSION)
    home = tmp_path / "home"
    home.mkdir()
    config = yaml.safe_load(SHIPPED_INSTANCE_CONFIG.read_text(encoding="utf-8"))
    config["concurrency"]["runs"] = {"max_concurrent_runs": 1}
    (home / "dagster.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return tmp_path, home


def wait_for(
    condition: Callable[[], object], what: str, timeout_s: float = WAIT_S, poll_s: float = 0.5
) -> object:
    """Poll `condition` every `poll_s` until it returns something truthy; fail after
    `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(poll_s)
    pytest.fail(f"timed out after {timeout_s:.0f}s waiting for {what}")


def run_killed_mid_step(data_dir: Path, home: Path) -> DagsterRun:
    """Start `rag-eval run`, SIGKILL it once a step has started, and return its run."""
    cli = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rag_eval_pipeline.cli",
            "run",
            "--dataset-version",
            VERSION,
            "--date",
            KILLED_DATE,
        ],
        env=deployment_env(data_dir, home),
        cwd=data_dir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def started_step() -> DagsterRun | None:
            lock = home / ".rag-eval-instance.lock"
            if not lock.exists():
                return None
            with FileLock(lock):  # the CLI may be creating the instance's schema
                instance = DagsterInstance.get()
            with instance:
                for run in instance.get_runs():
                    if any(
                        event.dagster_event_type == DagsterEventType.STEP_START
                        for event in instance.all_logs(run.run_id)
                    ):
                        return run
            return None

        run = wait_for(started_step, "a step of the CLI run to start")
    finally:
        cli.send_signal(signal.SIGKILL)
        cli.wait(timeout=60)
    assert isinstance(run, DagsterRun)
    with DagsterInstance.get() as instance:
        orphan = instance.get_run_by_id(run.run_id)
    assert orphan is not None and orphan.status == DagsterRunStatus.STARTED
    owner = RunOwner.from_tags(dict(orphan.tags))
    assert owner is not None and (owner.host, owner.pid) == (socket.gethostname(), cli.pid)
    return orphan


def run_status(run_id: str) -> DagsterRunStatus:
    with DagsterInstance.get() as instance:
        run = instance.get_run_by_id(run_id)
    assert run is not None
    return run.status


def failure_message(run_id: str) -> str:
    with DagsterInstance.get() as instance:
        events = instance.all_logs(run_id, of_type=DagsterEventType.RUN_FAILURE)
    return " ".join(event.message or "" for event in events)


@pytest.fixture
def killed(
    deployment: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, Path, DagsterRun]:
    """The deployment's data folder and DAGSTER_HOME (also this process's, for the test's
    reads), and the run of a `rag-eval run` SIGKILLed mid-step, left STARTED."""
    data_dir, home = deployment
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return data_dir, home, run_killed_mid_step(data_dir, home)


def start_daemon(data_dir: Path, home: Path, log_name: str) -> subprocess.Popen[bytes]:
    """`dagster-daemon run` on the deployment, in its own process group, logging to a file."""
    with (data_dir / log_name).open("wb") as sink:
        return subprocess.Popen(
            [str(BIN / "dagster-daemon"), "run", "-w", "workspace.yaml"],
            env=deployment_env(data_dir, home),
            cwd=PROJECT_ROOT,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def daemon_recovers(
    data_dir: Path, home: Path, orphan_id: str, orphan_pid: str, waiting: DagsterRun
) -> None:
    """Run a daemon until `waiting` has ended; assert that the orphaned run was failed with its
    dead owner's pid in the message, and that `waiting` succeeded."""
    daemon = start_daemon(data_dir, home, "daemon.log")
    try:
        wait_for(
            lambda: (
                run_status(waiting.run_id) in (DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE)
            ),
            "the daemon to fail the orphaned run, then launch and finish the queued one",
        )
    finally:
        stop_process_group(daemon)
    log = (data_dir / "daemon.log").read_text(errors="replace")
    assert run_status(orphan_id) == DagsterRunStatus.FAILURE, log
    assert f"pid {orphan_pid} " in failure_message(orphan_id)
    assert run_status(waiting.run_id) == DagsterRunStatus.SUCCESS, log


def queue_backfill(data_dir: Path, home: Path, dates: list[str]) -> None:
    """Queue `evaluation_job` for `VERSION` on `dates` with `dagster job backfill`."""
    queued = subprocess.run(
        [
            str(BIN / "dagster"),
            "job",
            "backfill",
            "-w",
            "workspace.yaml",
            "-j",
            "evaluation_job",
            "--partitions",
            ",".join(f"{VERSION}|{day}" for day in dates),
            "--noprompt",
        ],
        env=deployment_env(data_dir, home),
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=WAIT_S,
    )
    assert queued.returncode == 0, queued.stdout + queued.stderr


def test_the_daemon_fails_a_killed_cli_run_and_launches_the_queued_one(
    killed: tuple[Path, Path, DagsterRun],
) -> None:
    data_dir, home, orphan = killed
    queue_backfill(data_dir, home, [QUEUED_DATE])
    with DagsterInstance.get() as instance:
        (waiting,) = [run for run in instance.get_runs() if run.run_id != orphan.run_id]
    assert waiting.status == DagsterRunStatus.QUEUED
    assert run_status(orphan.run_id) == DagsterRunStatus.STARTED

    daemon_recovers(data_dir, home, orphan.run_id, orphan.tags["rag_eval/owner_pid"], waiting)
    with DagsterInstance.get() as instance:
        step_pids = {
            event.dagster_event.pid
            for event in instance.all_logs(waiting.run_id)
            if event.dagster_event is not None
            and event.dagster_event_type == DagsterEventType.STEP_START
        }
    assert len(step_pids) == 1, f"the launched run's steps ran in {step_pids}: not one process"


def test_a_daemon_run_left_by_a_dead_deployment_is_failed_by_the_next_daemon(
    deployment: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A backfill of two partitions, one run at a time. Mid-step of the first run, the whole
    deployment dies (daemon, code server and run worker SIGKILLed, as in a reboot or a killed
    `dagster dev`): no Dagster process is left to notice, and the run stays STARTED. Its worker
    claimed it when it created the IO manager, so the next daemon's `dead_owner_run_sensor`
    fails it, and the queue launches the second run."""
    data_dir, home = deployment
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with DagsterInstance.get() as instance:  # its schema, created once before two processes
        instance.add_dynamic_partitions(DATASET_VERSION, [VERSION])
    queue_backfill(data_dir, home, [KILLED_DATE, QUEUED_DATE])

    def claimed_mid_step() -> tuple[DagsterRun, RunOwner] | None:
        with DagsterInstance.get() as instance:
            for run in instance.get_runs(filters=RunsFilter(statuses=[DagsterRunStatus.STARTED])):
                owner = RunOwner.from_tags(dict(run.tags))
                if owner is not None and instance.all_logs(
                    run.run_id, of_type=DagsterEventType.STEP_START
                ):
                    return run, owner
        return None

    first = start_daemon(data_dir, home, "daemon-killed.log")
    try:
        found = wait_for(claimed_mid_step, "a launched run's worker to claim it and start a step")
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=60)
    assert isinstance(found, tuple)
    victim, worker = found
    assert worker.pid not in (os.getpid(), first.pid)
    with contextlib.suppress(ProcessLookupError):
        os.kill(worker.pid, signal.SIGKILL)  # in case the worker left the daemon's group
    wait_for(lambda: worker.is_dead(), "the run worker to be gone")
    assert run_status(victim.run_id) == DagsterRunStatus.STARTED  # nobody left to notice
    with DagsterInstance.get() as instance:
        (other,) = [run for run in instance.get_runs() if run.run_id != victim.run_id]
    daemon_recovers(data_dir, home, victim.run_id, str(worker.pid), other)


def test_the_next_cli_fails_a_killed_run_and_queues_a_date_range_backfill(
    killed: tuple[Path, Path, DagsterRun],
) -> None:
    data_dir, home, orphan = killed
    stdout = rag_eval(
        data_dir,
        home,
        "run",
        "--dataset-version",
        VERSION,
        "--from",
        QUEUED_DATE,
        "--to",
        "2026-11-22",
    )
    assert run_status(orphan.run_id) == DagsterRunStatus.FAILURE
    assert "ended before the run did" in failure_message(orphan.run_id)
    assert "2 run(s) queued" in stdout and "dagster-daemon run" in stdout, stdout
    with DagsterInstance.get() as instance:
        queued = [run for run in instance.get_runs() if run.run_id != orphan.run_id]
    assert sorted(run.tags["dagster/partition"] for run in queued) == [
        f"{VERSION}|{QUEUED_DATE}",
        f"{VERSION}|2026-11-22",
    ]
    assert {run.status for run in queued} == {DagsterRunStatus.QUEUED}
    assert len({run.tags["dagster/backfill"] for run in queued}) == 1


def test_two_first_runs_on_a_fresh_dagster_home_do_not_race(tmp_path: Path) -> None:
    shutil.copytree(DATASETS_DIR / VERSION, tmp_path / "datasets" / VERSION)
    home = tmp_path / "fresh-home"  # not even created: the first rag-eval creates it
    clis = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "rag_eval_pipeline.cli",
                "run",
                "--date",
                day,
                "--dataset-version",
                VERSION,
                "--select",
                "key:golden_dataset",
            ],
            env=deployment_env(tmp_path, home),
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for day in (KILLED_DATE, QUEUED_DATE)
    ]
    outputs = [cli.communicate(timeout=WAIT_S)[0] for cli in clis]
    assert [cli.returncode for cli in clis] == [0, 0], outputs
    assert all("  ok: " in output for output in outputs), outputs
