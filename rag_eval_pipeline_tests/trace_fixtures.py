"""Synthetic production traces written in the exporters' own layouts, with the raw values
each day's figures are computed from by numpy in the tests.

The layouts follow the formats' specifications, not this project's columns: OTLP JSON as the
OpenTelemetry Collector's file exporter writes it (one ExportTraceServiceRequest per line,
typed attribute values, int64 as strings, hex ids; opentelemetry-proto's JSON mapping), and
Phoenix's spans dataframe (`get_spans_dataframe()` columns, `attributes.*` flattened,
`attributes.retrieval.documents` a list of `document.*` records) and its `span_to_json` lines.
Attribute names are the OpenInference / OTel GenAI semantic conventions' literal names.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Status
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan

TIMEZONE = "America/New_York"
DAYS = ["2026-11-02", "2026-11-03", "2026-11-04"]
PRICE_IN, PRICE_OUT = 0.15e-6, 0.6e-6  # gpt-4o-mini in litellm's map, USD per token
DOC_IDS = ["d1", "d2", "d3"]
DOC_TEXTS = {
    "d1": "To reset your password, open Account > Security.",
    "d2": "Invoices are listed under Billing > Invoices.",
    "d3": "Two-factor authentication is set under Account > Security.",
}
FEEDBACK = ["up", "down", 5, 1, 3, None, "4"]
SATISFACTION = {"up": 1.0, "down": 0.0, 5: 1.0, 1: 0.0, 3: 0.5, "4": 0.75}


@dataclass
class RawSpan:
    """A span as an instrumented application records it."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str
    start_ns: int
    end_ns: int
    attributes: dict[str, object]
    error: str | None = None
    exception: str | None = None


@dataclass
class RawTrace:
    """One interaction's spans and the figures they stand for (computed here, by hand)."""

    spans: list[RawSpan]
    start_ns: int
    latency_ms: float
    retrieval_ms: float
    generation_ms: float
    error: bool
    cost: float
    feedback: object
    extra: dict = field(default_factory=dict)


