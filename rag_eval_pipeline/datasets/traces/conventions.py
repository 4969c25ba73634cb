"""The span attributes a trace is read by, and the compact span every trace reader yields.

Names come from the OpenInference semantic conventions (`openinference-semantic-conventions`,
the package Phoenix and the OpenInference instrumentors use) and, for plain LLM spans, from the
OpenTelemetry GenAI conventions
(<https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/>). `feedback` is ours: no
convention names a user's rating of an answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, TypeVar

from openinference.semconv.trace import (
    DocumentAttributes,
    OpenInferenceSpanKindValues,
    SpanAttributes,
)

from rag_eval_pipeline.datasets.errors import MAX_FILE_ISSUES, DatasetError, ValidationIssue
from rag_eval_pipeline.datasets.lines import Line, handle_lines, max_record_bytes, too_long
from rag_eval_pipeline.datasets.timestamps import in_range_ns
from rag_eval_pipeline.datasets.traces.compression import DECOMPRESSION_ERRORS, open_decompressed
from rag_eval_pipeline.datasets.validation import max_id_chars
from rag_eval_pipeline.text.shown import shown_value

T = TypeVar("T")
INPUT_VALUE = SpanAttributes.INPUT_VALUE
INPUT_MIME_TYPE = SpanAttributes.INPUT_MIME_TYPE
OUTPUT_VALUE = SpanAttributes.OUTPUT_VALUE
OUTPUT_MIME_TYPE = SpanAttributes.OUTPUT_MIME_TYPE
SESSION_ID = SpanAttributes.SESSION_ID
USER_ID = SpanAttributes.USER_ID
SPAN_KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
RETRIEVAL_DOCUMENTS = SpanAttributes.RETRIEVAL_DOCUMENTS
DOCUMENT_ID = DocumentAttributes.DOCUMENT_ID
DOCUMENT_CONTENT = DocumentAttributes.DOCUMENT_CONTENT
DOCUMENT_SCORE = DocumentAttributes.DOCUMENT_SCORE
LLM_MODEL_NAME = SpanAttributes.LLM_MODEL_NAME
LLM_PROMPT_TOKENS = SpanAttributes.LLM_TOKEN_COUNT_PROMPT
LLM_COMPLETION_TOKENS = SpanAttributes.LLM_TOKEN_COUNT_COMPLETION
RETRIEVER = OpenInferenceSpanKindValues.RETRIEVER.value
LLM = OpenInferenceSpanKindValues.LLM.value
UNKNOWN_KIND = OpenInferenceSpanKindValues.UNKNOWN.value

GEN_AI_OPERATION = "gen_ai.operation.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"

FEEDBACK = "feedback"
EXCEPTION_EVENT = "exception"
EXCEPTION_MESSAGE = "exception.message"
EXCEPTION_TYPE = "exception.type"

# The attributes kept from a span (everything else is dropped as it is read).
KEPT_ATTRIBUTES = frozenset(
    {
        INPUT_VALUE,
        INPUT_MIME_TYPE,
        OUTPUT_VALUE,
        OUTPUT_MIME_TYPE,
        SESSION_ID,
        USER_ID,
        SPAN_KIND,
        LLM_MODEL_NAME,
        LLM_PROMPT_TOKENS,
        LLM_COMPLETION_TOKENS,
        GEN_AI_OPERATION,
        GEN_AI_REQUEST_MODEL,
        GEN_AI_INPUT_TOKENS,
        GEN_AI_OUTPUT_TOKENS,
        FEEDBACK,
    }
)
DOCUMENT_FIELDS = {DOCUMENT_ID: 0, DOCUMENT_CONTENT: 1, DOCUMENT_SCORE: 2}


@dataclass(slots=True)
class Span:
    """One span, reduced to what an interaction is made of.

    `kind`: the OpenInference span kind (`LLM` also for a GenAI span naming a model), "" when
    unknown; `error`: None, or the message of an ERROR status or an `exception` event;
    `documents`: the retrieved documents in their position order, each `[id, content, score]`;
    `source`: where the span was read (`traces/<file> line <n>`), for error messages.
    """

    trace_id: str
    span_id: str
    parent_id: str | None
    start_ns: int
    end_ns: int
    kind: str
    error: str | None
    source: str
    attributes: dict[str, object] = field(default_factory=dict)
    documents: list[list[object]] = field(default_factory=list)


def span_kind(declared: object, attributes: dict[str, object]) -> str:
    """The span's kind: the declared OpenInference kind, else `LLM` for a GenAI span that
    names its model (`gen_ai.request.model`), else ""."""
    if isinstance(declared, str) and declared.strip().upper() not in ("", UNKNOWN_KIND):
        return declared.strip().upper()
    if attributes.get(GEN_AI_REQUEST_MODEL) is not None:
        return LLM
    return ""


def documents_from_flat(flat: dict[str, object]) -> list[list[object]]:
    """`retrieval.documents.<N>.document.<field>` attributes as documents in `N` order."""
    by_position: dict[int, list[object]] = {}
    prefix = RETRIEVAL_DOCUMENTS + "."
    for key, value in flat.items():
        position, _, name = key[len(prefix) :].partition(".")
        if position.isdigit() and name in DOCUMENT_FIELDS:
            by_position.setdefault(int(position), [None, None, None])[DOCUMENT_FIELDS[name]] = value
    return [by_position[position] for position in sorted(by_position)]


def split_attributes(
    flat: dict[str, object],
) -> tuple[dict[str, object], list[list[object]]]:
    """The kept attributes and the retrieved documents of a span's flat attributes."""
    kept = {key: value for key, value in flat.items() if key in KEPT_ATTRIBUTES}
    documents = documents_from_flat(
        {k: v for k, v in flat.items() if k.startswith(RETRIEVAL_DOCUMENTS + ".")}
    )
    return kept, documents


