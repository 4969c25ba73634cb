"""A version's interactions (its `logs.*` or `traces/`) staged once as Parquet, one file per day.

The first reader of a version validates its interactions and writes them here, so every later
run reads only the days it needs: `<stage>/<key>/<generation>/<YYYY-MM-DD>.parquet`, one file
per UTC day (rows in `timestamp`, `log_id` order) and `undated.parquet` for rows without a
timestamp, published by `<stage>/<key>/_staged.json` (written last). The key is the digest of
the files the rows depend on (`golden.interactions_key`: the interaction files and the corpus)
and of the limits they were validated under, so a staged copy is only ever read for the very
files it was made from; a changed one gets a new key and is staged again.

Publishing is atomic: locally the whole `<key>` folder is built aside and renamed into place
(a second writer that finds it there discards its own copy, which holds the same rows); on an
object store the generation's files are uploaded first and the manifest, one object, last, so
readers see no copy or a whole one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from functools import partial
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from upath import UPath

from rag_eval_pipeline.settings import STAGED_URL
from rag_eval_pipeline.storage.batches import TableBatches, parquet_batches
from rag_eval_pipeline.storage.objects import (
    is_local,
    read_snapshot,
    storage_path,
    write_text_atomically,
)

STAGED_MANIFEST = "_staged.json"
UNDATED = "undated"
EMPTY = "empty"  # no rows, every column: the schema of a window without a row
ORDER = [("timestamp", "ascending"), ("log_id", "ascending")]


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
        """The staged copy named `key`, or None when none was published."""
        manifest = self.root / key / STAGED_MANIFEST
        if not manifest.exists():
            return None
        found = json.loads(read_snapshot(manifest))
        return StagedLogs(
            self.root / key / found["generation"], found["num_rows"], tuple(found["days"])
        )

    def stage(self, key: str, chunks: Iterable[pd.DataFrame]) -> StagedLogs:
        """Write the validated `chunks` (each with `timestamp` and `log_id`) by day under `key`
        and publish them; return the published copy (another writer's, if it won)."""
        local = self.root.path if is_local(self.root) else None
        if local is not None:
            os.makedirs(local, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=local, prefix=f".{key}-", suffix=".tmp") as work:
            built = Path(work) / key
            generation = f"generation-{uuid.uuid4().hex}"
            num_rows, days = _write_days(chunks, Path(work) / "parts", built / generation)
            manifest = {"generation": generation, "num_rows": num_rows, "days": days}
            if local is None:
                _upload(built / generation, self.root / key / generation)
                write_text_atomically(json.dumps(manifest), self.root / key / STAGED_MANIFEST)
            else:
                (built / STAGED_MANIFEST).write_text(json.dumps(manifest))
                _publish_folder(built, Path(local) / key)
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


def _publish_folder(built: Path, target: Path) -> None:
    """Rename `built` to `target`; when another writer published it first, keep theirs."""
    try:
        os.rename(built, target)
    except OSError:
        if not (target / STAGED_MANIFEST).exists():
            raise


def _upload(folder: Path, target: UPath) -> None:
    for path in sorted(folder.iterdir()):
        target.fs.put_file(str(path), (target / path.name).path)
