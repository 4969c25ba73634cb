"""Dagster wiring on a real temporary instance: partitions, Parquet paths, sensor, schedule."""

import os
import shutil
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
from dagster import (
    DagsterInstance,
    SensorResult,
    SkipReason,
    build_schedule_context,
    build_sensor_context,
    materialize,
)

from rag_eval_pipeline.definitions import ALL_ASSETS, ALL_CHECKS, defs
from rag_eval_pipeline.defs.dataset.assets import golden_dataset
from rag_eval_pipeline.defs.dataset.schedules import INVALID_VERSIONS_TAG, daily_evaluation_schedule
from rag_eval_pipeline.defs.dataset.sensors import dataset_version_sensor
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.defs.shared.resources import DatasetsResource
from rag_eval_pipeline.defs.tier0_embedding.assets import corpus_embeddings
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline_tests.conftest import DATASETS_DIR, evaluation_resources, report_config

pytestmark = [pytest.mark.integration]


def test_definitions_load() -> None:
    assert defs.resolve_job_def("evaluation_job") is not None
    assert defs.resolve_asset_graph().get_all_asset_keys()


def test_partition_key_orders_dimensions_by_name() -> None:
    assert str(evaluation_partition_key("demo-v1", "2026-11-21")) == "demo-v1|2026-11-21"


def test_materialize_writes_documented_paths(
    tmp_path: Path, dagster_instance: DagsterInstance, embedder: Embedder
) -> None:
    dagster_instance.add_dynamic_partitions(DATASET_VERSION, ["scifact-test"])
    result = materialize(
        [*ALL_ASSETS, *ALL_CHECKS],
        partition_key=evaluation_partition_key("scifact-test", "2026-11-21"),
        instance=dagster_instance,
        resources=evaluation_resources(tmp_path, embedder),
        run_config=report_config(tmp_path),
    )
    assert result.success
    golden = tmp_path / "warehouse" / "golden_dataset" / "scifact-test" / "2026-11-21"
    assert sorted(p.name for p in golden.iterdir()) == [
        "_tables.json",
        "manifest.parquet",
        "qrels.parquet",
        "queries.parquet",
        "runs.parquet",
    ]
    scorecard = pd.read_parquet(
        tmp_path / "warehouse" / "evaluation_scorecard" / "scifact-test" / "2026-11-21.parquet"
    )
    values = scorecard.set_index("metric")["value"]
    assert values["n_queries"] == 300.0
    assert set(scorecard["tier"]) == {"dataset", "tier1_retrieval", "ux"}
    assert values["mrr"] > 0.5
    embeddings = dagster_instance.get_latest_materialization_event(
        corpus_embeddings.key
    ).asset_materialization
    assert embeddings.metadata["skip_reason"].value == "this dataset version ships no corpus texts"
    materialization = dagster_instance.get_latest_materialization_event(
        golden_dataset.key
    ).asset_materialization
    assert materialization.partition == "scifact-test|2026-11-21"
    assert materialization.metadata["n_queries"].value == 300


def test_sensor_registers_new_versions_and_reports_invalid(
    tmp_path: Path, dagster_instance: DagsterInstance
) -> None:
    root = tmp_path / "datasets"
    shutil.copytree(DATASETS_DIR / "scifact-test", root / "scifact-test")
    (root / "bad name").mkdir()
    with build_sensor_context(
        instance=dagster_instance, resources={"datasets": DatasetsResource(root=str(root))}
    ) as context:
        result = dataset_version_sensor(context)
        assert isinstance(result, SensorResult)
        assert next(r.partition_key for r in result.run_requests).startswith("scifact-test|")
        assert result.dynamic_partitions_requests[0].partition_keys == ["scifact-test"]
        dagster_instance.add_dynamic_partitions(DATASET_VERSION, ["scifact-test"])
        again = dataset_version_sensor(context)
        assert isinstance(again, SkipReason)
        assert "No new dataset versions" in again.skip_message
        assert "'bad name'" in again.skip_message


def test_schedule_requests_one_run_per_registered_version(
    dagster_instance: DagsterInstance,
) -> None:
    dagster_instance.add_dynamic_partitions(DATASET_VERSION, ["demo-v1", "demo-v2"])
    with build_schedule_context(
        instance=dagster_instance,
        scheduled_execution_time=datetime(2026, 11, 21, 2, 0),
        resources={"datasets": DatasetsResource(root=str(DATASETS_DIR))},
    ) as context:
        requests = daily_evaluation_schedule(context)
        assert [r.partition_key for r in requests] == ["demo-v1|2026-11-21", "demo-v2|2026-11-21"]
        assert all(INVALID_VERSIONS_TAG not in r.tags for r in requests)
        # Each run carries its inputs' fingerprint, recorded on its materializations.
        assert all(len(r.tags["rag_eval/fingerprint"]) == 40 for r in requests)


def test_schedule_skips_a_registered_version_that_no_longer_validates(
    tmp_path: Path, dagster_instance: DagsterInstance
) -> None:
    root = tmp_path / "datasets"
    shutil.copytree(DATASETS_DIR / "demo-v1", root / "demo-v1")
    shutil.copytree(DATASETS_DIR / "demo-v1", root / "broken-v1")
    queries = root / "broken-v1" / "queries.jsonl"
    lines = queries.read_text().splitlines()
    queries.write_text("\n".join([lines[0], '{"query_id": "q999"', *lines[1:]]) + "\n")
    dagster_instance.add_dynamic_partitions(DATASET_VERSION, ["broken-v1", "demo-v1"])
    datasets = DatasetsResource(root=str(root))
    with build_schedule_context(
        instance=dagster_instance,
        scheduled_execution_time=datetime(2026, 11, 22, 2, 0),
        resources={"datasets": datasets},
    ) as context:
        requests = daily_evaluation_schedule(context)
        assert [r.partition_key for r in requests] == ["demo-v1|2026-11-22"]
        reported = requests[0].tags[INVALID_VERSIONS_TAG]
        assert reported.startswith("'broken-v1': ") and "queries.jsonl" in reported
        assert "line 2" in reported or "row 2" in reported

        shutil.rmtree(root / "demo-v1")
        skipped = daily_evaluation_schedule(context)
        assert isinstance(skipped, SkipReason)
        assert "No registered dataset version validates" in skipped.skip_message
        assert "'broken-v1'" in skipped.skip_message and "'demo-v1'" in skipped.skip_message

        queries.write_text("\n".join(lines) + "\n")
        (root / "demo-v1").mkdir()
        repaired = daily_evaluation_schedule(context)
        assert [r.partition_key for r in repaired] == ["broken-v1|2026-11-22"]


def test_the_validity_verdict_is_not_reread_for_an_unchanged_folder(tmp_path: Path) -> None:
    root = tmp_path / "datasets"
    shutil.copytree(DATASETS_DIR / "demo-v1", root / "demo-v1")
    datasets = DatasetsResource(root=str(root))
    assert datasets.problem("demo-v1") is None
    queries = root / "demo-v1" / "queries.jsonl"
    stat = queries.stat()
    queries.write_bytes(b"x" * stat.st_size)
    os.utime(queries, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert datasets.problem("demo-v1") is None
    os.utime(queries, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert "queries.jsonl" in datasets.problem("demo-v1")


def test_schedule_never_reads_outside_the_datasets_folder(tmp_path: Path) -> None:
    datasets = DatasetsResource(root=str(tmp_path / "datasets"))
    problem = datasets.problem("../demo-v1")
    assert problem is not None and "../demo-v1" in problem
