"""Dagster resources: where datasets live, the embedder, the judge and generator LLMs, alerts.

Each resource is a thin, configurable wrapper around a library object, so every value can be set
in run config, the Launchpad or the environment without code changes. Each tier's folder binds
the resources it owns for a default deployment in its `resources.py` (offline unless the
environment names models); `resources` below binds the two every tier uses.
"""

import os
from collections.abc import Collection
from functools import cache
from pathlib import Path

import pandas as pd
from dagster import ConfigurableResource, Definitions, EnvVar, InitResourceContext, definitions
from pydantic import PrivateAttr

from rag_eval_pipeline.datasets.golden import DatasetLimits, GoldenDataset, load_dataset
from rag_eval_pipeline.datasets.http_config import HttpSystemConfig, resolve_http_config
from rag_eval_pipeline.datasets.location import DatasetLocation
from rag_eval_pipeline.datasets.staged_logs import LogStage
from rag_eval_pipeline.datasets.traces import logs_origin
from rag_eval_pipeline.datasets.validity import (
    Verdict,
    VersionScan,
    judge_versions,
    located_verdict,
    scan_versions,
)
from rag_eval_pipeline.embedding.embedder import DEFAULT_MODEL, Embedder
from rag_eval_pipeline.judges.judge import Judge, LLMJudge
from rag_eval_pipeline.judges.offline import OfflineJudge
from rag_eval_pipeline.judges.show_judge import LLMShowJudge, OfflineShowJudge, ShowJudge
from rag_eval_pipeline.llm.budget import CostBudget, max_cost_from_env, run_budget
from rag_eval_pipeline.llm.client import LLMClient, LLMConfig
from rag_eval_pipeline.llm.endpoint import OFFLINE_ENDPOINT, endpoint_digest
from rag_eval_pipeline.llm.estimate import PromptEstimate, run_estimate
from rag_eval_pipeline.llm.secrets import redact
from rag_eval_pipeline.reporting.alerting import AlertContext, Delivery, alert_payload, post_json
from rag_eval_pipeline.settings import (
    CACHE_URL,
    DATASETS_MIRROR,
    DATASETS_URL,
    MAX_FILE_MB,
    MAX_TEXT_CHARS,
    OFFLINE_MODEL,
    WAREHOUSE_URL,
)
from rag_eval_pipeline.storage.objects import storage_path
from rag_eval_pipeline.storage.result_cache import ResultCache
from rag_eval_pipeline.storage.warehouse import Baseline, WarehouseStore
from rag_eval_pipeline.systems.generators import Generator, LLMGenerator, OfflineGenerator


def env_var_if_set(name: str) -> EnvVar | None:
    """The variable `name` as an `EnvVar` when set: read at run time, so the job snapshot that
    Dagster stores with every run (and shows in the UI) holds its name, never its value (an
    `api_base` may carry `user:password@`)."""
    return EnvVar(name) if name in os.environ else None


