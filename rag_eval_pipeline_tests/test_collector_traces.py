"""Traces as the OpenTelemetry Collector's file exporter writes them: `format: proto`
(length-prefixed `ExportTraceServiceRequest`s, written here by `opentelemetry-proto`),
`compression: zstd` in both of the exporter's layouts (a zstd stream over the file, or one
zstd frame per record; written by `zstandard`), gzipped rotated backups, rotated names with
any extension. The same spans give the same interactions and the same traffic figures as
OTLP JSON lines."""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from datetime import date
from pathlib import Path

import pandas as pd
import pytest
import zstandard

from rag_eval_pipeline.datasets.errors import DatasetError
from rag_eval_pipeline.datasets.golden import load_dataset
from rag_eval_pipeline.datasets.traces import trace_interactions
from rag_eval_pipeline.evaluation.traffic import day_quality, traces_day_interactions
from rag_eval_pipeline_tests.test_traces import write_version
from rag_eval_pipeline_tests.trace_fixtures import (
    DAYS,
    TIMEZONE,
    RawSpan,
    json_lines_file,
    length_prefixed,
    proto_request,
    synthetic_traces,
    write_otlp,
)

pytestmark = [pytest.mark.unit]


@pytest.fixture(scope="module")
def traces() -> list:
    return synthetic_traces()


def proto_file(batches: list[list[RawSpan]]) -> bytes:
    """`format: proto`, no compression."""
    return length_prefixed([proto_request(b) for b in batches])


def zstd_stream_proto(batches: list[list[RawSpan]]) -> bytes:
    """`format: proto`, `compression: zstd` with the native-compression gate and rotation: one
    zstd frame per write (each a length-prefixed record), frames concatenated."""
    compressor = zstandard.ZstdCompressor()
    return b"".join(compressor.compress(length_prefixed([proto_request(b)])) for b in batches)


def zstd_records_proto(batches: list[list[RawSpan]]) -> bytes:
    """`format: proto`, `compression: zstd` without the gate: each record's bytes are a frame."""
    compressor = zstandard.ZstdCompressor()
    return length_prefixed([compressor.compress(proto_request(b)) for b in batches])


def zstd_records_json(batches: list[list[RawSpan]]) -> bytes:
    """`format: json`, `compression: zstd` without the gate: JSON records, length-prefixed."""
    compressor = zstandard.ZstdCompressor()
    lines = json_lines_file(batches).splitlines()
    return length_prefixed([compressor.compress(line) for line in lines])


def gzip_json(batches: list[list[RawSpan]]) -> bytes:
    """A rotated JSON backup gzipped by log rotation."""
    return gzip.compress(json_lines_file(batches))


LAYOUTS = {
    "proto": (proto_file, "traces-{day}T10-00-00.000-{part}.pb"),
    "zstd stream": (zstd_stream_proto, "export-{day}T10-00-00.000-{part}.proto.zst"),
    "zstd records": (zstd_records_proto, "otel/{day}/traces-{part}"),
    "zstd json records": (zstd_records_json, "traces-{day}-{part}.json"),
    "gzip json": (gzip_json, "traces-{day}T10-00-00.000-{part}.json.gz"),
}


@pytest.fixture(scope="module")
def json_version(traces: list, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_version(tmp_path_factory.mktemp("json") / "traces-v1", traces)


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_collector_layouts_give_the_json_interactions_and_traffic_figures(
    layout: str, traces: list, json_version: Path, tmp_path: Path
) -> None:
    encode, name = LAYOUTS[layout]
    folder = write_version(tmp_path / "traces-v1", [])
    write_otlp(folder / "traces", traces, encode=encode, name=name)
    expected = load_dataset(json_version).logs
    got = load_dataset(folder).logs
    assert len(got) == len(traces)
    pd.testing.assert_frame_equal(got, expected)
    for day in DAYS:
        when = date.fromisoformat(day)
        streamed = day_quality(traces_day_interactions(folder, when, TIMEZONE))
        reference = day_quality(traces_day_interactions(json_version, when, TIMEZONE))
        pd.testing.assert_frame_equal(streamed, reference)


def test_a_truncated_proto_record_names_the_file_and_the_record(
    traces: list, tmp_path: Path
) -> None:
    records = [proto_request(t.spans) for t in traces[:3]]
    data = length_prefixed(records)
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "spans.pb").write_bytes(data[:-5])
    with pytest.raises(DatasetError) as raised:
        trace_interactions(tmp_path)
    issue = raised.value.issues[0]
    assert issue.file == "traces/spans.pb"
    assert issue.row == 3
    assert f"{len(records[2]) - 5} of {len(records[2])} bytes" in issue.message
    assert "the file ends inside" in issue.message


