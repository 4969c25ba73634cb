"""Readers for dataset files: JSONL, CSV, TSV, Parquet, TREC qrels, BEIR qrels and TREC runs.

Every reader returns a DataFrame whose `attrs["lines"]` holds the 1-based source line of each row
(where the format has lines), so validation errors can point at the exact place in the file.
Identifiers are read as strings: `007` and `7` are different documents, as in trec_eval.
Text files are read line by line in bounded memory (`datasets.lines`: a UTF-8 byte-order mark
is skipped, a line over `RAG_EVAL_MAX_RECORD_BYTES` is a problem, not an allocation), and every
problem of a file is listed at once, up to `MAX_FILE_ISSUES`.
"""

from __future__ import annotations

import csv
import json
from array import array
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyarrow import csv as pa_csv

from rag_eval_pipeline.datasets.errors import MAX_FILE_ISSUES, DatasetError, ValidationIssue
from rag_eval_pipeline.datasets.lines import (
    MAX_RECORD_BYTES_ENV,
    NOT_UTF8,
    max_record_bytes,
    physical_lines,
    text_lines,
    too_long,
)
from rag_eval_pipeline.datasets.validation import SOURCE_NAMES
from rag_eval_pipeline.text.shown import shown_value

JSONL_BATCH_ROWS = 1 << 16
DELIMITED_CHUNK_ROWS = 1 << 16
DELIMITERS = {".csv": ",", ".tsv": "\t"}
ID_COLUMNS = ("doc_id", "query_id", "session_id", "label_id", "log_id", "shown_doc_id")
TREC_QRELS_COLUMNS = ("query_id", "iteration", "doc_id", "relevance")
TREC_RUN_COLUMNS = ("query_id", "q0", "doc_id", "rank", "score", "tag")
BEIR_QRELS_HEADER = ("query-id", "corpus-id", "score")


def _with_lines(frame: pd.DataFrame, lines: list[int] | np.ndarray) -> pd.DataFrame:
    frame.attrs["lines"] = lines
    return frame


def _ids_as_str(frame: pd.DataFrame) -> pd.DataFrame:
    for column in ID_COLUMNS:
        if column in frame.columns:
            frame[column] = frame[column].map(
                lambda v: str(v) if isinstance(v, str | int | float) and v == v else v
            )
    return frame


JSON_TYPES = {
    "list": "array",
    "str": "string",
    "int": "number",
    "float": "number",
    "NoneType": "null",
    "bool": "boolean",
}


def read_jsonl(path: Path) -> pd.DataFrame:
    """`jsonl_chunks` of the whole file as one frame."""
    return _whole(jsonl_chunks(path, JSONL_BATCH_ROWS))


def jsonl_chunks(path: Path, rows: int) -> Iterator[pd.DataFrame]:
    """One JSON object per line, `rows` objects at a time; blank lines are skipped.

    Each chunk has `attrs["lines"]`, and every column seen in an earlier chunk (null where a
    line lacks its key, as in one frame of the file). Every bad line is named by row and line (up
    to `MAX_FILE_ISSUES`): after the first, no chunk is yielded, the rest of the file is read
    for its problems, and `DatasetError` lists them all. Memory holds one chunk of objects."""
    records: list[dict] = []
    lines = array("q")
    issues: list[ValidationIssue] = []
    columns: dict[str, None] = {}  # every key seen so far, in order of first appearance
    row, yielded = 0, False
    for number, text, unreadable in text_lines(path):
        if text is not None and not text.strip():
            continue
        row += 1
        record, problem = (None, unreadable) if text is None else _json_object(text)
        if problem:
            issues.append(ValidationIssue(path.name, problem, row, line=number))
            if len(issues) >= MAX_FILE_ISSUES:
                break
        elif not issues:  # a refused file's records are not kept
            records.append(record)
            lines.append(number)
            if len(records) >= rows:
                yield _jsonl_frame(records, lines, columns)
                records, lines, yielded = [], array("q"), True
    if issues:
        raise DatasetError(str(path), issues)
    if records or not yielded:
        yield _jsonl_frame(records, lines, columns)


