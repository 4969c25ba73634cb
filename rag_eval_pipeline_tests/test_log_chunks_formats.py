"""A version's logs in JSON lines, CSV, TSV or Parquet validated and staged chunk by chunk
(`datasets/log_chunks.py`, `readers.table_chunks`): the staged copy and every day of it are the
rows the whole-file path stages, and a bad file gets the whole-file readers' own problems
(file, row, line, column, value) and stages nothing.

Chunks of `CHUNK` rows (the constants monkeypatched) keep the files small: 5 days of 24
interactions, one undated, keys missing from the first chunk's lines.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.datasets import golden, log_chunks, readers
from rag_eval_pipeline.datasets.errors import DatasetError
from rag_eval_pipeline.datasets.golden import DatasetLimits, load_dataset
from rag_eval_pipeline.datasets.lines import MAX_RECORD_BYTES_ENV
from rag_eval_pipeline.datasets.staged_logs import STAGED_MANIFEST, LogStage
from rag_eval_pipeline.storage.objects import storage_path
from rag_eval_pipeline_tests.trace_fixtures import DOC_TEXTS, synthetic_traces, write_otlp

pytestmark = [pytest.mark.unit]

FIRST = date(2026, 11, 16)
DAYS, PER_DAY, CHUNK = 5, 24, 25
FORMATS = ("jsonl", "csv", "tsv", "parquet")


@pytest.fixture(autouse=True)
def chunked_reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Small chunks; the logs files read by the chunked path, in order."""
    monkeypatch.setattr(log_chunks, "LOG_CHUNK_ROWS", CHUNK)
    monkeypatch.setattr(readers, "JSONL_BATCH_ROWS", 7)  # the whole-file path's own batches
    monkeypatch.setattr(readers, "DELIMITED_CHUNK_ROWS", 7)
    read: list[Path] = []

    def recorded(path: Path, *args: object) -> Iterator[pd.DataFrame]:
        read.append(path)
        return log_chunks.validated_log_chunks(path, *args)

    monkeypatch.setattr(golden, "validated_log_chunks", recorded)
    return read


def logs_records() -> list[dict]:
    """`DAYS` × `PER_DAY` interactions, shuffled, one undated; `answer` and `shown_doc_id`
    first appear after the first chunk."""
    rng = np.random.default_rng(11)
    count = DAYS * PER_DAY
    seconds = np.repeat(np.arange(DAYS), PER_DAY) * 86_400 + rng.integers(0, 86_400, count)
    records = []
    for i in rng.permutation(count):
        stamp = pd.Timestamp(FIRST, tz="UTC") + pd.Timedelta(seconds=int(seconds[i]))
        record = {
            "log_id": f"l{i:04d}",
            "question": f"Question {i}?",
            "retrieved_doc_ids": [f"d{i % 7}", f"d{(i + 1) % 7}"],
            "latency_ms": round(float(rng.uniform(50, 900)), 3),
            "timestamp": None if i == 3 else stamp.isoformat(),
        }
        if len(records) >= CHUNK + 3:
            record["answer"] = f"Answer {i}." if i % 4 else None
            record["shown_doc_id"] = f"d{i % 7}" if i % 3 else None
        records.append(record)
    return records


def write_logs(folder: Path, records: list[dict], fmt: str) -> Path:
    path = folder / f"logs.{fmt}"
    if fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in records))
        return path
    frame = pd.DataFrame.from_records(records)
    if fmt == "parquet":
        frame["timestamp"] = pd.to_datetime(frame["timestamp"], utc=True, format="ISO8601")
        frame.to_parquet(path, index=False)
        return path
    frame["retrieved_doc_ids"] = frame["retrieved_doc_ids"].map("|".join)
    frame.to_csv(path, sep="," if fmt == "csv" else "\t", index=False)
    return path


def write_version(folder: Path, records: list[dict], fmt: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "queries.jsonl").write_text('{"query_id": "q0", "question": "Question?"}\n')
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"doc_id": f"d{i}", "text": f"Text {i}."}) + "\n" for i in range(7))
    )
    (folder / "qrels.csv").write_text("query_id,doc_id,relevance\nq0,d0,1\n")
    write_logs(folder, records, fmt)
    return folder


