"""A version's interactions read once and staged by day (`datasets/staged_logs.py`).

A five-day `logs.parquet` of 60 interactions a day: the staged copy holds the rows of the
version's logs in day order, a day's window reads only its days (another day's staged file,
corrupted, does not touch it), an unchanged version is not read again, a changed file is staged
again, a problem in a later chunk is named by file, row, column and value and stages nothing,
two writers at once publish one whole copy, the same works on S3 (moto's server), and a tier
reading the partition's snapshot gets the interactions of its date.
"""

from __future__ import annotations

import json
import threading
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.datasets import log_chunks
from rag_eval_pipeline.datasets.errors import DatasetError
from rag_eval_pipeline.datasets.golden import (
    DatasetLimits,
    GoldenDataset,
    interactions_key,
    load_dataset,
)
from rag_eval_pipeline.datasets.staged_logs import STAGED_MANIFEST, LogStage
from rag_eval_pipeline.metrics.traffic import time_ordered
from rag_eval_pipeline.storage.objects import storage_path
from rag_eval_pipeline.storage.parquet import read_parquet, read_tables, write_tables_atomically
from rag_eval_pipeline_tests.s3_server import s3_bucket, s3_server

pytestmark = [pytest.mark.integration]

__all__ = ["s3_bucket", "s3_server"]  # fixtures

FIRST = date(2026, 11, 16)
DAYS, PER_DAY = 5, 60


def logs_frame(extra: int = 0) -> pd.DataFrame:
    """`DAYS` × `PER_DAY` interactions (+ `extra` on the last day), shuffled, one undated."""
    rng = np.random.default_rng(7)
    count = DAYS * PER_DAY + extra
    seconds = np.repeat(np.arange(DAYS), PER_DAY).tolist() + [DAYS - 1] * extra
    stamps = pd.Timestamp(FIRST, tz="UTC") + pd.to_timedelta(
        np.array(seconds) * 86_400 + rng.integers(0, 86_400, count), unit="s"
    )
    frame = pd.DataFrame(
        {
            "log_id": [f"l{i:04d}" for i in range(count)],
            "question": [f"Question {i}?" for i in range(count)],
            "retrieved_doc_ids": [[f"d{i % 7}", f"d{(i + 1) % 7}"] for i in range(count)],
            "latency_ms": rng.uniform(50, 900, count).round(3),
            "timestamp": stamps,
        }
    )
    frame.loc[3, "timestamp"] = pd.NaT
    return frame.sample(frac=1, random_state=3).reset_index(drop=True)


def write_version(folder: Path, logs: pd.DataFrame) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "queries.jsonl").write_text('{"query_id": "q0", "question": "Question?"}\n')
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"doc_id": f"d{i}", "text": f"Text {i}."}) + "\n" for i in range(7))
    )
    (folder / "qrels.csv").write_text("query_id,doc_id,relevance\nq0,d0,1\n")
    logs.to_parquet(folder / "logs.parquet", index=False)
    return folder


def day_names(offsets: range) -> list[str]:
    return [(FIRST + timedelta(days=d)).isoformat() for d in offsets]


def test_the_staged_days_hold_the_version_logs_in_day_order(tmp_path: Path) -> None:
    folder = write_version(tmp_path / "v1", logs_frame())
    whole = load_dataset(folder)  # no stage: the logs held whole, as before
    staged = load_dataset(folder, stage=LogStage(storage_path(tmp_path / "stage")))
    assert staged.logs is None and whole.logs is not None
    assert staged.staged_logs is not None
    assert staged.staged_logs.days == (*day_names(range(DAYS)), "undated")
    assert staged.statistics() == whole.statistics()
    expected = time_ordered(whole.logs)
    got = staged.staged_logs.whole().to_pandas()
    pd.testing.assert_frame_equal(got, read_parquet_roundtrip(expected, tmp_path))
    window = staged.stored_tables(FIRST + timedelta(days=2))["logs"].to_pandas()
    utc_days = pd.to_datetime(window["timestamp"]).dt.strftime("%Y-%m-%d")
    assert set(utc_days.dropna()) == set(day_names(range(1, 4)))
    assert window["timestamp"].isna().sum() == 1  # the undated row comes with every day


def read_parquet_roundtrip(frame: pd.DataFrame, tmp_path: Path) -> pd.DataFrame:
    """`frame` as the golden dataset stored it before (one Parquet file, read back)."""
    path = tmp_path / "roundtrip.parquet"
    frame.to_parquet(path, index=False)
    return read_parquet(storage_path(path))


def test_a_day_reads_only_its_days_and_an_unchanged_version_is_not_read_again(
    tmp_path: Path,
) -> None:
    folder = write_version(tmp_path / "v1", logs_frame())
    stage = LogStage(storage_path(tmp_path / "stage"))
    first = load_dataset(folder, stage=stage).staged_logs
    assert first is not None
    last_day = Path(first.folder.path) / f"{day_names(range(DAYS))[-1]}.parquet"
    last_day.write_bytes(b"not parquet")  # another day's staged file, corrupted
    again = load_dataset(folder, stage=stage)  # validated from the staged copy: not re-read
    assert again.staged_logs == first
    day = again.stored_tables(FIRST + timedelta(days=1))["logs"]
    assert day.num_rows == 3 * PER_DAY == len(day.to_pandas())  # one row of day 0 is undated
    with pytest.raises(Exception, match=r"[Pp]arquet"):
        again.stored_tables(FIRST + timedelta(days=DAYS - 1))["logs"].to_pandas()


