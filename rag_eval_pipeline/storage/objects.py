"""Files written all-or-nothing, on a local disk or an object store (any fsspec URL).

`storage_path` turns a location (a folder or a URL such as `s3://bucket/prefix`) into a UPath;
every location the project writes to (warehouse, reports, caches) goes through it. Object-store
locations get no listings cache, so a long-lived process (the daemon, the UI) sees other
processes' writes at once; credentials and the endpoint come from the environment (for S3:
`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_ENDPOINT_URL` for an S3-compatible server).

`write_atomically` is the one rule for publishing a file. Locally it writes a hidden temporary
sibling, fsyncs it and renames it into place, so a crash mid-write leaves the previous good
file. A temporary's name carries its writer (`temporary_prefix`: host, pid and the process's
start time), so the next successful write of the same path removes a killed writer's leftovers
(files and staging folders) at once when that writer, on this host, has ended; one of another
host, or without a writer in its name, once it is older than `STALE_TEMPORARY_S`
(`stale_temporaries`: the one rule, also the stage's, `stage_entries`). A live writer's
temporaries on this host are never touched, however old. Files are published 0666 and folders
0777 less the process's umask (0644 and 0755 under the usual 022), as `open` and `mkdir`
create them.

On an object store the object is uploaded with autocommit off (S3: a multipart
upload) and committed only when the whole content was written: the object appears whole or not
at all, and a failed writer's upload is discarded (a killed one's is invisible; a bucket
lifecycle rule aborting incomplete multipart uploads removes it).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from upath import UPath

from rag_eval_pipeline.storage.processes import process_ended, process_start_time

STALE_TEMPORARY_S = 3600.0
LOCAL_PROTOCOLS = ("", "file", "local")
_WRITER = re.compile(r"\.w~(?P<host>[^~]*)~(?P<pid>\d+)~(?P<start>\d*)~")


def current_umask() -> int:
    """The process's umask (Linux `/proc`; elsewhere set and restored at once)."""
    try:
        status = Path("/proc/self/status").read_text()
        return int(re.search(r"^Umask:\s*([0-7]+)", status, re.MULTILINE)[1], 8)
    except (OSError, TypeError):
        mask = os.umask(0o022)
        os.umask(mask)
        return mask


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
    """The name prefix of `target`'s hidden temporary siblings written by this process:
    ``.<name>.w~<host>~<pid>~<start time>~``."""
    host = re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname())
    pid = os.getpid()
    return f".{target.name}.w~{host}~{pid}~{process_start_time(pid)}~"


def _writer_ended(name: str) -> bool | None:
    """Whether the writer named in a temporary's `name`, a process of this host, has ended; None
    when the name holds no writer or one of another host."""
    writer = _WRITER.search(name)
    if writer is None or writer["host"] != re.sub(r"[^A-Za-z0-9.-]", "-", socket.gethostname()):
        return None
    return process_ended(int(writer["pid"]), writer["start"])


def stale_temporaries(
    leftovers: Iterable[Path], older_than_s: float = STALE_TEMPORARY_S
) -> list[Path]:
    """The hidden temporaries among `leftovers` (files or folders) that no live writer owns:
    their writer, of this host, ended (`_writer_ended`); or, when it is unknown or of another
    host, they are older than `older_than_s`. A live writer's are kept, however old."""
    cutoff = time.time() - older_than_s
    stale = []
    for leftover in leftovers:
        ended = _writer_ended(leftover.name)
        try:
            if ended or (ended is None and leftover.lstat().st_mtime < cutoff):
                stale.append(leftover)
        except FileNotFoundError:
            continue
    return stale


def remove_path(path: Path) -> None:
    """Delete the file or folder `path` (gone already is fine)."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def remove_stale_temporaries(target: Path, older_than_s: float = STALE_TEMPORARY_S) -> None:
    """Delete the stale (`stale_temporaries`) hidden temporary siblings of `target`."""
    for leftover in stale_temporaries(target.parent.glob(f".{target.name}.*.tmp*"), older_than_s):
        remove_path(leftover)


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
        os.chmod(tmp_name, 0o666 & ~current_umask())
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
