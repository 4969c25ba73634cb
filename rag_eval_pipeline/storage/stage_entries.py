"""Entries under a stage root (`RAG_EVAL_STAGED`): their last use, and the rule that deletes
what no reader needs any more.

An *entry* is a folder `<root>/<name>/` named by a digest (`ENTRY_NAME`: 40 hex digits, with an
optional `<kind>-` prefix) and published by a manifest, a `_*.json` file written last
(`_staged.json` for a version's staged interactions, `datasets.staged_logs`); a manifest's
`"generation"`, when it has one, names the `generation-*` folder it publishes. Whatever writes
entries under the root follows that layout and reads a manifest with `read_published`, which
calls `mark_used` first: the entry's `_used` marker is then rewritten when it is older than
`USED_REFRESH_S` (an hour), so a reader costs at most one tiny write an hour per entry.

`prune_stage` deletes:

- the hidden temporaries (`.*.tmp*`) of the stagers' `scratch_folder` (a local root itself)
  that no live writer owns, by the Parquet writer's rule (`objects.stale_temporaries`: a
  writer of this host whose process ended at once, one of another host past an hour);
- an entry not used for `keep_s` (its last use: `_used`, else its manifest's time);
- in a published entry, every `generation-*` its manifest does not name (on an object store a
  writer that lost the race to publish, or was killed uploading), once the newest of its files
  and the entry's last use are older than `grace_s`;
- in a folder without a readable manifest (an upload in progress or abandoned, a truncated
  manifest), every child older than `grace_s`.

Nothing else under the root is touched (a folder of another name, say a dataset version left
there by a `RAG_EVAL_STAGED` that points at the wrong place, is never deleted).

A reader handed an entry at time t is never left without it before t + `grace_s`. It refreshed
`_used` before reading the manifest, so `_used` ≥ t − `USED_REFRESH_S`, and an entry goes only
when its last use is older than `keep_s`, never taken below `USED_REFRESH_S + grace_s`. A
pruner that saw an old marker first withdraws the manifest (no reader is handed the entry any
more), then reads the marker again: a reader that read the manifest before it went had
refreshed the marker before that, so the pruner puts the manifest back and keeps the entry.
A generation the manifest does not name was never handed out (an object store's manifest is
written create-only, the first writer wins) unless a put-back lost to a new writer; its age
counts from the entry's last use too. Locally, publishing and pruning take turns on the root's
lock (`parquet.folder_lock` in this machine's locks folder, as the Parquet writer's default);
on an object store only the order above holds.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import stat
import tempfile
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import TypeVar

from pydantic import BaseModel, ValidationError
from upath import UPath

from rag_eval_pipeline.storage.machine import cache_write
from rag_eval_pipeline.storage.objects import (
    is_local,
    read_snapshot,
    remove_path,
    stale_temporaries,
    storage_path,
    temporary_prefix,
)
from rag_eval_pipeline.storage.parquet import GENERATION_PREFIX, folder_lock, machine_locks

USED_MARKER = "_used"
M = TypeVar("M", bound=BaseModel)
_LOG = logging.getLogger(__name__)
ENTRY_NAME = re.compile(r"(?:[a-z]+-)?[0-9a-f]{40}")
USED_REFRESH_S = 3600.0


@dataclass(frozen=True)
class Removal:
    """A path `prune_stage` removed (or, in a dry run, would remove), why, and its size."""

    path: str
    reason: str
    num_bytes: int


def mark_used(entry: UPath) -> None:
    """Record that a reader uses `entry` now: rewrite its `_used` marker unless it is younger
    than `USED_REFRESH_S`. A marker that cannot be written (a read-only cache) is one warning."""
    marker = entry / USED_MARKER
    with cache_write("the staged copies' use marker", marker):
        try:
            if time.time() - _modified(marker.fs.info(marker.path)) < USED_REFRESH_S:
                return
        except FileNotFoundError:
            pass
        try:
            if is_local(marker):
                with open(marker.path, "ab"):
                    pass
                os.utime(marker.path)
            else:
                marker.fs.pipe_file(marker.path, b"")
        except FileNotFoundError:  # the entry was removed meanwhile, with its manifest
            pass


def read_published(entry: UPath, manifest: str) -> bytes | None:
    """The bytes of `entry`'s manifest named `manifest`, its use recorded first (`mark_used`, in
    the order the cleanup rule relies on); None when the entry is not published."""
    path = entry / manifest
    if not path.exists():
        return None
    mark_used(entry)
    try:
        return read_snapshot(path)
    except FileNotFoundError:  # withdrawn meanwhile by a pruner
        return None


def parse_manifest(model: type[M], data: bytes, path: UPath, redo: str | None) -> M | None:
    """The manifest `data`, read from `path`, as `model`; None when it does not read (truncated
    or corrupt: the entry counts as not published). `redo` says in a warning what is done
    instead (None: no warning)."""
    try:
        return model.model_validate_json(data)
    except ValidationError as error:
        if redo is not None:
            _LOG.warning(f"{path} does not read ({error.errors()[0]['msg']}): {redo}")
        return None


def read_manifest(model: type[M], path: UPath) -> M | None:
    """The manifest at `path` as `model`, None when it is gone or does not read (no warning:
    for a writer checking what another published)."""
    try:
        return parse_manifest(model, read_snapshot(path), path, None)
    except FileNotFoundError:
        return None


@contextlib.contextmanager
def stage_lock(root: UPath) -> Iterator[None]:
    """Held while publishing into or pruning a local `root`: the Parquet writer's folder lock
    (`parquet.folder_lock`) in this machine's locks folder; nothing on an object store."""
    if not is_local(root):
        yield
        return
    with folder_lock(Path(root.path), machine_locks()):
        yield


