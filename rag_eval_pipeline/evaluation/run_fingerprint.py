"""The fingerprint of one partition's inputs, so `rag-eval run` can skip an unchanged re-run.

A partition's outputs are a function of the dataset version's files, this package's code, the
configuration files, the ``RAG_EVAL_*`` environment (models, system under test, baseline pins),
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
ENV_PREFIX = "RAG_EVAL_"
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


def environment_items(environ: Mapping[str, str]) -> list[tuple[str, str]]:
    """The ``RAG_EVAL_*`` variables, sorted: every setting the resources read."""
    return sorted((k, v) for k, v in environ.items() if k.startswith(ENV_PREFIX))


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
        f"env={environment_items(environ)!r}",
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
