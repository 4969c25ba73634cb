"""Parquet files and folders of tables under a UPath (local folder or any fsspec URL), written
atomically: the storage under both the Dagster IO manager and the reports, caches and alerts.

A file is published with `objects.write_atomically` (locally a renamed temporary sibling, on an
object store one object committed whole). A folder of tables (several files that must change
together) is, locally, built aside and swapped in with one rename, its writers taking turns on
a lock file in the warehouse's `LOCKS_FOLDER`. On an object store, where
nothing renames a prefix, each write is a new *generation*: the tables go under
`<folder>/<generation>/`, then the manifest `<folder>/_tables.json`, one object naming the
generation, is replaced; readers read the manifest first, so they see the old generation or
the new one, whole. The generation the new one replaced is kept (a reader that read the old
manifest just before still finds every table) and the older ones are deleted, so a folder holds
at most two generations.
"""

import ctypes
import hashlib
import io
import json
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import BinaryIO

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from filelock import FileLock
from upath import UPath

from rag_eval_pipeline.storage.batches import TableBatches, parquet_batches
from rag_eval_pipeline.storage.objects import (
    current_umask,
    is_local,
    read_snapshot,
    remove_stale_temporaries,
    temporary_prefix,
    write_atomically,
)

TABLES_MANIFEST = "_tables.json"
LOCKS_FOLDER = ".locks"  # in a local warehouse's base: the lock files of its table folders
GENERATION_PREFIX = "generation-"
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


class MissingPartitionError(FileNotFoundError):
    """An upstream partition that was never materialized."""


class UnreadableFileError(ValueError):
    """A stored file that is not what was written (truncated, empty, overwritten): one line
    naming the file, the cause and what to do."""

    def __init__(self, path: object, cause: BaseException) -> None:
        reason = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
        super().__init__(
            f"{path} does not read back as Parquet ({type(cause).__name__}: {reason}): "
            "`rag-eval run --force` for its partition writes it again"
        )
        self.path = path


def escape_partition_path(partition: str) -> str:
    """`partition` as a path relative to the base, whatever its text: a leading `/` becomes
    `%2F` (joining an absolute path would drop the base) and every whole `..` segment `%2E%2E`
    (`my..backup` stays); the rest is unchanged. The same escaping as Dagster's `UPathIOManager`.
    """
    if partition.startswith("/"):
        partition = "%2F" + partition[1:]
    return "/".join("%2E%2E" if segment == ".." else segment for segment in partition.split("/"))


def write_parquet_atomically(frame: pd.DataFrame | TableBatches, path: UPath) -> None:
    """Write `frame` to `path` so that readers see the old file or the new one, never a part.

    A :class:`TableBatches` is written one row group per chunk, so memory stays bounded.
    """
    write_atomically(path, lambda handle: _write_parquet(frame, handle))


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


def folder_lock(target: Path, locks: Path) -> FileLock:
    """The lock that serializes writers of the table folder `target` across threads and
    processes: a `filelock` on `<locks>/<digest of target's resolved path>.lock`, so the lock
    files of a warehouse sit in one folder, none beside a partition."""
    locks.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256(os.fsencode(target.resolve())).hexdigest()[:32]
    return FileLock(locks / f"{digest}.lock")


def machine_locks() -> Path:
    """The default folder of table-folder locks: this user's, in the temporary directory."""
    return Path(tempfile.gettempdir()) / f"rag-eval-locks-{os.getuid()}"


