"""Phoenix (Arize) span exports, span by span: Parquet or JSON lines.

The columns are those of Phoenix's spans dataframe (`px.Client().get_spans_dataframe()`,
`TraceDataset.save()`): `context.trace_id`, `context.span_id`, `parent_id`, `name`,
`span_kind`, `start_time`, `end_time`, `status_code` (`OK`, `ERROR`, `UNSET`),
`status_message`, `events` and one `attributes.<name>` column per attribute, where
`attributes.retrieval.documents` is a list of `{"document.id", "document.content",
"document.score"}` records. A JSON line may also be one span as Phoenix encodes it
(`span_to_json`: `context: {trace_id, span_id}`, nested `attributes`). Nested attributes are
flattened to the OpenInference dotted names, lists by position
(`retrieval.documents.0.document.id`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from rag_eval_pipeline.datasets.timestamps import PROBLEM as TIMESTAMP_PROBLEM
from rag_eval_pipeline.datasets.timestamps import parse_timestamps
from rag_eval_pipeline.datasets.traces.conventions import (
    EXCEPTION_EVENT,
    EXCEPTION_MESSAGE,
    EXCEPTION_TYPE,
    FileProblems,
    Span,
    bad_value,
    json_lines,
    span_kind,
    split_attributes,
)

ATTRIBUTE_PREFIX = "attributes."
FEEDBACK_ANNOTATIONS = frozenset({"feedback", "user_feedback"})
CONTEXT_PREFIX = "context."
PARQUET_BATCH_ROWS = 10_000


@dataclass(frozen=True)
class Feedback:
    """A user's feedback on a span, from a span annotation."""

    span_id: str
    value: str


def phoenix_parquet_spans(path: Path, label: str) -> Iterator[Span]:
    """The spans of a Phoenix Parquet export, batch by batch (row numbers in errors); every
    bad row is recorded and raised at the end (`FileProblems`)."""
    problems = FileProblems(label)
    row = 0
    for batch in pq.ParquetFile(path).iter_batches(batch_size=PARQUET_BATCH_ROWS):
        for record in batch.to_pylist():
            row += 1
            span = problems.attempt(phoenix_span, record, label, row=row)
            if span is not None:
                yield span
        if problems.full:
            break
    problems.raise_if_any()


def phoenix_jsonl_spans(path: Path, label: str) -> Iterator[Span]:
    """The spans of a Phoenix JSON lines export (line numbers in errors); every bad line is
    recorded and raised at the end (`FileProblems`)."""
    problems = FileProblems(label)
    for number, record in json_lines(path, label, "span", problems):
        span = problems.attempt(_jsonl_span, record, label, number)
        if span is not None:
            yield span
    problems.raise_if_any()


def _jsonl_span(record: object, label: str, number: int) -> Span:
    if not isinstance(record, dict):
        raise bad_value(label, "span", record, "not a span object", line=number)
    return phoenix_span(record, label, line=number)


def phoenix_parquet_annotations(path: Path, label: str) -> Iterator[Feedback]:
    """The user feedback among a Phoenix span annotations export in Parquet."""
    row = 0
    for batch in pq.ParquetFile(path).iter_batches(batch_size=PARQUET_BATCH_ROWS):
        for record in batch.to_pylist():
            row += 1
            yield from _feedback(record, label, row=row)


def phoenix_jsonl_annotations(path: Path, label: str) -> Iterator[Feedback]:
    """The user feedback among a Phoenix span annotations export in JSON lines."""
    for number, record in json_lines(path, label, "annotation"):
        yield from _feedback(record, label, line=number)


def is_annotation_record(names: Iterable[str]) -> bool:
    """Field names of a Phoenix span annotation: `get_span_annotations_dataframe()`'s columns
    (`annotation_name`, `result.label`, ...) or the REST API's record (`name`, `result`)."""
    names = set(names)
    return "annotation_name" in names or {"span_id", "name", "result"} <= names


