"""A version's interactions (its `logs.*` or `traces/`) staged once as Parquet, one file per day.

The first reader of a version validates its interactions and writes them here, so every later
run reads only the days it needs: `<stage>/<key>/<generation>/<YYYY-MM-DD>.parquet`, one file
per UTC day (rows in `timestamp`, `log_id` order) and `undated.parquet` for rows without a
timestamp, published by `<stage>/<key>/_staged.json` (written last). The key is the digest of
the files the rows depend on (`golden.interactions_key`: the interaction files and the corpus)
and of the limits they were validated under, so a staged copy is only ever read for the very
files it was made from; a changed one gets a new key and is staged again.

Publishing is atomic: locally the whole `<key>` folder is built aside, in a hidden temporary
named for its writer (`objects.temporary_prefix`), and renamed into place (a second writer that
finds it there discards its own copy, which holds the same rows); on an object store the
generation's files are uploaded first and the manifest, one object, last, written create-only:
the first writer's manifest wins and the other's generation is left to the cleanup rule.
Readers see no copy or a whole one. A manifest that does not read (truncated by a full disk) is
a copy not staged: a warning, and the next writer replaces it.

Each publication then applies the stage's cleanup rule (`storage.stage_entries.prune_stage`:
copies unused for `RAG_EVAL_STAGED_KEEP_DAYS`, dead writers' leftovers, unpublished
generations past `RAG_EVAL_STAGED_GRACE_S`); `find` records each use (`read_published`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from functools import partial
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import BaseModel
from upath import UPath

from rag_eval_pipeline.settings import STAGED_GRACE_S, STAGED_KEEP_DAYS, STAGED_URL
from rag_eval_pipeline.storage.batches import TableBatches, parquet_batches
from rag_eval_pipeline.storage.machine import cache_write
from rag_eval_pipeline.storage.objects import (
    is_local,
    storage_path,
    temporary_prefix,
    write_text_atomically,
)
from rag_eval_pipeline.storage.parquet import GENERATION_PREFIX
from rag_eval_pipeline.storage.stage_entries import (
    made_scratch_folder,
    parse_manifest,
    prune_stage,
    read_manifest,
    read_published,
    stage_lock,
)

STAGED_MANIFEST = "_staged.json"
RESTAGED = "the copy is staged again"
UNDATED = "undated"
EMPTY = "empty"  # no rows, every column: the schema of a window without a row
ORDER = [("timestamp", "ascending"), ("log_id", "ascending")]


class StagedManifest(BaseModel):
    """`_staged.json`: the published generation, its row count and its day files' names."""

    generation: str
    num_rows: int
    days: list[str]


def stage_key(fingerprint: str, *limits: object) -> str:
    """The staged copy's name: the files' fingerprint and the limits they were validated under."""
    text = "\0".join([fingerprint, *map(str, limits)])
    return hashlib.blake2b(text.encode(), digest_size=20).hexdigest()


@dataclass(frozen=True)
class StagedLogs:
    """A version's validated interactions, one Parquet file per UTC day (see module)."""

    folder: UPath
    num_rows: int
    days: tuple[str, ...]

    def window(self, day: date) -> TableBatches:
        """The rows of the UTC days `day` − 1 to `day` + 1 (every row falling on `day` in any
        timezone, UTC−12 to UTC+14), then the undated rows; in (`timestamp`, `log_id`) order."""
        wanted = {(day + timedelta(days=shift)).isoformat() for shift in (-1, 0, 1)}
        return self._batches([name for name in self.days if name in wanted or name == UNDATED])

    def whole(self) -> TableBatches:
        """Every row, in (`timestamp`, `log_id`) order, the undated rows last."""
        return self._batches(list(self.days))

    def _batches(self, names: Sequence[str]) -> TableBatches:
        """The days `names` one after the other; no rows, but every column, when none."""
        days = TableBatches.concat(
            [parquet_batches(partial((self.folder / f"{n}.parquet").open, "rb")) for n in names]
        )

        def frames() -> Iterator[pd.DataFrame]:
            empty = True
            for frame in days.frames():
                empty = False
                yield frame
            if empty:
                with (self.folder / f"{EMPTY}.parquet").open("rb") as handle:
                    yield pq.read_table(handle).to_pandas()

        return TableBatches(days.num_rows, frames)