def test_a_changed_file_is_staged_again(tmp_path: Path) -> None:
    folder = write_version(tmp_path / "v1", logs_frame())
    stage = LogStage(storage_path(tmp_path / "stage"))
    first = load_dataset(folder, stage=stage).staged_logs
    write_version(folder, logs_frame(extra=2))
    second = load_dataset(folder, stage=stage).staged_logs
    assert first is not None and second is not None
    assert second.folder != first.folder
    assert (second.num_rows, first.num_rows) == (DAYS * PER_DAY + 2, DAYS * PER_DAY)


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        (
            {(170, "latency_ms"): -4.0, (240, "log_id"): "l0010"},  # l0010: an id of chunk 1
            {(171, "latency_ms", "-4"), (241, "log_id", "l0010")},
        ),
        ({(260, "retrieved_doc_ids"): ["d1", "d99"]}, {(261, "retrieved_doc_ids", "d99")}),
    ],
)
def test_a_problem_in_a_later_chunk_is_named_and_stages_nothing(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    changes: dict[tuple[int, str], object],
    named: set[tuple[int, str, str]],
) -> None:
    monkeypatch.setattr(log_chunks, "LOG_CHUNK_ROWS", 50)
    logs = logs_frame()
    for (row, column), value in changes.items():
        logs.at[row, column] = value
    folder = write_version(tmp_path / "v1", logs)
    stage_root = tmp_path / "stage"
    with pytest.raises(DatasetError) as raised:
        load_dataset(folder, stage=LogStage(storage_path(stage_root)))
    issues = raised.value.issues
    assert {i.file for i in issues} == {"logs.parquet"}
    assert {(i.row, i.column) for i in issues} == {(row, column) for row, column, _ in named}
    for issue, (_, _, value) in zip(
        sorted(issues, key=lambda i: i.row), sorted(named), strict=True
    ):
        assert value in str(issue)
    assert not list(stage_root.glob(f"*/{STAGED_MANIFEST}"))
    with pytest.raises(DatasetError) as whole:  # the same problems without a stage
        load_dataset(folder)
    assert [str(i) for i in whole.value.issues] == [str(i) for i in issues]


def test_two_writers_at_once_publish_one_whole_copy(tmp_path: Path) -> None:
    folder = write_version(tmp_path / "v1", logs_frame())
    stage = LogStage(storage_path(tmp_path / "stage"))
    results: list = []
    threads = [
        threading.Thread(target=lambda: results.append(load_dataset(folder, stage=stage)))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    copies = {dataset.staged_logs for dataset in results}
    assert len(copies) == 1 and len(results) == 2
    (copy,) = copies
    assert copy.whole().num_rows == DAYS * PER_DAY
    assert [p.name for p in (tmp_path / "stage").iterdir()] == [Path(copy.folder.path).parent.name]


def test_a_copy_staged_on_s3_is_found_by_another_reader(tmp_path: Path, s3_bucket: str) -> None:
    folder = write_version(tmp_path / "v1", logs_frame())
    stage = LogStage(storage_path(f"{s3_bucket}/staged"))
    staged = load_dataset(folder, stage=stage).staged_logs
    assert staged is not None and staged.folder.protocol == "s3"
    reader = LogStage(storage_path(f"{s3_bucket}/staged"))
    key = staged.folder.parent.name
    assert reader.find(key) == staged
    assert key == stage_key_of(folder)
    window = staged.window(FIRST).to_pandas()
    local = load_dataset(folder, stage=LogStage(storage_path(tmp_path / "stage")))
    assert local.staged_logs is not None
    pd.testing.assert_frame_equal(window, local.staged_logs.window(FIRST).to_pandas())


def stage_key_of(folder: Path) -> str:
    return interactions_key(folder, DatasetLimits())


def test_a_tier_reading_the_snapshot_gets_the_interactions_of_its_date(tmp_path: Path) -> None:
    folder = write_version(tmp_path / "v1", logs_frame())
    dataset = load_dataset(folder, stage=LogStage(storage_path(tmp_path / "stage")))
    day = FIRST + timedelta(days=2)
    snapshot = storage_path(tmp_path / "snapshot")
    write_tables_atomically(dataset.stored_tables(day), snapshot)
    timezone = "Pacific/Kiritimati"  # UTC+14: the date starts at 10:00 UTC the day before
    stored = GoldenDataset.from_tables("v1", read_tables(snapshot), day, timezone)
    logs = load_dataset(folder).logs
    assert logs is not None and stored.logs is not None
    local = pd.to_datetime(logs["timestamp"]).dt.tz_convert(timezone).dt.date
    expected = set(logs.loc[(local == day) | logs["timestamp"].isna(), "log_id"])
    assert set(stored.logs["log_id"]) == expected
    assert 0 < len(expected) < PER_DAY + 2