def synthetic_traces(n: int = 60, seed: int = 3) -> list[RawTrace]:
    """`n` RAG traces from 2026-11-01 22:00 to 2026-11-05 22:00 New York time: a CHAIN root,
    an optional query-rewrite GenAI call, one or two (overlapping) RETRIEVER spans with an
    EMBEDDING child, an LLM answer (gpt-4o-mini or an unpriced model); some fail (ERROR
    status or an `exception` event on the root), some carry user feedback."""
    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2026-11-01T22:00:00-05:00").value
    traces = []
    for i in range(n):
        trace_id = f"{i + 1:032x}"
        t0 = start + int(rng.integers(0, 4 * 24 * 3600)) * 10**9 + int(rng.integers(0, 10**9))

        def ms(low: float, high: float) -> int:
            return int(rng.uniform(low, high) * 1e6)

        spans, cursor, calls = [], t0 + ms(1, 5), []
        root_id = f"{i + 1:08x}00000001"
        rewrite = i % 4 == 0
        generation = 0
        if rewrite:
            duration = ms(50, 200)
            tokens = (int(rng.integers(20, 60)), int(rng.integers(5, 20)))
            spans.append(
                RawSpan(
                    trace_id,
                    f"{i + 1:08x}00000002",
                    root_id,
                    "chat gpt-4o-mini",
                    "",
                    cursor,
                    cursor + duration,
                    {
                        "gen_ai.operation.name": "chat",
                        "gen_ai.request.model": "gpt-4o-mini",
                        "gen_ai.usage.input_tokens": tokens[0],
                        "gen_ai.usage.output_tokens": tokens[1],
                    },
                )
            )
            calls.append(tokens[0] * PRICE_IN + tokens[1] * PRICE_OUT)
            generation += duration
            cursor += duration + ms(1, 3)
        docs = list(rng.permutation(DOC_IDS)[: int(rng.integers(1, 4))])
        r_start, r_duration = cursor, ms(20, 150)
        spans.append(
            RawSpan(
                trace_id,
                f"{i + 1:08x}00000003",
                root_id,
                "retrieve",
                "RETRIEVER",
                r_start,
                r_start + r_duration,
                {
                    "input.value": f"question {i}",
                    **{
                        f"retrieval.documents.{k}.document.{f}": v
                        for k, d in enumerate(docs)
                        for f, v in (("id", d), ("content", DOC_TEXTS[d]), ("score", 1.0 - k / 10))
                    },
                },
            )
        )
        spans.append(
            RawSpan(
                trace_id,
                f"{i + 1:08x}00000004",
                f"{i + 1:08x}00000003",
                "embed",
                "EMBEDDING",
                r_start + ms(0, 2),
                r_start + ms(5, 15),
                {},
            )
        )
        retrieval_end = r_start + r_duration
        if i % 5 == 1:  # a second retriever, in parallel, overlapping the first
            second_start = r_start + r_duration // 2
            second_end = second_start + ms(20, 150)
            spans.append(
                RawSpan(
                    trace_id,
                    f"{i + 1:08x}00000005",
                    root_id,
                    "retrieve-2",
                    "RETRIEVER",
                    second_start,
                    second_end,
                    {
                        "retrieval.documents.0.document.id": "d1",
                        "retrieval.documents.0.document.content": DOC_TEXTS["d1"],
                    },
                )
            )
            retrieval_end = max(retrieval_end, second_end)
        cursor = retrieval_end + ms(1, 3)
        duration = ms(200, 2000)
        model = "my-own-llm" if i % 7 == 3 else "gpt-4o-mini"
        tokens = (int(rng.integers(500, 3000)), int(rng.integers(50, 400)))
        spans.append(
            RawSpan(
                trace_id,
                f"{i + 1:08x}00000006",
                root_id,
                "llm",
                "LLM",
                cursor,
                cursor + duration,
                {
                    "llm.model_name": model,
                    "llm.token_count.prompt": tokens[0],
                    "llm.token_count.completion": tokens[1],
                    "llm.token_count.total": tokens[0] + tokens[1],
                },
            )
        )
        calls.append(
            tokens[0] * PRICE_IN + tokens[1] * PRICE_OUT if model == "gpt-4o-mini" else np.nan
        )
        generation += duration
        end = cursor + duration + ms(1, 5)
        failed = "status" if i % 9 == 2 else "exception" if i % 9 == 5 else None
        feedback = FEEDBACK[i % len(FEEDBACK)]
        root_attributes: dict[str, object] = {
            "openinference.span.kind": "CHAIN",
            "input.value": json.dumps({"question": f"question {i}"}),
            "input.mime_type": "application/json",
            "session.id": f"s{i % 5}",
            "user.id": f"u{i % 3}",
        }
        if not failed:
            root_attributes["output.value"] = f"answer {i}: open Account > Security."
        if feedback is not None:
            root_attributes["feedback"] = feedback
        spans.append(
            RawSpan(
                trace_id,
                root_id,
                None,
                "rag",
                "CHAIN",
                t0,
                end,
                root_attributes,
                error="upstream timeout" if failed == "status" else None,
                exception="KeyError: 'choices'" if failed == "exception" else None,
            )
        )
        traces.append(
            RawTrace(
                spans,
                t0,
                (end - t0) / 1e6,
                (retrieval_end - r_start) / 1e6,
                generation / 1e6,
                failed is not None,
                float(np.sum(calls)),
                feedback,
                {"docs": docs},
            )
        )
    return traces


def day_of(trace: RawTrace) -> str:
    return pd.Timestamp(trace.start_ns, tz="UTC").tz_convert(TIMEZONE).date().isoformat()


def expected_day(traces: list[RawTrace], day: str) -> dict[str, float]:
    """numpy on the day's traces' raw values."""
    rows = [t for t in traces if day_of(t) == day]
    latency = np.array([t.latency_ms for t in rows])
    retrieval = np.array([t.retrieval_ms for t in rows])
    generation = np.array([t.generation_ms for t in rows])
    costs = np.array([t.cost for t in rows])
    costs = costs[~np.isnan(costs)]
    satisfaction = np.array([SATISFACTION[t.feedback] for t in rows if t.feedback is not None])
    return {
        "volume": float(len(rows)),
        **{f"latency_p{q}_ms": float(np.percentile(latency, q)) for q in (50, 95, 99)},
        **{f"retrieval_latency_p{q}_ms": float(np.percentile(retrieval, q)) for q in (50, 95, 99)},
        **{
            f"generation_latency_p{q}_ms": float(np.percentile(generation, q)) for q in (50, 95, 99)
        },
        "error_rate": float(np.mean([t.error for t in rows])),
        "avg_cost_usd": float(np.mean(costs)),
        "total_cost_usd": float(np.sum(costs)),
        "avg_satisfaction": float(np.mean(satisfaction)),
        "positive_feedback_rate": float(np.mean(satisfaction >= 0.75)),
    }


