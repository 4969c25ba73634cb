"""Hostile files, round two: YAML bombs, invisible characters, timestamps, readers, limits.

Each test writes what an attacker with write access to a dataset or config folder (or a careless
exporter) would, and runs it through the real code path: `rag-eval validate`, the readers, the
loaders of `config/*.yaml`.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import sqlite3
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.datasets import readers
from rag_eval_pipeline.datasets.errors import DatasetError
from rag_eval_pipeline.datasets.golden import load_dataset
from rag_eval_pipeline.datasets.traces import trace_interactions
from rag_eval_pipeline.defs.shared.metadata import markdown_table
from rag_eval_pipeline.defs.shared.resources import AlertsResource, LLMResource
from rag_eval_pipeline.evaluation.composite import load_weights
from rag_eval_pipeline.llm.client import LLMClient, LLMConfig
from rag_eval_pipeline.llm.secrets import redact
from rag_eval_pipeline.storage.parquet import write_parquet_atomically
from rag_eval_pipeline.storage.warehouse import WarehouseStore
from rag_eval_pipeline.storage.yaml_files import YamlFileError, load_yaml_file
from rag_eval_pipeline.text.shown import shown_value
from rag_eval_pipeline_tests.conftest import DATASETS_DIR
from rag_eval_pipeline_tests.openai_server import run_openai_server
from rag_eval_pipeline_tests.test_regression import Receiver
from rag_eval_pipeline_tests.test_report import D1, D2, D3, EVIL, regressions_of, scorecard
from rag_eval_pipeline_tests.test_report import report as report_of
from rag_eval_pipeline_tests.trace_fixtures import length_prefixed

pytestmark = [pytest.mark.integration]


def alias_bomb(levels: int = 8) -> str:
    """The billion-laughs document: `levels` levels of nine aliases each, used as a value."""
    lines = ['a0: &a0 "laugh"']
    for level in range(1, levels + 1):
        aliases = ", ".join([f"*a{level - 1}"] * 9)
        lines.append(f"a{level}: &a{level} [{aliases}]")
    return "\n".join([*lines, f"language: *a{levels}"]) + "\n"


def demo_copy(tmp_path: Path) -> Path:
    version = tmp_path / "demo-v1"
    shutil.copytree(DATASETS_DIR / "demo-v1", version)
    return version


def test_alias_bomb_in_dataset_yaml_is_refused_at_once_in_one_short_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    version = demo_copy(tmp_path)
    (version / "dataset.yaml").write_text(alias_bomb(), encoding="utf-8")
    assert len(alias_bomb().splitlines()) == 10  # 9**8 = 43M strings expanded
    started = time.perf_counter()
    assert main(["validate", str(version)]) == 1
    elapsed = time.perf_counter() - started
    err = capsys.readouterr().err
    assert elapsed < 5, elapsed
    assert len(err) < 400, err
    assert "dataset.yaml, line 1: invalid YAML" in err
    assert "anchors and aliases" in err


@pytest.mark.parametrize(
    ("text", "problem", "line"),
    [
        ("weights:\n  mrr: &w 1.0\n  ndcg: *w\n", "anchors and aliases", 2),
        ("base: &b {mrr: 1}\nweights:\n  <<: *b\n", "anchors and aliases", 1),
        ("weights: " + "[" * 100 + "]" * 100 + "\n", "nested deeper than 64 levels", 1),
    ],
)
def test_config_yaml_refuses_aliases_merge_keys_and_deep_nesting(
    tmp_path: Path, text: str, problem: str, line: int
) -> None:
    path = tmp_path / "composite.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(YamlFileError) as raised:
        load_yaml_file(path)
    message = str(raised.value)
    assert problem in message and f'"{path}", line {line}' in message
    with pytest.raises(ValueError, match=problem):
        load_weights(path)


def test_every_anchor_and_alias_line_is_listed_at_once_and_bounded(tmp_path: Path) -> None:
    path = tmp_path / "composite.yaml"
    path.write_text("weights:\n  mrr: &w 1.0\n  ndcg: 2\n  map: *w\n  bad: [\n", encoding="utf-8")
    with pytest.raises(YamlFileError) as raised:
        load_yaml_file(path)
    assert "2 on line(s) 2, 4; invalid YAML at line 6" in str(raised.value)
    path.write_text("".join(f"k{i}: &a{i} {i}\n" for i in range(30)), encoding="utf-8")
    with pytest.raises(YamlFileError) as raised:
        load_yaml_file(path)
    listed = ", ".join(map(str, range(1, 21)))
    assert f"30 on line(s) {listed} and 10 more\n" in str(raised.value)
    assert len(str(raised.value)) < 300


def test_config_yaml_over_the_size_cap_is_refused_before_parsing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "composite.yaml"
    path.write_text("weights: {mrr: 1.0}\n# " + "x" * 2000 + "\n", encoding="utf-8")
    assert load_yaml_file(path) == {"weights": {"mrr": 1.0}}
    monkeypatch.setenv("RAG_EVAL_MAX_YAML_BYTES", "1000")
    with pytest.raises(yaml.YAMLError, match="larger than 1,000 bytes"):
        load_yaml_file(path)
    path.write_bytes(b"weights:\n  mrr: 1.0\n  \xff: 2\n")
    monkeypatch.delenv("RAG_EVAL_MAX_YAML_BYTES")
    with pytest.raises(YamlFileError, match="line 3: not valid UTF-8"):
        load_yaml_file(path)


def test_an_echoed_value_is_capped_then_its_length() -> None:
    assert shown_value("ab") == "'ab'"
    shown = shown_value("y" * 1_000_000)
    assert shown == repr("y" * 120) + "… (1,000,000 characters)"
    assert shown_value("a\u202eb\u200bc") == "'a\\u202eb\\u200bc'"


TROJAN = "prod\u202egnp.exe"  # displayed as "prodexe.png"
INVISIBLE = re.compile("[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")


def test_validate_shows_a_bidi_run_file_name_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    version = demo_copy(tmp_path)
    (version / "runs" / f"{TROJAN}.trec").write_text("not a run line\n", encoding="utf-8")
    (version / "runs" / "zero\u200bwidth.trec").write_text("not a run\n", encoding="utf-8")
    assert main(["validate", str(version)]) == 1
    printed = "".join(capsys.readouterr())
    assert not INVISIBLE.search(printed)
    assert "prod\\u202egnp.exe.trec" in printed and "zero\\u200bwidth.trec" in printed


def test_report_metadata_and_alerts_show_invisible_characters_escaped(
    tmp_path: Path, receiver: Receiver
) -> None:
    store = WarehouseStore(str(tmp_path / "warehouse"))
    for index, date in enumerate((D1, D2, D3)):
        card = scorecard("v1", index, date)
        card["system"] = card["system"].replace({EVIL: TROJAN, "dense": "den\u200bse\u2066"})
        write_parquet_atomically(card, store.scorecard_path("v1", date))
    regressions = regressions_of(store, D3)
    assert regressions["alert"].any()
    page = report_of(store)
    assert TROJAN not in page and not INVISIBLE.search(page)
    assert page.count("prod\\u202egnp.exe") > 5 and "den\\u200bse\\u2066" in page

    table = markdown_table(regressions[["system", "metric", "verdict"]])
    assert not INVISIBLE.search(table)
    assert "prod\\\\u202egnp.exe" in table  # markdown shows the backslash: `\\`

    alerted = regressions[regressions["alert"]]
    for style in ("slack", "json"):
        delivery = AlertsResource(webhook_url=receiver.url, style=style, backoff_s=0.01).deliver(
            alerted
        )
        assert delivery is not None and delivery.ok
    slack, generic = receiver.bodies
    assert not INVISIBLE.search(json.dumps(slack, ensure_ascii=False))
    assert not INVISIBLE.search(json.dumps(generic, ensure_ascii=False))
    assert "den\\u200bse\\u2066" in slack["text"]
    assert {r["system"] for r in generic["regressions"]} == {"den\\u200bse\\u2066"}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver([])
    yield server
    server.server.shutdown()


def test_one_redaction_rule_for_urls_credentials_and_http_variables(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAG_EVAL_HTTP_AUTH", "tenant-7f3a9c")
    monkeypatch.setenv("RAG_EVAL_JUDGE_API_BASE", "https://judge:p%40ss-word-42@proxy.example/v1")
    text = (
        "proxy https://judge:p%40ss-word-42@proxy.example/v1 said p@ss-word-42 and "
        "tenant-7f3a9c; https://u:x@other.example/ Authorization: Bearer eyJhbGciOi.J9 "
        "Basic dXNlcjpwYXNzd29yZA== sk-abcdefghijk; Basic principles, token limits."
    )
    assert redact(text) == (
        "proxy https://***@proxy.example/v1 said *** and ***; https://***@other.example/ "
        "Authorization: Bearer *** Basic *** ***; Basic principles, token limits."
    )
    assert redact("http://proxy.example/v1", urls=["http://a:longpassword@proxy.example/v1"]) == (
        "http://proxy.example/v1"
    )


def rewrite_jsonl(path: Path, changes: dict[int, dict[str, object]]) -> None:
    """`path` with the fields of record i (0-based) replaced by `changes[i]`, written with
    `json.dumps` (NaN written as the JSON token `NaN`, as Python and pandas write it)."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for index, fields in changes.items():
        records[index].update(fields)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def problems_of(folder: Path) -> list[str]:
    with pytest.raises(DatasetError) as raised:
        load_dataset(folder)
    return [str(issue) for issue in raised.value.issues]