def whole_file_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The logs read whole, then staged (the path every format took before)."""
    monkeypatch.setattr(golden, "_timestamped_logs", lambda folder, path: False)


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_chunked_path_stages_the_rows_of_the_whole_file_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunked_reads: list[Path], fmt: str
) -> None:
    folder = write_version(tmp_path / "v1", logs_records(), fmt)
    chunked = load_dataset(folder, stage=LogStage(storage_path(tmp_path / "chunked")))
    assert chunked_reads == [folder / f"logs.{fmt}"]
    with monkeypatch.context() as patched:
        whole_file_path(patched)
        whole = load_dataset(folder, stage=LogStage(storage_path(tmp_path / "whole")))
    assert chunked.staged_logs is not None and whole.staged_logs is not None
    assert chunked.staged_logs.days == whole.staged_logs.days
    assert chunked.staged_logs.days[-1] == "undated" and len(chunked.staged_logs.days) == 6
    assert chunked.statistics() == whole.statistics()
    pd.testing.assert_frame_equal(
        chunked.staged_logs.whole().to_pandas(), whole.staged_logs.whole().to_pandas()
    )
    for offset in range(-1, DAYS + 1):
        day = FIRST + timedelta(days=offset)
        got = chunked.stored_tables(day)["logs"].to_pandas()
        pd.testing.assert_frame_equal(got, whole.stored_tables(day)["logs"].to_pandas())


def test_every_format_stages_the_same_rows(tmp_path: Path) -> None:
    records = logs_records()
    staged = {}
    for fmt in FORMATS:
        folder = write_version(tmp_path / fmt / "v1", records, fmt)
        dataset = load_dataset(folder, stage=LogStage(storage_path(tmp_path / fmt / "stage")))
        assert dataset.staged_logs is not None
        staged[fmt] = dataset.staged_logs.whole().to_pandas()
    for fmt in FORMATS[1:]:
        pd.testing.assert_frame_equal(staged[fmt], staged["jsonl"], check_dtype=False)


def spoiled(folder: Path, fmt: str, lines: dict[int, bytes]) -> None:
    """Replace the given 1-based physical lines of the logs file."""
    path = folder / f"logs.{fmt}"
    content = path.read_bytes().split(b"\n")
    for number, raw in lines.items():
        content[number - 1] = raw
    path.write_bytes(b"\n".join(content))


def csv_line(fields: list[str], fmt: str) -> bytes:
    return ("," if fmt == "csv" else "\t").join(fields).encode()


NEGATIVE = {
    4: b'{"log_id": "l9990", "question": "Q?", "retrieved_doc_ids": ["d1"], '
    b'"latency_ms": -4, "timestamp": "2026-11-16T10:00:00Z"}'
}
BAD_FILES = {
    "a bad JSON line in a later chunk, after a bad value in the first": (
        "jsonl",
        {**NEGATIVE, 61: b'{"log_id": "l9991", "question": '},
    ),
    "a line that is not UTF-8, and a JSON array": (
        "jsonl",
        {70: b'{"log_id": "l9992", "question": "caf\xe9?"}', 90: b"[1, 2]"},
    ),
    "an over-long line": ("jsonl", {80: b'{"question": "' + b"x" * 700 + b'"}'}),
    "a CSV line that is not UTF-8": ("csv", {66: b"l9993,caf\xe9?,d1,5,2026-11-16T10:00:00Z"}),
    "too many fields, twice": (
        "csv",
        {40: b"l9994,Q?,d1,5,2026-11-16T10:00:00Z,,,x", 99: b"l9995,Q,d1,5,,,,x,y"},
    ),
    "a TSV record over the limit": ("tsv", {77: b"l9996\t" + b"y" * 700 + b"\td1\t5\t\t\t"}),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_a_bad_file_gets_the_whole_file_readers_problems_and_stages_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunked_reads: list[Path], case: str
) -> None:
    monkeypatch.setenv(MAX_RECORD_BYTES_ENV, "500")
    fmt, lines = BAD_FILES[case]
    folder = write_version(tmp_path / "v1", logs_records(), fmt)
    spoiled(folder, fmt, lines)
    stage_root = tmp_path / "stage"
    with pytest.raises(DatasetError) as chunked:
        load_dataset(folder, stage=LogStage(storage_path(stage_root)))
    assert chunked_reads == [folder / f"logs.{fmt}"]
    with pytest.raises(DatasetError) as whole:
        load_dataset(folder)
    got = [str(issue) for issue in chunked.value.issues]
    assert got == [str(issue) for issue in whole.value.issues]
    assert {issue.line for issue in chunked.value.issues} == set(lines) - set(NEGATIVE)
    assert all(issue.file == f"logs.{fmt}" and issue.row for issue in chunked.value.issues)
    assert not list(stage_root.glob(f"*/{STAGED_MANIFEST}"))
    assert not [p for p in stage_root.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_log_id_repeated_in_a_later_chunk_is_a_duplicate_key(
    tmp_path: Path, chunked_reads: list[Path], fmt: str
) -> None:
    records = logs_records()
    records[3 * CHUNK + 2]["log_id"] = records[1]["log_id"]
    folder = write_version(tmp_path / "v1", records, fmt)
    with pytest.raises(DatasetError) as chunked:
        load_dataset(folder, stage=LogStage(storage_path(tmp_path / "stage")))
    assert chunked_reads == [folder / f"logs.{fmt}"]
    with pytest.raises(DatasetError) as whole:
        load_dataset(folder)
    assert [str(i) for i in chunked.value.issues] == [str(i) for i in whole.value.issues]
    (issue,) = chunked.value.issues
    assert (issue.row, issue.column) == (3 * CHUNK + 3, "log_id")
    assert issue.message == f"duplicate key {records[1]['log_id']!r}"


@pytest.mark.parametrize("first", [0, 30])
def test_a_required_key_missing_from_whole_chunks_is_a_missing_value_per_row(
    tmp_path: Path, chunked_reads: list[Path], first: int
) -> None:
    """A JSON lines key the rows from `first` on lack for more than a chunk, present elsewhere
    in the file: a missing value in each of those rows, as the whole file says, not a missing
    column (what the chunk alone would say)."""
    records = logs_records()
    end = first + CHUNK + 5 if first == 0 else len(records)
    for record in records[first:end]:
        record.pop("question")
    folder = write_version(tmp_path / "v1", records, "jsonl")
    with pytest.raises(DatasetError) as chunked:
        load_dataset(folder, stage=LogStage(storage_path(tmp_path / "stage")))
    assert chunked_reads == [folder / "logs.jsonl"]
    with pytest.raises(DatasetError) as whole:
        load_dataset(folder)
    found, expected = chunked.value.issues, whole.value.issues
    assert [str(i) for i in found[:5]] == [str(i) for i in expected[:5]]  # a check shows 5 rows
    assert all((i.column, i.message[:13]) == ("question", "missing value") for i in found)
    rows = [i.row for i in found if i.row is not None]  # "(and N more)" is counted per chunk
    assert rows[0] == first + 1 and set(rows) <= set(range(first + 1, end + 1))


def test_a_tighter_id_or_record_limit_stages_the_logs_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The staged copy's key carries every limit validation applies: a stricter id length
    refuses the version again instead of reusing the copy accepted under the looser one."""
    records = logs_records()
    records[5]["log_id"] = "l" * 100
    folder = write_version(tmp_path / "v1", records, "jsonl")
    stage = LogStage(storage_path(tmp_path / "stage"))
    first = staged_folder(folder, stage)
    monkeypatch.setenv(MAX_RECORD_BYTES_ENV, "100000")
    assert staged_folder(folder, stage).parent != first.parent
    monkeypatch.setenv("RAG_EVAL_MAX_ID_CHARS", "50")
    with pytest.raises(DatasetError) as refused:
        load_dataset(folder, stage=stage)
    assert "id longer than 50 characters" in str(refused.value.issues[0])


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_the_chunks_of_a_reader_are_its_whole_file(tmp_path: Path, fmt: str) -> None:
    path = write_logs(tmp_path, logs_records(), fmt)
    chunks = list(readers.table_chunks(path, CHUNK))
    assert [len(c) for c in chunks] == [CHUNK] * 4 + [DAYS * PER_DAY - 4 * CHUNK]
    whole = readers.read_table(path)
    lines = np.concatenate([c.attrs.pop("lines") for c in chunks])
    first = 1 if fmt == "jsonl" else 2  # a CSV's header is line 1
    assert list(lines) == list(whole.attrs["lines"]) == list(range(first, first + 120))
    pd.testing.assert_frame_equal(pd.concat(chunks, ignore_index=True).infer_objects(), whole)
    if fmt == "jsonl":  # a key first seen in a later chunk
        assert "answer" in chunks[-1].columns and "answer" not in chunks[0].columns


