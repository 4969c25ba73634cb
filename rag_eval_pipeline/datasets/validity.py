"""The one rule deciding whether a folder is a usable dataset version: it loads and validates.

`rag-eval validate`, `rag-eval run`, the dataset sensor and the daily schedule all ask
:func:`version_verdict` (through :func:`located_verdict` for a version of a `DatasetLocation`,
local or on an object store, or :func:`scan_versions` for all of them), so a folder
either validates and runs, or is refused by all of them with the same message. The verdict is
cached here, and only here, per folder state: the folder's `folder_signature` (names, sizes
and modification times of its files), so an unchanged folder is not read again by the same
process (the code server evaluates every sensor and schedule tick). A valid version's
timestamped interactions are staged by day on the way (`datasets.staged_logs`), so the run that
follows, in any process, reads them from there and not from the version's files.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from rag_eval_pipeline.datasets.errors import DatasetError, InvalidVersionName
from rag_eval_pipeline.datasets.golden import DatasetLimits, load_dataset
from rag_eval_pipeline.datasets.location import DatasetLocation, Listing
from rag_eval_pipeline.datasets.manifest import DatasetManifest
from rag_eval_pipeline.datasets.staged_logs import LogStage
from rag_eval_pipeline.datasets.versions import folder_signature


@dataclass(frozen=True)
class Verdict:
    """Whether one folder is a usable dataset version, and what a user is told about it.

    `problem` is one line (the first problem and how many more), None when valid; `problems`
    lists every problem found (the first `DatasetError.max_listed`). A valid version carries
    its table sizes and settings, so `rag-eval validate` prints them without loading it again.
    """

    version: str
    signature: str
    problem: str | None = None
    problems: tuple[str, ...] = ()
    statistics: dict[str, int] = field(default_factory=dict)
    manifest: DatasetManifest = field(default_factory=DatasetManifest)

    @property
    def valid(self) -> bool:
        """True when the folder loads and every table validates."""
        return self.problem is None

    @property
    def refusal(self) -> str:
        """The line every command prints for an invalid version."""
        return f"invalid dataset version {self.version!r}: {self.problem}"


_verdicts: dict[tuple[str, DatasetLimits], Verdict] = {}
_lock = threading.Lock()


def version_verdict(folder: Path, limits: DatasetLimits | None = None) -> Verdict:
    """The verdict on the dataset version in `folder` (named after the folder), read again
    only when the folder's signature changed since this process last judged it."""
    folder = Path(folder)
    limits = limits or DatasetLimits()
    key = (str(folder.absolute()), limits)
    signature = folder_signature(folder)
    with _lock:
        cached = _verdicts.get(key)
    if cached is not None and cached.signature == signature:
        return cached
    verdict = _judge(folder, limits, signature)
    with _lock:
        _verdicts[key] = verdict
    return verdict


def refused(version: str, problem: str) -> Verdict:
    """The verdict on a version refused before its folder is read (an unsafe name)."""
    return Verdict(version, signature="", problem=problem, problems=(problem,))


def _judge(folder: Path, limits: DatasetLimits, signature: str) -> Verdict:
    try:
        dataset = load_dataset(folder, limits=limits, stage=LogStage.default())
    except InvalidVersionName as error:
        return refused(folder.name, str(error))
    except DatasetError as error:
        listed = [str(issue) for issue in error.issues[: DatasetError.max_listed]]
        more = len(error.issues) - len(listed)
        problems = (*listed, f"... and {more} more") if more > 0 else tuple(listed)
        return Verdict(folder.name, signature, error.summary, problems)
    return Verdict(
        dataset.version, signature, statistics=dataset.statistics(), manifest=dataset.manifest
    )


@dataclass(frozen=True)
class VersionScan:
    """The verdict on every folder of the datasets folder, by folder name."""

    verdicts: dict[str, Verdict]

    @property
    def valid(self) -> list[str]:
        """The usable versions, sorted."""
        return [name for name, verdict in self.verdicts.items() if verdict.valid]

    @property
    def invalid(self) -> dict[str, str]:
        """Why each refused folder is refused (one line each)."""
        return {n: v.problem for n, v in self.verdicts.items() if v.problem is not None}


def scan_versions(
    location: DatasetLocation | str | os.PathLike[str],
    limits: DatasetLimits | None = None,
    skip: Collection[str] = (),
) -> VersionScan:
    """:func:`located_verdict` of every version folder of `location` (a `DatasetLocation`, a
    folder or a URL) but those in `skip` (e.g. the versions already registered); on an object
    store the folders judged are listed together (`DatasetLocation.listings`)."""
    if not isinstance(location, DatasetLocation):
        location = DatasetLocation(location)
    names = [name for name in location.version_names() if name not in skip]
    return judge_versions(location, names, limits)


def judge_versions(
    location: DatasetLocation, names: Collection[str], limits: DatasetLimits | None = None
) -> VersionScan:
    """:func:`located_verdict` of the versions `names` of `location`; on an object store
    their objects are listed together and mirrored concurrently
    (`DatasetLocation.listings`, `DatasetLocation.local_folders`)."""
    if not location.remote:
        return VersionScan({name: located_verdict(location, name, limits) for name in names})
    folders = location.local_folders(location.listings(names))
    return VersionScan(
        {
            name: version_verdict(folder, limits)
            if isinstance(folder, Path)
            else _refusal(name, folder)
            for name, folder in folders.items()
        }
    )


def located_verdict(
    location: DatasetLocation,
    version: str,
    limits: DatasetLimits | None = None,
    listing: Listing | None = None,
) -> Verdict:
    """The verdict on `version` of `location`: refused without reading anything when its name
    is unsafe, or when its objects cannot be mirrored; else `version_verdict` of its folder."""
    try:
        folder = location.local_folder(version, listing)
    except (InvalidVersionName, DatasetError) as error:
        return _refusal(version, error)
    return version_verdict(folder, limits)


def _refusal(version: str, error: Exception) -> Verdict:
    return refused(version, error.summary if isinstance(error, DatasetError) else str(error))
