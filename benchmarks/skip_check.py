"""The cost of the skip check: deciding that a demo partition is up to date, against the 1 s goal.

Materializes every asset of the evaluation job for the demo versions on one date with
`rag-eval run` (a fresh temporary deployment: the shipped `dagster.yaml`, SQLite), then, in
this process on that instance, times what `rag-eval run` does before it skips a partition: the
fingerprint of its inputs (`up_to_date.fingerprint_tags`: dataset files, code, config,
environment, embedder weights, LLM endpoints, earlier scorecards) and the rule itself
(`up_to_date.evaluation_freshness`: the latest materialization of every asset, its recorded
fingerprint and row count, every stored Parquet footer, the report). The first check in a
process pays the code and weights digests (cached afterwards); both are printed, per partition,
as the median of `--repeat` checks, with the ratio to the goal.

    .venv/bin/python benchmarks/skip_check.py --date 2026-11-21 demo-v1 demo-v2
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
GOAL_S = 1.0


def materialize(data: Path, home: Path, versions: list[str], day: str) -> None:
    """Every asset of the evaluation job for `versions` on `day`, with `rag-eval run`."""
    named = [arg for version in versions for arg in ("--dataset-version", version)]
    subprocess.run(
        [sys.executable, "-m", "rag_eval_pipeline.cli", "run", "--date", day, *named],
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        cwd=data,
        check=True,
        capture_output=True,
    )


def time_checks(versions: list[str], day: str, repeat: int) -> dict[str, tuple[float, float]]:
    """Per version: the first check's seconds in this process and the median of the others."""
    from rag_eval_pipeline.cli import open_instance
    from rag_eval_pipeline.defs.runs.up_to_date import (
        evaluation_assets,
        evaluation_freshness,
        fingerprint_tags,
    )
    from rag_eval_pipeline.defs.shared.resources import DatasetsResource

    instance, assets, root = open_instance(), evaluation_assets(), DatasetsResource().root
    timings: dict[str, tuple[float, float]] = {}
    for version in versions:
        seconds = []
        for _ in range(repeat + 1):
            started = time.perf_counter()
            tags = fingerprint_tags(root, version, day)
            fresh = evaluation_freshness(instance, version, day, assets, tags)
            seconds.append(time.perf_counter() - started)
            assert fresh.up_to_date, (version, fresh.reason)
        timings[version] = (seconds[0], statistics.median(seconds[1:]))
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--date", required=True)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("versions", nargs="+")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data, home = Path(tmp), Path(tmp) / "dagster_home"
        home.mkdir()
        shutil.copy(PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
        for version in args.versions:
            shutil.copytree(
                PROJECT_ROOT / "data" / "datasets" / version, data / "datasets" / version
            )
        os.environ.update(
            DAGSTER_HOME=str(home),
            RAG_EVAL_DATA_DIR=str(data),
            RAG_EVAL_WAREHOUSE=str(data / "warehouse"),
            HF_HUB_OFFLINE="1",
            LITELLM_LOCAL_MODEL_COST_MAP="True",
        )
        started = time.perf_counter()
        materialize(data, home, args.versions, args.date)
        run_s = time.perf_counter() - started
        timings = time_checks(args.versions, args.date, args.repeat)
    print(f"materialized {len(args.versions)} partition(s) in {run_s:.1f}s; skip check:")
    print(f"{'partition':<28}{'first (s)':>10}{'median (s)':>12}{'/ 1 s goal':>12}")
    for version, (first, median) in timings.items():
        key = f"{version}|{args.date}"
        print(f"{key:<28}{first:>10.3f}{median:>12.3f}{median / GOAL_S:>11.2f}x")


if __name__ == "__main__":
    main()