def _any_value(value: object) -> dict[str, object]:
    """An OTLP AnyValue in the protobuf JSON mapping (int64 as a decimal string)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    return {"stringValue": str(value)}


def otlp_span(span: RawSpan) -> dict[str, object]:
    attributes = dict(span.attributes)
    if span.kind:
        attributes["openinference.span.kind"] = span.kind
    record: dict[str, object] = {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "parentSpanId": span.parent_id or "",
        "name": span.name,
        "kind": 1,
        "startTimeUnixNano": str(span.start_ns),
        "endTimeUnixNano": str(span.end_ns),
        "attributes": [{"key": k, "value": _any_value(v)} for k, v in attributes.items()],
        "status": {"code": 2, "message": span.error} if span.error else {},
    }
    if span.exception:
        record["events"] = [
            {
                "timeUnixNano": str(span.end_ns),
                "name": "exception",
                "attributes": [
                    {"key": "exception.type", "value": {"stringValue": "KeyError"}},
                    {"key": "exception.message", "value": {"stringValue": span.exception}},
                ],
            }
        ]
    return record


def export_request(spans: list[RawSpan]) -> dict[str, object]:
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "rag-api"}}]
                },
                "scopeSpans": [
                    {
                        "scope": {"name": "openinference.instrumentation.langchain"},
                        "spans": [otlp_span(s) for s in spans],
                    }
                ],
            }
        ]
    }


def _proto_value(value: object) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=str(value))


def _proto_attributes(attributes: dict[str, object]) -> list[KeyValue]:
    return [KeyValue(key=k, value=_proto_value(v)) for k, v in attributes.items()]


def proto_span(span: RawSpan) -> ProtoSpan:
    """The span as opentelemetry-proto's message (ids as bytes, times as fixed64)."""
    attributes = dict(span.attributes)
    if span.kind:
        attributes["openinference.span.kind"] = span.kind
    events = []
    if span.exception:
        exception = {"exception.type": "KeyError", "exception.message": span.exception}
        events.append(
            ProtoSpan.Event(
                time_unix_nano=span.end_ns,
                name="exception",
                attributes=_proto_attributes(exception),
            )
        )
    return ProtoSpan(
        trace_id=bytes.fromhex(span.trace_id),
        span_id=bytes.fromhex(span.span_id),
        parent_span_id=bytes.fromhex(span.parent_id or ""),
        name=span.name,
        kind=ProtoSpan.SPAN_KIND_INTERNAL,
        start_time_unix_nano=span.start_ns,
        end_time_unix_nano=span.end_ns,
        attributes=_proto_attributes(attributes),
        events=events,
        status=Status(code=Status.STATUS_CODE_ERROR, message=span.error) if span.error else None,
    )


def proto_request(spans: list[RawSpan]) -> bytes:
    """One serialized ExportTraceServiceRequest holding `spans`."""
    resource = Resource(attributes=_proto_attributes({"service.name": "rag-api"}))
    scope = InstrumentationScope(name="openinference.instrumentation.langchain")
    request = ExportTraceServiceRequest(
        resource_spans=[
            ResourceSpans(
                resource=resource,
                scope_spans=[ScopeSpans(scope=scope, spans=[proto_span(s) for s in spans])],
            )
        ]
    )
    return request.SerializeToString()


def json_lines_file(batches: list[list[RawSpan]]) -> bytes:
    """The file exporter's `format: json` file: one request per line."""
    return "".join(json.dumps(export_request(b)) + "\n" for b in batches).encode()


def length_prefixed(records: list[bytes]) -> bytes:
    """Records each preceded by its length, 4 bytes unsigned big-endian (`file_writer.go`)."""
    return b"".join(struct.pack(">I", len(r)) + r for r in records)


