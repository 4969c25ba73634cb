"""Session-wide fixtures: the offline environment, one embedding model per test session, and
the real runs several modules read: the `flips` version on two dates (`two_dates`) and a
`dagster-webserver` over two dates of Tier 1 (`tier1_webserver`)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# staged interactions (datasets/staged_logs.py) go to a temporary folder, not the repo's data/
os.environ.setdefault("RAG_EVAL_STAGED", tempfile.mkdtemp(prefix="rag-eval-staged-"))

import pandas as pd
from dagster import (
    AssetChecksDefinition,
    AssetKey,
    AssetSelection,
    DagsterInstance,
    ExecuteInProcessResult,
    instance_for_test,
    materialize,
)

from rag_eval_pipeline.datasets import manifest
from rag_eval_pipeline.definitions import ALL_ASSETS, ALL_CHECKS, default_resources
from rag_eval_pipeline.defs.shared.io_managers import ParquetIOManagerResource
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.defs.shared.resources import (
    DatasetsResource,
    EmbedderResource,
    LLMResource,
    ResultCacheResource,
    WarehouseResource,
)
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline_tests import flips
from rag_eval_pipeline_tests.ui_browser import (
    INSTALL_HINT,
    chromium,
    chromium_path,
    free_port,
    start_webserver,
    wait_until_ready,
)
from rag_eval_pipeline_tests.ui_browser import stop_process_group as stop_process_group

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


@pytest.fixture(scope="module")
def pinned_today() -> Iterator[str]:
    """Today's UTC date, read once when the module starts and pinned as the pipeline's
    `datasets.manifest.utc_today` (the staged change's reference day) for the whole module: a
    module running across midnight UTC computes its dates and evaluates them on one today."""
    day = manifest.utc_today()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(manifest, "utc_today", lambda: day)
        yield day


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
    from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key

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


LAUNCH_BACKFILL = """
mutation($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on Error { message }
  }
}
"""


BACKFILL_STATUS = """
query($id: String!) {
  partitionBackfillOrError(backfillId: $id) {
    __typename
    ... on PartitionBackfill { status }
    ... on Error { message }
  }
}
"""


def dagster_graphql(query: str, variables: Mapping[str, object], reply: Path) -> dict:
    """Send `query` with `variables` to Dagster's public GraphQL API with its `dagster-graphql`
    command, against the project's workspace and the instance in `$DAGSTER_HOME` (no server);
    its JSON reply is written to `reply` and its `data` returned."""
    completed = subprocess.run(
        [
            str(Path(sys.executable).with_name("dagster-graphql")),
            *("-w", "workspace.yaml", "-t", query),
            *("-v", json.dumps(variables), "-o", str(reply)),
        ],
        env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    return json.loads(reply.read_text())["data"]


def request_asset_backfill(
    partition_keys: Sequence[str], asset_names: Sequence[str], tmp_path: Path
) -> str:
    """Ask Dagster, as the UI does, for a backfill of the assets called `asset_names` on
    `partition_keys`, on the instance in `$DAGSTER_HOME`, and return its id; the backfill daemon
    then submits its runs. Dagster has no public Python call that adds a backfill: this sends its
    public GraphQL mutation `launchPartitionBackfill`, its reply written to a file in
    `tmp_path`."""
    params = {
        "assetSelection": [{"path": [name]} for name in asset_names],
        "partitionNames": list(partition_keys),
        "title": "test backfill",
    }
    data = dagster_graphql(LAUNCH_BACKFILL, {"params": params}, tmp_path / "launch-backfill.json")
    launched = data["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    return launched["backfillId"]


def backfill_status(backfill_id: str, tmp_path: Path) -> str:
    """The status of the backfill `backfill_id` on the instance in `$DAGSTER_HOME`
    (`REQUESTED` until the backfill daemon finds its runs ended, then e.g.
    `COMPLETED_SUCCESS`), read with Dagster's public GraphQL query `partitionBackfillOrError`
    (its Python status class is private)."""
    data = dagster_graphql(BACKFILL_STATUS, {"id": backfill_id}, tmp_path / "backfill.json")
    backfill = data["partitionBackfillOrError"]
    assert backfill["__typename"] == "PartitionBackfill", backfill
    return backfill["status"]


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
    )
    env.update(extra or {})
    return env


def rag_eval(data_dir: Path, home: Path, *args: str, exit_code: int = 0) -> str:
    """Run `rag-eval *args` in a fresh process, as a user does, on a temporary deployment
    (`deployment_env`). Fails the test unless it exits with `exit_code` (0 by default); returns
    its standard output, or its standard error when it is expected to fail."""
    completed = rag_eval_process(data_dir, home, *args)
    assert completed.returncode == exit_code, completed.stdout + completed.stderr
    return completed.stdout if exit_code == 0 else completed.stderr


def rag_eval_process(
    data_dir: Path,
    home: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    timeout_s: float = CLI_TIMEOUT_S,
) -> subprocess.CompletedProcess[str]:
    """`rag_eval`'s fresh process with `env` added to its environment, whatever its exit code:
    the completed process, standard output and error captured."""
    return subprocess.run(
        [sys.executable, "-m", "rag_eval_pipeline.cli", *args],
        env=deployment_env(data_dir, home, env),
        cwd=data_dir,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


# --------------------------------------------------------------------------- shared real runs

PIPELINE = [a for a in ALL_ASSETS if a.key != AssetKey("system_comparison")]


@dataclass
class TwoDates:
    tmp: Path
    instance: DagsterInstance
    day2: ExecuteInProcessResult
    verdicts: pd.DataFrame


@pytest.fixture(scope="session")
def two_dates(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[TwoDates]:
    """The whole pipeline with its checks on `flips` (plus `HOSTILE_SYSTEM`, unchanged) on
    `DAY1` and `DAY2`, on a temporary instance; reports under `tmp/reports`."""
    tmp = tmp_path_factory.mktemp("flips")
    datasets = tmp / "datasets"
    with instance_for_test(overrides=SHIPPED_STORAGE) as instance:
        instance.add_dynamic_partitions(DATASET_VERSION, [flips.VERSION])
        for day, misses in ((flips.DAY1, flips.DAY1_MISSES), (flips.DAY2, flips.DAY2_MISSES)):
            flips.write_version(
                datasets / flips.VERSION, {**misses, flips.HOSTILE_SYSTEM: flips.BASE_MISSES}
            )
            result = materialize(
                [*PIPELINE, *ALL_CHECKS],
                partition_key=evaluation_partition_key(flips.VERSION, day),
                instance=instance,
                resources=evaluation_resources(
                    tmp, embedder, datasets=DatasetsResource(root=str(datasets))
                ),
                run_config=report_config(tmp),
            )
            assert result.success
        verdicts = pd.read_parquet(
            tmp / "warehouse" / "metric_regressions" / flips.VERSION / f"{flips.DAY2}.parquet"
        )
        yield TwoDates(tmp, instance, result, verdicts)


TIER1_VERSION = "scifact-test"
TIER1_DATES = ("2026-11-20", "2026-11-21")
TIER1_SLICE = [
    "golden_dataset",
    "corpus_embeddings",
    "retrieval_runs",
    "retrieval_metrics",
    "retrieval_quality",
]
WEBSERVER_STARTUP_S = 90.0  # from launch; the code location imports litellm, torch, nltk


@contextlib.contextmanager
def instance_with_webserver(tmp: Path) -> Iterator[tuple[DagsterInstance, Callable[[], str]]]:
    """A temporary instance (the shipped dagster.yaml, in `tmp/dagster_home`, warehouse
    `tmp/warehouse`) and `dagster-webserver` launched on it at once: yields the instance and a
    function returning the webserver's URL once it answers. Loading the code location dominates
    the start-up, so materialize in process in between: the UI reads the instance per query.
    The webserver is stopped and the instance disposed on exit."""
    home = tmp / "dagster_home"
    home.mkdir()
    config = yaml.safe_load(SHIPPED_INSTANCE_CONFIG.read_text(encoding="utf-8"))
    (home / "dagster.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    instance = DagsterInstance.from_config(str(home))
    port, log, started = free_port(), tmp / "webserver.log", time.monotonic()
    process = start_webserver(home, port, log, {"RAG_EVAL_WAREHOUSE": str(tmp / "warehouse")})

    def ready() -> str:
        url = f"http://127.0.0.1:{port}"
        wait_until_ready(url, process, log, deadline=started + WEBSERVER_STARTUP_S)
        return url

    try:
        yield instance, ready
    finally:
        stop_process_group(process)
        instance.dispose()


@pytest.fixture(scope="module")
def tier1_webserver(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[str]:
    """The URL of `dagster-webserver` on a temporary instance (`instance_with_webserver`)
    holding real materializations of Tier 1 of `scifact-test` (no corpus: cheap) on
    `TIER1_DATES`; one per module (a server lives no longer than the tests that use it)."""
    tmp = tmp_path_factory.mktemp("webserver")
    with instance_with_webserver(tmp) as (instance, ready):
        instance.add_dynamic_partitions(DATASET_VERSION, [TIER1_VERSION])
        for day in TIER1_DATES:
            result = materialize(
                [*ALL_ASSETS, *ALL_CHECKS],
                selection=AssetSelection.assets(*TIER1_SLICE),
                partition_key=evaluation_partition_key(TIER1_VERSION, day),
                instance=instance,
                resources=evaluation_resources(tmp, embedder),
            )
            assert result.success
        yield ready()


# the mark of browser tests: skipped when Chromium is absent
NO_CHROMIUM = f"browser tests need Chromium: {INSTALL_HINT}"
NEEDS_CHROMIUM = pytest.mark.skipif(chromium_path() is None, reason=NO_CHROMIUM)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium driven by Playwright, one per module of browser tests."""
    executable = chromium_path()
    if executable is None:
        pytest.skip(NO_CHROMIUM)
    with chromium(executable) as running:
        yield running


KINDS = ("unit", "integration", "browser")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Refuse a test that does not say its kind (`pytestmark` of its file): `make test-fast`
    selects the unit tests by it."""
    unmarked = [item.nodeid for item in items if not any(item.get_closest_marker(k) for k in KINDS)]
    if unmarked:
        raise pytest.UsageError(f"tests without a kind marker {KINDS}: {unmarked[:5]}")
