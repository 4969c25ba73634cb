"""The fingerprint of the files under a folder, local or on an object store: one rule.

`files_fingerprint(folder)` changes whenever a file under `folder` is added, removed or
rewritten. Locally it is the hash of every file's relative path and bytes (BLAKE2b,
`files_digest`), reused without reading the files when none changed since it was taken (the
stat cache under `RAG_EVAL_CACHE`, `storage.digest_cache`); on an object store it reads
nothing: it hashes each object's relative key, size and ETag from one listing (S3 gives a new
ETag to every new content). `object_listing` is that listing, by relative key, which the
dataset mirror also uses to fetch only the objects that changed.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from upath import UPath

from rag_eval_pipeline import settings
from rag_eval_pipeline.storage.digest_cache import cached_files_digest, is_under
from rag_eval_pipeline.storage.objects import is_local, storage_path

ObjectIdentity = tuple[int, str]
"""An object's size and ETag (the empty string when the store gives none)."""


def object_listing(folder: UPath) -> dict[str, ObjectIdentity]:
    """Every object under `folder` (any depth), by key relative to it, with its identity."""
    prefix = folder.path.rstrip("/") + "/"
    found = folder.fs.find(folder.path, detail=True, withdirs=False)
    return {
        path[len(prefix) :]: (int(info.get("size") or 0), _etag(info))
        for path, info in sorted(found.items())
        if path.startswith(prefix) and info.get("type", "file") == "file"
    }


def _etag(info: dict) -> str:
    return str(info.get("ETag") or info.get("etag") or info.get("md5") or "").strip('"')


def listing_fingerprint(listing: dict[str, ObjectIdentity]) -> str:
    """The fingerprint of an `object_listing`: its keys, sizes and ETags."""
    digest = hashlib.blake2b(digest_size=20)
    for key, (size, etag) in sorted(listing.items()):
        digest.update(f"{key}\0{size}\0{etag}\n".encode())
    return digest.hexdigest()


def files_fingerprint(
    folder: str | os.PathLike[str] | UPath,
    cache: str | os.PathLike[str] | None = None,
    only: tuple[str, ...] | None = None,
) -> str:
    """The fingerprint of the files under `folder` (a local folder or an fsspec URL): the
    hash of their relative paths and bytes locally (with the stat cache at `cache`, default
    `RAG_EVAL_CACHE`), of their keys, sizes and ETags on an object store. With `only`: of the
    files whose relative path is one of `only` or lies under one."""
    path = storage_path(folder)
    cache = settings.CACHE_URL if cache is None else cache
    if is_local(path):
        return cached_files_digest(Path(path.path), cache, only)
    listing = object_listing(path)
    if only is not None:
        listing = {key: value for key, value in listing.items() if is_under(key, only)}
    return listing_fingerprint(listing)
