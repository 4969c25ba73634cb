"""Tables read and written chunk by chunk, so memory depends on the chunk, not the table.

A :class:`TableBatches` is a table too large to hold whole: its row count and a function that
reads it again as a sequence of DataFrames. :func:`query_chunks` regroups such a sequence so
that the rows of one query (rows with equal key columns, listed together) are never split
between two chunks: the unit every per-query computation (IR metrics, duplicate checks) needs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

CHUNK_ROWS = 1 << 20  # rows per chunk: ~1M run rows, ~10k queries of 100 documents


@dataclass(frozen=True)
class TableBatches:
    """A table as a re-readable sequence of DataFrames (all with the same columns)."""

    num_rows: int
    frames: Callable[[], Iterator[pd.DataFrame]]

    def to_pandas(self) -> pd.DataFrame:
        """The whole table in memory (small tables and tests only)."""
        frames = list(self.frames())
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    @staticmethod
    def of(frame: pd.DataFrame, rows: int = CHUNK_ROWS) -> TableBatches:
        """An in-memory DataFrame in slices of `rows` rows."""

        def frames() -> Iterator[pd.DataFrame]:
            for start in range(0, max(len(frame), 1), rows):
                yield frame.iloc[start : start + rows].reset_index(drop=True)

        return TableBatches(len(frame), frames)

    @staticmethod
    def concat(tables: Sequence[TableBatches]) -> TableBatches:
        """The rows of `tables`, one after the other."""

        def frames() -> Iterator[pd.DataFrame]:
            for table in tables:
                yield from table.frames()

        return TableBatches(sum(table.num_rows for table in tables), frames)


def parquet_batches(open_file: Callable[[], object], rows: int = CHUNK_ROWS) -> TableBatches:
    """A stored Parquet file read back `rows` rows at a time; `open_file` opens it (binary)."""
    with open_file() as handle:
        num_rows = pq.ParquetFile(handle).metadata.num_rows

    def frames() -> Iterator[pd.DataFrame]:
        with open_file() as handle:
            for batch in pq.ParquetFile(handle).iter_batches(batch_size=rows):
                yield batch.to_pandas()

    return TableBatches(num_rows, frames)


def query_chunks(
    frames: Iterable[pd.DataFrame], keys: Sequence[str], rows: int = CHUNK_ROWS
) -> Iterator[pd.DataFrame]:
    """Regroup `frames` into chunks of about `rows` rows (more when one query is longer) that
    never split a stretch of adjacent rows with equal `keys` (one query of one system).

    The chunks carry no `attrs`. A query listed in two separate stretches stays two
    stretches: callers that need each query whole detect that (see
    :class:`~rag_eval_pipeline.metrics.retrieval.RunScorer`).
    """
    pending: list[pd.DataFrame] = []
    pending_rows = 0
    for frame in frames:
        if frame.empty:
            continue
        if frame.attrs:  # per-frame attrs (source lines) do not survive regrouping
            frame = frame.copy(deep=False)
            frame.attrs = {}
        pending.append(frame)
        pending_rows += len(frame)
        if pending_rows < rows:
            continue
        buffer = pd.concat(pending, ignore_index=True) if len(pending) > 1 else pending[0]
        tail_start = _last_stretch_start(buffer, keys)
        pending = [buffer.iloc[tail_start:].reset_index(drop=True)]
        pending_rows = len(pending[0])
        if tail_start:
            yield buffer.iloc[:tail_start].reset_index(drop=True)
    if pending_rows:
        yield pd.concat(pending, ignore_index=True)


def _last_stretch_start(frame: pd.DataFrame, keys: Sequence[str]) -> int:
    """Position where the last stretch of rows with equal `keys` begins in `frame` (0 when
    the frame is one stretch: it is carried on whole). Searched backwards from the end in
    growing windows, so the cost is that of the stretch, not of the frame."""
    window = 1024
    while True:
        start = max(len(frame) - window, 0)
        same = np.ones(len(frame) - start, dtype=bool)
        for key in keys:
            values = frame[key].iloc[start:].to_numpy()
            same &= values == values[-1]
        differs = np.flatnonzero(~same)
        if differs.size:
            return start + int(differs[-1]) + 1
        if start == 0:
            return 0
        window *= 8
