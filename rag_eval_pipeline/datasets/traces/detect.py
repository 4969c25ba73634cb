"""Which reader a trace file needs, recognized from its content, whatever its name.

The Collector's `path` is the user's choice and rotation renames files with a timestamp before
the extension (`traces-2026-11-02T10-00-00.000.json`), compression may add `.zst` or `.gz`:
names say nothing reliable. A file is, by its first bytes: Parquet (`PAR1`); else, read
through its compression (`compression.open_decompressed`), JSON lines when its first
non-blank byte after a UTF-8 byte-order mark is `{` (OTLP when the first record has
`resourceSpans`, span annotations when it has `annotation_name`, else a Phoenix span
export); else length-prefixed OTLP protobuf
records (`otlp_proto`), when the first length fits in the file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from rag_eval_pipeline.datasets.errors import DatasetError, ValidationIssue
from rag_eval_pipeline.datasets.lines import BOM
from rag_eval_pipeline.datasets.traces.compression import DECOMPRESSION_ERRORS, open_decompressed
from rag_eval_pipeline.datasets.traces.conventions import Span, json_lines
from rag_eval_pipeline.datasets.traces.otlp import otlp_spans
from rag_eval_pipeline.datasets.traces.otlp_proto import (
    LENGTH_PREFIX,
    MAX_RECORD_BYTES,
    otlp_proto_spans,
)
from rag_eval_pipeline.datasets.traces.phoenix import (
    Feedback,
    is_annotation_record,
    phoenix_jsonl_annotations,
    phoenix_jsonl_spans,
    phoenix_parquet_annotations,
    phoenix_parquet_spans,
)

Reader = Callable[[Path, str], Iterator[Span | Feedback]]
PARQUET_MAGIC = b"PAR1"
SNIFF_BYTES = 4096


def trace_reader(path: Path, label: str) -> Reader:
    """The reader of the trace file at `path` (`label`: its name in errors); a file of no
    known layout raises naming it."""
    with open(path, "rb") as raw:
        if raw.read(len(PARQUET_MAGIC)) == PARQUET_MAGIC:
            return _parquet_reader(path, label)
    try:
        with open_decompressed(path) as handle:
            head = handle.read(SNIFF_BYTES)
    except DECOMPRESSION_ERRORS as error:
        raise _error(label, f"corrupt compressed data: {error}") from None
    stripped = head.removeprefix(BOM).lstrip()
    if not stripped or stripped[:1] == b"{":
        return _json_lines_reader(path, label)
    if len(head) >= LENGTH_PREFIX.size:
        (length,) = LENGTH_PREFIX.unpack(head[: LENGTH_PREFIX.size])
        if 0 < length <= MAX_RECORD_BYTES:
            return otlp_proto_spans
    raise _error(
        label,
        "not a trace file (OTLP JSON lines or protobuf, possibly zstd or gzip compressed, "
        "or a Phoenix export)",
    )


def _parquet_reader(path: Path, label: str) -> Reader:
    try:
        columns = pq.read_schema(path).names
    except (pa.ArrowException, OSError) as error:
        raise _error(label, f"not a Parquet file ({error})") from None
    return phoenix_parquet_annotations if is_annotation_record(columns) else phoenix_parquet_spans


def _json_lines_reader(path: Path, label: str) -> Reader:
    first = next(json_lines(path, label, "record"), (0, {}))[1]
    first = first if isinstance(first, dict) else {}
    if "resourceSpans" in first:
        return otlp_spans
    if is_annotation_record(first):
        return phoenix_jsonl_annotations
    return phoenix_jsonl_spans


def _error(label: str, message: str) -> DatasetError:
    return DatasetError(label, [ValidationIssue(label, message)])
