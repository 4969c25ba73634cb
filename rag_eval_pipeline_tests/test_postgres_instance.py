"""The production instance for real: the shipped `deploy/dagster.postgres.yaml` on PostgreSQL.

A PostgreSQL 16 server is started in-process for the module (`pgserver`; as root it runs the
server as its own system user), on a unix socket in a temporary folder, and each test gets its
own database. The shipped file is copied verbatim to each `DAGSTER_HOME` and reads the
connection from its `DAGSTER_PG_*` variables (the host left empty, libpq's `PGHOST` naming the
socket directory). Then: the shipped file, its port pointed at a TCP relay to that socket,
reaching the server over TCP as a password-checked role; two `rag-eval run` side by side from
two homes, as from two machines with no file lock in common, each skipping afterwards what the
other did; and a daemon that fails a SIGKILLed `rag-eval run` through `dead_owner_run_sensor`
and runs a backfill through the run queue, at most `max_concurrent_runs: 4` at a time.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pgserver
import psycopg2
import pytest
import yaml
from dagster import (
    AssetKey,
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    RunRecord,
    RunsFilter,
)

from rag_eval_pipeline.defs.runs.pools import LLM_GENERATOR_POOL, LLM_JUDGE_POOL
from rag_eval_pipeline.defs.shared.partitions import evaluation_partition_key
from rag_eval_pipeline_tests.conftest import (
    DATASETS_DIR,
    PROJECT_ROOT,
    deployment_env,
    request_asset_backfill,
    stop_process_group,
)
from rag_eval_pipeline_tests.openai_server import RecordedRequest, run_openai_server
from rag_eval_pipeline_tests.tcp_relay import tcp_relay
from rag_eval_pipeline_tests.test_one_run_per_partition import started_run
from rag_eval_pipeline_tests.test_run_ownership import (
    BIN,
    VERSION,
    WAIT_S,
    failure_message,
    run_killed_mid_step,
    run_status,
    start_daemon,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PARTITION_RUN_KEY = f"{VERSION}|2026-11-22"
PARTITION_RUN = [
    *("run", "--dataset-version", VERSION, "--date", "2026-11-22"),
    *("--select", "*retrieval_metrics"),
]
POSTGRES_INSTANCE_CONFIG = PROJECT_ROOT / "deploy" / "dagster.postgres.yaml"
BACKFILL_DATES = [f"2026-11-{day}" for day in range(15, 20)]  # one more than run at once
MAX_CONCURRENT_RUNS = 4


@pytest.fixture(scope="module")
def postgres_socket_dir() -> Iterator[Path]:
    """A PostgreSQL server for this module; yields the directory of its unix socket. Its data
    folder is not under pytest's temp root, whose permissions pytest resets to owner-only while
    the server (as root, another system user) still needs to reach it."""
    root = Path(tempfile.mkdtemp(prefix="rag-eval-postgres-"))
    server = pgserver.get_server(root / "data", cleanup_mode="delete")
    try:
        yield Path(server.get_postmaster_info().socket_dir)
    finally:
        server.cleanup()
        shutil.rmtree(root, ignore_errors=True)


@dataclass(frozen=True)
class Deployment:
    """A data folder with one dataset version; the Dagster homes go in it too."""

    data_dir: Path

    def home(self, name: str, max_concurrent_runs: int | None = None) -> Path:
        """A DAGSTER_HOME holding the shipped PostgreSQL dagster.yaml (its run queue limit
        replaced by `max_concurrent_runs` when given)."""
        home = self.data_dir / name
        home.mkdir()
        config = home / "dagster.yaml"
        shutil.copy(POSTGRES_INSTANCE_CONFIG, config)
        if max_concurrent_runs is not None:
            settings = yaml.safe_load(config.read_text(encoding="utf-8"))
            settings["concurrency"]["runs"]["max_concurrent_runs"] = max_concurrent_runs
            config.write_text(yaml.safe_dump(settings), encoding="utf-8")
        return home


DATABASES = itertools.count()


@pytest.fixture
def deployment(
    postgres_socket_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Deployment:
    """A fresh database on the module's server, named in this process's environment (so every
    `rag-eval`, daemon and run worker the test starts connects to it), and a data folder."""
    database = f"rag_eval_{next(DATABASES)}"
    server = psycopg2.connect(host=str(postgres_socket_dir), user="postgres", dbname="postgres")
    with contextlib.closing(server):
        server.autocommit = True  # CREATE DATABASE runs outside a transaction
        server.cursor().execute(f"CREATE DATABASE {database}")
    for name, value in {
        "DAGSTER_PG_USERNAME": "postgres",
        "DAGSTER_PG_PASSWORD": "",
        "DAGSTER_PG_HOST": "",
        "DAGSTER_PG_DB": database,
        "PGHOST": str(postgres_socket_dir),
    }.items():
        monkeypatch.setenv(name, value)
    shutil.copytree(DATASETS_DIR / VERSION, tmp_path / "datasets" / VERSION)
    return Deployment(tmp_path)


def password_role(socket_dir: Path, database: str, role: str, password: str) -> None:
    """Create `role` with `password`, owning `database`, and make the server ask it for its
    password (SCRAM) on every connection, the other roles left as they were."""
    server = psycopg2.connect(host=str(socket_dir), user="postgres", dbname="postgres")
    with contextlib.closing(server):
        server.autocommit = True
        cursor = server.cursor()
        cursor.execute(f"CREATE ROLE {role} LOGIN PASSWORD %s", (password,))
        cursor.execute(f"ALTER DATABASE {database} OWNER TO {role}")
        cursor.execute("SHOW hba_file")
        hba = Path(cursor.fetchone()[0])
        hba.write_text(f"local all {role} scram-sha-256\n{hba.read_text()}")
        cursor.execute("SELECT pg_reload_conf()")


def test_the_shipped_file_reaches_a_tcp_host_through_psycopg2(
    deployment: Deployment, postgres_socket_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shipped file, its port pointed at a TCP relay to the module's server: the instance
    Dagster builds from it (its `DAGSTER_PG_*` resolved, a password to quote in psycopg2's
    URL, checked by the server) connects over TCP and stores what it is given."""
    password_role(postgres_socket_dir, os.environ["DAGSTER_PG_DB"], "dagster", "p@ss:w/rd")
    (unix_socket,) = postgres_socket_dir.glob(".s.PGSQL.*[0-9]")
    with tcp_relay(unix_socket) as (port, accepted):
        home = deployment.home("home")
        settings = yaml.safe_load((home / "dagster.yaml").read_text(encoding="utf-8"))
        settings["storage"]["postgres"]["postgres_db"]["port"] = port
        (home / "dagster.yaml").write_text(yaml.safe_dump(settings), encoding="utf-8")
        for name, value in {
            "DAGSTER_HOME": str(home),
            "DAGSTER_PG_USERNAME": "dagster",
            "DAGSTER_PG_PASSWORD": "p@ss:w/rd",
            "DAGSTER_PG_HOST": "127.0.0.1",
        }.items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("PGHOST")
        with DagsterInstance.get() as instance:
            instance.add_dynamic_partitions("tcp_probe", ["reached"])
            assert instance.get_dynamic_partitions("tcp_probe") == ["reached"]
    assert accepted, "the instance connected through the TCP relay"