def test_a_record_that_is_no_request_and_a_file_of_no_layout_are_refused(
    tmp_path: Path,
) -> None:
    (tmp_path / "traces").mkdir()
    bad = tmp_path / "traces" / "spans.bin"
    bad.write_bytes(length_prefixed([b"\x0a\xff\xff\xff"]))  # field 1, a length past the end
    with pytest.raises(DatasetError) as raised:
        trace_interactions(tmp_path)
    assert raised.value.issues[0].file == "traces/spans.bin"
    assert raised.value.issues[0].column == "ExportTraceServiceRequest"
    assert raised.value.issues[0].row == 1
    bad.unlink()
    (tmp_path / "traces" / "README.md").write_text("These are our traces.\n")
    with pytest.raises(DatasetError, match=r"README\.md: not a trace file"):
        trace_interactions(tmp_path)


def test_a_bad_json_value_inside_a_zstd_record_names_its_record(tmp_path: Path) -> None:
    request = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {"spans": [{"traceId": "ab", "spanId": "cd", "startTimeUnixNano": "x"}]}
                ]
            }
        ]
    }
    record = zstandard.ZstdCompressor().compress(json.dumps(request).encode())
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "t.json").write_bytes(length_prefixed([record]))
    with pytest.raises(DatasetError) as raised:
        trace_interactions(tmp_path)
    issue = raised.value.issues[0]
    assert (issue.file, issue.line) == ("traces/t.json", 1)
    assert "startTimeUnixNano" in issue.column and "'x'" in issue.message


@pytest.mark.parametrize("layout", ["proto", "json"])
@pytest.mark.parametrize("where", ["first frame", "later frame"])
def test_a_corrupt_zstd_stream_names_the_file(
    layout: str, where: str, traces: list, tmp_path: Path
) -> None:
    """Corrupt data where the layout is recognized, or in a later frame, read span by span."""
    encode = proto_file if layout == "proto" else json_lines_file
    compressor = zstandard.ZstdCompressor()
    good = compressor.compress(encode([t.spans for t in traces[:20]]))
    bad = bytearray(compressor.compress(encode([t.spans for t in traces[20:40]])))
    bad[len(bad) // 2 :] = bytes(len(bad) - len(bad) // 2)
    (tmp_path / "traces").mkdir()
    data = bytes(bad) + good if where == "first frame" else good + bytes(bad)
    (tmp_path / "traces" / "t.zst").write_bytes(data)
    with pytest.raises(DatasetError) as raised:
        trace_interactions(tmp_path)
    issue = raised.value.issues[0]
    assert issue.file == "traces/t.zst"
    assert "corrupt compressed data" in issue.message
    if where == "later frame":  # found while reading records, after the first 20 traces
        assert (issue.row or issue.line or 0) > 1


def test_a_proto_span_time_outside_2000_2099_names_the_trace_and_the_span(
    traces: list, tmp_path: Path
) -> None:
    spans = traces[0].spans
    root = next(s for s in spans if s.parent_id is None)
    bad = [replace(s, start_ns=2026) if s is root else s for s in spans]
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "spans.pb").write_bytes(length_prefixed([proto_request(bad)]))
    with pytest.raises(DatasetError) as raised:
        trace_interactions(tmp_path)
    issue = raised.value.issues[0]
    assert (issue.file, issue.row, issue.column) == ("traces/spans.pb", 1, "start_time_unix_nano")
    assert "2000-2099" in issue.message
    assert root.trace_id in issue.message and root.span_id in issue.message


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"start_ns": 2026}, "not a UnixNano time in 2000-2099 (trace "),  # 2026: 1970
        ({"trace_id": "ab" * 40}, "longer than 64 hex characters: 'abab"),
        ({"end_ns": 1_794_000_000_000_000_000 - 1}, "before start: '1793999999999999999'"),
    ],
    ids=["time out of range", "id too long", "end before start"],
)
def test_json_and_protobuf_word_a_bad_span_alike(
    traces: list,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    change: dict,
    problem: str,
) -> None:
    monkeypatch.setenv("RAG_EVAL_MAX_ID_CHARS", "64")
    spans = traces[0].spans
    root = next(s for s in spans if s.parent_id is None)
    moved = {"start_ns": 1_794_000_000_000_000_000, "end_ns": 1_794_000_000_500_000_000}
    bad = [replace(s, **{**moved, **change}) if s is root else s for s in spans]
    messages = []
    for name, data in (
        ("spans.pb", length_prefixed([proto_request(bad)])),
        ("spans.json", json_lines_file([bad])),
    ):
        folder = tmp_path / name
        (folder / "traces").mkdir(parents=True)
        (folder / "traces" / name).write_bytes(data)
        with pytest.raises(DatasetError) as raised:
            trace_interactions(folder)
        messages.append(raised.value.issues[0].message)
    assert messages[0] == messages[1] and messages[0].startswith(problem)
