"""Interaction rows produced in any order, handed back one UTC day at a time, days in order.

Each batch of rows (with its LLM calls, by row position) is split by the UTC day of its
`timestamp` (nanoseconds) and appended, pickled, to that day's file in a temporary folder;
then each day's pieces are read back and joined (call positions shifted to the joined rows).
Memory holds one batch while splitting, then one day's rows. Pickle: our own temporary data,
written and read by the same process.
"""

from __future__ import annotations

import pickle
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import cast

from rag_eval_pipeline.datasets.traces.buckets import pickled

NS_PER_DAY = 86_400 * 10**9
Call = tuple[int, object, float, float]
Rows = tuple[list[dict[str, object]], list[Call]]


def rows_by_day(batches: Iterable[Rows]) -> Iterator[Rows]:
    """The rows of `batches` (each row's `timestamp` in UTC nanoseconds), one UTC day at a
    time in day order, each day's rows in the order they came."""
    with tempfile.TemporaryDirectory(prefix="rag-eval-days-") as scratch:
        days: set[int] = set()
        for rows, calls in batches:
            for day, piece in _split(rows, calls).items():
                days.add(day)
                with open(Path(scratch) / f"{day}.rows", "ab") as handle:
                    pickle.dump(piece, handle, pickle.HIGHEST_PROTOCOL)
        for day in sorted(days):
            yield joined(pickled(Path(scratch) / f"{day}.rows"))


def _split(rows: list[dict[str, object]], calls: list[Call]) -> dict[int, Rows]:
    """`rows` and their calls by UTC day, positions renumbered within each day."""
    pieces: dict[int, Rows] = {}
    moved: list[tuple[int, int]] = []
    for row in rows:
        day = int(cast(int, row["timestamp"])) // NS_PER_DAY
        day_rows = pieces.setdefault(day, ([], []))[0]
        moved.append((day, len(day_rows)))
        day_rows.append(row)
    for position, *call in calls:
        day, at = moved[position]
        pieces[day][1].append((at, *call))  # type: ignore[arg-type]
    return pieces


def joined(pieces: Iterable[Rows]) -> Rows:
    """The rows of `pieces` one after the other, with their calls' positions in the join."""
    rows: list[dict[str, object]] = []
    calls: list[Call] = []
    for piece_rows, piece_calls in pieces:
        calls.extend((len(rows) + at, *call) for at, *call in piece_calls)
        rows.extend(piece_rows)
    return rows, calls
