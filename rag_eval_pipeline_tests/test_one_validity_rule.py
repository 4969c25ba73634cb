"""One validity rule: every format fixture gets the same verdict from `rag-eval validate` and
from discovery (the dataset sensor, the daily schedule, `rag-eval run`), and a valid one
materializes its dataset and Tier 1 through Dagster on a real instance.

Each path judges its own copy of the folder (same version name, another datasets folder), so
no path reads another's cached verdict.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
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

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.definitions import ALL_ASSETS
from rag_eval_pipeline.defs.dataset.schedules import daily_evaluation_schedule
from rag_eval_pipeline.defs.dataset.sensors import dataset_version_sensor
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.defs.shared.resources import DatasetsResource
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline_tests.conftest import evaluation_resources
from rag_eval_pipeline_tests.test_dataset_formats import (
    RAGAS_ROWS,
    beir_folder,
    broken_version,
    deepeval_rows,
    trec_version,
    write_jsonl,
    write_table,
)

pytestmark = [pytest.mark.integration]

# The layout of trec_eval's test/results.trunc: text after the sixth field on some lines.
TRUNCATED_RUN = """\
1 Q0 d1 1 2.138276 STANDARD more junk at
1 Q0 d4 2 1.5 STANDARD
2 Q0 d7 1 0.5 STANDARD x y
"""


def own_tables(root: Path) -> Path:
    folder = root / "own-tables"
    write_jsonl(
        folder / "corpus.jsonl",
        [{"doc_id": "d1", "text": "Rotate keys every 90 days."}, {"doc_id": "d2", "text": "Pro."}],
    )
    write_jsonl(
        folder / "queries.jsonl",
        [
            {"query_id": "q1", "question": "How often rotate keys?"},
            {"query_id": "q2", "question": "Pro?"},
        ],
    )
    (folder / "qrels.csv").write_text("query_id,doc_id,relevance\nq1,d1,1\nq2,d2,2\n")
    return folder


def trec_truncated_run(root: Path) -> Path:
    folder = trec_version(root, None)
    (folder / "runs" / "bm25.trec").write_text(TRUNCATED_RUN)
    return folder


def evaluation_table(table_format: str, extension: str) -> Callable[[Path], Path]:
    def build(root: Path) -> Path:
        rows = RAGAS_ROWS if table_format == "ragas" else deepeval_rows()
        write_table(root / f"{table_format}-{extension}", table_format, rows, extension)
        return root / f"{table_format}-{extension}"

    return build


def ragas_beside_queries(root: Path) -> Path:
    folder = evaluation_table("ragas", "jsonl")(root)
    write_jsonl(folder / "queries.jsonl", [{"query_id": "q1", "question": "Why?"}])
    return folder


def non_integer_grade(root: Path) -> Path:
    folder = own_tables(root)
    (folder / "qrels.csv").write_text("query_id,doc_id,relevance\nq1,d1,1.5\n")
    return folder


def empty(root: Path) -> Path:
    (root / "empty").mkdir(parents=True)
    return root / "empty"


def broken(root: Path) -> Path:
    broken_version(root)
    return root / "broken"


REFERENCE = {"dense", "bm25", "hybrid-rrf"}
# name → (builder, whether the folder is a valid version)
FIXTURES: dict[str, tuple[Callable[[Path], Path], bool]] = {
    "trec-graded": (lambda root: trec_version(root, "relevance_level: 2\n"), True),
    "trec-truncated-run": (trec_truncated_run, True),
    "beir-split-qrels-only": (beir_folder, True),
    "own-tables": (own_tables, True),
    "ragas-jsonl": (evaluation_table("ragas", "jsonl"), True),
    "ragas-csv": (evaluation_table("ragas", "csv"), True),
    "ragas-parquet": (evaluation_table("ragas", "parquet"), True),
    "deepeval-jsonl": (evaluation_table("deepeval", "jsonl"), True),
    "ragas-beside-queries": (ragas_beside_queries, False),
    "non-integer-grade": (non_integer_grade, False),
    "unknown-query-id": (broken, False),
    "empty": (empty, False),
    "beir-split-not-declared": (lambda root: beir_folder(root, split="dev"), False),
}
# The Tier 1 systems each layout's data gives (one fixture per layout is materialized: TREC
# qrels with a run, BEIR, our own tables, an evaluation table).
TIER1_SYSTEMS = {
    "trec-truncated-run": {"bm25"},
    "beir-split-qrels-only": REFERENCE,
    "own-tables": REFERENCE,
    "ragas-jsonl": REFERENCE,
}


def validate(folder: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    """`rag-eval validate FOLDER`: its exit code and the lines it printed."""
    code = main(["validate", str(folder)])
    captured = capsys.readouterr()
    return code, (captured.out if code == 0 else captured.err).splitlines()


@pytest.mark.parametrize("name", list(FIXTURES))
def test_validate_and_discovery_give_one_verdict(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], dagster_instance: DagsterInstance
) -> None:
    build, valid = FIXTURES[name]
    folder = build(tmp_path / "validate")
    version = folder.name
    code, lines = validate(folder, capsys)
    assert (code == 0) == valid, lines

    root = tmp_path / "datasets"
    shutil.copytree(folder, root / version)
    datasets = DatasetsResource(root=str(root))
    with build_sensor_context(instance=dagster_instance, resources={"datasets": datasets}) as ctx:
        sensed = dataset_version_sensor(ctx)
    schedule_root = tmp_path / "schedule"
    shutil.copytree(folder, schedule_root / version)
    dagster_instance.add_dynamic_partitions(DATASET_VERSION, [version])
    with build_schedule_context(
        instance=dagster_instance,
        scheduled_execution_time=datetime(2026, 11, 22, 2, 0),
        resources={"datasets": DatasetsResource(root=str(schedule_root))},
    ) as context:
        scheduled = daily_evaluation_schedule(context)
    run_root = tmp_path / "run"
    shutil.copytree(folder, run_root / version)
    run_verdict = DatasetsResource(root=str(run_root)).verdict(version)  # `run --dataset-version`

    if valid:
        assert lines[0] == f"Dataset version '{version}' is valid:"
        assert isinstance(sensed, SensorResult)
        assert sensed.dynamic_partitions_requests[0].partition_keys == [version]
        assert [r.partition_key for r in scheduled] == [f"{version}|2026-11-22"]
        assert run_verdict.valid
        return
    refusal = lines[0]
    assert refusal.startswith(f"invalid dataset version {version!r}: ")
    reason = refusal.removeprefix(f"invalid dataset version {version!r}: ")
    assert isinstance(sensed, SkipReason)
    assert f"Rejected folders: {version!r}: {reason}" in sensed.skip_message
    assert isinstance(scheduled, SkipReason)
    assert f"{version!r}: {reason}" in scheduled.skip_message
    assert run_verdict.refusal == refusal


TIER1 = {
    "golden_dataset",
    "corpus_embeddings",
    "retrieval_runs",
    "retrieval_metrics",
    "retrieval_quality",
}


@pytest.mark.parametrize("name", list(TIER1_SYSTEMS))
def test_a_valid_folder_materializes_its_tier1(
    name: str, tmp_path: Path, embedder: Embedder, dagster_instance: DagsterInstance
) -> None:
    build, _ = FIXTURES[name]
    root = tmp_path / "datasets"
    version = build(root).name
    assert DatasetsResource(root=str(root)).scan().valid == [version]
    dagster_instance.add_dynamic_partitions(DATASET_VERSION, [version])
    result = materialize(
        [asset for asset in ALL_ASSETS if asset.key.to_user_string() in TIER1],
        partition_key=evaluation_partition_key(version, "2026-11-22"),
        instance=dagster_instance,
        resources=evaluation_resources(
            tmp_path, embedder, datasets=DatasetsResource(root=str(root))
        ),
    )
    assert result.success
    quality: pd.DataFrame = result.output_for_node("retrieval_quality")
    assert set(quality["system"]) == TIER1_SYSTEMS[name]
    assert quality.loc[quality["metric"] == "mrr", "count"].gt(0).all()
