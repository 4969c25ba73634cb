"""Dataset versions on `s3://` (`RAG_EVAL_DATASETS`), over the real S3 protocol (moto's server
on 127.0.0.1): listed and judged by the rule and limits of local folders, read through a local
mirror that fetches only what changed, fingerprinted by ETag, and a full evaluation of a demo
copy from the bucket gives the scorecard of the same copy on disk."""

from __future__ import annotations

import os
import shutil
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
from dagster import (
    DagsterInstance,
    SensorResult,
    build_schedule_context,
    build_sensor_context,
    materialize,
)

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.cli import validate as cli_validate
from rag_eval_pipeline.datasets import location as location_module
from rag_eval_pipeline.datasets.location import DatasetLocation
from rag_eval_pipeline.definitions import ALL_ASSETS
from rag_eval_pipeline.defs.dataset.schedules import daily_evaluation_schedule
from rag_eval_pipeline.defs.dataset.sensors import dataset_version_sensor
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.defs.shared.resources import DatasetsResource
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.storage.file_fingerprint import files_fingerprint
from rag_eval_pipeline.storage.objects import storage_path
from rag_eval_pipeline_tests.conftest import (
    DATASETS_DIR,
    evaluation_resources,
    rag_eval_process,
    report_config,
)
from rag_eval_pipeline_tests.s3_server import s3_bucket, s3_client, s3_environment, s3_server
from rag_eval_pipeline_tests.test_dataset_formats import broken_version
from rag_eval_pipeline_tests.test_object_storage import computed_values

pytestmark = [pytest.mark.integration, pytest.mark.slow]

__all__ = ["s3_bucket", "s3_server"]  # fixtures

DATE = "2026-11-20"


def upload(local: Path, url: str) -> None:
    """Every file under `local` as an object under `url` (one PUT each)."""
    target = storage_path(url)
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        (target / path.relative_to(local).as_posix()).write_bytes(path.read_bytes())


@pytest.fixture
def two_copies(s3_bucket: str, tmp_path: Path) -> tuple[Path, str]:
    """The same datasets folder (demo-v1 and a broken version) on disk and in the bucket."""
    local = tmp_path / "datasets"
    shutil.copytree(DATASETS_DIR / "demo-v1", local / "demo-v1")
    broken_version(local)
    upload(local, f"{s3_bucket}/datasets")
    return local, f"{s3_bucket}/datasets"