def test_a_bare_year_or_a_date_alone_is_no_timestamp_and_epochs_must_be_plausible(
    tmp_path: Path,
) -> None:
    version = demo_copy(tmp_path)
    changes = {
        1: {"timestamp": "2026"},
        2: {"timestamp": "2026-11-02"},
        3: {"timestamp": 2026},
        4: {"timestamp": "1969-12-31T23:59:59Z"},
        5: {"timestamp": 1793952000},  # epoch seconds: 2026-11-06T08:00:00Z
        6: {"timestamp": "1793952000123"},  # epoch milliseconds, as CSV text
    }
    rewrite_jsonl(version / "logs.jsonl", changes)
    problems = problems_of(version)
    assert [p.split(":")[0] for p in problems] == [
        f"logs.jsonl, row {row} (line {row}), column 'timestamp'" for row in (2, 3, 4, 5)
    ]
    assert problems[0].endswith(
        "not a date and time in 2000-2099 (ISO 8601 with a date and a "
        "time, or epoch seconds/milliseconds/microseconds/nanoseconds): '2026'"
    )
    del changes[5], changes[6]
    rewrite_jsonl(version / "logs.jsonl", {row: {"timestamp": None} for row in changes})
    logs = load_dataset(version).logs.set_index("log_id")["timestamp"]
    assert logs["log-0006"] == pd.Timestamp("2026-11-06T08:00:00Z")
    assert logs["log-0007"] == pd.Timestamp("2026-11-06T08:00:00.123Z")