def staged_folder(folder: Path, stage: LogStage) -> Path:
    staged = load_dataset(folder, stage=stage).staged_logs
    assert staged is not None
    return Path(staged.folder.path)


def test_the_staged_copy_follows_the_logs_and_the_corpus_only(tmp_path: Path) -> None:
    folder = write_version(tmp_path / "v1", logs_records(), "jsonl")
    stage = LogStage(storage_path(tmp_path / "stage"))
    first = staged_folder(folder, stage)
    with (folder / "qrels.csv").open("a") as qrels:
        qrels.write("q0,d1,0\n")
    (folder / "queries.jsonl").write_text('{"query_id": "q0", "question": "Another?"}\n')
    (folder / "judge_labels.jsonl").write_text(
        '{"question": "Q?", "context": "C.", "answer": "A.", "human_score": 1}\n'
    )
    assert staged_folder(folder, stage) == first  # reused: the logs were not read again
    with (folder / "corpus.jsonl").open("a") as corpus:
        corpus.write('{"doc_id": "d7", "text": "Text 7."}\n')
    second = staged_folder(folder, stage)
    assert second.parent != first.parent
    write_logs(folder, logs_records()[:-1], "jsonl")
    third = staged_folder(folder, stage)
    assert third.parent not in (first.parent, second.parent)
    assert len(list((tmp_path / "stage").glob(f"*/{STAGED_MANIFEST}"))) == 3