def prune_stage(
    root: UPath, keep_s: float, grace_s: float, *, dry_run: bool = False
) -> list[Removal]:
    """Delete what no reader needs under `root` (see the module); return what was removed (with
    `dry_run`, what would be, and nothing is)."""
    if not root.exists():
        return []
    keep_s = max(keep_s, USED_REFRESH_S + grace_s)
    removals = _temporaries(scratch_folder(root), dry_run)
    with stage_lock(root):
        for info in root.fs.ls(root.path, detail=True):
            name = PurePosixPath(info["name"]).name
            if info["type"] != "directory" or not ENTRY_NAME.fullmatch(name):
                continue
            with contextlib.suppress(FileNotFoundError):  # another pruner was faster
                removals += _prune_entry(root / name, keep_s, grace_s, dry_run)
    return removals


def scratch_folder(root: UPath) -> Path:
    """Where stagers into `root` build their copies (hidden temporaries named for their
    writer): a local `root` itself, so a copy is renamed into place; for an object store this
    user's `rag-eval-staging-<uid>` in the temporary directory."""
    if is_local(root):
        return Path(root.path)
    return Path(tempfile.gettempdir()) / f"rag-eval-staging-{os.getuid()}"


def made_scratch_folder(root: UPath) -> Path:
    """`scratch_folder(root)`, created if need be. The one in the shared temporary directory
    (an object-store stage) is created private (mode 0700) and refused unless it is a folder
    of this user that nobody else can write: another user could have made it first, to swap
    the day files between their writing and their upload."""
    scratch = scratch_folder(root)
    if is_local(root):
        scratch.mkdir(parents=True, exist_ok=True)
        return scratch
    scratch.mkdir(mode=0o700, exist_ok=True)
    found = scratch.lstat()
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid() or found.st_mode & 0o022:
        raise PermissionError(
            f"{scratch} is not a private folder of this user (owner uid {found.st_uid}, mode "
            f"{stat.S_IMODE(found.st_mode):o}): remove it, or set TMPDIR to a private folder"
        )
    return scratch


def _temporaries(folder: Path, dry_run: bool) -> list[Removal]:
    """The stagers' leftovers in `folder` (hidden temporaries of an entry, named for their
    writer: `.<entry>.w~…tmp`; nothing else), removed unless `dry_run`."""
    removals = []
    named = [
        p for p in folder.glob(".*.w~*.tmp*") if ENTRY_NAME.fullmatch(p.name[1:].split(".w~")[0])
    ]
    for leftover in stale_temporaries(named):
        try:
            size = storage_path(leftover).fs.du(str(leftover), total=True)
        except FileNotFoundError:  # another stager removed it
            continue
        reason = "a writer's leftover (its writer ended, or is unknown and it is over an hour old)"
        removals.append(Removal(str(leftover), reason, size))
        if not dry_run:
            remove_path(leftover)
    return removals


@dataclass
class _Entry:
    """One folder under the stage root and its children (`ls` details), with the newest time
    and total size of each child's files, listed only when asked (most entries need none)."""

    path: UPath
    children: dict[str, Mapping]
    trees: dict[str, tuple[float, int]] = field(default_factory=dict)

    @staticmethod
    def listed(path: UPath) -> _Entry:
        listing = path.fs.ls(path.path, detail=True)
        return _Entry(path, {PurePosixPath(info["name"]).name: info for info in listing})

    def tree(self, name: str) -> tuple[float, int]:
        """The child `name`'s newest modification time and size ("": the whole entry's)."""
        if name not in self.trees:
            if name:
                self.trees[name] = _tree(self.path / name, self.children[name])
            else:
                trees = [self.tree(child) for child in self.children]
                self.trees[name] = (
                    max((t for t, _ in trees), default=0.0),
                    sum(s for _, s in trees),
                )
        return self.trees[name]