def _jsonl_frame(records: list[dict], lines: array, columns: dict[str, None]) -> pd.DataFrame:
    """The records as a frame with every column of `columns` (updated with theirs); ids are
    taken from the records themselves (a column of integers and nulls would make `7` a float)."""
    frame = pd.DataFrame.from_records(records)
    columns.update(dict.fromkeys(frame.columns))
    if list(frame.columns) != list(columns):
        frame = frame.reindex(columns=list(columns))
    for column in ID_COLUMNS:
        if column in frame.columns and frame[column].dtype.kind == "f":
            frame[column] = pd.Series([r.get(column) for r in records], dtype=object)
    return _with_lines(_ids_as_str(frame), np.frombuffer(lines, dtype=np.int64).copy())


def _whole(chunks: Iterator[pd.DataFrame]) -> pd.DataFrame:
    """The chunks of a file as one frame, with the lines of all (a column null in one chunk
    is `object` there: its type is inferred again, as one frame of the file would have it)."""
    frames = list(chunks)
    if len(frames) <= 1:
        return frames[0] if frames else _with_lines(pd.DataFrame(), np.empty(0, np.int64))
    lines = np.concatenate([frame.attrs.pop("lines") for frame in frames])
    return _with_lines(pd.concat(frames, ignore_index=True).infer_objects(), lines)


def _json_object(text: str) -> tuple[dict | None, str | None]:
    """The JSON object of one line, or the problem with it (`NaN` is kept as the text `NaN`:
    a bad number, not a missing value)."""
    try:
        record = json.loads(text, parse_constant=str)
    except json.JSONDecodeError as error:
        return None, f"invalid JSON: {error.msg} at character {error.colno}"
    if not isinstance(record, dict):
        found = JSON_TYPES.get(type(record).__name__, "value")
        return None, f"each line must be a JSON object, found a JSON {found}"
    return record, None


def read_delimited(path: Path, delimiter: str) -> pd.DataFrame:
    """`delimited_chunks` of the whole file as one frame."""
    return _whole(delimited_chunks(path, delimiter, DELIMITED_CHUNK_ROWS))


def delimited_chunks(path: Path, delimiter: str, rows: int) -> Iterator[pd.DataFrame]:
    """CSV/TSV with a header row, `rows` records at a time; every value read as text (an
    empty one as null), numbers converted by validation; each chunk has `attrs["lines"]`.

    A pass ahead of pandas (`_record_starts`, Python's `csv`) finds the physical line each
    record starts on (a quoted field may span lines) and every problem pandas would stop at or
    not place: lines that are not UTF-8 (by row and line), records with more fields than the
    header, records over `RAG_EVAL_MAX_RECORD_BYTES`. Pandas reads a chunk only once that pass
    found no problem up to its end; after a problem, no chunk is yielded, the rest of the file
    is read for its problems (up to `MAX_FILE_ISSUES`) and `DatasetError` lists them all."""
    issues: list[ValidationIssue] = []
    starts = _record_starts(path, delimiter, issues)
    pending = array("q", islice(starts, rows))
    failure: Exception | None = None
    try:
        with pd.read_csv(
            path,
            sep=delimiter,
            dtype=str,
            keep_default_na=False,
            na_values=[""],  # only an empty value is missing: "NA" and "null" are text
            quoting=csv.QUOTE_MINIMAL,
            chunksize=rows,
        ) as reader:
            while not issues and (frame := next(reader, None)) is not None:
                pending.extend(islice(starts, rows))
                lines, pending = _first_lines(pending, len(frame)), pending[len(frame) :]
                yield _with_lines(frame, lines)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as error:
        failure = error
    for _ in starts:  # the rest of the file's problems
        pass
    if issues:
        raise DatasetError(str(path), issues)
    if failure is not None:
        raise _unreadable_text(path, failure) from failure


def _first_lines(starts: array, count: int) -> np.ndarray:
    """The first `count` record starts; numbered on from the last when the two parsers read
    the layout differently (fewer records found than pandas reads)."""
    lines = np.frombuffer(starts, dtype=np.int64)[:count].copy()
    last = int(lines[-1]) if len(lines) else 1
    return np.concatenate([lines, np.arange(last + 1, last + 1 + count - len(lines))])


def _unreadable_text(path: Path, error: Exception) -> DatasetError:
    if isinstance(error, pd.errors.EmptyDataError):
        return DatasetError(
            str(path), [ValidationIssue(path.name, "empty file: a header row is required")]
        )
    return _unreadable(path, error)