def write_tables_atomically(
    tables: Mapping[str, pd.DataFrame | TableBatches], path: UPath, *, locks: Path | None = None
) -> None:
    """Write a folder of tables that readers always find complete: the old set or the new one.

    The manifest lists the tables by name, and under `"batched"` those given as
    :class:`TableBatches`, which :func:`read_tables` gives back as such (read chunk by chunk).
    Locally the folder is built aside and swapped in; concurrent writers of the same partition
    are serialized with a lock file in `locks`: the IO manager passes its warehouse's
    `LOCKS_FOLDER`; by default `rag-eval-locks-<uid>` in the temporary directory, which
    serializes the writers of one machine that share it. On an object store it is published as a new
    generation (see the module docstring) and `locks` is unused.
    """
    if not is_local(path):
        _publish_generation(tables, path)
        return
    target = Path(path.path)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(target)
    staging = Path(
        tempfile.mkdtemp(dir=target.parent, prefix=temporary_prefix(target), suffix=".tmp")
    )
    staging.chmod(0o777 & ~current_umask())
    try:
        for name, frame in tables.items():
            with open(staging / f"{name}.parquet", "wb") as handle:
                _write_parquet(frame, handle)
        (staging / TABLES_MANIFEST).write_text(json.dumps(_manifest(tables)))
        with folder_lock(target, locks or machine_locks()):
            _swap_directories(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    remove_stale_temporaries(target)


def _publish_generation(tables: Mapping[str, pd.DataFrame | TableBatches], folder: UPath) -> None:
    """Write `tables` under a new generation of `folder`, publish it by replacing the manifest,
    then delete what is older than the generation it replaced.

    Generation names sort by their start time, so a writer never deletes the generation of a
    writer that started after the replaced one (it may still be writing).
    """
    previous = (
        _read_manifest(folder).get("generation") if (folder / TABLES_MANIFEST).exists() else None
    )
    generation = f"{GENERATION_PREFIX}{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
    for name, table in tables.items():
        write_parquet_atomically(table, folder / generation / f"{name}.parquet")
    manifest = json.dumps({**_manifest(tables), "generation": generation}).encode()
    write_atomically(folder / TABLES_MANIFEST, lambda handle: handle.write(manifest))
    oldest_kept = min(previous or generation, generation)  # a slower writer keeps its own
    for entry in folder.iterdir():
        if entry.name == TABLES_MANIFEST or (
            entry.name.startswith(GENERATION_PREFIX) and entry.name >= oldest_kept
        ):
            continue
        entry.fs.rm(entry.path, recursive=True)


def read_parquet(path: UPath) -> pd.DataFrame:
    """Read one Parquet file from a local path, or through the path's fsspec filesystem in one
    request (a consistent snapshot even while a writer replaces the object)."""
    try:
        if is_local(path):
            return pd.read_parquet(path.path)
        return pd.read_parquet(io.BytesIO(read_snapshot(path)))
    except (pa.ArrowException, ValueError) as error:
        raise UnreadableFileError(path, error) from error


def _manifest(tables: Mapping[str, pd.DataFrame | TableBatches]) -> dict[str, list[str]]:
    batched = [name for name, table in tables.items() if isinstance(table, TableBatches)]
    return {"tables": sorted(tables), "batched": sorted(batched)}


def read_batches(path: UPath) -> TableBatches:
    """A stored Parquet file as :class:`TableBatches` (nothing is read until iterated)."""
    return parquet_batches(lambda: path.open("rb"))


def _read_manifest(folder: UPath) -> dict:
    """The folder's manifest; a plain list of names is the earliest layout (all DataFrames)."""
    manifest = json.loads(read_snapshot(folder / TABLES_MANIFEST))
    return {"tables": manifest, "batched": []} if isinstance(manifest, list) else manifest


def read_tables(folder: UPath) -> dict[str, pd.DataFrame | TableBatches]:
    """The tables of a folder written by `write_tables_atomically`.

    The names come from the folder's manifest, read by path like every table, so a reader
    never lists a folder that a concurrent writer is swapping out and removing; on an object
    store the manifest names the generation holding them. Tables written as
    :class:`TableBatches` come back as such; the others as DataFrames.
    """
    manifest = _read_manifest(folder)
    tables = folder / manifest["generation"] if "generation" in manifest else folder
    return {
        name: read_batches(tables / f"{name}.parquet")
        if name in manifest["batched"]
        else read_parquet(tables / f"{name}.parquet")
        for name in manifest["tables"]
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
        """The folder's tables, by its manifest (on an object store, in the generation the
        manifest names, so later reads stay in that one published version)."""
        manifest = _read_manifest(folder)
        tables = folder / manifest["generation"] if "generation" in manifest else folder
        return StoredTables(tables, tuple(manifest["tables"]))

    def path(self, name: str) -> UPath:
        """Where table `name` is stored (its Parquet file)."""
        return self.folder / f"{name}.parquet"

    def arrow_location(self, name: str) -> tuple[str, object | None]:
        """Table `name`'s path and filesystem as Arrow's dataset reader takes them (None: the
        local disk, read natively; else the UPath's fsspec filesystem)."""
        path = self.path(name)
        return (path.path, None) if is_local(path) else (path.path, path.fs)

    def columns(self, name: str) -> list[str]:
        """The column names of table `name` (its Parquet schema only; [] when absent)."""
        if name not in self.names:
            return []
        with self.path(name).open("rb") as handle:
            return list(pq.read_schema(handle).names)

    def read(self, name: str) -> pd.DataFrame | None:
        """Table `name` whole, or None when the folder does not hold it."""
        return read_parquet(self.path(name)) if name in self.names else None