def _feedback(
    record: object, label: str, line: int | None = None, row: int | None = None
) -> Iterator[Feedback]:
    """The record's user feedback: a HUMAN annotation named `FEEDBACK_ANNOTATIONS` (any case,
    `-`/space as `_`), its `result.label` (thumbs, or a 1–5 rating; a score alone is on no
    known scale, so it is not read)."""
    if not isinstance(record, dict):
        raise bad_value(label, "annotation", record, "not an annotation object", line, row)
    flat = flatten(record, "", {})
    name = str(flat.get("annotation_name", flat.get("name", ""))).lower()
    kind = str(flat.get("annotator_kind", "HUMAN")).upper()
    value = flat.get("result.label")
    if kind != "HUMAN" or re.sub(r"[\s-]+", "_", name) not in FEEDBACK_ANNOTATIONS:
        return
    span_id = flat.get("span_id")
    if not isinstance(span_id, str) or not span_id.strip():
        raise bad_value(label, "span_id", span_id, "missing or not a string", line, row)
    if value is not None:
        yield Feedback(span_id.strip().lower(), str(value).replace("-", "_"))


def flatten(value: object, prefix: str, into: dict[str, object]) -> dict[str, object]:
    """Nested dicts and lists of dicts as dotted keys (`a.b`, `a.0.b`); lists of scalars and
    scalars as they are; missing values (None, NaN) left out."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, dict):
        for key, item in value.items():
            flatten(item, f"{prefix}.{key}" if prefix else str(key), into)
    elif isinstance(value, list) and any(isinstance(item, dict) for item in value):
        for position, item in enumerate(value):
            flatten(item, f"{prefix}.{position}", into)
    elif not _missing(value):
        into[prefix] = value
    return into


def phoenix_span(
    record: dict[str, object], label: str, line: int | None = None, row: int | None = None
) -> Span:
    """One Phoenix span record (a dataframe row or a `span_to_json` object) as a `Span`."""

    def error(field_name: str, value: object, problem: str) -> Exception:
        return bad_value(label, field_name, value, problem, line=line, row=row)

    flat = flatten({k: v for k, v in record.items() if not _missing(v)}, "", {})
    trace_id = flat.get(CONTEXT_PREFIX + "trace_id")
    span_id = flat.get(CONTEXT_PREFIX + "span_id")
    for name, value in (("context.trace_id", trace_id), ("context.span_id", span_id)):
        if not isinstance(value, str) or not value.strip():
            raise error(name, value, "missing or not a string")
    ids = f"trace {str(trace_id)[:64]}, span {str(span_id)[:64]}"
    start = _nanoseconds(record.get("start_time"), "start_time", error, ids)
    end = _nanoseconds(record.get("end_time"), "end_time", error, ids)
    if end < start:
        raise error("end_time", record.get("end_time"), "before start_time")
    attributes = {
        key[len(ATTRIBUTE_PREFIX) :]: value
        for key, value in flat.items()
        if key.startswith(ATTRIBUTE_PREFIX)
    }
    kept, documents = split_attributes(attributes)
    parent = record.get("parent_id")
    return Span(
        trace_id=str(trace_id).strip().lower(),
        span_id=str(span_id).strip().lower(),
        parent_id=None if _missing(parent) or not str(parent).strip() else str(parent).lower(),
        start_ns=start,
        end_ns=end,
        kind=span_kind(record.get("span_kind"), kept),
        error=_error(record),
        source=f"{label} " + (f"line {line}" if line is not None else f"row {row}"),
        attributes=kept,
        documents=documents,
    )


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def _nanoseconds(value: object, field_name: str, error, ids: str) -> int:
    """A Phoenix time (a timestamp, ISO 8601 text with a date and a time, no offset = UTC, or
    an epoch number: `datasets.timestamps`) as UTC nanoseconds; refused naming trace and span
    (`ids`) outside 2000-2099."""
    if _missing(value):
        raise error(field_name, value, "missing timestamp")
    stamp = parse_timestamps(pd.Series([value], dtype=object)).iloc[0]
    if pd.isna(stamp):
        raise error(field_name, value, f"not {TIMESTAMP_PROBLEM} ({ids})")
    return int(stamp.value)


def _error(record: dict[str, object]) -> str | None:
    """An ERROR `status_code` (its `status_message`), else an `exception` event's message."""
    if str(record.get("status_code") or "").upper() == "ERROR":
        message = record.get("status_message")
        return str(message) if not _missing(message) and str(message) else "ERROR"
    events = record.get("events")
    if isinstance(events, str):
        events = json.loads(events)
    for event in list(events) if isinstance(events, list | np.ndarray) else []:
        if isinstance(event, dict) and event.get("name") == EXCEPTION_EVENT:
            attributes = flatten(event.get("attributes") or {}, "", {})
            return str(
                attributes.get(EXCEPTION_MESSAGE) or attributes.get(EXCEPTION_TYPE) or "exception"
            )
    return None
