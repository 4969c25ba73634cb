"""Whole-pipeline timing: cold run vs warm re-run of the same partition vs a new date.

Runs `rag-eval run` (every asset, every shipped dataset version, offline defaults) in fresh
processes against temporary Dagster instances, warehouses and caches:
1. cold: empty embedding, judge and result caches;
2. cold, side by side (`--jobs 2`): the same on a second deployment with its own empty caches;
3. warm: the same partitions again on the first deployment (skipped: fingerprint unchanged);
4. warm, forced: the same partitions materialized again with `--force`;
5. new date: the next day's partitions on unchanged data;
6. new date, side by side: the next day's partitions on the second deployment, `--jobs 2`.
Prints wall times and the ratios to the faster cold run (goal: warm runs under 20% of the cold
time), and how many texts each run embedded (the cache must make it zero after the cold run).
This machine's speed drifts by up to 2x from minute to minute (shared cores), so `--repeat N`
runs N rounds on fresh deployments and compares each run's fastest round, as `timeit` does.
Last, the Dagster floor (`dagster_floor.py`): the same asset graph and checks with steps that
do nothing, on the same kind of instance, for the same partitions one at a time: what any new
date costs before a single metric is computed.

    .venv/bin/python benchmarks/pipeline.py [--repeat 3] [--dataset-version demo-v1 ...]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DAY1, DAY2, DAY3 = "2026-11-19", "2026-11-20", "2026-11-21"


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


def measure(
    root: Path, versions: list[str], jobs: int
) -> tuple[dict[str, float], dict[str, list[int]]]:
    """One round of every run on two fresh deployments under `root`: wall seconds per run, and
    the texts each deployment's corpus_embeddings materializations embedded."""
    env = deployment(root / "one-at-a-time")
    side_by_side_env = deployment(root / "side-by-side")
    side_by_side = ("--jobs", str(jobs))
    timings = {
        "cold (empty caches)": run_cli(env, versions, DAY1),
        f"cold, side by side (--jobs {jobs})": run_cli(
            side_by_side_env, versions, DAY1, *side_by_side
        ),
        "warm (same partitions)": run_cli(env, versions, DAY1),
        "warm, forced (--force)": run_cli(env, versions, DAY1, "--force"),
        "new date, unchanged data": run_cli(env, versions, DAY2),
        f"new date, side by side (--jobs {jobs})": run_cli(
            side_by_side_env, versions, DAY2, *side_by_side
        ),
        "Dagster floor (no-op steps)": floor_run(env, versions, DAY3),
    }
    embedded = {
        name: embedded_texts(Path(deployment_env["DAGSTER_HOME"]))
        for name, deployment_env in (("one at a time", env), ("side by side", side_by_side_env))
    }
    return timings, embedded


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
    parser.add_argument(
        "--jobs", type=int, default=2, help="partitions at once in the side-by-side runs"
    )
    args = parser.parse_args()
    versions = args.dataset_version or ["demo-v1", "demo-v2", "scifact-test"]
    rounds = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory() as tmp:
            timings, embedded = measure(Path(tmp), versions, args.jobs)
        rounds.append(timings)
    table = (
        pd.DataFrame(rounds)
        .agg(["min", "max"])
        .T.rename(columns={"min": "wall_s", "max": "slowest_round_s"})
    )
    cold = float(table["wall_s"].iloc[:2].min())
    table["vs_cold"] = table["wall_s"] / cold
    print(
        f"versions: {', '.join(versions)}; {args.repeat} round(s), fastest shown; "
        f"cold = the faster cold run ({cold:.2f}s)"
    )
    print(
        table.rename_axis("run").reset_index().to_string(index=False, float_format="{:.2f}".format)
    )
    for name, counts in embedded.items():
        print(f"texts embedded per corpus_embeddings materialization, {name}: {counts}")
    for run, seconds in table["wall_s"].iloc[2:-1].items():
        verdict = "met" if seconds / cold < 0.2 else "NOT met"
        print(f"goal (< 20% of cold) for {run}: {verdict}")


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