def test_nan_and_infinite_numbers_are_refused_naming_file_row_column_and_value(
    tmp_path: Path,
) -> None:
    version = demo_copy(tmp_path)
    rewrite_jsonl(version / "logs.jsonl", {0: {"latency_ms": math.nan}, 2: {"cost_usd": math.inf}})
    rewrite_jsonl(version / "judge_labels.jsonl", {1: {"human_score_1": math.nan}})
    labels = (version / "judge_labels.jsonl").read_text(encoding="utf-8")
    assert "NaN" in labels and "Infinity" in (version / "logs.jsonl").read_text(encoding="utf-8")
    problems = problems_of(version)
    assert "logs.jsonl, row 1 (line 1), column 'latency_ms': not a valid float value: 'NaN'" in (
        problems
    )
    assert "logs.jsonl, row 3 (line 3), column 'cost_usd': not a valid float value: 'Infinity'" in (
        problems
    )
    assert (
        "judge_labels.jsonl, row 2 (line 2), column 'human_score_1': not a valid float value: 'NaN'"
        in problems
    )


def otlp_root(trace_id: str, span_id: str, start: str) -> str:
    """One OTLP ExportTraceServiceRequest line holding one root span asking a question."""
    span = {
        "traceId": trace_id,
        "spanId": span_id,
        "startTimeUnixNano": start,
        "endTimeUnixNano": "1794000000500000000",
        "attributes": [{"key": "input.value", "value": {"stringValue": "Why?"}}],
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]})