class DatasetsResource(ConfigurableResource):
    """Where the dataset versions live (a folder or an fsspec URL, one sub-folder per
    version; on an object store read through the local `mirror`), and the largest file (MiB)
    and text field (characters) a version may hold."""

    root: str = DATASETS_URL
    mirror: str = str(DATASETS_MIRROR)
    max_file_mb: int = MAX_FILE_MB
    max_text_chars: int = MAX_TEXT_CHARS

    @property
    def limits(self) -> DatasetLimits:
        """The bounds on what a version may hold."""
        return DatasetLimits(self.max_file_mb << 20, self.max_text_chars)

    @property
    def location(self) -> DatasetLocation:
        """The versions' location (`datasets.location`)."""
        return DatasetLocation(self.root, self.mirror)

    def scan(self, skip: Collection[str] = ()) -> VersionScan:
        """The verdict on every version folder but those in `skip` (`scan_versions`)."""
        return scan_versions(self.location, self.limits, skip)

    def verdicts(self, versions: Collection[str]) -> VersionScan:
        """The verdicts on `versions` (`judge_versions`: on an object store listed together)."""
        return judge_versions(self.location, versions, self.limits)

    def verdict(self, version: str) -> Verdict:
        """The verdict on one version (`located_verdict`); a name that would escape the
        datasets folder is refused without reading anything."""
        return located_verdict(self.location, version, self.limits)

    def folder(self, version: str) -> Path:
        """The local folder `version` is read from (mirrored first from an object store)."""
        return self.location.local_folder(version)

    def logs_origin(self, version: str) -> str | None:
        """Where the version's interactions come from (`traces/` wins over `logs.*`)."""
        return logs_origin(self.folder(version))

    def problem(self, version: str) -> str | None:
        """Why `version` cannot be evaluated, in one line; None when it loads and validates."""
        return self.verdict(version).problem

    def load(self, version: str) -> GoldenDataset:
        """Read and validate one version (raises `DatasetError` naming file, row, column);
        its timestamped interactions staged by day, or taken from their staged copy."""
        return load_dataset(self.folder(version), version, self.limits, LogStage.default())


@cache
def _shared_embedder(model: str, cache_dir: str, batch_size: int, normalize: bool) -> Embedder:
    return Embedder(model=model, cache_dir=cache_dir, batch_size=batch_size, normalize=normalize)


class EmbedderResource(ConfigurableResource):
    """A sentence-transformers model (default: the packaged all-MiniLM-L6-v2) with a vector
    cache (a local folder or any fsspec URL)."""

    model: str = DEFAULT_MODEL
    cache_dir: str = str(storage_path(CACHE_URL) / "embeddings")
    batch_size: int = 64
    normalize: bool = True

    def get(self) -> Embedder:
        """The process-wide embedder for this configuration (the model loads once)."""
        return _shared_embedder(self.model, self.cache_dir, self.batch_size, self.normalize)

    @property
    def identity(self) -> str:
        """What determines the vectors (not where they are cached): model and normalization."""
        return f"{self.model}|normalize={self.normalize}"


class RagSystemResource(ConfigurableResource):
    """The system under test.

    `kind`: `reference` (built-in dense retriever + the generator LLM), `callable` (`target` =
    `package.module:function`, called with each question), `logged` (the dataset's
    `answers` table) or `http` (a service, see `datasets.http_config`; `url` and `http_config`
    come from `RAG_EVAL_SYSTEM_URL` and `RAG_EVAL_SYSTEM_HTTP`). `top_k` documents go to the
    generator; `retrieval_depth` documents per query are kept for the IR metrics; `skip_top`
    drops the best documents (fault injection: the demo's "degraded system" switch,
    `RAG_EVAL_SKIP_TOP`).
    """

    kind: str = "reference"
    target: str | None = None
    url: str | None = None
    http_config: str | None = None
    top_k: int = 3
    retrieval_depth: int = 100
    skip_top: int = 0

    def kind_for(self, dataset: GoldenDataset) -> str:
        """The system that evaluates `dataset`: its `dataset.yaml` `system`, else `kind`."""
        return dataset.manifest.system or self.kind

    def http_for(self, dataset: GoldenDataset) -> HttpSystemConfig | None:
        """For an `http` system, its configuration: the file `http_config`
        (`RAG_EVAL_SYSTEM_HTTP`) else the `http:` block of `dataset.yaml`, its url replaced by
        `url` (`RAG_EVAL_SYSTEM_URL`) when set; None for the other kinds."""
        if self.kind_for(dataset) != "http":
            return None
        return resolve_http_config(
            dataset.manifest.http,
            block_source=f"dataset version {dataset.version!r}: dataset.yaml",
            config_file=self.http_config,
            url=self.url,
        )


