"""OTLP JSON as the OpenTelemetry Collector's file exporter writes it, span by span.

One `ExportTraceServiceRequest` per line (<https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding>):
`resourceSpans[].scopeSpans[].spans[]`, each span with hex `traceId`/`spanId`/`parentSpanId`,
`startTimeUnixNano`/`endTimeUnixNano` (int64 as decimal strings), `attributes` as typed
key/values (`{"key": k, "value": {"stringValue" | "intValue" | "doubleValue" | "boolValue" |
"arrayValue" | "kvlistValue" | "bytesValue": ...}}`), `status.code` (2 or
`STATUS_CODE_ERROR` = ERROR) and `events` (`exception` events carry `exception.message`).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

from rag_eval_pipeline.datasets.traces.conventions import (
    EXCEPTION_EVENT,
    EXCEPTION_MESSAGE,
    EXCEPTION_TYPE,
    SPAN_KIND,
    FileProblems,
    Span,
    bad_value,
    json_lines,
    span_kind,
    span_problem,
    split_attributes,
)

STATUS_ERROR = (2, "2", "STATUS_CODE_ERROR")
SPECIAL_DOUBLES = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class _Line:
    """Where the values being decoded come from: file and line, for the errors."""

    def __init__(self, file: str, line: int) -> None:
        self.file, self.line = file, line

    def error(self, field_name: str, value: object, problem: str) -> Exception:
        return bad_value(self.file, field_name, value, problem, line=self.line)


def otlp_spans(path: Path, label: str) -> Iterator[Span]:
    """The spans of an OTLP JSON lines file, in file order (`label`: the file's name in errors).
    A bad line or span is recorded and skipped; at the end, every problem found is raised."""
    problems = FileProblems(label)
    for number, request in json_lines(path, label, "ExportTraceServiceRequest", problems):
        yield from request_spans(request, label, number, problems)
        if problems.full:
            break
    problems.raise_if_any()


def _raw_spans(request: object, where: _Line) -> list[tuple[str, object]]:
    """(path, span object) of every span of one ExportTraceServiceRequest."""
    if not isinstance(request, dict) or "resourceSpans" not in request:
        raise where.error("resourceSpans", str(request)[:40], "not an ExportTraceServiceRequest")
    return [
        (f"resourceSpans[{r}].scopeSpans[{s}].spans[{p}]", span)
        for r, resource in enumerate(_list(request, "resourceSpans", where))
        for s, scope in enumerate(_list(resource, "scopeSpans", where))
        for p, span in enumerate(_list(scope, "spans", where))
    ]


def request_spans(
    request: object, label: str, number: int, problems: FileProblems
) -> Iterator[Span]:
    """The spans of one parsed OTLP JSON `ExportTraceServiceRequest`, found at line (or
    record) `number` of file `label`; a bad request or span is recorded in `problems` and
    skipped (reading stops when `problems` is full)."""
    where = _Line(label, number)
    for span_path, span in problems.attempt(_raw_spans, request, where) or []:
        decoded = problems.attempt(_span, span, span_path, where)
        if decoded is not None:
            yield decoded
        if problems.full:
            break


def _list(parent: object, key: str, where: _Line) -> list:
    value = parent.get(key) if isinstance(parent, dict) else None
    if value is None:
        return []
    if not isinstance(value, list):
        raise where.error(key, value, "not a list")
    return value


def _span(span: object, path: str, where: _Line) -> Span:
    if not isinstance(span, dict):
        raise where.error(path, span, "not a span object")
    trace_id, span_id = (_hex_id(span, key, path, where) for key in ("traceId", "spanId"))
    parent = str(span.get("parentSpanId") or "").lower() or None
    ids = {"traceId": trace_id, "spanId": span_id, "parentSpanId": parent or ""}
    times = {
        f"{path}.{key}": _int64(span.get(key), f"{path}.{key}", where)
        for key in ("startTimeUnixNano", "endTimeUnixNano")
    }
    problem = span_problem(
        {f"{path}.{key}": value for key, value in ids.items()},
        times,
        str(span.get("traceId")),
        str(span.get("spanId")),
    )
    if problem is not None:
        raise where.error(*problem)
    start, end = times.values()
    flat = _attributes(span.get("attributes"), f"{path}.attributes", where)
    kept, documents = split_attributes(flat)
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=parent,
        start_ns=start,
        end_ns=end,
        kind=span_kind(flat.get(SPAN_KIND), flat),
        error=_error(span, path, where),
        source=f"{where.file} line {where.line}",
        attributes=kept,
        documents=documents,
    )


def _hex_id(span: dict, key: str, path: str, where: _Line) -> str:
    value = span.get(key)
    if not isinstance(value, str) or not value.strip():
        raise where.error(f"{path}.{key}", value, "missing or not a hex string")
    return value.strip().lower()


def _int64(value: object, field_name: str, where: _Line) -> int:
    """An OTLP int64: a decimal string (the JSON mapping), or a JSON integer."""
    if isinstance(value, bool):
        raise where.error(field_name, value, "not an int64")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise where.error(field_name, value, "not an int64")


def _any_value(value: object, field_name: str, where: _Line) -> object:
    """An OTLP AnyValue as a Python value (arrays as lists, key/value lists as dicts)."""
    if not isinstance(value, dict):
        raise where.error(field_name, value, "not an AnyValue object")
    if not value:
        return None
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        flag = value["boolValue"]
        if not isinstance(flag, bool):
            raise where.error(f"{field_name}.boolValue", flag, "not a boolean")
        return flag
    if "intValue" in value:
        return _int64(value["intValue"], f"{field_name}.intValue", where)
    if "doubleValue" in value:
        number = value["doubleValue"]
        if isinstance(number, int | float) and not isinstance(number, bool):
            return float(number)
        if isinstance(number, str) and number in SPECIAL_DOUBLES:
            return SPECIAL_DOUBLES[number]
        raise where.error(f"{field_name}.doubleValue", number, "not a double")
    if "arrayValue" in value:
        items = (value["arrayValue"] or {}).get("values") or []
        return [
            _any_value(item, f"{field_name}.arrayValue[{i}]", where) for i, item in enumerate(items)
        ]
    if "kvlistValue" in value:
        return _attributes(
            (value["kvlistValue"] or {}).get("values"), f"{field_name}.kvlistValue", where
        )
    if "bytesValue" in value:
        return value["bytesValue"]
    raise where.error(field_name, value, "unknown AnyValue type")


def _attributes(items: object, field_name: str, where: _Line) -> dict[str, object]:
    """A list of `{key, value}` as a flat dict (dotted keys kept as they are)."""
    if items is None:
        return {}
    if not isinstance(items, list):
        raise where.error(field_name, items, "not a list of key/values")
    flat: dict[str, object] = {}
    for position, item in enumerate(items):
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise where.error(f"{field_name}[{position}]", item, "not a {key, value} object")
        flat[item["key"]] = _any_value(item.get("value", {}), f"{field_name}[{item['key']}]", where)
    return flat


def _error(span: dict, path: str, where: _Line) -> str | None:
    """The span's error: an ERROR status (its message), else an `exception` event's message."""
    status = span.get("status") or {}
    if not isinstance(status, dict):
        raise where.error(f"{path}.status", status, "not a status object")
    if status.get("code") in STATUS_ERROR:
        return str(status.get("message") or "ERROR")
    for position, event in enumerate(_list(span, "events", where)):
        if isinstance(event, dict) and event.get("name") == EXCEPTION_EVENT:
            attributes = _attributes(
                event.get("attributes"), f"{path}.events[{position}].attributes", where
            )
            return str(
                attributes.get(EXCEPTION_MESSAGE) or attributes.get(EXCEPTION_TYPE) or "exception"
            )
    return None
