"""The digest of this package's source code: cached results and run fingerprints include it.

Any edit to any module of the package gives a new digest, so nothing computed by older code is
ever reused as if the new code had computed it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from functools import cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
_CHUNK_BYTES = 1 << 20


def source_files(root: Path, pattern: str) -> list[Path]:
    """Files under `root` matching `pattern`, sorted, without bytecode caches."""
    return sorted(p for p in root.rglob(pattern) if p.is_file() and "__pycache__" not in p.parts)


def files_digest(files: Iterable[Path], root: Path) -> str:
    """BLAKE2b (160 bits) of each file's path relative to `root`, a NUL, its bytes and a NUL, in
    the given order; each file is read in chunks (memory does not follow its size)."""
    digest = hashlib.blake2b(digest_size=20)
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        with path.open("rb") as stream:
            while chunk := stream.read(_CHUNK_BYTES):
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()


@cache
def code_digest() -> str:
    """The digest of the package's Python sources (computed once per process)."""
    return files_digest(source_files(PACKAGE_DIR, "*.py"), PACKAGE_DIR)