def _record_starts(path: Path, delimiter: str, issues: list[ValidationIssue]) -> Iterator[int]:
    """The first physical line of each data record; its problems go to `issues` (the pass
    stops at `MAX_FILE_ISSUES`)."""
    bad_lines: dict[int, str] = {}
    reader = csv.reader(_decoded_lines(path, bad_lines), delimiter=delimiter)
    header_fields, previous_end, rows = 0, 0, 0
    try:
        for record in reader:
            start, previous_end = previous_end + 1, reader.line_num
            row = None
            unreadable = not record and start in bad_lines  # a line over the record limit
            if (record or unreadable) and header_fields:
                rows += 1
                row = rows
                yield start
            header_fields = header_fields or len(record)
            for line in [n for n in bad_lines if n <= previous_end]:
                issues.append(ValidationIssue(path.name, bad_lines.pop(line), row, line=line))
            if row is not None and len(record) > header_fields:
                problem = f"{len(record)} fields where the header has {header_fields}"
                issues.append(ValidationIssue(path.name, problem, row, line=start))
            if len(issues) >= MAX_FILE_ISSUES:
                return
    except csv.Error as error:  # a quoted field running past the record limit
        problem = f"unreadable record ({error}; the limit is {MAX_RECORD_BYTES_ENV})"
        issues.append(ValidationIssue(path.name, problem, rows + 1, line=previous_end + 1))


def _decoded_lines(path: Path, bad_lines: dict[int, str]) -> Iterator[str]:
    """The file's lines as text; a line that is not UTF-8 is decoded with replacement
    characters (its quotes and separators, ASCII, stay in place), one over the record limit
    is read as a blank line, and either is recorded in `bad_lines` (line → problem)."""
    limit = max_record_bytes()
    csv.field_size_limit(max(csv.field_size_limit(), limit))
    for number, raw in physical_lines(path, limit):
        if raw is None:
            bad_lines[number] = too_long(limit)
            yield "\n"
            continue
        try:
            yield raw.decode("utf-8")
        except UnicodeDecodeError:
            bad_lines[number] = NOT_UTF8
            yield raw.decode("utf-8", errors="replace")


def read_parquet(path: Path) -> pd.DataFrame:
    """A Parquet table; rows are numbered from 1 in error messages. A NaN stored in a float
    column (unlike a null) is kept as the text `NaN`, so validation refuses it as a number
    rather than taking it for a missing value."""
    try:
        return _parquet_frame(pq.read_table(path))
    except DatasetError:
        raise
    except Exception as error:  # pyarrow raises several unrelated types for corrupt files
        raise _unreadable(path, error) from error


def parquet_chunks(path: Path, rows: int) -> Iterator[pd.DataFrame]:
    """`read_parquet` of `path`, `rows` rows at a time (row groups are read as needed)."""
    try:
        batches = pq.ParquetFile(path).iter_batches(batch_size=rows)
        for batch in batches:
            yield _parquet_frame(pa.Table.from_batches([batch]))
    except Exception as error:
        raise _unreadable(path, error) from error


def _unreadable(path: Path, error: Exception) -> DatasetError:
    return DatasetError(str(path), [ValidationIssue(path.name, f"unreadable: {error}")])


def _parquet_frame(table: pa.Table) -> pd.DataFrame:
    frame = table.to_pandas()
    for name in (f.name for f in table.schema if pa.types.is_floating(f.type)):
        stored_nan = pc.fill_null(pc.is_nan(table[name]), False).to_numpy(zero_copy_only=False)
        if stored_nan.any() and name in frame.columns:
            frame[name] = frame[name].astype(object).where(~stored_nan, "NaN")
    return _ids_as_str(frame)


def _count_lines(path: Path) -> int:
    """Number of lines (a last line without a newline counts too)."""
    count, last = 0, b"\n"
    with open(path, "rb") as handle:
        while block := handle.read(1 << 24):
            count += block.count(b"\n")
            last = block[-1:]
    return count + (last != b"\n")


ARROW_BLOCK_BYTES = 16 << 20