def test_otlp_times_outside_2000_2099_are_refused_and_every_problem_is_listed(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    lines = [
        otlp_root("a" * 32, "1" * 16, "1794000000000000000"),
        otlp_root("b" * 32, "2" * 16, "2026"),
        "not json",
        otlp_root("c" * 32, "3" * 16, "1794000000000000000"),
        otlp_root("d" * 32, "4" * 16, "1794000000000000000x"),
    ]
    (folder / "export.json").write_text("\ufeff" + "\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DatasetError) as raised:
        trace_interactions(tmp_path)
    problems = [str(issue) for issue in raised.value.issues]
    assert len(problems) == 3, problems
    assert problems[0] == (
        "traces/export.json, line 2, column 'resourceSpans[0].scopeSpans[0].spans[0]."
        f"startTimeUnixNano': not a UnixNano time in 2000-2099 (trace {'b' * 32}, span "
        f"{'2' * 16}): '2026'"
    )
    assert problems[1].startswith("traces/export.json, line 3, column 'ExportTraceServiceRequest'")
    assert "line 5" in problems[2] and "not an int64: '1794000000000000000x'" in problems[2]


def proto_record(trace_id: bytes, span_id: bytes, start_ns: int) -> bytes:
    """One `ExportTraceServiceRequest` of one root span, serialized."""
    span = ProtoSpan(
        trace_id=trace_id,
        span_id=span_id,
        name="rag.query",
        start_time_unix_nano=start_ns,
        end_time_unix_nano=start_ns + 1_000_000,
    )
    request = ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=[span])])]
    )
    return request.SerializeToString()


def test_otlp_protobuf_problems_are_all_listed_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_EVAL_MAX_ID_CHARS", "64")
    folder = tmp_path / "traces"
    folder.mkdir()
    day = 1_794_000_000_000_000_000
    records = [
        proto_record(b"\xaa" * 16, b"\x01" * 8, day),
        proto_record(b"\xbb" * 16, b"\x02" * 8, 2026),  # "2026" would be 1970
        b"\xff\xff\xff not a request",
        proto_record(b"\xcc" * 40, b"\x03" * 8, day),  # 80 hex characters
        proto_record(b"\xdd" * 16, b"", day),
        proto_record(b"\xee" * 16, b"\x05" * 8, day),
    ]
    (folder / "export.binpb").write_bytes(length_prefixed(records))
    with pytest.raises(DatasetError) as raised:
        trace_interactions(tmp_path)
    problems = [str(issue) for issue in raised.value.issues]
    assert len(problems) == 4, problems
    assert problems[0] == (
        "traces/export.binpb, row 2, column 'start_time_unix_nano': not a UnixNano time in "
        f"2000-2099 (trace {'bb' * 16}, span {'02' * 8}): '2026'"
    )
    assert problems[1].startswith("traces/export.binpb, row 3, column 'ExportTraceServiceRequest'")
    assert problems[2] == (
        "traces/export.binpb, row 4, column 'trace_id': longer than 64 hex characters: "
        f"'{'cc' * 40}'"
    )
    assert problems[3].startswith("traces/export.binpb, row 5, column 'trace_id/span_id'")


def test_jsonl_with_a_byte_order_mark_is_read_like_csv_with_one(tmp_path: Path) -> None:
    version = demo_copy(tmp_path)
    for name in ("queries.jsonl", "qrels.csv", "corpus.jsonl"):
        path = version / name
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    dataset = load_dataset(version)
    reference = load_dataset(demo_copy(tmp_path / "plain"))
    pd.testing.assert_frame_equal(dataset.queries, reference.queries)
    pd.testing.assert_frame_equal(dataset.qrels, reference.qrels)


