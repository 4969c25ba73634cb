"""Where dataset versions live (`RAG_EVAL_DATASETS`): a local folder or any fsspec URL.

Every command and Dagster definition reaches versions through `DatasetLocation`. Locally a
version is its folder. On an object store (`s3://bucket/datasets`) a version is the objects
under `<root>/<version>/`: the listing says which versions exist, and a version is read from a
local mirror of its objects (`RAG_EVAL_DATASETS_MIRROR`), brought up to date before each read
by fetching only the objects whose size or ETag changed and deleting the local files whose
object is gone. The readers, the validity rule and the limits are then those of a local folder,
and an unchanged version costs one listing, no download. On a cluster the mirror is the run
pod's own disk: no volume is needed.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path, PurePosixPath

from filelock import FileLock
from upath import UPath

from rag_eval_pipeline.datasets.errors import DatasetError, InvalidVersionName, ValidationIssue
from rag_eval_pipeline.datasets.versions import validate_version_name, version_folders
from rag_eval_pipeline.storage.file_fingerprint import ObjectIdentity, object_listing
from rag_eval_pipeline.storage.objects import is_local, storage_path, write_text_atomically

Listing = dict[str, ObjectIdentity]
MIRROR_STATE = ".mirrored.json"
FEW_FOLDERS = 16
MIRROR_THREADS = 16
DEFAULT_MIRROR = Path(tempfile.gettempdir()) / "rag-eval-datasets"


class DatasetLocation:
    """The dataset versions under `root` (a folder or an fsspec URL), read locally from
    `mirror` when `root` is on an object store."""

    def __init__(
        self, root: str | os.PathLike[str], mirror: str | os.PathLike[str] = DEFAULT_MIRROR
    ) -> None:
        self.root = storage_path(root)
        self.mirror = Path(mirror)

    @property
    def remote(self) -> bool:
        """Whether the versions are on an object store (read through the mirror)."""
        return not is_local(self.root)

    def version_names(self) -> list[str]:
        """Every folder directly under the root (hidden ones excepted), sorted, none when the
        root does not exist; on an object store one delimited listing of the root (its
        prefixes, not their objects)."""
        if not self.remote:
            return [folder.name for folder in version_folders(Path(self.root.path))]
        try:
            entries = self.root.fs.ls(self.root.path, detail=True)
        except FileNotFoundError:  # no object under the root yet
            return []
        names = (PurePosixPath(e["name"]).name for e in entries if e["type"] == "directory")
        return sorted(name for name in names if not name.startswith("."))

    def listings(self, names: Collection[str]) -> dict[str, Listing]:
        """The objects of the version folders `names` on the object store: one listing per
        folder for a few (`FEW_FOLDERS`), else one listing of the whole root, filtered."""
        if len(names) <= FEW_FOLDERS:
            return {name: object_listing(self.root / name) for name in names}
        by_version: dict[str, Listing] = {name: {} for name in names}
        for key, identity in object_listing(self.root).items():
            version, _, rest = key.partition("/")
            if rest and version in by_version:
                by_version[version][rest] = identity
        return by_version

    def local_folder(self, version: str, listing: Listing | None = None) -> Path:
        """The local folder holding `version` (refusing an unsafe name): the folder itself, or
        its mirror brought up to date with `listing` (listed now when not given)."""
        validate_version_name(version)
        if not self.remote:
            return Path(self.root.path) / version
        if listing is None:
            listing = object_listing(self.root / version)
        return mirror_folder(self.root / version, self.mirror / version, listing)

    def local_folders(self, listings: dict[str, Listing]) -> dict[str, Path | Exception]:
        """`local_folder` of every version of `listings`, `MIRROR_THREADS` mirrored at a time
        (the time goes to requests); a version that cannot be mirrored gets its error."""

        def mirrored(version: str) -> Path | Exception:
            try:
                return self.local_folder(version, listings[version])
            except (InvalidVersionName, DatasetError) as error:
                return error

        with ThreadPoolExecutor(MIRROR_THREADS) as pool:
            return dict(zip(listings, pool.map(mirrored, listings), strict=True))


def mirror_folder(source: UPath, target: Path, listing: Listing) -> Path:
    """`target` holding exactly the objects of `listing` under `source`: objects whose size or
    ETag differ from what was mirrored are fetched (concurrently, each into a temporary
    sibling renamed into place), local files without an object are deleted. One process at a
    time per folder."""
    target.mkdir(parents=True, exist_ok=True)
    state_path = target.parent / f".{target.name}{MIRROR_STATE}"
    with FileLock(str(target.parent / f".{target.name}.lock")):
        mirrored = json.loads(state_path.read_text()) if state_path.is_file() else {}
        state = dict(mirrored)
        for key in listing:
            _check_key(source, key)
        changed = [
            key
            for key, identity in listing.items()
            if state.get(key) != list(identity) or not (target / key).is_file()
        ]
        partials = [_partial(target / key) for key in changed]
        if changed:
            _fetch(source, changed, partials)
        for key, partial in zip(changed, partials, strict=True):
            os.replace(partial, target / key)
            state[key] = list(listing[key])
        _remove_unlisted(target, listing, state)
        if state != mirrored or not state_path.is_file():
            write_text_atomically(json.dumps(state, sort_keys=True), storage_path(state_path))
    return target


def _fetch(source: UPath, keys: list[str], partials: list[Path]) -> None:
    """The objects `keys` under `source` into the local files `partials`, concurrently."""
    try:
        source.fs.get([(source / key).path for key in keys], [str(p) for p in partials])
    except FileNotFoundError as error:
        label = str(source)
        message = f"an object was deleted while the version was mirrored ({error}): try again"
        raise DatasetError(label, [ValidationIssue(label, message)]) from None


def _partial(local: Path) -> Path:
    """The hidden temporary sibling `local` is fetched into (its folder created)."""
    local.parent.mkdir(parents=True, exist_ok=True)
    return local.with_name(f".{local.name}.part")


def _remove_unlisted(target: Path, listing: Listing, state: dict[str, list]) -> None:
    """Delete the files under `target` that `listing` does not name, then empty folders."""
    for path in sorted(target.rglob("*"), reverse=True):
        key = path.relative_to(target).as_posix()
        if path.is_file() and key not in listing:
            path.unlink()
            state.pop(key, None)
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()


def _check_key(source: UPath, key: str) -> None:
    """Refuse an object key that would not be a relative path inside its folder."""
    parts = PurePosixPath(key).parts
    if not parts or key.startswith("/") or any(part in ("", ".", "..") for part in parts):
        label = f"{source}/{key}"
        raise DatasetError(label, [ValidationIssue(label, "object key leaves its folder")])
