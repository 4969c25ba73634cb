"""Traces as traffic: OTLP JSON (the Collector's file exporter) and Phoenix span exports read as
the interactions `logs.*` gives. Over three days, each day's figures equal numpy on that day's
spans; the traffic assets materialize from a `traces/` folder through Dagster; bad input names
file, line, field and value; `traces/` wins over `logs.*`."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from dagster import DagsterInstance, materialize

from rag_eval_pipeline.datasets.errors import DatasetError
from rag_eval_pipeline.datasets.golden import load_dataset
from rag_eval_pipeline.datasets.traces import trace_interactions
from rag_eval_pipeline.defs.dataset.assets import golden_dataset
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.defs.shared.resources import DatasetsResource
from rag_eval_pipeline.defs.traffic.assets import (
    traffic_judgments,
    traffic_metrics,
    traffic_quality,
)
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.traffic import (
    day_quality,
    frame_day_interactions,
    traces_day_interactions,
)
from rag_eval_pipeline.metrics.traffic import satisfaction_scores
from rag_eval_pipeline_tests.conftest import evaluation_resources
from rag_eval_pipeline_tests.trace_fixtures import (
    DAYS,
    DOC_TEXTS,
    TIMEZONE,
    RawSpan,
    day_of,
    expected_day,
    export_request,
    synthetic_traces,
    write_otlp,
    write_phoenix_jsonl,
    write_phoenix_parquet,
)

pytestmark = [pytest.mark.integration]

VERSION = "traces-v1"


@pytest.fixture(scope="module")
def traces() -> list:
    return synthetic_traces()


def write_version(folder: Path, traces: list) -> Path:
    """A version folder: one question, its judgment, the corpus, and the traces."""
    folder.mkdir(parents=True)
    (folder / "queries.jsonl").write_text(
        json.dumps({"query_id": "q1", "question": "How do I reset my password?"}) + "\n"
    )
    (folder / "qrels.csv").write_text("query_id,doc_id,relevance\nq1,d1,1\n")
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"doc_id": d, "text": t}) + "\n" for d, t in DOC_TEXTS.items())
    )
    write_otlp(folder / "traces", traces)
    return folder


def figures(quality: pd.DataFrame, names: list[str]) -> dict[str, float]:
    means = quality.set_index("metric")["mean"].to_dict()
    return {name: means[name] for name in names}


def test_three_days_of_otlp_traces_equal_numpy_on_each_days_spans(
    traces: list, tmp_path: Path
) -> None:
    folder = write_version(tmp_path / VERSION, traces)
    assert len(list((folder / "traces").iterdir())) >= 6  # each day's spans over files
    logs = load_dataset(folder).logs
    assert len(logs) == len(traces)
    for day in DAYS:
        expected = expected_day(traces, day)
        streamed = day_quality(traces_day_interactions(folder, date.fromisoformat(day), TIMEZONE))
        held = day_quality(frame_day_interactions(logs, date.fromisoformat(day), TIMEZONE))
        for quality in (streamed, held):
            got = figures(quality, list(expected))
            assert got == pytest.approx(expected, rel=1e-12, abs=1e-15), day
    assert sum(expected_day(traces, d)["volume"] for d in DAYS) < len(traces)  # others: no day


def test_a_trace_from_the_day_before_with_spans_after_midnight_is_not_on_the_day(
    tmp_path: Path,
) -> None:
    """Its root (before the window read for the day) is not kept, its late child is: the
    child is no interaction of the day, and no error for the question it lacks."""
    midnight = pd.Timestamp(DAYS[1], tz=TIMEZONE).value
    late = [
        otlp_span_line(trace_id, span_id, parent, start, start + 10**9)
        for trace_id, span_id, parent, start in [
            ("1" * 32, "a" * 16, None, midnight - 180 * 10**9),
            ("1" * 32, "b" * 16, "a" * 16, midnight + 30 * 10**9),
            ("2" * 32, "c" * 16, None, midnight + 60 * 10**9),
        ]
    ]
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "x.json").write_text("\n".join(late) + "\n")
    day = pd.concat(traces_day_interactions(tmp_path, date.fromisoformat(DAYS[1]), TIMEZONE))
    assert day["log_id"].tolist() == ["2" * 32]
    before = pd.concat(traces_day_interactions(tmp_path, date.fromisoformat(DAYS[0]), TIMEZONE))
    assert before["log_id"].tolist() == ["1" * 32]
    assert before["latency_ms"].tolist() == [1000.0]


def otlp_span_line(trace_id: str, span_id: str, parent: str | None, start: int, end: int) -> str:
    """One OTLP line of one span; a root asks a question."""
    question = [] if parent else [{"key": "input.value", "value": {"stringValue": "Why?"}}]
    return one_span_line(
        traceId=trace_id,
        spanId=span_id,
        parentSpanId=parent or "",
        startTimeUnixNano=str(start),
        endTimeUnixNano=str(end),
        attributes=question,
    )


def test_an_interaction_is_its_traces_root_retrievers_and_llm_calls(
    traces: list, tmp_path: Path
) -> None:
    write_otlp(tmp_path / "traces", traces)
    rows = trace_interactions(tmp_path).set_index("log_id")
    by_id = {t.spans[0].trace_id: t for t in traces}
    for trace_id, row in rows.iterrows():
        trace = by_id[trace_id]
        number = int(trace_id, 16) - 1
        assert row["question"] == f"question {number}"  # JSON input.value: its question
        assert row["session_id"] == f"s{number % 5}" and row["user_id"] == f"u{number % 3}"
        assert row["timestamp"] == pd.Timestamp(trace.start_ns, tz="UTC")
        extra = ["d1"] if number % 5 == 1 and "d1" not in trace.extra["docs"] else []
        assert list(row["retrieved_doc_ids"]) == trace.extra["docs"] + extra
        assert row["contexts"][: len(trace.extra["docs"])] == [
            DOC_TEXTS[d] for d in trace.extra["docs"]
        ]
        assert row["retrieval_latency_ms"] == pytest.approx(trace.retrieval_ms, rel=1e-12)
        assert (row["error"] is not None and row["error"] == row["error"]) == trace.error
        assert np.isnan(row["cost_usd"]) == np.isnan(trace.cost)
        if not trace.error:
            assert row["answer"].startswith(f"answer {number}:")
    failed = rows["error"].dropna()
    assert set(failed) == {"upstream timeout", "KeyError: 'choices'"}


def test_an_http_server_root_span_wraps_the_instrumented_chain(tmp_path: Path) -> None:
    """OTel's HTTP server span is the root (the user's latency); the OpenInference CHAIN
    under it, the closest span with an `input.value`, holds the question and the answer."""
    t0, ms = 1_794_000_000_000_000_000, 10**6
    trace = "a" * 32
    spans = [
        RawSpan(
            trace,
            "1" * 16,
            None,
            "POST /ask",
            "",
            t0,
            t0 + 900 * ms,
            {"http.route": "/ask", "http.response.status_code": 200},
        ),
        RawSpan(
            trace,
            "2" * 16,
            "1" * 16,
            "rag",
            "CHAIN",
            t0 + 5 * ms,
            t0 + 880 * ms,
            {
                "input.value": "How do I reset it?",
                "output.value": "Open Security.",
                "session.id": "s9",
            },
        ),
        RawSpan(
            trace,
            "3" * 16,
            "2" * 16,
            "retrieve",
            "RETRIEVER",
            t0 + 10 * ms,
            t0 + 60 * ms,
            {"input.value": "reset password", "retrieval.documents.0.document.id": "d1"},
        ),
    ]
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "t.json").write_text(json.dumps(export_request(spans)) + "\n")
    row = trace_interactions(tmp_path).iloc[0]
    assert (row["question"], row["answer"], row["session_id"]) == (
        "How do I reset it?",
        "Open Security.",
        "s9",
    )
    assert (row["latency_ms"], row["retrieval_latency_ms"]) == (900.0, 50.0)
    assert list(row["retrieved_doc_ids"]) == ["d1"] and row["error"] is None


def test_phoenix_parquet_and_jsonl_exports_read_as_the_otlp_traces(
    traces: list, tmp_path: Path
) -> None:
    write_otlp(tmp_path / "otlp" / "traces", traces)
    write_phoenix_parquet(tmp_path / "parquet" / "traces" / "spans.parquet", traces)
    write_phoenix_jsonl(tmp_path / "jsonl" / "traces" / "spans.jsonl", traces)
    (tmp_path / "records" / "traces").mkdir(parents=True)
    pd.read_parquet(tmp_path / "parquet" / "traces" / "spans.parquet").to_json(
        tmp_path / "records" / "traces" / "spans.jsonl",
        orient="records",
        lines=True,
        date_format="iso",
        date_unit="us",
    )  # pandas writes times to the microsecond
    otlp = trace_interactions(tmp_path / "otlp")
    timing = ["timestamp", "latency_ms", "retrieval_latency_ms", "generation_latency_ms"]
    for export in ("parquet", "jsonl", "records"):
        phoenix = trace_interactions(tmp_path / export)
        for column in otlp.columns.drop("feedback"):
            if export == "records" and column in timing:
                difference = phoenix[column] - otlp[column]
                if column == "timestamp":
                    difference = difference.dt.total_seconds() * 1e3
                assert difference.abs().max() < 2e-3  # ms
                continue
            pd.testing.assert_series_equal(phoenix[column], otlp[column], check_dtype=False)
        np.testing.assert_array_equal(
            satisfaction_scores(phoenix["feedback"].tolist()),
            satisfaction_scores(otlp["feedback"].tolist()),
        )


def test_feedback_from_phoenix_span_annotations(traces: list, tmp_path: Path) -> None:
    """Traces without a `feedback` attribute take a human `user feedback` annotation's label
    (on the root or another span); LLM evaluations and other names are not feedback."""
    silent = [t for t in traces if t.feedback is None]
    assert len(silent) >= 3
    roots = [next(s for s in t.spans if s.parent_id is None) for t in silent]
    annotations = pd.DataFrame(
        [
            {
                "span_id": roots[0].span_id,
                "annotation_name": "user feedback",
                "annotator_kind": "HUMAN",
                "result.label": "thumbs-up",
                "result.score": 1.0,
            },
            {
                "span_id": silent[1].spans[0].span_id,
                "annotation_name": "User-Feedback",
                "annotator_kind": "HUMAN",
                "result.label": "2",
                "result.score": None,
            },
            {
                "span_id": roots[2].span_id,
                "annotation_name": "correctness",
                "annotator_kind": "HUMAN",
                "result.label": "up",
                "result.score": 1.0,
            },
            {
                "span_id": roots[2].span_id,
                "annotation_name": "user_feedback",
                "annotator_kind": "LLM",
                "result.label": "up",
                "result.score": 1.0,
            },
        ]
    ).set_index("span_id")  # as get_span_annotations_dataframe() returns it
    write_phoenix_parquet(tmp_path / "parquet" / "traces" / "spans.parquet", traces)
    annotations.to_parquet(tmp_path / "parquet" / "traces" / "annotations.parquet")
    write_otlp(tmp_path / "otlp" / "traces", traces)
    (tmp_path / "otlp" / "traces" / "annotations.jsonl").write_text(
        "".join(
            json.dumps(
                {
                    "span_id": span_id,
                    "name": row["annotation_name"],
                    "annotator_kind": row["annotator_kind"],
                    "result": {"label": row["result.label"], "score": row["result.score"]},
                }
            )
            + "\n"
            for span_id, row in annotations.iterrows()
        )
    )  # the REST API's span annotation records
    for export in ("parquet", "otlp"):
        rows = trace_interactions(tmp_path / export).set_index("log_id")["feedback"]
        got = [rows[t.spans[0].trace_id] for t in silent[:3]]
        assert got[:2] == ["thumbs_up", "2"] and pd.isna(got[2]), export
        assert satisfaction_scores(got[:2]).tolist() == [1.0, 0.25]
        others = [t for t in traces if t.feedback is not None]
        kept = [str(rows[t.spans[0].trace_id]) for t in others]
        assert kept == [str(t.feedback) for t in others]


def one_span_line(**changes: object) -> str:
    """One OTLP line holding one root span, with `changes` applied to the span."""
    request = export_request([])
    span = {
        "traceId": "5b8efff798038103d269b633813fc60c",
        "spanId": "eee19b7ec3c1b174",
        "parentSpanId": "",
        "name": "rag",
        "startTimeUnixNano": "1794000000000000000",
        "endTimeUnixNano": "1794000000500000000",
        "attributes": [{"key": "input.value", "value": {"stringValue": "Why?"}}],
        **changes,
    }
    request["resourceSpans"][0]["scopeSpans"][0]["spans"] = [span]
    return json.dumps(request)


@pytest.mark.parametrize(
    ("changes", "field", "value"),
    [
        ({"startTimeUnixNano": "17940000OO"}, "startTimeUnixNano", "17940000OO"),
        (
            {
                "attributes": [
                    {"key": "input.value", "value": {"stringValue": "Why?"}},
                    {"key": "llm.token_count.prompt", "value": {"intValue": "12x"}},
                ]
            },
            "attributes[llm.token_count.prompt].intValue",
            "12x",
        ),
        ({"attributes": []}, "input.value", None),
        ({"endTimeUnixNano": "1"}, "endTimeUnixNano", "1"),
        ({"traceId": 7}, "traceId", "7"),
    ],
)
def test_bad_otlp_input_names_file_line_field_and_value(
    tmp_path: Path, changes: dict, field: str, value: str | None
) -> None:
    folder = tmp_path / "traces"
    folder.mkdir()
    good = one_span_line(traceId="0af7651916cd43dd8448eb211c80319c")
    (folder / "export.json").write_text(good + "\n\n" + one_span_line(**changes) + "\n")
    with pytest.raises(DatasetError) as raised:
        trace_interactions(tmp_path)
    issue = raised.value.issues[0]
    assert issue.file.startswith("traces/export.json")
    assert issue.line == 3 or "line 3" in issue.file
    assert field in issue.column
    if value is not None:
        assert value in issue.message


def test_bad_phoenix_row_and_non_json_line_are_named(tmp_path: Path, traces: list) -> None:
    write_phoenix_parquet(tmp_path / "traces" / "spans.parquet", traces[:2])
    frame = pd.read_parquet(tmp_path / "traces" / "spans.parquet")
    frame.loc[3, "start_time"] = None
    frame.to_parquet(tmp_path / "traces" / "spans.parquet")
    with pytest.raises(DatasetError) as raised:
        trace_interactions(tmp_path)
    issue = raised.value.issues[0]
    assert (issue.file, issue.row, issue.column) == ("traces/spans.parquet", 4, "start_time")
    (tmp_path / "traces" / "spans.parquet").unlink()
    (tmp_path / "traces" / "otel.jsonl").write_text('{"resourceSpans": []}\n{"resourceSp\n')
    with pytest.raises(DatasetError, match=r"traces/otel.jsonl, line 2"):
        trace_interactions(tmp_path)
    (tmp_path / "traces" / "otel.jsonl").write_bytes(b'{"resourceSpans": []}\n\n\xff{}\n')
    with pytest.raises(DatasetError, match=r"otel.jsonl, line 3.*not UTF-8 text: .*xff"):
        trace_interactions(tmp_path)
    (tmp_path / "traces" / "otel.jsonl").unlink()
    (tmp_path / "traces" / "spans.parquet").write_bytes(b"PAR1 not parquet")
    with pytest.raises(DatasetError, match=r"traces/spans.parquet: not a Parquet file"):
        trace_interactions(tmp_path)


def test_traces_win_over_logs_and_are_validated_as_logs(traces: list, tmp_path: Path) -> None:
    folder = write_version(tmp_path / VERSION, traces)
    (folder / "logs.jsonl").write_text(
        json.dumps(
            {
                "log_id": "l1",
                "timestamp": "2026-11-02T10:00:00Z",
                "question": "q",
                "retrieved_doc_ids": ["d1"],
            }
        )
        + "\n"
    )
    assert DatasetsResource(root=str(tmp_path)).logs_origin(VERSION) == (
        "traces/ (10 files); logs.jsonl ignored: traces/ wins"
    )
    logs = load_dataset(folder).logs
    assert set(logs["log_id"]) == {t.spans[0].trace_id for t in traces}
    (folder / "corpus.jsonl").write_text(json.dumps({"doc_id": "d1", "text": "x"}) + "\n")
    with pytest.raises(DatasetError, match=r"traces/, row \d+, column 'retrieved_doc_ids'"):
        load_dataset(folder)


def test_traffic_assets_materialize_from_a_traces_folder(
    dagster_instance: DagsterInstance, embedder: Embedder, tmp_path: Path, traces: list
) -> None:
    write_version(tmp_path / "datasets" / VERSION, traces)
    dagster_instance.add_dynamic_partitions(DATASET_VERSION, [VERSION])
    resources = evaluation_resources(
        tmp_path, embedder, datasets=DatasetsResource(root=str(tmp_path / "datasets"))
    )
    day = DAYS[1]
    result = materialize(
        [golden_dataset, traffic_metrics, traffic_judgments, traffic_quality],
        partition_key=evaluation_partition_key(VERSION, day),
        instance=dagster_instance,
        resources=resources,
        run_config={
            "ops": {
                "traffic_metrics": {"config": {"timezone": TIMEZONE}},
                "traffic_judgments": {"config": {"timezone": TIMEZONE, "sample_size": 3}},
            }
        },
    )
    assert result.success
    golden = result.asset_materializations_for_node("golden_dataset")[0].metadata
    assert golden["logs_from"].value == "traces/ (10 files)"
    warehouse = tmp_path / "warehouse"
    quality = pd.read_parquet(warehouse / "traffic_quality" / VERSION / f"{day}.parquet")
    expected = expected_day(traces, day)
    assert figures(quality, list(expected)) == pytest.approx(expected, rel=1e-12, abs=1e-15)
    items = pd.read_parquet(warehouse / "traffic_metrics" / VERSION / f"{day}.parquet")
    on_day = {t.spans[0].trace_id for t in traces if day_of(t) == day}
    assert set(items["log_id"]) == on_day
    judgments = pd.read_parquet(warehouse / "traffic_judgments" / VERSION / f"{day}.parquet")
    judged = set(judgments.loc[judgments["metric"] == "faithfulness", "query_id"])
    assert len(judged) == 3 and judged <= on_day
