"""Whole-pipeline timing: cold run vs warm re-run of the same partition vs a new date, and the
forced re-run on each instance storage: Dagster's stock SQLite and PostgreSQL.

Runs `rag-eval run` (every asset, every shipped dataset version, offline defaults) in fresh
processes against temporary Dagster instances (the shipped `dagster.yaml`: Dagster's stock
SQLite storage), warehouses and caches:
1. cold: empty embedding, judge and result caches;
2. warm: the same partitions again (skipped: fingerprint unchanged);
3. warm, forced: the same partitions materialized again with `--force`, on SQLite, then on an
   instance from the shipped `deploy/dagster.postgres.yaml` on a PostgreSQL 16 server started
   for the benchmark (`pgserver`, unix socket; same caches and warehouse; its schema created and
   the versions registered beforehand, untimed);
4. the same forced re-run with every version in its own process side by side (`--parallel`),
   on SQLite and on PostgreSQL; for these four runs also the CPU seconds (user + system) of
   the `rag-eval` processes (`cpu_s`) and of the PostgreSQL server (`server_cpu_s`), which a
   loaded machine distorts much less than wall time;
5. new date: the next day's partitions on unchanged data;
6. new date through the daemon: the day after's partitions as the UI, a schedule, a sensor or a
   backfill runs them: a `dagster job backfill` queues one run per partition and a running
   `dagster-daemon` launches them (`max_concurrent_runs: 2`), each in a run worker process; timed
   from the first run's creation to the last run's end.
Prints wall times and the ratios to the cold run (goal: warm runs under 20% of the cold time),
the time per partition of the daemon path against `rag-eval run`'s (goal: at most 1.5x), and how
many texts each run embedded (the cache must make it zero after the cold run).
This machine's speed drifts by up to 2x from minute to minute (shared cores), so `--repeat N`
runs N rounds on fresh deployments and compares each run's fastest round, as `timeit` does.
Last, the Dagster floor (`dagster_floor.py`): the same asset graph and checks with steps that
do nothing, on the same kind of instance, for the same partitions one at a time: what any new
date costs before a single metric is computed.

    .venv/bin/python benchmarks/pipeline.py [--repeat 3] [--dataset-version demo-v1 ...]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DAY1, DAY2, DAY3, DAY4 = "2026-11-19", "2026-11-20", "2026-11-21", "2026-11-22"
BIN = Path(sys.executable).parent
DAEMON_PATH = "new date through the daemon (backfill)"
DAEMON_TIMEOUT_S = 900


def wall_seconds(command: list[str], env: dict[str, str]) -> float:
    """Wall seconds of `command` in a fresh process (its stdout discarded)."""
    started = time.perf_counter()
    subprocess.run(command, env=env, cwd=PROJECT_ROOT, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def run_cli(env: dict[str, str], versions: list[str], day: str, *extra: str) -> float:
    """Wall seconds of one `rag-eval run`."""
    command = [sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--date", day, *extra]
    for version in versions:
        command += ["--dataset-version", version]
    return wall_seconds(command, env)


def cpu_seconds() -> float:
    """CPU seconds (user + system) used so far by the processes this one has waited for."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def server_cpu_seconds(server_pid: int | None) -> float:
    """CPU seconds (user + system) used so far by the PostgreSQL server `server_pid` (its live
    processes, and the backends it has waited for); 0 without a server."""
    if server_pid is None:
        return 0.0
    import psutil

    time.sleep(0.5)  # the backends of the connections just closed exit
    server = psutil.Process(server_pid)
    times = server.cpu_times()
    total = times.user + times.system + times.children_user + times.children_system
    for process in server.children():
        with contextlib.suppress(psutil.NoSuchProcess):
            times = process.cpu_times()
            total += times.user + times.system
    return total


