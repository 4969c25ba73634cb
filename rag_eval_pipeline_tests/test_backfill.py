"""A backfill over 2 dataset versions × 2 dates, run by Dagster's own daemon.

The backfill is requested through Dagster's public GraphQL API (as the UI requests one) on a
temporary instance; `dagster-daemon run` (as `make ui` starts it, here with
`max_concurrent_runs: 1`) submits one run per partition and launches them one at a time in
subprocesses. The test watches them through public APIs only: the runs with
`DagsterInstance.get_run_records`, the backfill's status with the GraphQL query
`partitionBackfillOrError`. The embedding cache is content-addressed, so the demo corpus is
embedded by the first run only.
"""

from pathlib import Path

import pandas as pd
import pytest
import yaml
from dagster import AssetKey, DagsterInstance, DagsterRunStatus, RunRecord, RunsFilter

from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline_tests.conftest import (
    DATASETS_DIR,
    SHIPPED_INSTANCE_CONFIG,
    backfill_status,
    request_asset_backfill,
    stop_process_group,
)
from rag_eval_pipeline_tests.test_run_ownership import start_daemon, wait_for

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
STATUS_POLL_S = 5.0


@pytest.fixture
def deployment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A data folder holding only `VERSIONS` (both registered, so the dataset sensor of the
    daemon requests nothing) and a `DAGSTER_HOME` with the shipped dagster.yaml, one run at a
    time, its queue looked at every second; both set in this process's environment too."""
    data, home = tmp_path / "data", tmp_path / "home"
    (data / "datasets").mkdir(parents=True)
    for version in VERSIONS:
        (data / "datasets" / version).symlink_to(DATASETS_DIR / version)
    home.mkdir()
    settings = yaml.safe_load(SHIPPED_INSTANCE_CONFIG.read_text(encoding="utf-8"))
    settings["concurrency"]["runs"]["max_concurrent_runs"] = 1
    settings["run_coordinator"] = {
        "module": "dagster.core.run_coordinator",
        "class": "QueuedRunCoordinator",
        "config": {"dequeue_interval_seconds": 1},
    }
    (home / "dagster.yaml").write_text(yaml.safe_dump(settings), encoding="utf-8")
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("RAG_EVAL_DATA_DIR", str(data))
    monkeypatch.setenv("RAG_EVAL_WAREHOUSE", str(data / "warehouse"))
    with DagsterInstance.get() as instance:
        instance.add_dynamic_partitions(DATASET_VERSION, VERSIONS)
    return data, home


def backfill_runs(backfill_id: str) -> list[RunRecord]:
    with DagsterInstance.get() as instance:
        return list(instance.get_run_records(RunsFilter(tags={"dagster/backfill": backfill_id})))


def ended_status(backfill_id: str, tmp_path: Path) -> str | None:
    """The backfill's status once the backfill daemon has ended it (`None` while requested)."""
    status = backfill_status(backfill_id, tmp_path)
    return None if status == "REQUESTED" else status


def run_backfill(data: Path, home: Path, keys: list[str], tmp_path: Path) -> tuple[str, str]:
    """Request the backfill, run the daemon until the backfill has left `REQUESTED`, stop it;
    the backfill's id and status."""
    backfill_id = request_asset_backfill(keys, SELECTION, tmp_path)
    daemon = start_daemon(data, home, "daemon.log")
    try:
        wait_for(
            lambda: len([r for r in backfill_runs(backfill_id) if r.end_time]) == len(keys),
            "the daemon to submit and run one run per partition",
            TIMEOUT_S,
        )
        status = wait_for(
            lambda: ended_status(backfill_id, tmp_path),
            "the backfill daemon to find its runs ended",
            TIMEOUT_S,
            poll_s=STATUS_POLL_S,
        )
    finally:
        stop_process_group(daemon)
    return backfill_id, str(status)


def test_backfill_over_versions_and_dates(deployment: tuple[Path, Path], tmp_path: Path) -> None:
    data, home = deployment
    keys = [str(evaluation_partition_key(v, d)) for v in VERSIONS for d in DATES]
    backfill_id, status = run_backfill(data, home, keys, tmp_path)
    records = backfill_runs(backfill_id)
    runs = [record.dagster_run for record in records]
    log = (data / "daemon.log").read_text(errors="replace")[-4000:]
    assert status == "COMPLETED_SUCCESS", ([(r.run_id, r.status) for r in runs], log)
    assert sorted(r.tags["dagster/partition"] for r in runs) == sorted(keys)
    assert all(r.status == DagsterRunStatus.SUCCESS for r in runs)
    for version in VERSIONS:
        for day in DATES:
            quality = pd.read_parquet(
                data / "warehouse" / "retrieval_quality" / version / f"{day}.parquet"
            )
            assert "mrr" in set(quality["metric"])
    cache_files = list((data / "cache" / "embeddings").rglob("*.npz"))
    assert cache_files, "the demo corpus was embedded once into the cache"
    with DagsterInstance.get() as instance:
        materializations = instance.fetch_materializations(
            AssetKey("corpus_embeddings"), limit=10
        ).records
    embedded = sorted(
        r.asset_materialization.metadata["embedded"].value
        for r in materializations
        if "embedded" in r.asset_materialization.metadata
    )
    assert len(embedded) == 2 and embedded[0] == 0, embedded
