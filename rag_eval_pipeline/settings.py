"""Project locations and environment-variable names, resolved once at import.

`RAG_EVAL_DATA_DIR` moves the data folder (datasets, caches, reports); `RAG_EVAL_DATASETS` points
at the dataset versions anywhere (a folder or an fsspec URL, read on an object store through a
local mirror, `RAG_EVAL_DATASETS_MIRROR`); `RAG_EVAL_WAREHOUSE`
points the Parquet IO manager at any fsspec URL (`s3://bucket/prefix`, `memory://...`), and
`RAG_EVAL_REPORTS` and `RAG_EVAL_CACHE` do the same for the HTML reports (and raters' CSVs)
and the caches (embeddings, LLM replies, computed results). `RAG_EVAL_STAGED` holds the staged
interactions; copies unused for `RAG_EVAL_STAGED_KEEP_DAYS` go, and unpublished generations once
older than `RAG_EVAL_STAGED_GRACE_S` (`storage.stage_entries`).
"""

from __future__ import annotations

import logging
import math
import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DATA_DIR = Path(os.environ.get("RAG_EVAL_DATA_DIR", PROJECT_ROOT / "data"))
DATASETS_DIR = DATA_DIR / "datasets"
DATASETS_URL = os.environ.get("RAG_EVAL_DATASETS", str(DATASETS_DIR))
DATASETS_MIRROR = Path(
    os.environ.get("RAG_EVAL_DATASETS_MIRROR", DATA_DIR / ".mirror" / "datasets")
)
CACHE_URL = os.environ.get("RAG_EVAL_CACHE", str(DATA_DIR / "cache"))
STAGED_URL = os.environ.get("RAG_EVAL_STAGED", f"{CACHE_URL.rstrip('/')}/staged")


def _non_negative(name: str, default: float) -> float:
    """The variable `name` as a finite number ≥ 0; `default` (with a warning naming the value)
    when it is not one: a negative or NaN bound would delete what a writer still uploads, or
    nothing ever."""
    raw = os.environ.get(name, "").strip()
    try:
        value = float(raw) if raw else default
    except ValueError:
        value = -1.0
    if math.isfinite(value) and value >= 0:
        return value
    logging.getLogger(__name__).warning(
        f"{name}={raw[:40]!r} is not a number >= 0: {default:g} used"
    )
    return default


# staged copies not used for this many days are deleted (`storage.stage_entries`)
STAGED_KEEP_DAYS = _non_negative("RAG_EVAL_STAGED_KEEP_DAYS", 7.0)
# how long an unpublished or superseded generation under the stage is kept (a writer may still
# be uploading it, a reader still reading it)
STAGED_GRACE_S = _non_negative("RAG_EVAL_STAGED_GRACE_S", 3600.0)
REPORTS_URL = os.environ.get("RAG_EVAL_REPORTS", str(DATA_DIR / "reports"))
WAREHOUSE_URL = os.environ.get("RAG_EVAL_WAREHOUSE", str(DATA_DIR / "warehouse"))

MAX_FILE_MB = int(os.environ.get("RAG_EVAL_MAX_FILE_MB", "2048"))
MAX_TEXT_CHARS = int(os.environ.get("RAG_EVAL_MAX_TEXT_CHARS", "1000000"))

OFFLINE_MODEL = "offline"
JUDGE_MODEL_ENV = "RAG_EVAL_JUDGE_MODEL"
JUDGE_API_BASE_ENV = "RAG_EVAL_JUDGE_API_BASE"
GENERATOR_MODEL_ENV = "RAG_EVAL_GENERATOR_MODEL"
GENERATOR_API_BASE_ENV = "RAG_EVAL_GENERATOR_API_BASE"
EMBEDDER_MODEL_ENV = "RAG_EVAL_EMBEDDER_MODEL"
THRESHOLDS_FILE = Path(
    os.environ.get("RAG_EVAL_THRESHOLDS", PROJECT_ROOT / "config" / "thresholds.yaml")
)