def runs_side_by_side(
    data_dir: Path, homes: list[Path], days: list[str], select: str = "key:golden_dataset"
) -> list[str]:
    """`rag-eval run` of demo-v1's `select` on each of `days`, each from its home in `homes`,
    all at once; fails unless each exits 0; their outputs."""
    clis = [
        subprocess.Popen(
            [
                *(sys.executable, "-m", "rag_eval_pipeline.cli", "run"),
                *("--dataset-version", VERSION, "--date", day, "--select", select),
            ],
            env=deployment_env(data_dir, home),
            cwd=data_dir,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for home, day in zip(homes, days, strict=True)
    ]
    outputs = [cli.communicate(timeout=WAIT_S)[0] for cli in clis]
    failed = [
        (day, out) for cli, day, out in zip(clis, days, outputs, strict=True) if cli.returncode
    ]
    if failed:  # the whole output of each failed run: pytest would cut an assertion's message
        pytest.fail("\n".join(f"rag-eval run of {day} failed:\n{out}" for day, out in failed))
    return outputs


def test_two_machines_run_side_by_side_and_skip_what_the_other_did(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = deployment.data_dir
    homes = [deployment.home("home-a"), deployment.home("home-b")]
    days = ["2026-11-20", "2026-11-21"]
    outputs = runs_side_by_side(data_dir, homes, days)
    assert all("materializing" in output for output in outputs), outputs

    monkeypatch.setenv("DAGSTER_HOME", str(homes[0]))
    with DagsterInstance.get() as instance:
        runs = instance.get_runs()
        materialized = instance.get_materialized_partitions(AssetKey("golden_dataset"))
    assert sorted(run.tags["dagster/partition"] for run in runs) == [f"{VERSION}|{d}" for d in days]
    assert {run.status for run in runs} == {DagsterRunStatus.SUCCESS}
    assert materialized == {str(evaluation_partition_key(VERSION, day)) for day in days}

    swapped = days[::-1]
    outputs = runs_side_by_side(data_dir, homes, swapped)
    for output, other_day in zip(outputs, swapped, strict=True):
        assert f"{VERSION}|{other_day} is up to date" in output, output


def test_two_first_runs_at_once_on_a_fresh_database_both_succeed(deployment: Deployment) -> None:
    """Two `rag-eval run` whose steps claim the LLM pools, started together from two homes on a
    database nobody prepared: `rag-eval` creates the pools before it launches, so neither run
    creates one on its first claim (dagster-io/dagster#33552 failed one of two such runs)."""
    data_dir = deployment.data_dir
    homes = [deployment.home("home-a"), deployment.home("home-b")]
    runs_side_by_side(data_dir, homes, ["2026-11-20", "2026-11-21"], "*generation_judgments")
    with DagsterInstance.from_config(str(homes[0])) as instance:
        storage = instance.event_log_storage
        assert {LLM_JUDGE_POOL, LLM_GENERATOR_POOL} <= storage.get_concurrency_keys()
        limit = instance.global_op_concurrency_default_limit
        assert storage.get_concurrency_info(LLM_JUDGE_POOL).slot_count == limit == 4
        runs = instance.get_runs()
    assert len(runs) == 2 and {run.status for run in runs} == {DagsterRunStatus.SUCCESS}


def test_a_partition_in_progress_on_another_machine_is_refused(deployment: Deployment) -> None:
    """Two homes (two machines: no file lock in common): a `rag-eval run` of a partition whose
    run is in progress on the other one is refused in one line naming that run."""
    data_dir = deployment.data_dir
    homes = [deployment.home("home-a"), deployment.home("home-b")]
    command = [sys.executable, "-m", "rag_eval_pipeline.cli", *PARTITION_RUN]
    first = subprocess.Popen(
        command,
        env=deployment_env(data_dir, homes[0]),
        cwd=data_dir,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        run_id = started_run(homes[0], PARTITION_RUN_KEY)
        second = subprocess.run(
            command, env=deployment_env(data_dir, homes[1]), cwd=data_dir, capture_output=True,
            text=True, timeout=WAIT_S,
        )  # fmt: skip
        output, errors = first.communicate(timeout=WAIT_S)
    finally:
        first.kill()
    assert second.returncode == 1 and second.stderr.count("\n") == 1, second.stderr
    assert f"{PARTITION_RUN_KEY} is already being evaluated by run {run_id}" in second.stderr
    assert first.returncode == 0, output + errors


def most_runs_at_once(instance: DagsterInstance, records: list[RunRecord]) -> int:
    """The largest number of `records`' runs in progress at the same moment, as the run queue
    counts them: from the queue's launch (RUN_STARTING) to the run's end."""
    edges = []
    for record in records:
        (launched,) = instance.all_logs(
            record.dagster_run.run_id, of_type=DagsterEventType.RUN_STARTING
        )
        edges += [(launched.timestamp, 1), (record.end_time, -1)]
    return max(itertools.accumulate(step for _, step in sorted(edges)))


def test_the_daemon_fails_a_killed_run_and_runs_a_backfill_four_at_a_time(
    deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = deployment.data_dir
    home = deployment.home("home", max_concurrent_runs=MAX_CONCURRENT_RUNS)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    orphan = run_killed_mid_step(data_dir, home)
    keys = [str(evaluation_partition_key(VERSION, day)) for day in BACKFILL_DATES]
    backfill_id = request_asset_backfill(keys, ["golden_dataset"], data_dir)

    def backfill_runs_ended() -> list[RunRecord]:
        with DagsterInstance.get() as instance:
            records = instance.get_run_records(RunsFilter(tags={"dagster/backfill": backfill_id}))
        ended = [record for record in records if record.end_time is not None]
        orphan_ended = run_status(orphan.run_id) != DagsterRunStatus.STARTED
        return ended if len(ended) == len(BACKFILL_DATES) and orphan_ended else []

    daemon = start_daemon(data_dir, home, "daemon.log")
    try:
        records = wait_for(
            backfill_runs_ended, "the daemon to fail the killed run, run the backfill"
        )
    finally:
        stop_process_group(daemon)
    log = (data_dir / "daemon.log").read_text(errors="replace")
    assert isinstance(records, list)
    assert {record.dagster_run.status for record in records} == {DagsterRunStatus.SUCCESS}, log
    with DagsterInstance.get() as instance:
        assert 2 <= most_runs_at_once(instance, records) <= MAX_CONCURRENT_RUNS, log
    assert run_status(orphan.run_id) == DagsterRunStatus.FAILURE, log
    assert f"pid {orphan.tags['rag_eval/owner_pid']} " in failure_message(orphan.run_id)


POOL_LIMIT, CONCURRENCY, PROMPTS = 1, 4, 16


def timeline(requests: list[RecordedRequest]) -> str:
    """Each request's prompt, start and end in seconds from the first start (None: not ended),
    in order of start: what an assertion on the pool shows when it fails."""
    origin = min((r.started_at for r in requests), default=0.0)
    spans = sorted(
        (r.started_at, r.finished_at, r.body["messages"][-1]["content"]) for r in requests
    )
    return ", ".join(
        f"{prompt} {start - origin:.3f}-{'None' if end is None else f'{end - origin:.3f}'}"
        for start, end, prompt in spans
    )


def start_pooled_run(home: Path, base_url: str, label: str, cache: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DAGSTER_HOME": str(home), "PYTHONPATH": str(PROJECT_ROOT)}
    command = [
        sys.executable,
        "-m",
        "rag_eval_pipeline_tests.pool_worker",
        base_url,
        label,
        str(PROMPTS),
        str(CONCURRENCY),
        str(cache),
    ]
    return subprocess.Popen(command, env=env, cwd=PROJECT_ROOT, start_new_session=True)


def test_two_runs_side_by_side_never_exceed_pool_limit_times_concurrency(
    deployment: Deployment, tmp_path: Path
) -> None:
    """One budget across runs (the `llm_judge` pool, limit lowered to 1): two processes judging
    at once through one PostgreSQL instance never put more than pool limit × max_concurrency
    requests in flight. PostgreSQL claims a slot with SELECT ... FOR UPDATE SKIP LOCKED; Dagster's
    SQLite storage has no such lock, so two processes claiming at the same instant can both win
    (docs/providers.md)."""
    home = deployment.home("home")
    config = yaml.safe_load((home / "dagster.yaml").read_text(encoding="utf-8"))
    assert config["concurrency"]["pools"]["granularity"] == "op"
    # The pool's limit lowered to POOL_LIMIT by hand, as an operator does at run time.
    subprocess.run(
        [str(BIN / "dagster"), "instance", "concurrency", "set", LLM_JUDGE_POOL, str(POOL_LIMIT)],
        env={**os.environ, "DAGSTER_HOME": str(home)},
        check=True,
        capture_output=True,
    )

    # Each run's judging takes PROMPTS / CONCURRENCY × 1 s = 4 s, longer than the processes'
    # start-up skew, so without the pool the two would overlap.
    with run_openai_server(latency_s=1.0) as server:
        runs = [
            start_pooled_run(home, server.base_url, label, tmp_path / "cache") for label in "ab"
        ]
        try:
            deadline = time.monotonic() + WAIT_S
            codes = [run.wait(timeout=max(1.0, deadline - time.monotonic())) for run in runs]
        finally:  # a run that outlived the deadline is not left behind
            for run in runs:
                stop_process_group(run)
        requests = list(server.requests)

    seen = f"{server.max_in_flight} at most in flight; requests: {timeline(requests)}"
    assert codes == [0, 0], seen
    with DagsterInstance.from_config(str(home)) as instance:
        pool = instance.event_log_storage.get_concurrency_info(LLM_JUDGE_POOL)
    assert pool.slot_count == POOL_LIMIT  # the steps claimed slots of the configured pool
    assert len(requests) == 2 * PROMPTS, seen
    assert server.max_in_flight <= POOL_LIMIT * CONCURRENCY, seen
    # The pool serialized the runs' judging steps: one run's requests all ended before the
    # other's began (without the pool both would overlap, 2 × CONCURRENCY in flight).
    spans = {
        label: [r for r in requests if r.body["messages"][-1]["content"].startswith(label)]
        for label in "ab"
    }
    first, second = sorted(spans.values(), key=lambda rs: min(r.started_at for r in rs))
    assert max(r.finished_at or 0.0 for r in first) <= min(r.started_at for r in second), seen
