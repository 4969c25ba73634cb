"""Dataset version names and discovery of the version folders under `data/datasets/`."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from rag_eval_pipeline.datasets.errors import InvalidVersionName

VERSION_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def validate_version_name(name: str) -> str:
    """Return `name` if it is a safe version name, else raise `InvalidVersionName`.

    Safe: 1–100 characters of letters, digits, `.`, `_` and `-`, starting with a letter or a
    digit. That excludes path separators, `..`, spaces, and the `|` and `,` that Dagster uses
    inside multi-partition keys and partition lists.
    """
    if not isinstance(name, str) or not VERSION_NAME_PATTERN.fullmatch(name):
        raise InvalidVersionName(
            f"Invalid dataset version name {name!r}: use 1-100 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit (no spaces, slashes, '..', '|' or ',')."
        )
    return name


def version_dir(datasets_root: Path, name: str) -> Path:
    """The folder of version `name` under `datasets_root`, refusing names that escape it."""
    return Path(datasets_root) / validate_version_name(name)


TABLE_EXTENSIONS = (".jsonl", ".csv", ".tsv", ".parquet", ".trec", ".txt")


def find_table_file(folder: Path, table: str) -> Path | None:
    """The file holding `table` in a version folder (`<table>.<ext>` with a table extension),
    or None; other files (`corpus.md`, `queries.jsonl.bak`) are never read."""
    matches = sorted(
        p
        for p in folder.glob(f"{table}.*")
        if p.suffix.lower() in TABLE_EXTENSIONS and p.stem == table and p.is_file()
    )
    return matches[0] if matches else None


def escapes_folder(folder: Path, path: Path) -> bool:
    """Whether `path` (a link, or inside a linked folder) resolves outside `folder`."""
    return not Path(path).resolve().is_relative_to(Path(folder).resolve())


def version_folders(datasets_root: Path) -> list[Path]:
    """Every folder directly under `datasets_root` (hidden ones excepted), sorted by name;
    whether each is a usable version is decided by `datasets.validity`."""
    root = Path(datasets_root)
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def folder_signature(folder: Path) -> str:
    """A digest of the names, sizes and modification times of every file under `folder`:
    it changes whenever a file is added, removed or rewritten (no file is read)."""
    digest = hashlib.blake2b(digest_size=16)
    root = Path(folder)
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(f"{path.relative_to(root)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()
