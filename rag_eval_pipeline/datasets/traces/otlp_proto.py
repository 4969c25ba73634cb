"""OTLP protobuf as the OpenTelemetry Collector's file exporter writes it (`format: proto`).

The file is a sequence of records, each an `ExportTraceServiceRequest` preceded by its length
as a 4-byte unsigned big-endian integer (`exportMessageAsBuffer` in the exporter's
`file_writer.go`). With `compression: zstd` either the whole file is a zstd stream (the
exporter's native-compression gate) or each record's bytes are one zstd frame (without it);
a JSON export compressed without the gate is written the same way, its records holding OTLP
JSON. Both are read here; messages are parsed with `opentelemetry-proto`, and each span is
reduced to the same `Span` the JSON reader yields, so both read alike downstream.
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.proto.trace.v1.trace_pb2 import Status

from rag_eval_pipeline.datasets.errors import DatasetError
from rag_eval_pipeline.datasets.traces.compression import (
    DECOMPRESSION_ERRORS,
    decompress_record,
    open_decompressed,
)
from rag_eval_pipeline.datasets.traces.conventions import (
    EXCEPTION_EVENT,
    EXCEPTION_MESSAGE,
    EXCEPTION_TYPE,
    SPAN_KIND,
    FileProblems,
    Span,
    bad_value,
    span_kind,
    span_problem,
    split_attributes,
)
from rag_eval_pipeline.datasets.traces.otlp import request_spans

LENGTH_PREFIX = struct.Struct(">I")
MAX_RECORD_BYTES = 256 << 20
REQUEST = "ExportTraceServiceRequest"


def length_prefixed_records(handle: BinaryIO, label: str) -> Iterator[tuple[int, bytes]]:
    """Each record's number (from 1) and bytes; a record longer than `MAX_RECORD_BYTES` or
    cut short by the end of the file raises naming the file and the record."""
    number = 0
    while prefix := _read(handle, LENGTH_PREFIX.size, label, number + 1):
        number += 1
        if len(prefix) < LENGTH_PREFIX.size:
            raise bad_value(label, "length", prefix.hex(), "the file ends inside", row=number)
        (length,) = LENGTH_PREFIX.unpack(prefix)
        if length > MAX_RECORD_BYTES:
            raise bad_value(label, "length", length, "record over 256 MiB", row=number)
        payload = _read(handle, length, label, number)
        if len(payload) < length:
            raise bad_value(
                label,
                REQUEST,
                f"{len(payload)} of {length} bytes",
                "the file ends inside",
                row=number,
            )
        yield number, payload


def _read(handle: BinaryIO, size: int, label: str, number: int) -> bytes:
    """Up to `size` bytes of record `number`; corrupt compressed data raises naming it."""
    try:
        return handle.read(size)
    except DECOMPRESSION_ERRORS as error:
        raise bad_value(label, REQUEST, error, "corrupt compressed data", row=number) from None


def otlp_proto_spans(path: Path, label: str) -> Iterator[Span]:
    """The spans of a length-prefixed OTLP file, in file order (`label`: its name in errors,
    where `row` is the record's number). A bad record or span is recorded and skipped; at the
    end, every problem found (up to `FileProblems.MAX_PROBLEMS`) is raised. A broken length
    prefix or corrupt compressed stream ends the reading: nothing after it can be framed."""
    problems = FileProblems(label)
    with open_decompressed(path) as handle:
        for number, payload in _records(handle, label, problems):
            yield from _record_spans(payload, label, number, problems)
            if problems.full:
                break
    problems.raise_if_any()


def _records(handle: BinaryIO, label: str, problems: FileProblems) -> Iterator[tuple[int, bytes]]:
    """`length_prefixed_records`, its error recorded in `problems` (it ends the records)."""
    try:
        yield from length_prefixed_records(handle, label)
    except DatasetError as error:
        problems.add(error)


def _record_spans(
    payload: bytes, label: str, number: int, problems: FileProblems
) -> Iterator[Span]:
    """The spans of record `number` (protobuf, or OTLP JSON); problems recorded, not raised."""
    request = problems.attempt(_request, payload, label, number)
    if request is None:
        return
    if not isinstance(request, ExportTraceServiceRequest):
        yield from request_spans(request, label, number, problems)
        return
    source = f"{label} record {number}"
    for resource in request.resource_spans:
        for scope in resource.scope_spans:
            for span in scope.spans:
                decoded = problems.attempt(_span, span, source, label, number)
                if decoded is not None:
                    yield decoded
                if problems.full:
                    return


def _request(payload: bytes, label: str, number: int) -> ExportTraceServiceRequest | object:
    """Record `number` decompressed and parsed: a protobuf request, or the parsed JSON."""
    try:
        data = decompress_record(payload, MAX_RECORD_BYTES)
    except DECOMPRESSION_ERRORS as error:
        raise bad_value(label, REQUEST, payload[:8].hex(), str(error), row=number) from None
    if data.lstrip()[:1] == b"{":
        return _json(data, label, number)
    try:
        return ExportTraceServiceRequest.FromString(data)
    except DecodeError as error:
        raise bad_value(label, REQUEST, data[:8].hex(), str(error), row=number) from None


def _json(data: bytes, label: str, number: int) -> object:
    try:
        return json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise bad_value(label, REQUEST, data[:40], str(error), row=number) from None


def _span(span: ProtoSpan, source: str, label: str, number: int) -> Span:
    if not span.trace_id or not span.span_id:
        raise bad_value(label, "trace_id/span_id", span.name, "missing span id", row=number)
    ids = {name: getattr(span, name).hex() for name in ("trace_id", "span_id", "parent_span_id")}
    times = {name: getattr(span, name) for name in ("start_time_unix_nano", "end_time_unix_nano")}
    problem = span_problem(ids, times, ids["trace_id"], ids["span_id"])
    if problem is not None:
        raise bad_value(label, *problem, row=number)
    flat = _attributes(span.attributes)
    kept, documents = split_attributes(flat)
    return Span(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_id=span.parent_span_id.hex() or None,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        kind=span_kind(flat.get(SPAN_KIND), flat),
        error=_error(span),
        source=source,
        attributes=kept,
        documents=documents,
    )


def _any_value(value: AnyValue) -> object:
    """An AnyValue as the JSON reader gives it (bytes as base64 text, as in OTLP JSON)."""
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_any_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return _attributes(value.kvlist_value.values)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    return getattr(value, kind)


def _attributes(items: list[KeyValue]) -> dict[str, object]:
    return {item.key: _any_value(item.value) for item in items}


def _error(span: ProtoSpan) -> str | None:
    """An ERROR status (its message), else an `exception` event's message (as the JSON reader)."""
    if span.status.code == Status.STATUS_CODE_ERROR:
        return span.status.message or "ERROR"
    for event in span.events:
        if event.name == EXCEPTION_EVENT:
            attributes = _attributes(event.attributes)
            return str(
                attributes.get(EXCEPTION_MESSAGE) or attributes.get(EXCEPTION_TYPE) or "exception"
            )
    return None