def test_the_bucket_gets_the_verdicts_of_the_folder_from_every_path(
    two_copies: tuple[Path, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    dagster_instance: DagsterInstance,
) -> None:
    local, url = two_copies
    on_disk = DatasetsResource(root=str(local)).scan()
    remote = DatasetsResource(root=url, mirror=str(tmp_path / "mirror"))
    in_bucket = remote.scan()
    assert in_bucket.valid == on_disk.valid == ["demo-v1"]
    assert in_bucket.invalid == on_disk.invalid
    assert "unknown id 'nope-42'" in in_bucket.invalid["broken"]
    assert remote.verdict("demo-v1").statistics == on_disk.verdicts["demo-v1"].statistics
    with pytest.MonkeyPatch.context() as patch:  # many folders: one listing of the whole root
        patch.setattr(location_module, "FEW_FOLDERS", 0)
        listed_once = DatasetsResource(root=url, mirror=str(tmp_path / "mirror-2")).scan()
    assert listed_once.invalid == on_disk.invalid and listed_once.valid == ["demo-v1"]

    patch = pytest.MonkeyPatch.context()
    with patch as mirror:  # `rag-eval validate` mirrors to RAG_EVAL_DATASETS_MIRROR
        mirror.setattr(cli_validate, "DATASETS_MIRROR", tmp_path / "cli-mirror")
        validated = main(["validate", f"{url}/demo-v1"]), main(["validate", f"{url}/broken"])
    assert (tmp_path / "cli-mirror" / "demo-v1" / "qrels.csv").is_file()
    assert validated[0] == 0
    assert validated[1] == 1
    printed = capsys.readouterr()
    assert printed.out.startswith("Dataset version 'demo-v1' is valid:")
    assert "unknown id 'nope-42'" in printed.err

    with build_sensor_context(instance=dagster_instance, resources={"datasets": remote}) as ctx:
        sensed = dataset_version_sensor(ctx)
    assert isinstance(sensed, SensorResult)
    assert sensed.dynamic_partitions_requests[0].partition_keys == ["demo-v1"]
    dagster_instance.add_dynamic_partitions(DATASET_VERSION, ["demo-v1", "broken"])
    with build_schedule_context(
        instance=dagster_instance,
        scheduled_execution_time=datetime(2026, 11, 22, 2, 0),
        resources={"datasets": remote},
    ) as context:
        scheduled = daily_evaluation_schedule(context)
    assert [request.partition_key for request in scheduled] == ["demo-v1|2026-11-22"]


def test_the_mirror_fetches_only_changed_objects_and_the_fingerprint_follows_the_etags(
    two_copies: tuple[Path, str], tmp_path: Path
) -> None:
    local, url = two_copies
    location = DatasetLocation(url, tmp_path / "mirror")
    folder = location.local_folder("demo-v1")
    files = sorted(p.relative_to(folder) for p in folder.rglob("*") if p.is_file())
    assert files == sorted(
        p.relative_to(local / "demo-v1") for p in (local / "demo-v1").rglob("*") if p.is_file()
    )
    for name in files:
        assert (folder / name).read_bytes() == (local / "demo-v1" / name).read_bytes()
    before = files_fingerprint(f"{url}/demo-v1")
    assert files_fingerprint(f"{url}/demo-v1") == before  # nothing changed: same listing
    assert files_fingerprint(folder) == files_fingerprint(local / "demo-v1")  # same bytes
    stamps = {name: os.stat(folder / name).st_mtime_ns for name in files}

    queries = (local / "demo-v1" / "queries.jsonl").read_bytes()
    storage_path(f"{url}/demo-v1/queries.jsonl").write_bytes(queries + b"\n")
    storage_path(f"{url}/demo-v1/DATASET.md").unlink()
    after = files_fingerprint(f"{url}/demo-v1")
    assert after != before
    folder = location.local_folder("demo-v1")
    assert not (folder / "DATASET.md").exists()
    assert (folder / "queries.jsonl").read_bytes().endswith(b"\n\n")
    refetched = [
        name
        for name in files
        if (folder / name).exists() and os.stat(folder / name).st_mtime_ns != stamps[name]
    ]
    assert refetched == [Path("queries.jsonl")]


def test_a_version_from_the_bucket_evaluates_to_the_scorecard_of_the_folder(
    two_copies: tuple[Path, str],
    tmp_path: Path,
    embedder: Embedder,
    dagster_instance: DagsterInstance,
) -> None:
    local, url = two_copies
    dagster_instance.add_dynamic_partitions(DATASET_VERSION, ["demo-v1"])
    scorecards = []
    for name, datasets in [
        ("disk", DatasetsResource(root=str(local))),
        ("bucket", DatasetsResource(root=url, mirror=str(tmp_path / "mirror"))),
    ]:
        result = materialize(
            ALL_ASSETS,
            partition_key=evaluation_partition_key("demo-v1", DATE),
            instance=dagster_instance,
            resources=evaluation_resources(tmp_path / name, embedder, datasets=datasets),
            run_config=report_config(tmp_path / name),
        )
        assert result.success
        scorecards.append(computed_values(result.output_for_node("evaluation_scorecard")))
    assert len(scorecards[0]) > 50
    pd.testing.assert_frame_equal(scorecards[1], scorecards[0])


def test_an_object_key_leaving_its_folder_refuses_the_version(
    s3_server: str, s3_bucket: str, tmp_path: Path
) -> None:
    bucket = s3_bucket.removeprefix("s3://")
    client = s3_client(s3_server)
    client.put_object(Bucket=bucket, Key="datasets/evil/queries.jsonl", Body=b"{}\n")
    client.put_object(Bucket=bucket, Key="datasets/evil/../../outside.txt", Body=b"x")
    scan = DatasetsResource(root=f"{s3_bucket}/datasets", mirror=str(tmp_path / "m")).scan()
    assert "object key leaves its folder" in scan.invalid["evil"]
    written = [p.name for p in tmp_path.rglob("*") if p.is_file()]
    assert written == [".evil.lock"]  # nothing fetched, inside the mirror or out of it


def test_rag_eval_run_reads_its_version_from_the_bucket_named_by_rag_eval_datasets(
    s3_server: str, two_copies: tuple[Path, str], tmp_path: Path
) -> None:
    """A fresh `rag-eval run` process with `RAG_EVAL_DATASETS=s3://...` and no local dataset
    folder: the version is mirrored under the data folder, its dataset stored, and the
    unchanged partition is then up to date (the run fingerprint reads the mirror)."""
    _, url = two_copies
    data, home = tmp_path / "data", tmp_path / "home"
    data.mkdir()
    home.mkdir()
    env = {**s3_environment(s3_server), "RAG_EVAL_DATASETS": url}
    arguments = [
        "run",
        "--dataset-version",
        "demo-v1",
        "--date",
        DATE,
        "--select",
        "golden_dataset",
    ]

    def run() -> str:
        completed = rag_eval_process(data, home, *arguments, env=env)
        assert completed.returncode == 0, completed.stdout + completed.stderr
        return completed.stdout

    run()
    assert (data / "warehouse" / "golden_dataset" / "demo-v1" / DATE).is_dir()
    assert (data / ".mirror" / "datasets" / "demo-v1" / "qrels.csv").is_file()
    assert not (data / "datasets").exists()
    assert f"demo-v1|{DATE} is up to date" in run()