class LLMResource(ConfigurableResource):
    """An LLM reached through litellm, used as judge or generator; `offline` runs locally.

    `model` is any litellm model string (`gpt-4o-mini`, `anthropic/claude-...`,
    `ollama/llama3.2`, `hosted_vllm/...` with `api_base`). The default `offline` uses the
    deterministic heuristic judge and the extractive generator, labeled as such in every row.
    API keys: the provider's usual variable (e.g. `OPENAI_API_KEY`) or `api_key` set from an
    `EnvVar`; they are never logged nor part of the cache key. Failures, the breaker, AIMD and
    the run's cost cap: docs/providers.md. `role` names it in estimates ("judge", "generator");
    `estimate_only` calls nothing and counts what would be sent (`llm.estimate`).
    """

    model: str = OFFLINE_MODEL
    api_base: str | None = None
    api_key: str | None = None
    temperature: float = 0.0
    max_tokens: int = 512
    max_concurrency: int = 8
    timeout_s: float = 60.0
    max_retries: int = 3
    rate_limit_budget_s: float = 300.0
    breaker_window: int = 20
    breaker_min_calls: int = 10
    breaker_failure_ratio: float = 0.5
    breaker_cooldown_s: float = 30.0
    cache_dir: str = str(storage_path(CACHE_URL) / "llm")
    role: str = "llm"
    estimate_only: bool = False
    _budget: CostBudget | None = PrivateAttr(default=None)
    _estimate: PromptEstimate | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        """Share the run's spending cap (``RAG_EVAL_MAX_COST_USD``) between its LLM clients and,
        with `estimate_only`, the run's `PromptEstimate` (`rag-eval estimate`)."""
        run_id = context.run_id or "no-run"
        self._budget = run_budget(run_id, max_cost_from_env())
        self._estimate = run_estimate(run_id) if self.estimate_only else None

    @property
    def is_offline(self) -> bool:
        """Whether this is the local, deterministic default."""
        return self.model == OFFLINE_MODEL

    @property
    def identity(self) -> str:
        """What determines the replies (as in the reply cache's key), as verdicts and metadata
        show it: the model, the endpoint (its configured URL, secrets redacted, or `default`,
        then `#` and the first 12 hex digits of the digest of the endpoint litellm will really
        call, provider variables included; `local` for the offline model) and sampling; an
        estimate-only resource's stand-in replies are marked, so no result is reused across."""
        digest = endpoint_digest(self.model, self.api_base)
        endpoint = (
            "local"
            if digest == OFFLINE_ENDPOINT
            else f"{redact(self.api_base or 'default', [self.api_key])}#{digest[:12]}"
        )
        identity = f"{self.model}|{endpoint}|t={self.temperature}|max_tokens={self.max_tokens}"
        return f"{identity}|estimate-only" if self.estimate_only else identity

    def client(self) -> LLMClient:
        """A new client (its `usage` counts this asset's calls, cache hits, tokens and cost),
        charging the run's `CostBudget`."""
        return LLMClient(
            LLMConfig(
                model=self.model,
                api_base=self.api_base,
                api_key=self.api_key,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                max_concurrency=self.max_concurrency,
                timeout_s=self.timeout_s,
                max_retries=self.max_retries,
                cache_dir=self.cache_dir,
                rate_limit_budget_s=self.rate_limit_budget_s,
                breaker_window=self.breaker_window,
                breaker_min_calls=self.breaker_min_calls,
                breaker_failure_ratio=self.breaker_failure_ratio,
                breaker_cooldown_s=self.breaker_cooldown_s,
            ),
            budget=self._budget,
            estimate=self._estimate,
            role=self.role,
        )

    def judge(self, embedder: Embedder) -> tuple[Judge, LLMClient | None]:
        """The judge for this configuration and, for a real model, its client."""
        if self.is_offline:
            return self.offline_judge(embedder), None
        client = self.client()
        return LLMJudge(client, embedder), client

    def offline_judge(self, embedder: Embedder) -> OfflineJudge:
        """The offline judge, its results kept by content beside the reply cache."""
        return OfflineJudge(
            embedder, cache=ResultCache(storage_path(self.cache_dir) / "offline-judge")
        )

    def show_judge(self, embedder: Embedder) -> tuple[ShowJudge, LLMClient | None]:
        """The production show/hide judge for this configuration and, if real, its client."""
        if self.is_offline:
            return OfflineShowJudge(self.offline_judge(embedder)), None
        client = self.client()
        return LLMShowJudge(client), client

    def generator(self, embedder: Embedder) -> tuple[Generator, LLMClient | None]:
        """The generator for this configuration and, for a real model, its client."""
        if self.is_offline:
            return OfflineGenerator(embedder), None
        client = self.client()
        return LLMGenerator(client), client