def _prune_entry(path: UPath, keep_s: float, grace_s: float, dry_run: bool) -> list[Removal]:
    """Apply the rule to one entry (see the module)."""
    entry = _Entry.listed(path)
    children = entry.children
    manifest = next((n for n in sorted(children) if _is_manifest(n, children[n])), None)
    published, generation = _published(path / manifest) if manifest else (False, None)
    now = time.time()
    if not published:
        stale = [n for n in children if entry.tree(n)[0] < now - grace_s]
        if len(stale) == len(children):  # the whole folder
            stale = [""]
        return _remove(entry, stale, "not published, older than the grace", dry_run)
    assert manifest is not None
    used = _modified(children.get(USED_MARKER) or children[manifest])
    if used < now - keep_s:
        return _remove_unused(entry, manifest, used, dry_run)
    lost = [
        name
        for name in children
        if name.startswith(GENERATION_PREFIX)
        and name != generation
        and max(entry.tree(name)[0], used) < now - grace_s
    ]
    return _remove(entry, lost, "a generation its manifest does not name", dry_run)


def _remove_unused(entry: _Entry, manifest: str, used: float, dry_run: bool) -> list[Removal]:
    """Remove the whole entry, last used at `used`, unless a reader takes it meanwhile."""
    since = datetime.fromtimestamp(used, UTC).strftime("%Y-%m-%d %H:%M UTC")
    removal = Removal(entry.path.path, f"not used since {since}", entry.tree("")[1])
    if dry_run:
        return [removal]
    if not _withdraw(entry.path / manifest, entry.path / USED_MARKER, used):
        return []
    if is_local(entry.path):
        remove_path(Path(entry.path.path))
    else:
        paths = [(entry.path / name).path for name in entry.children if name != manifest]
        entry.path.fs.rm(paths, recursive=True)
    return [removal]


def _withdraw(manifest: UPath, marker: UPath, used: float) -> bool:
    """Take `manifest` away, then read `marker` again: when a reader refreshed it since `used`,
    put the manifest back and return False (see the module)."""
    data = read_snapshot(manifest)
    aside = None
    if is_local(manifest):
        target = Path(manifest.path)
        aside = target.with_name(f"{temporary_prefix(target)}{uuid.uuid4().hex}.tmp")
        os.rename(target, aside)
    else:
        manifest.fs.rm_file(manifest.path)
    try:
        if _modified(marker.fs.info(marker.path)) <= used:
            return True
    except FileNotFoundError:
        return True
    if aside is not None:
        os.rename(aside, manifest.path)
    else:
        with contextlib.suppress(FileExistsError):  # a new writer published it meanwhile
            manifest.fs.pipe_file(manifest.path, data, mode="create")
    return False


def _remove(entry: _Entry, names: list[str], reason: str, dry_run: bool) -> list[Removal]:
    """Remove the children `names` of `entry` ("" for the entry itself) unless `dry_run`."""
    removals = [
        Removal((entry.path / name).path if name else entry.path.path, reason, entry.tree(name)[1])
        for name in names
    ]
    if removals and not dry_run:
        entry.path.fs.rm([removal.path for removal in removals], recursive=True)
    return removals


def _is_manifest(name: str, info: Mapping) -> bool:
    return name.startswith("_") and name.endswith(".json") and info["type"] == "file"


def _published(manifest: UPath) -> tuple[bool, str | None]:
    """Whether `manifest` reads as a JSON object, and the generation it names (None if none)."""
    try:
        found = json.loads(read_snapshot(manifest))
    except (OSError, ValueError):
        return False, None
    if not isinstance(found, dict):
        return False, None
    generation = found.get("generation")
    return True, generation if isinstance(generation, str) else None


def _modified(info: Mapping) -> float:
    """A listing entry's modification time (seconds since the epoch; 0 when it has none, as a
    prefix on an object store)."""
    if "mtime" in info:
        return float(info["mtime"])
    stamp = info.get("LastModified")
    return stamp.timestamp() if stamp is not None else 0.0


def _tree(path: UPath, info: Mapping) -> tuple[float, int]:
    """The newest modification time and the total size of the files at or under `path`."""
    if info["type"] != "directory":
        return _modified(info), int(info.get("size") or 0)
    found = path.fs.find(path.path, detail=True, withdirs=False).values()
    newest = max((_modified(i) for i in found), default=_modified(info))
    return newest, sum(int(i.get("size") or 0) for i in found)