def _field_delimiter(path: Path) -> str:
    """A tab if the first line separates its fields with tabs, else a space."""
    first = _first_line(path)
    return "\t" if "\t" in first and " " not in first.strip() else " "


class IrregularLayout(Exception):
    """The file is not one complete record per line with single separators (see
    :func:`whitespace_column_batches`): it needs the line-by-line reader."""


def whitespace_column_batches(
    path: Path, columns: tuple[str, ...], block_bytes: int | None = None
) -> Iterator[pd.DataFrame]:
    """A headerless whitespace-separated file (TREC formats) as DataFrames of Arrow-backed
    string columns, one per block of `block_bytes`, each with `attrs["lines"]`.

    Arrow's streaming CSV reader: memory holds one block, never the file, and no Python string
    objects. It applies when every line is a complete record with single-space (or single-tab)
    separators (the common case, and the only one that matters at 100M lines); anything else
    (blank lines, runs of spaces, short or long lines, such as a run's fields after the sixth,
    bad UTF-8) raises `IrregularLayout`, possibly after some blocks were yielded (the line
    count is checked at the end).
    """
    text = pd.StringDtype("pyarrow", na_value=np.nan)  # what `dtype=str` reads as
    rows = 0
    try:
        reader = pa_csv.open_csv(
            path,
            read_options=pa_csv.ReadOptions(
                column_names=list(columns), block_size=block_bytes or ARROW_BLOCK_BYTES
            ),
            parse_options=pa_csv.ParseOptions(
                delimiter=_field_delimiter(path),
                quote_char=False,
                escape_char=False,
                ignore_empty_lines=False,
            ),
            convert_options=pa_csv.ConvertOptions(
                column_types=dict.fromkeys(columns, pa.string()),
                null_values=[],
                strings_can_be_null=False,
            ),
        )
        for batch in reader:
            if any(pc.any(pc.equal(pc.utf8_length(batch[c]), 0)).as_py() for c in columns):
                raise IrregularLayout(path)
            frame = batch.to_pandas(types_mapper={pa.string(): text}.get)
            yield _with_lines(frame, np.arange(rows + 1, rows + len(frame) + 1))
            rows += len(frame)
    except (pa.ArrowInvalid, UnicodeDecodeError) as error:
        raise IrregularLayout(path) from error
    if rows != _count_lines(path):
        raise IrregularLayout(path)


def read_whitespace_columns(
    path: Path, columns: tuple[str, ...], extra_fields_ignored: bool = False
) -> pd.DataFrame:
    """The whole file of :func:`whitespace_column_batches` (its fast path), or, for any other
    layout, a line-by-line read that names each bad line.

    `extra_fields_ignored`: a line may carry fields after `columns`, which are dropped (what
    trec_eval does with a run line's fields after the sixth); otherwise they are an error
    (trec_eval refuses a qrels line with a fifth field)."""
    try:
        frames = list(whitespace_column_batches(path, columns))
    except IrregularLayout:
        return _read_whitespace_lines(path, columns, extra_fields_ignored)
    if not frames:
        return _read_whitespace_lines(path, columns, extra_fields_ignored)
    for block in frames:
        block.attrs = {}  # each block's own lines; the whole file's are set below
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    return _with_lines(frame, np.arange(1, len(frame) + 1))


def _read_whitespace_lines(
    path: Path, columns: tuple[str, ...], extra_fields_ignored: bool
) -> pd.DataFrame:
    rows: list[list[str]] = []
    lines: list[int] = []
    issues: list[ValidationIssue] = []
    row = 0
    expected = f"{'at least ' if extra_fields_ignored else ''}{len(columns)}"
    for number, text, unreadable in text_lines(path):
        parts = [] if text is None else text.split()
        if text is not None and not parts:
            continue
        row += 1
        short = len(parts) < len(columns)
        if text is None or short or (len(parts) > len(columns) and not extra_fields_ignored):
            problem = unreadable or (
                f"expected {expected} whitespace-separated fields "
                f"({' '.join(columns)}), found {len(parts)}: {shown_value(text.strip())}"
            )
            issues.append(ValidationIssue(path.name, problem, row, line=number))
            if len(issues) >= MAX_FILE_ISSUES:
                break
            continue
        rows.append(parts[: len(columns)])
        lines.append(number)
    if issues:
        raise DatasetError(str(path), issues)
    return _with_lines(pd.DataFrame(rows, columns=list(columns), dtype=str), lines)


