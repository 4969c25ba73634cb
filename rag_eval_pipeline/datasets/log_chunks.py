"""A version's interactions (a logs file: `logs.jsonl`, `.csv`, `.tsv` or `.parquet`; or the
interactions of `traces/`, day by day) validated chunk by chunk: the validity rule of the whole
table (`TableValidator` with the `logs` schema, then the
references to the corpus), in bounded memory.

Rows are numbered from the file's first row across chunks; a `log_id` repeated in a later chunk
is the same "duplicate key" problem as within one (found by 64-bit hashes of the ids seen, 8
bytes per row; two different ids colliding has a probability below 1e-5 for 30 million rows).
The problems are those the whole file gives: the reader's alone when the file cannot be read
(`readers.table_chunks`), else the schema's, else (none) the references'.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rag_eval_pipeline.datasets.errors import DatasetError, ValidationIssue
from rag_eval_pipeline.datasets.readers import table_chunks
from rag_eval_pipeline.datasets.validation import SCHEMAS, TableValidator

LOG_CHUNK_ROWS = 200_000
MAX_LOG_ISSUES = 100
STAGED_ROWS_RULE = 1  # part of the staged copy's key: raised when the same files stage other rows


def with_log_ids(chunk: pd.DataFrame, first: int) -> pd.DataFrame:
    """`chunk` with a `log_id`: the file's own, else the row number from 0 as text (the rule
    of `time_ordered`), `first` being the chunk's first row."""
    if "log_id" in chunk.columns:
        return chunk
    return chunk.assign(log_id=np.arange(first, first + len(chunk)).astype(str).astype(object))


def validated_log_chunks(
    path: Path,
    label: str,
    max_text_chars: int,
    corpus_ids: set[str] | None,
    rows: int | None = None,
) -> Iterator[pd.DataFrame]:
    """The logs file at `path` read in chunks of `rows` rows (default `LOG_CHUNK_ROWS`,
    `readers.table_chunks`) and validated (`validated_log_frames`).

    A required column absent from a chunk but found further on (a JSON lines key that the
    first records lack) is a missing value in each of those rows, as in the whole table: when
    validation refuses the file and such a column exists, the file is validated once more
    with it added, empty, to every chunk that lacks it, for the whole table's problems."""
    required = {column.name for column in SCHEMAS["logs"].columns if column.required}
    seen: set[str] = set()
    absent: set[str] = set()

    def chunks(added: set[str]) -> Iterator[pd.DataFrame]:
        for chunk in table_chunks(path, rows or LOG_CHUNK_ROWS):
            seen.update(chunk.columns)
            absent.update(required - set(chunk.columns))
            missing = {name: None for name in added if name not in chunk.columns}
            yield chunk.assign(**missing) if missing else chunk

    def validated(added: set[str]) -> Iterator[pd.DataFrame]:
        frames = chunks(added)
        return validated_log_frames(frames, label, max_text_chars, corpus_ids, str(path))

    try:
        yield from validated(set())
    except DatasetError:
        late = absent & seen
        if not late:
            raise
        for _ in validated(late):  # raises the whole table's problems
            pass
        raise


def validated_log_frames(
    frames: Iterable[pd.DataFrame],
    label: str,
    max_text_chars: int,
    corpus_ids: set[str] | None,
    source: str,
) -> Iterator[pd.DataFrame]:
    """The coerced `frames` (the rows of one table, in order) with a `log_id`, as long as no
    problem is found.

    After a first problem no frame is yielded; the frames are read to their end (validated up
    to `MAX_LOG_ISSUES` problems, then a line saying the rest was not checked) and
    `DatasetError` (`source`) lists their problems. References to `corpus_ids` count only when
    the schema holds none, as the whole table's are checked only then."""
    found = _Problems(label)
    seen = np.empty(0, np.uint64)
    first = 0
    for raw in frames:
        if found.full:  # read on for the reader's problems, which replace these
            first += len(raw)
            continue
        validator = TableValidator(raw, label, max_text_chars, first_row=first + 1)
        chunk = validator.check_schema(SCHEMAS["logs"])
        if "log_id" in chunk.columns:
            seen = _check_repeated_ids(validator, chunk["log_id"], seen)
        found.add_schema(validator.issues)
        if corpus_ids is not None and not found.schema:
            validator.check_references("shown_doc_id", corpus_ids, "corpus")
            validator.check_list_references("retrieved_doc_ids", corpus_ids, "corpus")
            found.references.extend(validator.issues)
        if not found.any:
            yield with_log_ids(chunk, first)
        first += len(chunk)
    if found.any:
        raise DatasetError(source, found.issues())


@dataclass
class _Problems:
    """The problems of a logs file found so far: its schema's, else its references'."""

    label: str
    schema: list[ValidationIssue] = field(default_factory=list)
    references: list[ValidationIssue] = field(default_factory=list)

    @property
    def any(self) -> bool:
        return bool(self.schema or self.references)

    @property
    def full(self) -> bool:
        return len(self.schema) + len(self.references) >= MAX_LOG_ISSUES

    def add_schema(self, issues: list[ValidationIssue]) -> None:
        """Add a chunk's schema problems; one about the whole file (a missing column, found
        in every chunk) is kept once."""
        if issues:  # references count only when the schema holds no problem
            self.references.clear()
        self.schema.extend(i for i in issues if i.row is not None or i not in self.schema)

    def issues(self) -> list[ValidationIssue]:
        found = list(self.schema or self.references)
        if self.full:
            found.append(ValidationIssue(self.label, "too many problems: the rest was not checked"))
        return found


def _check_repeated_ids(validator: TableValidator, ids: pd.Series, seen: np.ndarray) -> np.ndarray:
    """Report the ids of this chunk already seen in an earlier one; return all ids seen, sorted
    (a merge of two sorted runs: linear in the ids seen, not a fresh sort)."""
    hashes = pd.util.hash_array(ids.astype(str).to_numpy(dtype=object))
    at = np.minimum(np.searchsorted(seen, hashes), max(len(seen) - 1, 0))
    repeated = seen[at] == hashes if len(seen) else np.zeros(len(hashes), bool)
    validator.report(repeated, "log_id", "duplicate key {value}", ids)
    return np.sort(np.concatenate([seen, np.sort(hashes)]), kind="stable")
