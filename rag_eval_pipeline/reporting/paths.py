"""Where a partition's HTML report is stored."""

from __future__ import annotations

from pathlib import Path

from upath import UPath

from rag_eval_pipeline.storage.objects import storage_path


def report_path(reports_dir: str | Path, version: str, date: str) -> UPath:
    """`<reports_dir>/<version>/<date>.html` (the version name is validated: no path escape)."""
    return storage_path(reports_dir) / version / f"{date}.html"