SpanProblem = tuple[str, object, str]
"""A span's bad field: its name (as the reader's format spells it), its value, the problem."""


def span_problem(
    ids: dict[str, str], times: dict[str, int], trace: str, span: str
) -> SpanProblem | None:
    """The first problem of a span's ids and times, the one rule of both trace readers (OTLP
    JSON and protobuf): an id (hex, by field name) longer than `RAG_EVAL_MAX_ID_CHARS`; a time
    (nanoseconds since 1970, by field name: start, then end) outside 2000-2099, which a
    `"2026"` would be, moving its interaction out of every day (named by `trace` and `span`);
    an end before the start."""
    for name, value in ids.items():
        if len(value) > max_id_chars():
            return name, value, f"longer than {max_id_chars():,} hex characters"
    for name, value in times.items():
        if not in_range_ns(value):
            where = f"trace {trace:.64}, span {span:.64}"
            return name, value, f"not a UnixNano time in 2000-2099 ({where})"
    (_, start), (end_name, end) = times.items()
    return (end_name, end, "before start") if end < start else None


def bad_value(
    file: str,
    field_name: str,
    value: object,
    problem: str,
    line: int | None = None,
    row: int | None = None,
) -> DatasetError:
    """The error of one bad value in a trace file: file, line (or row), field and value (quoted
    and cut as every validation message quotes a value)."""
    issue = ValidationIssue(
        file, f"{problem}: {shown_value(value)}", row=row, column=field_name, line=line
    )
    return DatasetError(file, [issue])


class FileProblems:
    """The problems found in one trace file, so that a file is refused with all of them (up to
    `MAX_PROBLEMS`, then reading stops) rather than its first."""

    MAX_PROBLEMS = MAX_FILE_ISSUES

    def __init__(self, label: str) -> None:
        self.label = label
        self.issues: list[ValidationIssue] = []

    @property
    def full(self) -> bool:
        """Whether `MAX_PROBLEMS` were found (the caller stops reading)."""
        return len(self.issues) >= self.MAX_PROBLEMS

    def attempt(self, read: Callable[..., T], *args: object, **kwargs: object) -> T | None:
        """`read(*args, **kwargs)`, or None after recording the `DatasetError` it raised."""
        try:
            return read(*args, **kwargs)
        except DatasetError as error:
            self.add(error)
            return None

    def add(self, error: DatasetError) -> None:
        """Record the problems of `error`."""
        self.issues.extend(error.issues)

    def raise_if_any(self) -> None:
        """Raise every problem recorded, as one `DatasetError` of the file."""
        if self.issues:
            raise DatasetError(self.label, self.issues)


def json_lines(
    path: Path, label: str, what: str, problems: FileProblems | None = None
) -> Iterator[tuple[int, object]]:
    """The line number and parsed JSON of each non-blank line of a file (decompressed as it is
    read when zstd or gzip). A line that is not JSON (or not UTF-8), named by the file, the
    line and `what` it should hold, is recorded in `problems` and skipped, or raised without
    `problems`; corrupt compressed data always raises."""
    with open_decompressed(path) as handle:
        for number, raw in _lines(handle, label, what):
            if problems is not None and problems.full:
                return
            try:
                value = _json_line(raw, number, label, what)
            except DatasetError as error:
                if problems is None:
                    raise
                problems.add(error)
                continue
            if value is not _BLANK:
                yield number, value


def _lines(handle: BinaryIO, label: str, what: str) -> Iterator[Line]:
    """The physical lines of `handle`; corrupt compressed data raises naming file and line."""
    number = 0
    try:
        for line in handle_lines(handle):
            number = line.number
            yield line
    except DECOMPRESSION_ERRORS as error:
        raise bad_value(label, what, error, "corrupt compressed data", line=number + 1) from None


_BLANK = object()


def _json_line(raw: bytes | None, number: int, label: str, what: str) -> object:
    """The JSON value of one line (`_BLANK` for a blank line; `raw` None: over the record
    limit, `datasets.lines`)."""
    if raw is None:
        raise bad_value(label, what, "", too_long(max_record_bytes()), line=number)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        bad = raw[error.start : error.end]
        raise bad_value(label, what, bad, "not UTF-8 text", line=number) from None
    if not text.strip():
        return _BLANK
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise bad_value(label, what, text[:40], error.msg, line=number) from None
