"""The fingerprint of one partition's inputs, so `rag-eval run` can skip an unchanged re-run.

A partition's outputs are a function of the dataset version's files, this package's code, the
configuration files, the ``RAG_EVAL_*`` variables that change results (`RESULT_ENVIRONMENT`:
models, system under test, baseline pins, limits),
the embedding model's weights (`embedding.weights`: a model changed in place under the same path
changes the fingerprint), the endpoints the judge and generator will call (`llm.endpoint`) and
the scorecards stored for the version's
earlier dates (the regression baseline). The embedding and judge caches already make model calls
on unchanged inputs free; the fingerprint lets the CLI skip the Dagster run itself when what is
stored for the partition was materialized from identical inputs (`defs/runs/up_to_date.py`: the
fingerprint is recorded on every materialization and compared with the latest one).

A user callable or HTTP service as system under test (``RAG_EVAL_SYSTEM=callable|http``, or
``system: callable|http`` in the version's ``dataset.yaml``) can change behind any fingerprint,
so its partitions are never treated as unchanged.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from upath import UPath

from rag_eval_pipeline.datasets.manifest import read_manifest
from rag_eval_pipeline.embedding.embedder import DEFAULT_MODEL, resolve_model_path
from rag_eval_pipeline.embedding.weights import weights_fingerprint
from rag_eval_pipeline.evaluation.composite import COMPOSITE_FILE
from rag_eval_pipeline.llm.endpoint import endpoint_digest
from rag_eval_pipeline.settings import (
    EMBEDDER_MODEL_ENV,
    GENERATOR_API_BASE_ENV,
    GENERATOR_MODEL_ENV,
    JUDGE_API_BASE_ENV,
    JUDGE_MODEL_ENV,
    OFFLINE_MODEL,
    PROJECT_ROOT,
    THRESHOLDS_FILE,
)
from rag_eval_pipeline.storage.code_version import code_digest, files_digest, source_files
from rag_eval_pipeline.storage.file_fingerprint import files_fingerprint
from rag_eval_pipeline.storage.warehouse import WarehouseStore

CONFIG_DIR = PROJECT_ROOT / "config"
RESULT_ENVIRONMENT = frozenset(
    {
        # the models and endpoints that embed, generate and judge
        "RAG_EVAL_EMBEDDER_MODEL",
        "RAG_EVAL_GENERATOR_MODEL",
        "RAG_EVAL_GENERATOR_API_BASE",
        "RAG_EVAL_JUDGE_MODEL",
        "RAG_EVAL_JUDGE_API_BASE",
        # the system under test
        "RAG_EVAL_SYSTEM",
        "RAG_EVAL_SYSTEM_TARGET",
        "RAG_EVAL_SYSTEM_URL",
        "RAG_EVAL_SYSTEM_HTTP",
        "RAG_EVAL_SKIP_TOP",
        # how it is scored and against what
        "RAG_EVAL_THRESHOLDS",
        "RAG_EVAL_COMPOSITE",
        "RAG_EVAL_CRITERIA",
        "RAG_EVAL_BASELINE_VERSION",
        "RAG_EVAL_BASELINE_DATE",
        "RAG_EVAL_SCHEDULE_TIMEZONE",
        # limits that accept, refuse or cut input, and the cap that stops prompts being sent
        "RAG_EVAL_MAX_FILE_MB",
        "RAG_EVAL_MAX_TEXT_CHARS",
        "RAG_EVAL_MAX_RECORD_BYTES",
        "RAG_EVAL_MAX_ID_CHARS",
        "RAG_EVAL_MAX_YAML_BYTES",
        "RAG_EVAL_MAX_COST_USD",
        # kept in doubt: where versions are read from and reports written, which dates exist
        "RAG_EVAL_DATA_DIR",
        "RAG_EVAL_DATASETS",
        "RAG_EVAL_REPORTS",
        "RAG_EVAL_PARTITIONS_START",
    }
)
"""The ``RAG_EVAL_*`` variables whose values are part of the fingerprint: each can change what a
run stores (`RESULT_ENVIRONMENT_PREFIXES` adds the HTTP system's header values). Left out, as
they change where or when things happen but not a partition's outputs: `RAG_EVAL_CACHE` and
`RAG_EVAL_STAGED` (caches keyed by content), `RAG_EVAL_DATASETS_MIRROR` (a local copy whose
files the fingerprint hashes), `RAG_EVAL_WAREHOUSE` (where outputs are stored: its scorecards
are hashed as the baseline, and a warehouse without the outputs runs again),
`RAG_EVAL_SCHEDULE_CRON` (when the schedule ticks), `RAG_EVAL_ALERT_WEBHOOK`,
`RAG_EVAL_ALERT_STYLE` and `RAG_EVAL_UI_URL` (read by the alert sensor, not by a run),
`RAG_EVAL_STAGED_KEEP_DAYS`, `RAG_EVAL_STAGED_GRACE_S` and `RAG_EVAL_CACHE_LOCK_TIMEOUT_S`
(cache housekeeping), and any ``RAG_EVAL_*`` name the package does not read (a log level of a
wrapper script). A variable the package starts reading must be added here or to that list
(`test_run_fingerprint` checks)."""
RESULT_ENVIRONMENT_PREFIXES = ("RAG_EVAL_HTTP_",)
BASELINE_VERSION_ENV = "RAG_EVAL_BASELINE_VERSION"
UNFINGERPRINTABLE_SYSTEMS = frozenset({"callable", "http"})


def config_digest() -> str:
    """The digest of the project's config files and of the thresholds and composite-weight
    files in use (`RAG_EVAL_THRESHOLDS` and `RAG_EVAL_COMPOSITE` may point outside `config/`)."""
    files = source_files(CONFIG_DIR, "*") if CONFIG_DIR.exists() else []
    digest = files_digest(files, CONFIG_DIR)
    for chosen in (THRESHOLDS_FILE, COMPOSITE_FILE):
        if chosen.exists():
            digest += files_digest([chosen], chosen.parent)
    return digest


def result_environment(environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """The variables of `environ` that change results (`RESULT_ENVIRONMENT`, or a name starting
    with one of `RESULT_ENVIRONMENT_PREFIXES`), sorted."""
    return sorted(
        (name, value)
        for name, value in environ.items()
        if name in RESULT_ENVIRONMENT or name.startswith(RESULT_ENVIRONMENT_PREFIXES)
    )


def embedder_weights(environ: Mapping[str, str]) -> str:
    """The fingerprint of the embedding model's weights (its files' sizes and hashes)."""
    model = environ.get(EMBEDDER_MODEL_ENV, DEFAULT_MODEL)
    return weights_fingerprint(resolve_model_path(model))


def llm_endpoints(environ: Mapping[str, str]) -> list[str]:
    """The digests of the endpoints the judge and the generator will call, resolved as litellm
    resolves them (`llm.endpoint`: the provider's own variables such as `OPENAI_API_BASE`
    included)."""
    return [
        endpoint_digest(
            environ.get(model_env, OFFLINE_MODEL), environ.get(base_env) or None, environ
        )
        for model_env, base_env in (
            (JUDGE_MODEL_ENV, JUDGE_API_BASE_ENV),
            (GENERATOR_MODEL_ENV, GENERATOR_API_BASE_ENV),
        )
    ]


def baseline_digest(
    store: WarehouseStore, version: str, date: str, pinned_version: str | None = None
) -> str:
    """The digest of the scorecards a baseline can come from: the version's stored for dates
    before `date`, and every one of a pinned baseline version (`RAG_EVAL_BASELINE_VERSION`)."""
    digest = hashlib.blake2b(digest_size=20)
    sources = [(version, [d for d in store.scorecard_dates(version) if d < date])]
    if pinned_version and pinned_version != version:
        sources.append((pinned_version, store.scorecard_dates(pinned_version)))
    for source, dates in sources:
        for day in dates:
            digest.update(f"{source}|{day}".encode() + b"\0")
            digest.update(store.scorecard_path(source, day).read_bytes())
    return digest.hexdigest()


def partition_fingerprint(
    *,
    version_dir: Path,
    version: str,
    date: str,
    store: WarehouseStore,
    environ: Mapping[str, str] = os.environ,
) -> str | None:
    """The fingerprint of one partition's inputs, or None when they cannot be fingerprinted."""
    manifest, _ = read_manifest(version_dir)
    system = manifest.system or environ.get("RAG_EVAL_SYSTEM", "reference")
    if system in UNFINGERPRINTABLE_SYSTEMS:
        return None
    parts = [
        f"dataset={files_fingerprint(version_dir)}",
        f"code={code_digest()}",
        f"config={config_digest()}",
        f"env={result_environment(environ)!r}",
        f"embedder={embedder_weights(environ)}",
        f"endpoints={llm_endpoints(environ)}",
        f"staged_change={manifest.change_active(date)}",
        f"baseline={baseline_digest(store, version, date, environ.get(BASELINE_VERSION_ENV))}",
    ]
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=20).hexdigest()


def outputs_present(
    warehouse: UPath,
    assets: Iterable[str],
    version: str,
    date: str,
    files: Iterable[UPath] = (),
) -> bool:
    """Whether every asset has its stored output (a file or a table folder) for the partition,
    and every one of `files` (outputs written outside the warehouse, such as the HTML report)
    exists."""
    for asset in assets:
        path = warehouse / asset / version / f"{date}.parquet"
        if not (path.exists() or path.with_suffix("").exists()):
            return False
    return all(file.exists() for file in files)