def llm_from_environment(role: str, model_env: str, api_base_env: str) -> LLMResource:
    """The `role` LLM of a default deployment: the model `model_env` names (else offline), the
    API base `api_base_env` names as an `EnvVar` (never its value in a run's snapshot)."""
    return LLMResource(
        model=os.environ.get(model_env, OFFLINE_MODEL),
        api_base=env_var_if_set(api_base_env),
        role=role,
    )


class ResultCacheResource(ConfigurableResource):
    """Where costly, pure results are kept by content (see `storage.result_cache`).

    `enabled: false` recomputes every time (e.g. to time the computation itself).
    """

    directory: str = str(storage_path(CACHE_URL) / "results")
    enabled: bool = True

    def get(self) -> ResultCache | None:
        """The cache, or None when disabled."""
        return ResultCache(self.directory) if self.enabled else None


class WarehouseResource(ConfigurableResource):
    """Read access to stored scorecards and the alert history (same base as the IO manager)."""

    base_path: str = WAREHOUSE_URL

    def store(self) -> WarehouseStore:
        """The store over this base path."""
        return WarehouseStore(self.base_path)


class AlertsResource(ConfigurableResource):
    """Where regression alerts go besides the Dagster log and the `regression_alerts` record.

    `webhook_url`: any endpoint taking a JSON POST (set it from an `EnvVar`, e.g.
    `RAG_EVAL_ALERT_WEBHOOK`); `style`: `json` (every field) or `slack` (a Slack incoming
    webhook's `{"text": ...}`); `ui_url`: the Dagster UI's base URL, linked from each alert
    (`RAG_EVAL_UI_URL`).
    """

    webhook_url: str | None = None
    style: str = "json"
    ui_url: str | None = None
    timeout_s: float = 10.0
    max_retries: int = 3
    backoff_s: float = 1.0

    def deliver(
        self, regressions: pd.DataFrame, context: AlertContext | None = None
    ) -> Delivery | None:
        """Send one partition's alert; None when no webhook is configured."""
        if not self.webhook_url:
            return None
        return post_json(
            self.webhook_url,
            alert_payload(regressions, self.style, context),
            timeout_s=self.timeout_s,
            max_retries=self.max_retries,
            backoff_s=self.backoff_s,
        )


class BaselineResource(ConfigurableResource):
    """What each partition is compared with for regressions.

    Default (both None): the latest earlier date of the same dataset version. `version` and/or
    `date` pin the baseline (e.g. a release you trust), see `WarehouseStore.baseline`.
    """

    version: str | None = None
    date: str | None = None

    def select(self, store: WarehouseStore, version: str, date: str) -> Baseline | None:
        """The baseline scorecard of (`version`, `date`), or None when there is none yet."""
        return store.baseline(version, date, pinned_version=self.version, pinned_date=self.date)


@definitions
def resources() -> Definitions:
    """What every tier uses: the Parquet IO manager and the result cache."""
    from rag_eval_pipeline.defs.shared.io_managers import ParquetIOManagerResource

    return Definitions(
        resources={"io_manager": ParquetIOManagerResource(), "result_cache": ResultCacheResource()}
    )