@dataclass(frozen=True)
class LogStage:
    """Where staged copies live (`RAG_EVAL_STAGED`, default `<RAG_EVAL_CACHE>/staged`)."""

    root: UPath

    @staticmethod
    def default() -> LogStage:
        return LogStage(storage_path(STAGED_URL))

    def find(self, key: str) -> StagedLogs | None:
        """The staged copy named `key`, or None when none was published (or its manifest does
        not read: a warning, and the copy is staged again). Records the use (`read_published`)."""
        data = read_published(self.root / key, STAGED_MANIFEST)
        path = self.root / key / STAGED_MANIFEST
        found = None if data is None else parse_manifest(StagedManifest, data, path, RESTAGED)
        if found is None:
            return None
        return StagedLogs(self.root / key / found.generation, found.num_rows, tuple(found.days))

    def stage(self, key: str, chunks: Iterable[pd.DataFrame]) -> StagedLogs:
        """Write the validated `chunks` (each with `timestamp` and `log_id`) by day under `key`
        and publish them; return the published copy (another writer's, if it won). Then apply
        the stage's cleanup rule."""
        local = self.root.path if is_local(self.root) else None
        scratch = made_scratch_folder(self.root)
        prefix = temporary_prefix(Path(self.root.path) / key)
        with tempfile.TemporaryDirectory(dir=scratch, prefix=prefix, suffix=".tmp") as work:
            built = Path(work) / key
            generation = f"{GENERATION_PREFIX}{uuid.uuid4().hex}"
            num_rows, days = _write_days(chunks, Path(work) / "parts", built / generation)
            manifest = StagedManifest(generation=generation, num_rows=num_rows, days=days)
            if local is None:
                _upload(built / generation, self.root / key / generation)
                _publish_object(manifest.model_dump_json(), self.root / key / STAGED_MANIFEST)
            else:
                (built / STAGED_MANIFEST).write_text(manifest.model_dump_json())
                publish_folder(built, self.root, partial(read_manifest, StagedManifest))
        with cache_write("the staged copies' cleanup", self.root):
            prune_stage(self.root, STAGED_KEEP_DAYS * 86_400, STAGED_GRACE_S)
        published = self.find(key)
        assert published is not None, f"staged copy {key} vanished"
        return published


def _write_days(chunks: Iterable[pd.DataFrame], parts: Path, out: Path) -> tuple[int, list[str]]:
    """Split `chunks` by UTC day into `parts`, then write each day sorted to `out`; return the
    row count and the day names (dates in order, then `undated` when any)."""
    num_rows, files, schemas = 0, 0, []
    for chunk in chunks:
        table = pa.Table.from_pandas(chunk, preserve_index=False)
        schemas.append(table.schema)
        stamps = pc.cast(table["timestamp"], pa.timestamp("ns", "UTC"))
        dates = pc.fill_null(pc.strftime(stamps, "%Y-%m-%d"), UNDATED)
        for day in pc.unique(dates).to_pylist():
            (parts / day).mkdir(parents=True, exist_ok=True)
            part = table.filter(pc.equal(dates, day))
            pq.write_table(part, parts / day / f"{files:08d}.parquet")
            files += 1
        num_rows += table.num_rows
    names = sorted(p.name for p in parts.iterdir()) if parts.exists() else []
    names = [n for n in names if n != UNDATED] + [n for n in names if n == UNDATED]
    schema = pa.unify_schemas(schemas, promote_options="permissive") if schemas else pa.schema([])
    out.mkdir(parents=True)
    pq.write_table(schema.empty_table(), out / f"{EMPTY}.parquet")
    for name in names:
        parts_of_day = (pq.read_table(p) for p in sorted((parts / name).iterdir()))
        # a column a chunk lacks (JSON lines whose keys first appear later) is null there
        day = pa.concat_tables(
            [schema.empty_table(), *parts_of_day], promote_options="permissive"
        ).cast(schema)
        pq.write_table(day.take(pc.sort_indices(day, ORDER)), out / f"{name}.parquet")
        shutil.rmtree(parts / name)
    return num_rows, names


def publish_folder(built: Path, root: UPath, read: Callable[[UPath], BaseModel | None]) -> None:
    """Publish the entry built at `built` (with its manifest) as `<root>/<built.name>` of a
    local stage, under the stage's lock: renamed into place; when another writer published it
    first, theirs is kept, unless its manifest does not `read`: then it is put aside and ours
    published."""
    with stage_lock(root):
        _publish_folder(built, Path(root.path) / built.name, read)


def _publish_folder(built: Path, target: Path, read: Callable[[UPath], BaseModel | None]) -> None:
    try:
        os.rename(built, target)
        return
    except OSError:
        if not target.exists():
            raise
    if read(storage_path(target / STAGED_MANIFEST)) is not None:
        return
    aside = tempfile.mkdtemp(dir=target.parent, prefix=temporary_prefix(target), suffix=".tmp")
    os.rename(target, Path(aside) / target.name)
    os.rename(built, target)
    shutil.rmtree(aside, ignore_errors=True)


def _publish_object(manifest: str, path: UPath) -> None:
    """Write `manifest` at `path` unless a writer published one first (a create-only PUT); one
    that does not read is replaced."""
    try:
        path.fs.pipe_file(path.path, manifest.encode(), mode="create")
    except FileExistsError:
        if read_manifest(StagedManifest, path) is None:
            write_text_atomically(manifest, path)


def _upload(folder: Path, target: UPath) -> None:
    for path in sorted(folder.iterdir()):
        target.fs.put_file(str(path), (target / path.name).path)
