"""Whole-pipeline timing: cold run vs warm re-run of the same partition vs a new date.

Runs `rag-eval run` (every asset, every shipped dataset version, offline defaults) four times
in fresh processes against a temporary Dagster instance, warehouse and cache:
1. cold: empty embedding, judge and result caches;
2. warm: the same partitions again (skipped: their fingerprint is unchanged);
3. warm, forced: the same partitions materialized again with `--force`;
4. new date: the next day's partitions on unchanged data.
Prints wall times and the ratios to the cold run (goal: warm runs under 20% of the cold time),
and how many texts each run embedded (the cache must make it zero after the cold run). Last, the
Dagster floor (`dagster_floor.py`): the same asset graph and checks with steps that do nothing,
on the same kind of instance, for the same partitions: what any new date costs before a single
metric is computed.

    .venv/bin/python benchmarks/pipeline.py [--dataset-version demo-v1 ...]
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
DAY1, DAY2 = "2026-11-20", "2026-11-21"


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dataset-version",
        action="append",
        default=None,
        help="default: demo-v1, demo-v2, scifact-test",
    )
    args = parser.parse_args()
    versions = args.dataset_version or ["demo-v1", "demo-v2", "scifact-test"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data = root / "data"
        data.mkdir()
        (data / "datasets").symlink_to(PROJECT_ROOT / "data" / "datasets")
        env = {
            **os.environ,
            "DAGSTER_HOME": str(root / "dagster_home"),
            "RAG_EVAL_DATA_DIR": str(data),
            "RAG_EVAL_WAREHOUSE": str(data / "warehouse"),
            "HF_HUB_OFFLINE": "1",
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        }
        (root / "dagster_home").mkdir()
        timings = {
            "cold (empty caches)": run_cli(env, versions, DAY1),
            "warm (same partitions)": run_cli(env, versions, DAY1),
            "warm, forced (--force)": run_cli(env, versions, DAY1, "--force"),
            "new date, unchanged data": run_cli(env, versions, DAY2),
            "Dagster floor (no-op steps)": floor_run(env, versions, DAY2),
        }
        cold = timings["cold (empty caches)"]
        table = pd.DataFrame(
            {
                "run": list(timings),
                "wall_s": list(timings.values()),
                "vs_cold": [t / cold for t in timings.values()],
            }
        )
        print(f"versions: {', '.join(versions)}")
        print(table.to_string(index=False, float_format="{:.2f}".format))
        print(
            f"texts embedded per corpus_embeddings materialization: "
            f"{embedded_texts(root / 'dagster_home')}"
        )
        for run, seconds in list(timings.items())[1:-1]:
            verdict = "met" if seconds / cold < 0.2 else "NOT met"
            print(f"goal (< 20% of cold) for {run}: {verdict}")


if __name__ == "__main__":
    main()