def _first_line(path: Path) -> str:
    """The first line (a byte-order mark skipped), at most the record limit of it."""
    with open(path, "rb") as handle:
        return handle.readline(max_record_bytes()).decode("utf-8-sig", errors="replace")


def read_qrels(path: Path) -> pd.DataFrame:
    """Qrels as `query_id, doc_id, relevance` from any supported layout.

    `.trec`/`.txt`: TREC `qid iter docid rel`; `.tsv`: BEIR (`query-id corpus-id score` header)
    or TREC; `.jsonl`/`.csv`/`.parquet`: the named columns.
    """
    suffix = path.suffix.lower()
    if suffix == ".tsv" and tuple(_first_line(path).split()) == BEIR_QRELS_HEADER:
        renamed = {"query-id": "query_id", "corpus-id": "doc_id", "score": "relevance"}
        frame = read_delimited(path, "\t").rename(columns=renamed)
        frame.attrs[SOURCE_NAMES] = {ours: theirs for theirs, ours in renamed.items()}
        return frame
    if suffix in {".trec", ".txt", ".tsv"}:
        frame = read_whitespace_columns(path, TREC_QRELS_COLUMNS)
        lines = frame.attrs["lines"]
        frame = frame.drop(columns=["iteration"])
        return _with_lines(frame, lines)
    return read_table(path)


def read_trec_run(path: Path) -> pd.DataFrame:
    """A TREC run `qid Q0 docid rank score tag`; the system name is the file stem. Fields after
    the sixth are ignored, as trec_eval's `get_trec_results.c` does."""
    return _run_columns(
        read_whitespace_columns(path, TREC_RUN_COLUMNS, extra_fields_ignored=True), path
    )


def trec_run_batches(path: Path, block_bytes: int | None = None) -> Iterator[pd.DataFrame]:
    """:func:`read_trec_run` block by block (:func:`whitespace_column_batches`: raises
    `IrregularLayout` for a file that needs the line-by-line reader)."""
    for frame in whitespace_column_batches(path, TREC_RUN_COLUMNS, block_bytes):
        yield _run_columns(frame, path)


def _run_columns(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    lines = frame.attrs["lines"]
    frame = frame.drop(columns=["q0", "tag"])
    frame.insert(0, "system", path.stem)
    return _with_lines(frame, lines)


def read_table(path: Path) -> pd.DataFrame:
    """Read a table by its extension: `.jsonl`, `.csv`, `.tsv` or `.parquet`."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return read_parquet(path)
    return _whole(
        table_chunks(path, DELIMITED_CHUNK_ROWS if suffix in DELIMITERS else JSONL_BATCH_ROWS)
    )


def first_columns(path: Path) -> list[str]:
    """The columns the table of `path` names first, read from its head only: a Parquet
    file's schema, a CSV/TSV header, the keys of a JSON lines file's first object (a later
    object may add some); none when that head is unreadable."""
    suffix = path.suffix.lower()
    try:
        if suffix == ".parquet":
            return list(pq.read_schema(path).names)
        if suffix in DELIMITERS:
            return next(csv.reader([_first_line(path)], delimiter=DELIMITERS[suffix]), [])
        if suffix != ".jsonl":
            return []
        lines = (text for _, text, _ in text_lines(path) if text is None or text.strip())
        record, _ = _json_object(next(lines, None) or "")
        return list(record or ())
    except (OSError, ValueError):  # pyarrow's errors derive from these
        return []


def table_chunks(path: Path, rows: int) -> Iterator[pd.DataFrame]:
    """The table of `path` (by its extension, as `read_table`) `rows` rows at a time, each
    chunk with `attrs["lines"]` where the format has lines; the same values and problems as
    the whole file (a problem raises `DatasetError` once every chunk before it was yielded)."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return jsonl_chunks(path, rows)
    if suffix in DELIMITERS:
        return delimited_chunks(path, DELIMITERS[suffix], rows)
    if suffix == ".parquet":
        return parquet_chunks(path, rows)
    raise DatasetError(
        str(path),
        [ValidationIssue(path.name, "unsupported extension: use .jsonl, .csv, .tsv or .parquet")],
    )