def test_staged_traces_follow_the_traces_and_the_corpus_only(tmp_path: Path) -> None:
    traces = synthetic_traces(12)
    folder = tmp_path / "v1"
    folder.mkdir()
    (folder / "queries.jsonl").write_text('{"query_id": "q1", "question": "Reset?"}\n')
    (folder / "qrels.csv").write_text("query_id,doc_id,relevance\nq1,d1,1\n")
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"doc_id": d, "text": t}) + "\n" for d, t in DOC_TEXTS.items())
    )
    write_otlp(folder / "traces", traces)
    stage = LogStage(storage_path(tmp_path / "stage"))
    first = staged_folder(folder, stage)
    (folder / "qrels.csv").write_text("query_id,doc_id,relevance\nq1,d2,1\n")
    assert staged_folder(folder, stage) == first
    write_otlp(folder / "traces", traces[:-1], seed=9)
    assert staged_folder(folder, stage).parent != first.parent


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_no_file_size_limit_applies_to_logs_read_in_chunks(tmp_path: Path, fmt: str) -> None:
    folder = write_version(tmp_path / "v1", logs_records(), fmt)
    small = DatasetLimits(max_file_bytes=2_000)  # the logs file holds about 15 kB
    dataset = load_dataset(folder, limits=small, stage=LogStage(storage_path(tmp_path / "stage")))
    assert dataset.staged_logs is not None
    assert dataset.staged_logs.num_rows == DAYS * PER_DAY
    with pytest.raises(DatasetError, match=f"logs.{fmt}: .* bytes, over the 2,000-byte limit"):
        load_dataset(folder, limits=small)  # without a stage, the file is read whole


def test_an_integer_id_beside_a_null_stays_an_integer_in_any_chunking(tmp_path: Path) -> None:
    path = tmp_path / "logs.jsonl"
    ids = [7, None, 8, 9, None]
    path.write_text(
        "".join(json.dumps({"shown_doc_id": i, "log_id": 10**17 + 1}) + "\n" for i in ids)
    )
    for rows in (1, 2, 5):
        chunks = list(readers.jsonl_chunks(path, rows))
        shown = [None if pd.isna(i) else i for c in chunks for i in c["shown_doc_id"]]
        assert shown == ["7", None, "8", "9", None]  # not "7.0"
        assert {i for c in chunks for i in c["log_id"]} == {"100000000000000001"}
