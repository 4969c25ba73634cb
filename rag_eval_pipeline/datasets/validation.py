"""Schema validation of dataset tables: columns, types, unique keys, ranges and references.

Each check is vectorized over the whole column and reports the offending rows by file, row
(and source line) and column, so a user can fix a 100k-row file without guessing. Values are
coerced to their final types here (ids to str, grades to int, flags to bool), so the rest of the
pipeline never re-parses input.
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rag_eval_pipeline.datasets.errors import ValidationIssue
from rag_eval_pipeline.datasets.timestamps import PROBLEM as TIMESTAMP_PROBLEM
from rag_eval_pipeline.datasets.timestamps import parse_timestamps
from rag_eval_pipeline.metrics.text import nested_quantifier
from rag_eval_pipeline.metrics.traffic import satisfaction_scores
from rag_eval_pipeline.text.shown import shown_value

MAX_ROWS_PER_ISSUE = 5
SOURCE_NAMES = "source_names"  # frame.attrs key: our column name → the file's
MAX_TEXT_CHARS = 1_000_000
MAX_ID_CHARS_ENV = "RAG_EVAL_MAX_ID_CHARS"
DEFAULT_MAX_ID_CHARS = 512
MAX_LISTED_COLUMNS = 30
_COLUMN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_ .-]{0,63}")
TRUE_WORDS = frozenset({"yes", "true", "1", "y", "show"})
FALSE_WORDS = frozenset({"no", "false", "0", "n", "hide"})


def max_id_chars() -> int:
    """The longest id (query, document, session, trace, log, label ids; each id of a list):
    `RAG_EVAL_MAX_ID_CHARS`, 512 characters by default."""
    return int(os.environ.get(MAX_ID_CHARS_ENV) or DEFAULT_MAX_ID_CHARS)


@dataclass(frozen=True)
class Column:
    """The expected type and range of one column."""

    name: str
    kind: (
        str  # id | text | int | float | bool | list (of ids) | texts | timestamp | feedback | regex
    )
    required: bool = True
    nullable: bool = False
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True)
class TableSchema:
    """Columns, unique key and any columns matched by prefix (e.g. `human_score_*`)."""

    name: str
    columns: tuple[Column, ...]
    key: tuple[str, ...] = ()
    prefixed: tuple[Column, ...] = ()


class TableValidator:
    """Collects the issues of one table read from `file`, coercing columns as it goes."""

    def __init__(
        self,
        frame: pd.DataFrame,
        file: str,
        max_text_chars: int = MAX_TEXT_CHARS,
        first_row: int = 1,
    ) -> None:
        """`first_row`: the file's row number of the frame's first row (a chunk of a file)."""
        self.first_row = first_row
        self.lines: Sequence[int] | None = frame.attrs.get("lines")
        # A reader that renamed the file's columns (BEIR `score` → `relevance`) says so here:
        # messages use the file's own names.
        self.source_names: dict[str, str] = dict(frame.attrs.get(SOURCE_NAMES, {}))
        self.frame = frame.reset_index(drop=True)
        self.frame.attrs = {}
        self.file = file
        self.max_text_chars = max_text_chars
        self.issues: list[ValidationIssue] = []

    def report(
        self,
        mask: np.ndarray,
        column: str | None,
        message: str,
        values: pd.Series | Callable[[int], object] | None = None,
    ) -> None:
        """Add one issue per offending row (the first few), then a count of the rest.

        With `values` (a column, or a function of the row position), each issue's message gets
        the row's value: `message` holds `{value}`.
        """
        rows = np.flatnonzero(mask)
        column = self.shown_column(column)
        for position in rows[:MAX_ROWS_PER_ISSUE]:
            line = int(self.lines[position]) if self.lines is not None else None
            text = message
            if values is not None:
                value = values.iloc[position] if isinstance(values, pd.Series) else values(position)
                text = message.format(value=shown_value(value))
            self.issues.append(
                ValidationIssue(self.file, text, self.first_row + int(position), column, line)
            )
        if len(rows) > MAX_ROWS_PER_ISSUE:
            generic = message.replace(": {value}", "").replace(" {value}", "")
            self.issues.append(
                ValidationIssue(
                    self.file,
                    f"{generic} (and {len(rows) - MAX_ROWS_PER_ISSUE} more rows)",
                    column=column,
                )
            )

    def shown_column(self, column: str | None) -> str | None:
        """`column` (or `a,b` of a key) as the file names it."""
        if column is None:
            return None
        return ",".join(self.source_names.get(part, part) for part in column.split(","))

    def check_schema(self, schema: TableSchema) -> pd.DataFrame:
        """Check and coerce every column of `schema`; return the coerced frame."""
        columns = list(schema.columns) + [
            Column(name, spec.kind, required=False, nullable=True, low=spec.low, high=spec.high)
            for spec in schema.prefixed
            for name in self.frame.columns
            if name.startswith(spec.name)
        ]
        for column in columns:
            if column.name not in self.frame.columns:
                if column.required:
                    found = shown_columns(self.frame.columns)
                    self.issues.append(
                        ValidationIssue(
                            self.file,
                            f"missing required column (found: {found})",
                            column=self.shown_column(column.name),
                        )
                    )
                continue
            self._check_column(column)
        if schema.key and all(k in self.frame.columns for k in schema.key):
            duplicated = self.frame.duplicated(list(schema.key), keep="first").to_numpy()
            key_columns = [self.frame[k] for k in schema.key]

            def key_at(position: int) -> str:
                return ", ".join(str(column.iloc[position]) for column in key_columns)

            self.report(duplicated, ",".join(schema.key), "duplicate key {value}", key_at)
        return self.frame

    def _check_column(self, column: Column) -> None:
        values = self.frame[column.name]
        missing = values.isna().to_numpy()
        if not column.nullable:
            self.report(missing, column.name, "missing value")
        coerce = COERCERS[column.kind]
        converted, bad = coerce(values, missing)
        kind = TIMESTAMP_PROBLEM if column.kind == "timestamp" else f"a valid {column.kind} value"
        self.report(bad, column.name, f"not {kind}: {{value}}", values)
        if column.kind in ("text", "texts"):
            too_long = (
                ~missing & ~bad & (converted.map(_text_length).to_numpy() > self.max_text_chars)
            )
            limit = f"{self.max_text_chars:,}"
            message = f"text longer than {limit} characters: {{value}}"
            self.report(too_long, column.name, message, values)
        if column.kind == "id" or (column.kind == "list" and column.name.endswith("_ids")):
            self._check_id_lengths(column.name, converted, ~missing & ~bad, values)
        if column.kind == "regex":
            nested = ~missing & ~bad & converted.map(_nests_quantifiers).to_numpy(dtype=bool)
            message = "pattern {value} repeats a group holding a quantifier (nested quantifiers)"
            self.report(nested, column.name, message, converted)
        if column.low is not None or column.high is not None:
            numeric = pd.to_numeric(converted, errors="coerce").to_numpy(dtype=float)
            low = -np.inf if column.low is None else column.low
            high = np.inf if column.high is None else column.high
            out = ~missing & ~bad & ((numeric < low) | (numeric > high))
            message = f"out of range [{column.low}, {column.high}]: {{value}}"
            self.report(out, column.name, message, values)
        self.frame[column.name] = converted

    def _check_id_lengths(
        self, name: str, converted: pd.Series, present: np.ndarray, values: pd.Series
    ) -> None:
        """Report ids (or ids of a list of ids, a `*_ids` column) longer than
        `max_id_chars()`."""
        limit = max_id_chars()
        if converted.dtype == object:
            lengths = converted.map(_text_length).to_numpy(dtype=np.int64)
        else:
            lengths = converted.str.len().to_numpy(dtype=np.int64, na_value=0)
        message = f"id longer than {limit:,} characters ({MAX_ID_CHARS_ENV}): {{value}}"
        self.report(present & (lengths > limit), name, message, values)

    def check_references(self, column: str, known: set[str] | pd.Index, target: str) -> None:
        """Report values of `column` that do not exist in the `target` table.

        `known` may be a unique `pd.Index`, whose hash table is built once and reused (a table
        validated chunk by chunk).
        """
        if column not in self.frame.columns:
            return
        values = self.frame[column]
        found = (
            known.get_indexer(values.astype(object)) >= 0
            if isinstance(known, pd.Index)
            else values.isin(known).to_numpy()
        )
        unknown = values.notna().to_numpy() & ~found
        self.report(unknown, column, f"unknown id {{value}}: not in {target}", values)

    def check_list_references(self, column: str, known: set[str], target: str) -> None:
        """Report list cells of `column` holding an id that does not exist in `target`.

        A cell written as `a|b|c` whose ids are unknown may be one id holding `|`: the message
        says how to write it then.
        """
        if column not in self.frame.columns:
            return
        first_unknown = self.frame[column].map(
            lambda ids: (
                next((i for i in ids if i not in known), None) if isinstance(ids, list) else None
            )
        )
        hint = ""
        if any("|" in i for i in known):
            hint = " (an id that holds '|' needs a JSON list cell: [\"kb|001\"])"
        message = f"unknown id {{value}}: not in {target}{hint}"
        self.report(first_unknown.notna().to_numpy(), column, message, first_unknown)


def shown_columns(columns: pd.Index) -> str:
    """The column names of a table for an error message, unless they do not look like column
    names (a file that is not a dataset table: its first line is never echoed)."""
    names = [str(c) for c in columns]
    if not names:
        return "none"
    if len(names) > MAX_LISTED_COLUMNS or not all(map(_COLUMN_NAME.fullmatch, names)):
        return f"{len(names)} columns that do not look like column names; is it a data table?"
    return ", ".join(names)


def _text_length(value: object) -> int:
    if isinstance(value, str):
        return len(value)
    if isinstance(value, list):
        return max((len(item) for item in value if isinstance(item, str)), default=0)
    return 0


def is_missing(value: object) -> bool:
    """None, NaN and pandas NA (and never a list or other container)."""
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _is_scalar(value: object) -> bool:
    return isinstance(value, str | int | float | np.integer | np.floating) and not isinstance(
        value, bool
    )


def _coerce_id(values: pd.Series, missing: np.ndarray) -> tuple[pd.Series, np.ndarray]:
    """Ids as stripped strings (pandas' vectorized string dtype); blank, boolean or container
    values (lists, objects) are bad."""
    not_scalar = (
        ~values.map(lambda v: is_missing(v) or _is_scalar(v)).to_numpy(dtype=bool)
        if values.dtype == object
        else np.zeros(len(values), dtype=bool)
    )
    text = values.where(~not_scalar, None).astype("str").str.strip()
    bad = ~missing & (not_scalar | text.fillna("").eq("").to_numpy())
    return text, bad


def _coerce_text(values: pd.Series, missing: np.ndarray) -> tuple[pd.Series, np.ndarray]:
    is_str = values.map(lambda v: isinstance(v, str)).to_numpy()
    blank = values.map(lambda v: isinstance(v, str) and not v.strip()).to_numpy()
    return values.astype(object), (~missing & ~is_str) | blank


def _parsed_strings(values: pd.Series, integer: bool) -> pd.Series | None:
    """Arrow's string → float64 cast of a string column (TREC runs and qrels arrive as strings),
    when every present value parses and integers stay below 2**53; None otherwise, so that
    `pd.to_numeric` handles the rest (whitespace, bad values: each one reported by row).

    It is about 12 times faster than `pd.to_numeric` on millions of rows and rounds correctly,
    like Python's `float` and trec_eval's `strtod` (tested to give the same values).
    """
    if values.dtype == object or not pd.api.types.is_string_dtype(values.dtype):
        return None
    strings = pa.array(values.array)
    if not pa.types.is_string(strings.type) and not pa.types.is_large_string(strings.type):
        return None
    try:
        parsed = pc.cast(strings, pa.float64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:
        return None
    if integer and (np.abs(parsed[np.isfinite(parsed)]) >= 2**53).any():
        return None
    return pd.Series(parsed, index=values.index, name=values.name)


def _coerce_number(
    values: pd.Series, missing: np.ndarray, integer: bool
) -> tuple[pd.Series, np.ndarray]:
    numeric = _parsed_strings(values, integer)
    if numeric is None:
        numeric = pd.to_numeric(
            values.map(lambda v: v if is_missing(v) or _is_scalar(v) else None)
            if values.dtype == object
            else values,
            errors="coerce",
        )
    bad = ~missing & ~np.isfinite(numeric.to_numpy(dtype=float, na_value=np.nan))
    if integer:
        as_float = numeric.to_numpy(dtype=float)
        bad |= ~missing & ~bad & ((np.floor(as_float) != as_float) | (np.abs(as_float) >= 2**63))
        if bad.any():
            return numeric, bad
        return numeric.astype("Int64" if missing.any() else "int64"), bad
    return numeric.astype("float64"), bad


def _coerce_bool(values: pd.Series, missing: np.ndarray) -> tuple[pd.Series, np.ndarray]:
    def parse(value: object) -> bool | None:
        if isinstance(value, bool | np.bool_):
            return bool(value)
        word = str(value).strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
        return None

    parsed = values.map(lambda v: None if is_missing(v) else parse(v))
    bad = ~missing & parsed.isna().to_numpy()
    return parsed.astype(object), bad


def _coerce_list(values: pd.Series, missing: np.ndarray) -> tuple[pd.Series, np.ndarray]:
    def parse(value: object) -> list[str] | None:
        if isinstance(value, list | tuple | np.ndarray):
            items = list(value)
            return [str(item) for item in items] if all(map(_is_scalar, items)) else None
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                try:
                    items = json.loads(text)
                except json.JSONDecodeError:
                    return None
                if not isinstance(items, list) or not all(map(_is_scalar, items)):
                    return None
                return [str(item) for item in items]
            return [part.strip() for part in text.split("|") if part.strip()]
        return None

    parsed = values.map(lambda v: None if is_missing(v) else parse(v))
    bad = ~missing & parsed.isna().to_numpy()
    return parsed.astype(object), bad


def _parse_text_list(value: object) -> list[str] | None:
    """A list of texts: a list, a JSON list, a Python list literal (ragas' CSV export) or one
    plain text; None unless every item is a non-blank string."""
    items: object = value
    if isinstance(value, np.ndarray | tuple):
        items = list(value)
    elif isinstance(value, str):
        text = value.strip()
        items = [value]
        if text.startswith("[") and text.endswith("]"):
            try:
                items = json.loads(text)
            except json.JSONDecodeError:
                try:
                    items = ast.literal_eval(text)
                except (ValueError, SyntaxError, MemoryError, RecursionError):
                    return None
    if not isinstance(items, list) or not all(isinstance(i, str) and i.strip() for i in items):
        return None
    return items


def _coerce_texts(values: pd.Series, missing: np.ndarray) -> tuple[pd.Series, np.ndarray]:
    parsed = values.map(lambda v: None if is_missing(v) else _parse_text_list(v))
    bad = ~missing & parsed.isna().to_numpy()
    return parsed.astype(object), bad


def _coerce_timestamp(values: pd.Series, missing: np.ndarray) -> tuple[pd.Series, np.ndarray]:
    """Date-times to tz-aware UTC by the one rule of `datasets.timestamps` (ISO 8601 with a
    date and a time, or an epoch number, in 2000-2099)."""
    parsed = parse_timestamps(values.where(~missing, None))
    return parsed, ~missing & parsed.isna().to_numpy()


def _coerce_feedback(values: pd.Series, missing: np.ndarray) -> tuple[pd.Series, np.ndarray]:
    """Thumbs up/down or a 1–5 rating, to satisfaction in [0, 1] (`satisfaction_scores`)."""
    scores = satisfaction_scores(values.where(~missing, None).tolist())
    return pd.Series(scores, index=values.index), ~missing & np.isnan(scores)


def _coerce_regex(values: pd.Series, missing: np.ndarray) -> tuple[pd.Series, np.ndarray]:
    """A text that compiles as a Python regular expression."""

    def compiles(value: object) -> bool:
        try:
            re.compile(str(value))
        except re.error:
            return False
        return isinstance(value, str) and bool(value.strip())

    valid = values.map(lambda v: is_missing(v) or compiles(v)).to_numpy(dtype=bool)
    return values.astype(object), ~missing & ~valid


def _nests_quantifiers(value: object) -> bool:
    return isinstance(value, str) and nested_quantifier(value)


COERCERS: dict[str, Callable[[pd.Series, np.ndarray], tuple[pd.Series, np.ndarray]]] = {
    "id": _coerce_id,
    "text": _coerce_text,
    "int": lambda values, missing: _coerce_number(values, missing, integer=True),
    "float": lambda values, missing: _coerce_number(values, missing, integer=False),
    "bool": _coerce_bool,
    "list": _coerce_list,
    "texts": _coerce_texts,
    "timestamp": _coerce_timestamp,
    "feedback": _coerce_feedback,
    "regex": _coerce_regex,
}

CORPUS = TableSchema(
    "corpus",
    (
        Column("doc_id", "id"),
        Column("text", "text"),
        Column("title", "text", required=False, nullable=True),
        Column("cluster", "id", required=False, nullable=True),
    ),
    key=("doc_id",),
)
QUERIES = TableSchema(
    "queries",
    (
        Column("query_id", "id"),
        Column("question", "text"),
        Column("ground_truth_answer", "text", required=False, nullable=True),
        Column("session_id", "id", required=False, nullable=True),
        Column("turn", "int", required=False, nullable=True, low=1),
        Column("expected_pattern", "regex", required=False, nullable=True),
    ),
    key=("query_id",),
)
QRELS = TableSchema(
    "qrels",
    (Column("query_id", "id"), Column("doc_id", "id"), Column("relevance", "int")),
    key=("query_id", "doc_id"),
)
RUNS = TableSchema(
    "runs",
    (
        Column("system", "id"),
        Column("query_id", "id"),
        Column("doc_id", "id"),
        Column("rank", "int", low=1),
        Column("score", "float"),
    ),
    key=("system", "query_id", "doc_id"),
)
# Optional production-traffic columns of `logs.*` (the traffic tier).
TRAFFIC_COLUMNS = (
    Column("timestamp", "timestamp", required=False, nullable=True),
    Column("retrieval_latency_ms", "float", required=False, nullable=True, low=0),
    Column("generation_latency_ms", "float", required=False, nullable=True, low=0),
    Column("error", "text", required=False, nullable=True),
    Column("cost_usd", "float", required=False, nullable=True, low=0),
    Column("model", "id", required=False, nullable=True),
    Column("prompt_tokens", "float", required=False, nullable=True, low=0),
    Column("completion_tokens", "float", required=False, nullable=True, low=0),
    Column("feedback", "feedback", required=False, nullable=True),
    Column("contexts", "list", required=False, nullable=True),
)
LOGS = TableSchema(
    "logs",
    (
        Column("question", "text"),
        Column("retrieved_doc_ids", "list"),
        Column("log_id", "id", required=False),
        Column("session_id", "id", required=False, nullable=True),
        Column("answer", "text", required=False, nullable=True),
        Column("shown_doc_id", "id", required=False, nullable=True),
        Column("latency_ms", "float", required=False, nullable=True, low=0),
        *TRAFFIC_COLUMNS,
    ),
    key=("log_id",),
)
JUDGE_LABELS = TableSchema(
    "judge_labels",
    (
        Column("question", "text"),
        Column("context", "text"),
        Column("answer", "text"),
        Column("label_id", "id", required=False),
        Column("ground_truth_show", "bool", required=False, nullable=True),
        Column("ground_truth_answer", "text", required=False, nullable=True),
    ),
    key=("label_id",),
    prefixed=tuple(
        Column(f"human_{criterion}_", "float", low=1, high=5)
        for criterion in ("score", "faithfulness", "relevance", "correctness", "overall")
    ),
)
ANSWERS = TableSchema(
    "answers",
    (
        Column("query_id", "id"),
        Column("answer", "text"),
        Column("retrieved_doc_ids", "list", required=False, nullable=True),
        Column("latency_ms", "float", required=False, nullable=True, low=0),
    ),
    key=("query_id",),
)
SCHEMAS = {s.name: s for s in (CORPUS, QUERIES, QRELS, RUNS, LOGS, JUDGE_LABELS, ANSWERS)}
