"""The Dagster floor of an evaluation date: the evaluation job's graph with steps that do nothing.

Builds a job with the same asset keys, dependencies and partitions as the evaluation job, plus
as many asset checks, where every asset writes a one-row table through the project's Parquet IO
manager and every check passes, and materializes it for the given dataset versions on one date,
one run per partition as `rag-eval run` does, on a fresh instance from the shipped
``dagster.yaml`` (Dagster's stock SQLite storage) and a fresh warehouse. The time printed runs from
process start (imports included) but leaves out the one-time creation of the instance's
database schema, which a `rag-eval run` on an existing instance does not pay: it is what that
many steps cost before any metric is computed, a lower bound of any run of those partitions.
The last line is ``floor_seconds=<seconds>`` for `pipeline.py`.

    .venv/bin/python benchmarks/dagster_floor.py --date 2026-11-21 demo-v1 demo-v2 scifact-test
"""

import time

STARTED = time.perf_counter()

import argparse  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import pandas as pd  # noqa: E402
from dagster import (  # noqa: E402
    AssetCheckResult,
    AssetChecksDefinition,
    AssetKey,
    AssetsDefinition,
    DagsterInstance,
    Definitions,
    asset,
    asset_check,
    define_asset_job,
)

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--date", required=True)
    parser.add_argument("versions", nargs="+")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "dagster_home"
        home.mkdir()
        shutil.copy(PROJECT_ROOT / "dagster.yaml", home / "dagster.yaml")
        os.environ["DAGSTER_HOME"] = str(home)
        os.environ["RAG_EVAL_WAREHOUSE"] = str(Path(tmp) / "warehouse")
        schema_s = create_instance_schema()
        steps = materialize_noop_graph(args.versions, args.date)
    floor = time.perf_counter() - STARTED - schema_s
    print(
        f"{len(args.versions)} partition(s) x {steps} no-op steps: {floor:.2f}s, imports "
        f"included, the instance's one-time schema creation ({schema_s:.2f}s) left out"
    )
    print(f"floor_seconds={floor:.3f}")


def create_instance_schema() -> float:
    """Create the new instance's databases; returns the seconds it took (storage imports not
    counted: every run pays them)."""
    started = time.perf_counter()
    DagsterInstance.get().dispose()
    return time.perf_counter() - started


def materialize_noop_graph(versions: list[str], day: str) -> int:
    """Run the no-op copy of the evaluation graph once per version; returns its step count."""
    from rag_eval_pipeline.definitions import defs
    from rag_eval_pipeline.defs.shared.io_managers import ParquetIOManagerResource
    from rag_eval_pipeline.defs.shared.partitions import (
        DATASET_VERSION,
        evaluation_partition_key,
        evaluation_partitions,
    )

    graph = defs.resolve_asset_graph()
    keys = graph.materializable_asset_keys

    def noop_asset(key: AssetKey) -> AssetsDefinition:
        @asset(
            key=key,
            deps=sorted(graph.get(key).parent_keys & keys),
            partitions_def=evaluation_partitions,
        )
        def step() -> pd.DataFrame:
            return pd.DataFrame({"value": [1.0]})

        return step

    def noop_check(asset_key: AssetKey, name: str) -> AssetChecksDefinition:
        @asset_check(asset=asset_key, name=name)
        def check() -> AssetCheckResult:
            return AssetCheckResult(passed=True)

        return check

    assets = [noop_asset(key) for key in sorted(keys)]
    checks = [noop_check(c.asset_key, c.name) for c in sorted(graph.asset_check_keys)]
    job = define_asset_job("noop_evaluation")
    noop_defs = Definitions(
        assets=assets,
        asset_checks=checks,
        jobs=[job],
        resources={"io_manager": ParquetIOManagerResource()},
    )
    with DagsterInstance.get() as instance:
        instance.add_dynamic_partitions(DATASET_VERSION, versions)
        resolved = noop_defs.resolve_job_def("noop_evaluation")
        for version in versions:
            result = resolved.execute_in_process(
                partition_key=evaluation_partition_key(version, day),
                instance=instance,
                run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
            )
            assert result.success
    return len(keys) + len(checks)


if __name__ == "__main__":
    main()
