"""Session-wide fixtures: the offline environment and one embedding model per test session."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pytest
import yaml

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from dagster import (
    AssetChecksDefinition,
    AssetKey,
    DagsterInstance,
    ExecuteInProcessResult,
    instance_for_test,
    materialize,
)
from dagster._core.definitions.assets.graph.base_asset_graph import BaseAssetGraph
from dagster._core.execution.backfill import PartitionBackfill
from dagster._core.utils import make_new_backfill_id

from rag_eval_pipeline.definitions import default_resources
from rag_eval_pipeline.defs.io_managers import ParquetIOManagerResource
from rag_eval_pipeline.defs.resources import (
    DatasetsResource,
    EmbedderResource,
    LLMResource,
    ResultCacheResource,
    WarehouseResource,
)
from rag_eval_pipeline.embedding.embedder import Embedder

PROJECT_ROOT = Path(__file__).resolve().parents[1]
DATASETS_DIR = PROJECT_ROOT / "data" / "datasets"
SHIPPED_INSTANCE_CONFIG = PROJECT_ROOT / "dagster.yaml"
# The shipped instance's storage settings (none: Dagster's stock SQLite storage), for tests.
SHIPPED_STORAGE = {
    key: value
    for key, value in yaml.safe_load(SHIPPED_INSTANCE_CONFIG.read_text(encoding="utf-8")).items()
    if key == "storage"
}


@pytest.fixture(scope="session")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> Embedder:
    """The packaged all-MiniLM-L6-v2, loaded once, caching into a session temp folder."""
    return Embedder(cache_dir=tmp_path_factory.mktemp("embedding-cache"))


@pytest.fixture
def dagster_instance() -> Iterator[DagsterInstance]:
    """A real, temporary Dagster instance with the shipped storage (SQLite in a temp folder)."""
    with instance_for_test(overrides=SHIPPED_STORAGE) as instance:
        yield instance


def evaluation_resources(tmp_path: Path, embedder: Embedder, **overrides: object) -> dict:
    """The default resources, writing Parquet under `tmp_path` and sharing the session model."""
    resources = {
        **default_resources(),
        "io_manager": ParquetIOManagerResource(base_path=str(tmp_path / "warehouse")),
        "warehouse": WarehouseResource(base_path=str(tmp_path / "warehouse")),
        "datasets": DatasetsResource(root=str(DATASETS_DIR)),
        "embedder": EmbedderResource(cache_dir=str(embedder.cache_dir)),
        "judge_llm": LLMResource(cache_dir=str(tmp_path / "llm-cache")),
        "generator_llm": LLMResource(cache_dir=str(tmp_path / "llm-cache")),
        "result_cache": ResultCacheResource(directory=str(tmp_path / "result-cache")),
    }
    resources.update(overrides)
    return resources


def loopback_llm(base_url: str, model: str, tmp_path: Path, **settings: object) -> LLMResource:
    """An `LLMResource` for `model` ("openai/...") on the loopback OpenAI server at `base_url`,
    its reply cache under `tmp_path`; `settings` override the other fields."""
    return LLMResource(
        model=model,
        api_base=base_url,
        api_key="sk-test",
        cache_dir=str(tmp_path / "llm-cache"),
        **settings,
    )


def materialize_demo_assets(
    instance: DagsterInstance,
    tmp_path: Path,
    embedder: Embedder,
    names: set[str],
    checks: Sequence[AssetChecksDefinition] = (),
    **resources: object,
) -> ExecuteInProcessResult:
    """Materialize the assets called `names` (and `checks`) for demo-v1 on 2026-11-20 on
    `instance`, with `evaluation_resources` plus `resources`."""
    from rag_eval_pipeline.definitions import ALL_ASSETS
    from rag_eval_pipeline.defs.partitions import DATASET_VERSION, evaluation_partition_key

    instance.add_dynamic_partitions(DATASET_VERSION, ["demo-v1"])
    return materialize(
        [*(a for a in ALL_ASSETS if a.key.to_user_string() in names), *checks],
        partition_key=evaluation_partition_key("demo-v1", "2026-11-20"),
        instance=instance,
        resources=evaluation_resources(tmp_path, embedder, **resources),
    )


def report_config(tmp_path: Path) -> dict:
    """Run config sending the HTML report and the raters' CSV under `tmp_path` instead of
    the project's data/."""
    return {
        "ops": {
            "evaluation_report": {"config": {"reports_dir": str(tmp_path / "reports")}},
            "rater_export": {"config": {"exports_dir": str(tmp_path / "rater_tasks")}},
        }
    }


def request_asset_backfill(
    instance: DagsterInstance,
    asset_graph: BaseAssetGraph,
    partition_keys: Sequence[str],
    asset_names: Sequence[str],
) -> PartitionBackfill:
    """Add to `instance` a backfill of the assets called `asset_names` on `partition_keys`, as
    the UI requests one; the backfill daemon then submits its runs."""
    backfill = PartitionBackfill.from_asset_partitions(
        backfill_id=make_new_backfill_id(),
        asset_graph=asset_graph,
        partition_names=partition_keys,
        asset_selection=[AssetKey(name) for name in asset_names],
        backfill_timestamp=time.time(),
        tags={},
        dynamic_partitions_store=instance,
        all_partitions=False,
        title="test backfill",
        description=None,
        run_config=None,
    )
    instance.add_backfill(backfill)
    return backfill


CLI_TIMEOUT_S = 300


def deployment_env(
    data_dir: Path, home: Path, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of a temporary deployment: the Dagster instance in `home`, datasets and
    warehouse under `data_dir`, no `RAG_EVAL_*` from this environment, then `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAG_EVAL_")}
    env.update(
        DAGSTER_HOME=str(home),
        RAG_EVAL_DATA_DIR=str(data_dir),
        RAG_EVAL_WAREHOUSE=str(data_dir / "warehouse"),
        PYTHONPATH=str(PROJECT_ROOT),
        **(extra or {}),
    )
    return env


def rag_eval(data_dir: Path, home: Path, *args: str, exit_code: int = 0) -> str:
    """Run `rag-eval *args` in a fresh process, as a user does, on a temporary deployment
    (`deployment_env`). Fails the test unless it exits with `exit_code` (0 by default); returns
    its standard output, or its standard error when it is expected to fail."""
    completed = rag_eval_process(data_dir, home, *args)
    assert completed.returncode == exit_code, completed.stdout + completed.stderr
    return completed.stdout if exit_code == 0 else completed.stderr


def rag_eval_process(
    data_dir: Path, home: Path, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`rag_eval`'s fresh process with `env` added to its environment, whatever its exit code:
    the completed process, standard output and error captured."""
    return subprocess.run(
        [sys.executable, "-m", "rag_eval_pipeline.cli", *args],
        env=deployment_env(data_dir, home, env),
        cwd=data_dir,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )


def stop_process_group(process: subprocess.Popen) -> None:
    """SIGTERM the process group `process` leads (started with `start_new_session=True`, e.g. a
    webserver or daemon with its code server), SIGKILL if it lingers."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=15)
    with contextlib.suppress(ProcessLookupError):  # a code server still shutting down
        os.killpg(process.pid, signal.SIGKILL)
