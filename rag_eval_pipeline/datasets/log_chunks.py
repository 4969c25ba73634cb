"""A version's `logs.parquet` validated chunk by chunk: the validity rule of the whole table
(`TableValidator` with the `logs` schema, then the references to the corpus), in bounded memory.

Rows are numbered from the file's first row across chunks; a `log_id` repeated in a later chunk
is the same "duplicate key" problem as within one (found by 64-bit hashes of the ids seen, 8
bytes per row; two different ids colliding has a probability below 1e-5 for 30 million rows).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from rag_eval_pipeline.datasets.errors import ValidationIssue
from rag_eval_pipeline.datasets.readers import parquet_chunks
from rag_eval_pipeline.datasets.validation import SCHEMAS, TableValidator

LOG_CHUNK_ROWS = 200_000
MAX_LOG_ISSUES = 100


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
    issues: list[ValidationIssue],
) -> Iterator[pd.DataFrame]:
    """The coerced chunks of `path` with a `log_id` (`validated_log_frames`)."""
    chunks = parquet_chunks(path, LOG_CHUNK_ROWS)
    return validated_log_frames(chunks, label, max_text_chars, corpus_ids, issues)


def validated_log_frames(
    frames: Iterable[pd.DataFrame],
    label: str,
    max_text_chars: int,
    corpus_ids: set[str] | None,
    issues: list[ValidationIssue],
) -> Iterator[pd.DataFrame]:
    """The coerced `frames` (the rows of one table, in order) with a `log_id`; the problems
    found go to `issues` (the first `MAX_LOG_ISSUES`, then a line saying the rest was not
    checked). References are checked until a first problem, as the whole table's are only
    when it has none."""
    seen = np.empty(0, np.uint64)
    first = 0
    for raw in frames:
        validator = TableValidator(raw, label, max_text_chars, first_row=first + 1)
        chunk = validator.check_schema(SCHEMAS["logs"])
        if "log_id" in chunk.columns:
            seen = _check_repeated_ids(validator, chunk["log_id"], seen)
        if corpus_ids is not None and not issues and not validator.issues:
            validator.check_references("shown_doc_id", corpus_ids, "corpus")
            validator.check_list_references("retrieved_doc_ids", corpus_ids, "corpus")
        issues.extend(validator.issues)
        if len(issues) >= MAX_LOG_ISSUES:
            issues.append(ValidationIssue(label, "too many problems: the rest was not checked"))
            return
        yield with_log_ids(chunk, first)
        first += len(chunk)


def _check_repeated_ids(validator: TableValidator, ids: pd.Series, seen: np.ndarray) -> np.ndarray:
    """Report the ids of this chunk already seen in an earlier one; return all ids seen, sorted
    (a merge of two sorted runs: linear in the ids seen, not a fresh sort)."""
    hashes = pd.util.hash_array(ids.astype(str).to_numpy(dtype=object))
    at = np.minimum(np.searchsorted(seen, hashes), max(len(seen) - 1, 0))
    repeated = seen[at] == hashes if len(seen) else np.zeros(len(hashes), bool)
    validator.report(repeated, "log_id", "duplicate key {value}", ids)
    return np.sort(np.concatenate([seen, np.sort(hashes)]), kind="stable")
