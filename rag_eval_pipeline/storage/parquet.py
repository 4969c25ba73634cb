"""Parquet files and folders of tables under a UPath (local folder or any fsspec URL), written
atomically: the storage under both the Dagster IO manager and the reports, caches and alerts.

Local writes go to a temporary sibling that is renamed into place, so a crash mid-write leaves
the previous good file intact. A killed writer's hidden temporary sibling is removed by the next
successful write of the same path once it is older than `STALE_TEMPORARY_S` (a younger one may
belong to a writer still running). On object stores a single PUT is already all-or-nothing.
"""

import ctypes
import fcntl
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import BinaryIO

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from upath import UPath

from rag_eval_pipeline.storage.batches import TableBatches, parquet_batches

TABLES_MANIFEST = "_tables.json"
STALE_TEMPORARY_S = 3600.0
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


class MissingPartitionError(FileNotFoundError):
    """An upstream partition that was never materialized."""


def _is_local(path: UPath) -> bool:
    return getattr(path, "protocol", "") in ("", "file", "local")


def _temporary_prefix(target: Path) -> str:
    return f".{target.name}."


def escape_partition_path(partition: str) -> str:
    """`partition` as a path relative to the base, whatever its text: a leading `/` becomes
    `%2F` (joining an absolute path would drop the base) and every whole `..` segment `%2E%2E`
    (`my..backup` stays); the rest is unchanged. The same escaping as Dagster's `UPathIOManager`.
    """
    if partition.startswith("/"):
        partition = "%2F" + partition[1:]
    return "/".join("%2E%2E" if segment == ".." else segment for segment in partition.split("/"))


def remove_stale_temporaries(target: Path, older_than_s: float = STALE_TEMPORARY_S) -> None:
    """Delete hidden temporary siblings of `target` (files or folders) left by killed writers."""
    cutoff = time.time() - older_than_s
    for leftover in target.parent.glob(f"{_temporary_prefix(target)}*.tmp*"):
        try:
            if leftover.lstat().st_mtime >= cutoff:
                continue
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)
        except FileNotFoundError:
            continue


