"""Reading one row's inputs the way judges and generators do: texts, chunk lists, what is missing.

Dataset cells arrive as str, None, NaN or pandas NA (a chunk list also as a numpy array or a single
string); these helpers turn them into plain values and name the first missing input, so every
consumer treats a missing question or answer the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rag_eval_pipeline.datasets.validation import is_missing


def as_text(value: Any) -> str | None:
    """The value as a string, None when missing."""
    return None if is_missing(value) else str(value)


def as_chunks(value: Any) -> list[str]:
    """A row's retrieved chunks as a list of strings (missing → none; one string → one chunk)."""
    if isinstance(value, str):
        return [value]
    if is_missing(value):
        return []
    return [str(chunk) for chunk in value]


def missing_input(**texts: str | None) -> str | None:
    """`missing <name>` for the first None or blank text, None when all are present."""
    for name, text in texts.items():
        if text is None or not text.strip():
            return f"missing {name}"
    return None


def missing_answer(answer: str | None) -> str | None:
    """`missing answer` for None; an empty answer is still an answer (the system said nothing)."""
    return "missing answer" if answer is None else None


def aligned(**columns: Sequence[Any]) -> int:
    """The common length of the input columns; differing lengths raise `ValueError`."""
    lengths = {name: len(column) for name, column in columns.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"input columns differ in length: {lengths}")
    return next(iter(lengths.values()))