def test_csv_problems_are_named_by_row_and_physical_line_all_at_once(tmp_path: Path) -> None:
    version = demo_copy(tmp_path)
    lines = (version / "qrels.csv").read_bytes().splitlines(keepends=True)
    multi_line = b'q001,"bill-\n0\n0\n2",1\n'  # one record on physical lines 4-7
    rows = [*lines[:3], multi_line, *lines[3:10], b"q002,acct-011,oops\n", *lines[10:]]
    rows[1] = rows[1].replace(b"bill-001", b"bill-\xff01")
    rows[5] = rows[5].rstrip(b"\n") + b",extra\n"
    (version / "qrels.csv").write_bytes(b"".join(rows))
    problems = problems_of(version)
    assert problems == [
        "qrels.csv, row 1 (line 2): not valid UTF-8 text (save the file as UTF-8)",
        "qrels.csv, row 5 (line 9): 4 fields where the header has 3",
    ], problems
    rows[1], rows[5] = lines[1], lines[4]
    (version / "qrels.csv").write_bytes(b"".join(rows))
    problems = problems_of(version)
    assert problems == [
        "qrels.csv, row 11 (line 15), column 'relevance': not a valid int value: 'oops'"
    ]
    (version / "qrels.csv").write_bytes(b"".join(rows[:11] + rows[12:]))
    assert problems_of(version) == [
        "qrels.csv, row 3 (line 4), column 'doc_id': unknown id 'bill-\\n0\\n0\\n2': not in corpus"
    ]