def write_parquet_atomically(frame: pd.DataFrame | TableBatches, path: UPath) -> None:
    """Write `frame` to `path` so that readers see the old file or the new one, never a part.

    A :class:`TableBatches` is written one row group per chunk, so memory stays bounded.
    """
    if not _is_local(path):
        with path.open("wb") as handle:
            _write_parquet(frame, handle)
        return
    target = Path(path.path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(
        dir=target.parent, prefix=_temporary_prefix(target), suffix=".tmp"
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            _write_parquet(frame, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    remove_stale_temporaries(target)


def _write_parquet(table: pd.DataFrame | TableBatches, handle: BinaryIO) -> None:
    if isinstance(table, pd.DataFrame):
        table.to_parquet(handle, index=False)
        return
    writer: pq.ParquetWriter | None = None
    try:
        for frame in table.frames():
            if writer is None:
                schema = pa.Schema.from_pandas(frame, preserve_index=False)
                writer = pq.ParquetWriter(handle, schema)
            writer.write_table(pa.Table.from_pandas(frame, schema=schema, preserve_index=False))
    finally:
        if writer is not None:
            writer.close()
    if writer is None:
        pd.DataFrame().to_parquet(handle, index=False)


@cache
def _renameat2() -> Callable[..., int] | None:
    """Linux `renameat2`, whose RENAME_EXCHANGE swaps two paths atomically (None elsewhere)."""
    libc = ctypes.CDLL(None, use_errno=True)
    function = getattr(libc, "renameat2", None)
    if function is not None:
        function.argtypes = [
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_uint,
        ]
    return function


def _swap_directories(staging: Path, target: Path) -> None:
    """Put `staging` at `target`; the previous `target` ends up at `staging`.

    With RENAME_EXCHANGE the swap is one atomic step, so a reader never finds `target`
    missing; where it is unsupported, two renames leave a microsecond-long gap.
    """
    exchange = _renameat2()
    if (
        exchange is not None
        and target.exists()
        and (
            exchange(
                _AT_FDCWD, os.fsencode(staging), _AT_FDCWD, os.fsencode(target), _RENAME_EXCHANGE
            )
            == 0
        )
    ):
        return
    retired = staging.with_name(staging.name + ".old")
    if target.exists():
        os.replace(target, retired)
    os.replace(staging, target)
    if retired.exists():
        os.replace(retired, staging)


@contextmanager
def _exclusive(folder: Path) -> Iterator[None]:
    """Serialize writers of one folder's entries across threads and processes (flock)."""
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def write_tables_atomically(tables: Mapping[str, pd.DataFrame | TableBatches], path: UPath) -> None:
    """Write a folder of tables; locally it is built aside and swapped in atomically.

    The manifest lists the tables by name, and under `"batched"` those given as
    :class:`TableBatches`, which :func:`read_tables` gives back as such (read chunk by chunk).

    Concurrent writers of the same partition are serialized with a lock on the parent folder,
    and readers always find a complete folder (the old one or the new one).
    """
    if not _is_local(path):
        for name, frame in tables.items():
            write_parquet_atomically(frame, path / f"{name}.parquet")
        with (path / TABLES_MANIFEST).open("w") as handle:
            json.dump(_manifest(tables), handle)
        return
    target = Path(path.path)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(
        tempfile.mkdtemp(dir=target.parent, prefix=_temporary_prefix(target), suffix=".tmp")
    )
    try:
        for name, frame in tables.items():
            with open(staging / f"{name}.parquet", "wb") as handle:
                _write_parquet(frame, handle)
        (staging / TABLES_MANIFEST).write_text(json.dumps(_manifest(tables)))
        with _exclusive(target.parent):
            _swap_directories(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    remove_stale_temporaries(target)


def read_parquet(path: UPath) -> pd.DataFrame:
    """Read one Parquet file from a local path or through the path's fsspec filesystem."""
    if _is_local(path):
        return pd.read_parquet(path.path)
    with path.open("rb") as handle:
        return pd.read_parquet(handle)


def _manifest(tables: Mapping[str, pd.DataFrame | TableBatches]) -> dict[str, list[str]]:
    batched = [name for name, table in tables.items() if isinstance(table, TableBatches)]
    return {"tables": sorted(tables), "batched": sorted(batched)}


def read_batches(path: UPath) -> TableBatches:
    """A stored Parquet file as :class:`TableBatches` (nothing is read until iterated)."""
    return parquet_batches(lambda: path.open("rb"))


def read_tables(folder: UPath) -> dict[str, pd.DataFrame | TableBatches]:
    """The tables of a folder written by `write_tables_atomically`.

    The names come from the folder's manifest, read by path like every table, so a reader
    never lists a folder that a concurrent writer is swapping out and removing. Tables written
    as :class:`TableBatches` come back as such; the others as DataFrames. (A manifest that is
    a plain list of names is the earlier layout: all DataFrames.)
    """
    with (folder / TABLES_MANIFEST).open("r") as handle:
        manifest = json.load(handle)
    names, batched = (
        (manifest, []) if isinstance(manifest, list) else (manifest["tables"], manifest["batched"])
    )
    return {
        name: read_batches(folder / f"{name}.parquet")
        if name in batched
        else read_parquet(folder / f"{name}.parquet")
        for name in names
    }


@dataclass(frozen=True)
class StoredTables:
    """A folder of tables written by `write_tables_atomically`, read table by table when asked
    (nothing is read but the manifest), so a consumer can read one table, or only one day of it
    through `path`, without holding the others."""

    folder: UPath
    names: tuple[str, ...]

    @staticmethod
    def open(folder: UPath) -> "StoredTables":
        """The folder's tables, by its manifest."""
        with (folder / TABLES_MANIFEST).open("r") as handle:
            manifest = json.load(handle)
        names = manifest if isinstance(manifest, list) else manifest["tables"]
        return StoredTables(folder, tuple(names))

    def path(self, name: str) -> UPath:
        """Where table `name` is stored (its Parquet file)."""
        return self.folder / f"{name}.parquet"

    def arrow_location(self, name: str) -> tuple[str, object | None]:
        """Table `name`'s path and filesystem as Arrow's dataset reader takes them (None: the
        local disk, read natively; else the UPath's fsspec filesystem)."""
        path = self.path(name)
        return (path.path, None) if _is_local(path) else (path.path, path.fs)

    def columns(self, name: str) -> list[str]:
        """The column names of table `name` (its Parquet schema only; [] when absent)."""
        if name not in self.names:
            return []
        with self.path(name).open("rb") as handle:
            return list(pq.read_schema(handle).names)

    def read(self, name: str) -> pd.DataFrame | None:
        """Table `name` whole, or None when the folder does not hold it."""
        return read_parquet(self.path(name)) if name in self.names else None