def write_otlp(
    folder: Path,
    traces: list[RawTrace],
    files_per_day: int = 2,
    seed: int = 5,
    encode: Callable[[list[list[RawSpan]]], bytes] = json_lines_file,
    name: str = "traces-{day}-{part}.json",
) -> None:
    """The Collector's file exporter output: per local day of the span's start, a few files of
    batches of a few spans, spans shuffled (a trace's spans in any order, across files);
    `encode` writes a file's batches (default: OTLP JSON lines), `name` names it."""
    rng = np.random.default_rng(seed)
    spans = [s for t in traces for s in t.spans]
    order = rng.permutation(len(spans))
    batches: dict[str, list[list[RawSpan]]] = {}
    for start in range(0, len(order), 3):
        batch = [spans[k] for k in order[start : start + 3]]
        day = pd.Timestamp(batch[0].start_ns, tz="UTC").date().isoformat()
        batches.setdefault(day, []).append(batch)
    folder.mkdir(parents=True, exist_ok=True)
    for day, day_batches in batches.items():
        for part in range(files_per_day):
            chosen = day_batches[part::files_per_day]
            if chosen:
                path = folder / name.format(day=day, part=part)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(encode(chosen))


def phoenix_rows(traces: list[RawTrace]) -> list[dict[str, object]]:
    """Phoenix's spans dataframe rows (`get_spans_dataframe()` columns)."""
    rows = []
    for span in (s for t in traces for s in t.spans):
        documents = [
            {
                f"document.{f}": span.attributes[f"retrieval.documents.{k}.document.{f}"]
                for f in ("id", "content", "score")
                if f"retrieval.documents.{k}.document.{f}" in span.attributes
            }
            for k in range(5)
            if f"retrieval.documents.{k}.document.id" in span.attributes
        ]
        row: dict[str, object] = {
            "name": span.name,
            "span_kind": span.kind or "UNKNOWN",
            "parent_id": span.parent_id,
            "start_time": pd.Timestamp(span.start_ns, tz="UTC"),
            "end_time": pd.Timestamp(span.end_ns, tz="UTC"),
            "status_code": "ERROR" if span.error else "OK",
            "status_message": span.error or "",
            "events": [
                {
                    "name": "exception",
                    "timestamp": pd.Timestamp(span.end_ns, tz="UTC").isoformat(),
                    "attributes": {"exception.message": span.exception},
                }
            ]
            if span.exception
            else [],
            "context.span_id": span.span_id,
            "context.trace_id": span.trace_id,
            **{
                f"attributes.{k}": v
                for k, v in span.attributes.items()
                if not k.startswith("retrieval.documents.")
            },
        }
        if span.kind:
            row["attributes.openinference.span.kind"] = span.kind
        if documents:
            row["attributes.retrieval.documents"] = documents
        rows.append(row)
    return rows


def write_phoenix_parquet(path: Path, traces: list[RawTrace]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame(phoenix_rows(traces))
    frame["attributes.feedback"] = frame["attributes.feedback"].map(
        lambda v: None if v is None or v != v else str(v)
    )
    frame.to_parquet(path, index=False)


def _nested(flat: dict[str, object]) -> dict[str, object]:
    """Dotted attribute names as nested objects (Phoenix's `unflatten`), lists by position."""
    nested: dict[str, object] = {}
    for key, value in flat.items():
        node = nested
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value

    def lists(node: object) -> object:
        if isinstance(node, dict):
            node = {k: lists(v) for k, v in node.items()}
            if node and all(k.isdigit() for k in node):
                return [node[k] for k in sorted(node, key=int)]
        return node

    return lists(nested)


def write_phoenix_jsonl(path: Path, traces: list[RawTrace]) -> None:
    """Phoenix's `span_to_json` lines (nested attributes, ISO times)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for span in (s for t in traces for s in t.spans):
        attributes = dict(span.attributes)
        if span.kind:
            attributes["openinference.span.kind"] = span.kind
        lines.append(
            json.dumps(
                {
                    "name": span.name,
                    "context": {"trace_id": span.trace_id, "span_id": span.span_id},
                    "span_kind": span.kind or "UNKNOWN",
                    "parent_id": span.parent_id,
                    "start_time": pd.Timestamp(span.start_ns, tz="UTC").isoformat(),
                    "end_time": pd.Timestamp(span.end_ns, tz="UTC").isoformat(),
                    "status_code": "ERROR" if span.error else "OK",
                    "status_message": span.error or "",
                    "attributes": _nested(attributes),
                    "events": [
                        {
                            "name": "exception",
                            "attributes": {"exception.message": span.exception},
                            "timestamp": pd.Timestamp(span.end_ns, tz="UTC").isoformat(),
                        }
                    ]
                    if span.exception
                    else [],
                    "conversation": None,
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")