def test_beir_qrels_errors_use_the_files_column_names(tmp_path: Path) -> None:
    version = tmp_path / "beir-v1"
    (version / "qrels").mkdir(parents=True)
    (version / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n', encoding="utf-8")
    (version / "queries.jsonl").write_text('{"_id": "q1", "text": "why?"}\n', encoding="utf-8")
    (version / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\nq1\td1\thigh\n", encoding="utf-8"
    )
    problems = problems_of(version)
    assert problems == [
        "qrels/test.tsv, row 1 (line 2), column 'score': not a valid int value: 'high'"
    ], problems


def test_ids_and_records_over_their_limits_are_refused_in_bounded_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    version = demo_copy(tmp_path)
    long_id = "q" * 513
    rewrite_jsonl(version / "queries.jsonl", {0: {"session_id": long_id}})
    problems = problems_of(version)
    assert problems == [
        "queries.jsonl, row 1 (line 1), column 'session_id': id longer than 512 characters "
        f"(RAG_EVAL_MAX_ID_CHARS): {shown_value(long_id)}"
    ]
    monkeypatch.setenv("RAG_EVAL_MAX_ID_CHARS", "600")
    assert load_dataset(version).queries.loc[0, "session_id"] == long_id

    monkeypatch.setenv("RAG_EVAL_MAX_RECORD_BYTES", str(1 << 20))
    run = version / "runs" / "huge.trec"
    with open(run, "wb") as handle:
        handle.write(b"q001 Q0 " + b"d" * (40 << 20) + b" 1 0.5 huge\nq001 Q0 bill-001 2 0.4 x\n")
    tracemalloc.start()
    problems = problems_of(version)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert problems == [
        "runs/huge.trec, row 1 (line 1): line longer than 1,048,576 bytes (the limit, "
        "RAG_EVAL_MAX_RECORD_BYTES)"
    ]
    assert peak < 20 << 20, peak  # the line is 40 MiB


def test_problems_of_every_trace_file_and_every_trace_are_listed(tmp_path: Path) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    (folder / "a.json").write_text(otlp_root("a" * 32, "1" * 16, "99") + "\n", encoding="utf-8")
    silent = json.loads(otlp_root("b" * 32, "2" * 16, "1794000000000000000"))
    silent["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = []
    tokens = json.loads(otlp_root("c" * 32, "3" * 16, "1794000000000000000"))
    tokens["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"].append(
        {"key": "llm.token_count.prompt", "value": {"stringValue": "-" + "9" * 300}}
    )
    tokens["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"].append(
        {"key": "openinference.span.kind", "value": {"stringValue": "LLM"}}
    )
    (folder / "b.json").write_text(f"{json.dumps(silent)}\n{json.dumps(tokens)}\n")
    with pytest.raises(DatasetError) as raised:
        trace_interactions(tmp_path)
    problems = [str(issue) for issue in raised.value.issues]
    assert problems[0].startswith("traces/a.json, line 1, column") and "'99'" in problems[0]
    (folder / "a.json").unlink()
    with pytest.raises(DatasetError) as raised:
        trace_interactions(tmp_path)
    problems = sorted(str(issue) for issue in raised.value.issues)
    assert problems == [
        f"traces/b.json line 1, column 'input.value': no span of trace '{'b' * 32}' has a question",
        "traces/b.json line 2, column 'llm.token_count.prompt': not a token count: "
        f"{shown_value('-' + '9' * 300)}",
    ]
    assert len(problems[1]) < 300


def test_a_nan_stored_in_parquet_is_refused_and_a_null_is_missing(tmp_path: Path) -> None:
    version = demo_copy(tmp_path)
    labels = pd.read_json(version / "judge_labels.jsonl", lines=True)
    (version / "judge_labels.jsonl").unlink()
    table = pa.Table.from_pandas(labels, preserve_index=False)
    column = pa.array([math.nan, None, *[3.0] * (len(labels) - 2)], type=pa.float64())
    table = table.append_column("human_score_1", column)
    pq.write_table(table, version / "judge_labels.parquet")
    assert problems_of(version) == [
        "judge_labels.parquet, row 1, column 'human_score_1': not a valid float value: 'NaN'"
    ]


def test_jsonl_read_batch_by_batch_equals_one_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    """Batches of 7 records (missing keys, lists, nulls across batch ends) give the frame one
    batch gives, lines included."""
    path = DATASETS_DIR / "demo-v1" / "logs.jsonl"
    whole = readers.read_jsonl(path)
    monkeypatch.setattr(readers, "JSONL_BATCH_ROWS", 7)
    batched = readers.read_jsonl(path)
    assert len(whole) > 7 * 3
    pd.testing.assert_frame_equal(batched, whole)
    assert (
        list(batched.attrs["lines"]) == list(whole.attrs["lines"]) == list(range(1, len(whole) + 1))
    )


def test_a_key_echoed_in_a_reply_is_redacted_before_the_reply_cache(tmp_path: Path) -> None:
    key = "gsk_" + "7" * 40
    judge = LLMResource(
        model="openai/test-judge", api_base="http://judge:s3cret-pass@proxy.example/v1"
    )
    assert "s3cret-pass" not in judge.identity
    assert judge.identity.startswith("openai/test-judge|http://***@proxy.example/v1#")
    with run_openai_server(lambda body: f"score 4; key {key}, Bearer {key}") as server:
        config = LLMConfig(
            model="openai/test-judge",
            api_base=server.base_url,
            api_key=key,
            max_retries=0,
            cache_dir=tmp_path / "cache",
        )
        reply = LLMClient(config).complete([{"role": "user", "content": "hi"}])
        assert server.requests[0].headers["authorization"] == f"Bearer {key}"
    assert reply.text == "score 4; key ***, Bearer ***"
    stored = sqlite3.connect(tmp_path / "cache" / "llm_cache.sqlite3").execute(
        "SELECT text FROM replies"
    )
    assert [row[0] for row in stored] == ["score 4; key ***, Bearer ***"]


def test_an_http_config_problem_never_echoes_a_url_password_or_a_whole_value() -> None:
    from rag_eval_pipeline.datasets.http_config import http_config_problems

    [(key, problem)] = http_config_problems({"url": "ftp://bob:hunter2-secret@rag.example/ask"})
    assert key == "http.url" and "hunter2-secret" not in problem
    assert problem.endswith("got 'ftp://***@rag.example/ask'")
    [(key, problem)] = http_config_problems({"url": "http://rag.example/", "method": "P" * 5000})
    assert key == "http.method" and problem.endswith("… (5,000 characters)")
    assert len(problem) < 250
