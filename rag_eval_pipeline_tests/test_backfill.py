"""A backfill over 2 dataset versions × 2 dates, run by Dagster's own backfill daemon logic.

The backfill is requested through Dagster's public GraphQL API (as the UI requests one) on a
temporary instance; the backfill daemon's iteration queues one run per partition and the
run-queue daemon's iteration launches them one at a time in subprocesses (as `dagster dev`
would with `max_concurrent_runs: 1`). The embedding cache is content-addressed, so the demo
corpus is embedded by the first run only.
"""

import logging
import os
import time
from pathlib import Path

import pandas as pd
import pytest
from dagster import AssetKey, DagsterInstance, DagsterRunStatus, instance_for_test

# Dagster has no public API that runs one iteration of its daemons in this process: their
# iterations, the workspace they take and the backfill's status are Dagster's internals.
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill
from dagster._core.test_utils import create_test_daemon_workspace_context
from dagster._core.workspace.load_target import ModuleTarget
from dagster._daemon.backfill import execute_backfill_iteration
from dagster._daemon.run_coordinator.queued_run_coordinator_daemon import (
    QueuedRunCoordinatorDaemon,
)

from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline_tests.conftest import (
    DATASETS_DIR,
    PROJECT_ROOT,
    SHIPPED_STORAGE,
    request_asset_backfill,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

VERSIONS = ["demo-v1", "scifact-test"]
DATES = ["2026-11-19", "2026-11-20"]
SELECTION = [
    "golden_dataset",
    "corpus_embeddings",
    "retrieval_runs",
    "retrieval_metrics",
    "retrieval_quality",
]
TIMEOUT_S = 900
ONE_RUN_AT_A_TIME = {
    **SHIPPED_STORAGE,
    "run_queue": {"max_concurrent_runs": 1},
}


@pytest.fixture
def isolated_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the pipeline (and the run subprocesses it spawns) at a temp data folder."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "datasets").symlink_to(DATASETS_DIR)
    monkeypatch.setenv("RAG_EVAL_DATA_DIR", str(data))
    monkeypatch.setenv("RAG_EVAL_WAREHOUSE", str(data / "warehouse"))
    return data


def run_backfill(
    instance: DagsterInstance, partition_keys: list[str], tmp_path: Path
) -> PartitionBackfill:
    target = ModuleTarget(
        module_name="rag_eval_pipeline.definitions",
        attribute=None,
        working_directory=str(PROJECT_ROOT),
        location_name="rag_eval_pipeline",
    )
    with create_test_daemon_workspace_context(target, instance) as workspace:
        backfill_id = request_asset_backfill(partition_keys, SELECTION, tmp_path)
        run_queue = QueuedRunCoordinatorDaemon(interval_seconds=1)
        deadline = time.time() + TIMEOUT_S
        while time.time() < deadline:
            list(execute_backfill_iteration(workspace, logging.getLogger("backfill")))
            list(run_queue.run_iteration(workspace))
            current = instance.get_backfill(backfill_id)
            if current.status != BulkActionStatus.REQUESTED:
                return current
            time.sleep(1)
    raise AssertionError(f"backfill did not finish within {TIMEOUT_S} s")


def test_backfill_over_versions_and_dates(isolated_data: Path, tmp_path: Path) -> None:
    keys = [str(evaluation_partition_key(v, d)) for v in VERSIONS for d in DATES]
    with instance_for_test(overrides=ONE_RUN_AT_A_TIME) as instance:
        instance.add_dynamic_partitions(DATASET_VERSION, VERSIONS)
        backfill = run_backfill(instance, keys, tmp_path)
        runs = instance.get_runs()
        assert backfill.status == BulkActionStatus.COMPLETED_SUCCESS, [
            (r.run_id, r.status) for r in runs
        ]
        assert sorted(r.tags["dagster/partition"] for r in runs) == sorted(keys)
        assert all(r.status == DagsterRunStatus.SUCCESS for r in runs)
        for version in VERSIONS:
            for day in DATES:
                quality = pd.read_parquet(
                    isolated_data / "warehouse" / "retrieval_quality" / version / f"{day}.parquet"
                )
                assert "mrr" in set(quality["metric"])
        cache_files = list((isolated_data / "cache" / "embeddings").rglob("*.npz"))
        assert cache_files, "the demo corpus was embedded once into the cache"
        materializations = instance.fetch_materializations(
            AssetKey("corpus_embeddings"), limit=10
        ).records
        embedded = sorted(
            r.asset_materialization.metadata["embedded"].value
            for r in materializations
            if "embedded" in r.asset_materialization.metadata
        )
        assert len(embedded) == 2 and embedded[0] == 0, embedded
        assert os.environ["RAG_EVAL_WAREHOUSE"].startswith(str(isolated_data))