def floor_run(env: dict[str, str], versions: list[str], day: str) -> float:
    """Seconds of `dagster_floor.py` (no-op steps) for `versions` on `day`, as it reports them."""
    script = str(PROJECT_ROOT / "benchmarks" / "dagster_floor.py")
    completed = subprocess.run(
        [sys.executable, script, "--date", day, *versions],
        env=env,
        cwd=PROJECT_ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    return float(completed.stdout.strip().splitlines()[-1].removeprefix("floor_seconds="))


def embedded_texts(dagster_home: Path) -> list[int]:
    """`embedded` metadata of every corpus_embeddings materialization, oldest first."""
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    from dagster import AssetKey, DagsterInstance

    with DagsterInstance.get() as instance:
        records = instance.fetch_materializations(
            AssetKey("corpus_embeddings"), limit=1000, ascending=True
        ).records
    return [
        int(r.asset_materialization.metadata["embedded"].value)
        for r in records
        if "embedded" in r.asset_materialization.metadata
    ]


def daemon_backfill(env: dict[str, str], versions: list[str], day: str) -> float:
    """Seconds from the first run's creation to the last run's end of a backfill of `versions`
    on `day`, launched by a `dagster-daemon` already running on the deployment of `env`."""
    daemon = subprocess.Popen(
        [str(BIN / "dagster-daemon"), "run", "-w", "workspace.yaml"],
        env=env,
        cwd=PROJECT_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        subprocess.run(
            [sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--from", day, "--to", day]
            + [arg for version in versions for arg in ("--dataset-version", version)],
            env=env,
            cwd=PROJECT_ROOT,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        return backfill_span(Path(env["DAGSTER_HOME"]), len(versions))
    finally:
        os.killpg(daemon.pid, signal.SIGTERM)
        daemon.wait(timeout=60)


def backfill_span(dagster_home: Path, runs: int) -> float:
    """Wait until `runs` backfill runs have ended; seconds from the first one's creation to the
    last one's end."""
    os.environ["DAGSTER_HOME"] = str(dagster_home)
    from dagster import DagsterInstance

    deadline = time.monotonic() + DAEMON_TIMEOUT_S
    with DagsterInstance.get() as instance:
        while time.monotonic() < deadline:
            records = [
                record
                for record in instance.get_run_records()
                if "dagster/backfill" in record.dagster_run.tags
            ]
            ended = [r for r in records if r.end_time is not None]
            if len(ended) == runs:
                assert all(r.dagster_run.is_success for r in ended), "a backfill run failed"
                created = min(r.create_timestamp.timestamp() for r in records)
                return max(r.end_time for r in ended) - created  # type: ignore[type-var]
            time.sleep(0.5)
    raise TimeoutError(f"the daemon did not finish {runs} run(s) in {DAEMON_TIMEOUT_S}s")


@contextlib.contextmanager
def postgres_deployment(env: dict[str, str], root: Path) -> Iterator[tuple[dict[str, str], int]]:
    """The environment of `env`'s deployment with its Dagster instance on PostgreSQL instead,
    and the server's pid:
    the shipped `deploy/dagster.postgres.yaml` in a new DAGSTER_HOME under `root` (created),
    on a PostgreSQL server started in `root` for the duration (pgserver; its unix socket named
    in libpq's PGHOST), its schema created and the versions registered by a `rag-eval run`
    of golden_dataset on DAY1."""
    import pgserver

    root.mkdir()
    server = pgserver.get_server(root / "pgdata", cleanup_mode="delete")
    try:
        home = root / "dagster_home"
        home.mkdir()
        shutil.copy(PROJECT_ROOT / "deploy" / "dagster.postgres.yaml", home / "dagster.yaml")
        postgres_env = {
            **env,
            "DAGSTER_HOME": str(home),
            "DAGSTER_PG_USERNAME": "postgres",
            "DAGSTER_PG_PASSWORD": "",
            "DAGSTER_PG_HOST": "",
            "DAGSTER_PG_DB": "postgres",
            "PGHOST": str(server.get_postmaster_info().socket_dir),
        }
        command = [sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--date", DAY1]
        wall_seconds([*command, "--select", "key:golden_dataset"], postgres_env)
        yield postgres_env, server.get_pid()
    finally:
        server.cleanup()


def measure(
    root: Path, versions: list[str]
) -> tuple[dict[str, float], dict[str, dict[str, float]], list[int]]:
    """One round of every run on fresh deployments under `root`: wall seconds per run, CPU
    seconds of the forced re-runs on each instance storage (`cpu_s`: the `rag-eval` processes;
    `server_cpu_s`: the PostgreSQL server), and the texts the corpus_embeddings
    materializations embedded."""
    env = deployment(root / "stock")
    timings = {
        "cold (empty caches)": run_cli(env, versions, DAY1),
        "warm (same partitions)": run_cli(env, versions, DAY1),
    }
    cpu: dict[str, dict[str, float]] = {"cpu_s": {}, "server_cpu_s": {}}
    with postgres_deployment(env, root / "postgres") as (postgres_env, server_pid):
        for how, extra in [
            ("warm, forced (--force)", ["--force"]),
            (
                "warm, forced, side by side (--parallel)",
                ["--force", "--parallel", str(len(versions))],
            ),
        ]:
            for storage, storage_env, pid in [
                ("SQLite", env, None),
                ("PostgreSQL", postgres_env, server_pid),
            ]:
                run = f"{how}, {storage}"
                client, server = cpu_seconds(), server_cpu_seconds(pid)
                timings[run] = run_cli(storage_env, versions, DAY1, *extra)
                cpu["cpu_s"][run] = cpu_seconds() - client
                cpu["server_cpu_s"][run] = server_cpu_seconds(pid) - server
    timings |= {
        "new date, unchanged data": run_cli(env, versions, DAY2),
        DAEMON_PATH: daemon_backfill(env, versions, DAY3),
        "Dagster floor (no-op steps)": floor_run(env, versions, DAY4),
    }
    return timings, cpu, embedded_texts(Path(env["DAGSTER_HOME"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dataset-version",
        action="append",
        default=None,
        help="default: demo-v1, demo-v2, scifact-test",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="rounds on fresh deployments; each run's fastest round is compared (default: 1)",
    )
    args = parser.parse_args()
    versions = args.dataset_version or ["demo-v1", "demo-v2", "scifact-test"]
    rounds, cpu_rounds = [], []
    load_before = os.getloadavg()[1]
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            timings, cpu, embedded = measure(Path(tmp), versions)
        rounds.append(timings)
        cpu_rounds.append(cpu)
    table = (
        pd.DataFrame(rounds)
        .agg(["min", "max"])
        .T.rename(columns={"min": "wall_s", "max": "slowest_round_s"})
    )
    for column in ("cpu_s", "server_cpu_s"):
        table[column] = pd.DataFrame([cpu[column] for cpu in cpu_rounds]).min()
    cold = float(table["wall_s"].iloc[0])
    table["vs_cold"] = table["wall_s"] / cold
    print(f"versions: {', '.join(versions)}; {args.repeat} round(s), fastest shown")
    print(f"load average (5 min) before: {load_before:.1f}, after: {os.getloadavg()[1]:.1f}")
    print(
        table.rename_axis("run").reset_index().to_string(index=False, float_format="{:.2f}".format)
    )
    print(f"texts embedded per corpus_embeddings materialization: {embedded}")
    for run, seconds in table["wall_s"].iloc[1:-2].items():
        verdict = "met" if seconds / cold < 0.2 else "NOT met"
        print(f"goal (< 20% of cold) for {run}: {verdict}")
    ratio = table.loc[DAEMON_PATH, "wall_s"] / table.loc["new date, unchanged data", "wall_s"]
    print(
        f"per partition: daemon path {table.loc[DAEMON_PATH, 'wall_s'] / len(versions):.2f}s, "
        f"rag-eval run {table.loc['new date, unchanged data', 'wall_s'] / len(versions):.2f}s: "
        f"{ratio:.2f}x (goal <= 1.5x: {'met' if ratio <= 1.5 else 'NOT met'})"
    )


def deployment(root: Path) -> dict[str, str]:
    """The environment of a fresh instance, warehouse and caches under `root` (created), which
    reads the project's shipped dataset versions."""
    data = root / "data"
    data.mkdir(parents=True)
    (data / "datasets").symlink_to(PROJECT_ROOT / "data" / "datasets")
    (root / "dagster_home").mkdir()
    return {
        **os.environ,
        "DAGSTER_HOME": str(root / "dagster_home"),
        "RAG_EVAL_DATA_DIR": str(data),
        "RAG_EVAL_WAREHOUSE": str(data / "warehouse"),
        "HF_HUB_OFFLINE": "1",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }


if __name__ == "__main__":
    main()
