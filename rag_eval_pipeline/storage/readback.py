"""Whether a stored output reads back: its Parquet footer is valid and holds the rows recorded
when it was written.

A Parquet file's footer (at its end) holds its schema and row count: reading it costs one small
read, not the table, and a truncated, empty or overwritten file fails it. A folder of tables
(`parquet.write_tables_atomically`) reads back when its manifest does and every table it names
does. `output_problem` says in one phrase what is wrong, or None; the rule deciding whether a
partition is up to date (`defs/runs/up_to_date.py`) asks it for every selected asset.
"""

from __future__ import annotations

from collections.abc import Mapping

import pyarrow as pa
import pyarrow.parquet as pq
from upath import UPath

from rag_eval_pipeline.storage.parquet import TABLES_MANIFEST, StoredTables, UnreadableFileError


def parquet_rows(path: UPath) -> int:
    """The row count in the footer of the Parquet file at `path`; `UnreadableFileError` (naming
    the path and the cause) when it is not a readable Parquet file."""
    try:
        with path.open("rb") as handle:
            return pq.ParquetFile(handle).metadata.num_rows
    except (pa.ArrowException, OSError, ValueError) as error:
        raise UnreadableFileError(path, error) from error


def table_rows(folder: UPath) -> dict[str, int]:
    """Each table's row count in a folder of tables, by its manifest (`UnreadableFileError`
    when the manifest or a table does not read back)."""
    try:
        stored = StoredTables.open(folder)
    except (OSError, ValueError) as error:
        raise UnreadableFileError(folder / TABLES_MANIFEST, error) from error
    return {name: parquet_rows(stored.path(name)) for name in stored.names}


def output_problem(
    path: UPath, rows: int | None = None, tables: Mapping[str, int] | None = None
) -> str | None:
    """What is wrong with the output stored at `path` (a Parquet file, or the folder of tables
    beside it without the suffix), or None when it reads back with `rows` rows (a file) or the
    `tables` row counts (a folder), when those are given."""
    folder = path.with_suffix("")
    try:
        if path.exists():
            stored = parquet_rows(path)
            if rows is not None and stored != rows:
                return f"{path} holds {stored} rows, its materialization recorded {rows}"
            return None
        if folder.exists():
            stored_tables = table_rows(folder)
            if tables is not None and stored_tables != dict(tables):
                return f"{folder} holds tables {stored_tables}, its materialization {dict(tables)}"
            return None
    except UnreadableFileError as error:
        return str(error)
    return f"{path} is missing"
