"""Files written all-or-nothing, on a local disk or an object store (any fsspec URL).

`storage_path` turns a location (a folder or a URL such as `s3://bucket/prefix`) into a UPath;
every location the project writes to (warehouse, reports, caches) goes through it. Object-store
locations get no listings cache, so a long-lived process (the daemon, the UI) sees other
processes' writes at once; credentials and the endpoint come from the environment (for S3:
`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_ENDPOINT_URL` for an S3-compatible server).

`write_atomically` is the one rule for publishing a file. Locally it writes a hidden temporary
sibling, fsyncs it and renames it into place, so a crash mid-write leaves the previous good
file; a killed writer's temporary sibling is removed by the next successful write of the same
path once it is older than `STALE_TEMPORARY_S` (a younger one may belong to a writer still
running). On an object store the object is uploaded with autocommit off (S3: a multipart
upload) and committed only when the whole content was written: the object appears whole or not
at all, and a failed writer's upload is discarded (a killed one's is invisible; a bucket
lifecycle rule aborting incomplete multipart uploads removes it).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from upath import UPath

STALE_TEMPORARY_S = 3600.0
LOCAL_PROTOCOLS = ("", "file", "local")


def is_local(path: UPath) -> bool:
    """Whether `path` is on the local filesystem (not an fsspec remote)."""
    return getattr(path, "protocol", "") in LOCAL_PROTOCOLS


def storage_path(location: str | os.PathLike[str], **storage_options: object) -> UPath:
    """`location` (a local folder or an fsspec URL) as a UPath: local paths made absolute,
    object stores without a listings cache unless `storage_options` say otherwise."""
    path = UPath(location, **storage_options)
    if is_local(path):
        return path.absolute()
    if "use_listings_cache" in storage_options:
        return path
    return UPath(location, use_listings_cache=False, **storage_options)


def temporary_prefix(target: Path) -> str:
    """The name prefix of `target`'s hidden temporary siblings."""
    return f".{target.name}."


def remove_stale_temporaries(target: Path, older_than_s: float = STALE_TEMPORARY_S) -> None:
    """Delete hidden temporary siblings of `target` (files or folders) left by killed writers."""
    cutoff = time.time() - older_than_s
    for leftover in target.parent.glob(f"{temporary_prefix(target)}*.tmp*"):
        try:
            if leftover.lstat().st_mtime >= cutoff:
                continue
            if leftover.is_dir():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)
        except FileNotFoundError:
            continue


def write_atomically(path: UPath, write: Callable[[BinaryIO], None]) -> None:
    """Publish the bytes `write` writes to its handle at `path`: readers see the previous
    content or the new one, never a part; if `write` raises, the previous content stays."""
    if not is_local(path):
        handle = path.fs.open(path.path, "wb", autocommit=False)
        try:
            write(handle)
            handle.close()
            handle.commit()
        except BaseException:
            discard = getattr(handle, "discard", None)
            if discard is not None:
                discard()
                handle.closed = True  # the upload is abandoned: closing must not finish it
            raise
        return
    target = Path(path.path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(
        dir=target.parent, prefix=temporary_prefix(target), suffix=".tmp"
    )
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, 0o644)
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    remove_stale_temporaries(target)


def write_text_atomically(text: str, path: UPath) -> None:
    """Publish `text` (UTF-8) at `path` with `write_atomically`."""
    data = text.encode("utf-8")
    write_atomically(path, lambda handle: handle.write(data))


def read_snapshot(path: UPath) -> bytes:
    """The whole content of `path` in one request: on an object store one GET, a consistent
    snapshot even while a writer replaces the object (a file handle's ranged reads are pinned
    to the version they started on and fail once it is replaced)."""
    return path.fs.cat_file(path.path)
