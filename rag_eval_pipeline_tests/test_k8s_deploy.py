"""deploy/k8s/ cannot rot: the instance file loads with dagster-k8s against a real PostgreSQL,
the Helm values agree with it, and the image's pins are the Makefile's and pyproject's."""

from __future__ import annotations

import re
import shutil
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pgserver
import pytest
import yaml
from dagster import DagsterInvalidConfigError, QueuedRunCoordinator, instance_for_test
from dagster_k8s import K8sRunLauncher

from rag_eval_pipeline_tests.conftest import PROJECT_ROOT

pytestmark = [pytest.mark.integration]

K8S_DIR = PROJECT_ROOT / "deploy" / "k8s"
PYPROJECT = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
DAGSTER_VERSION = next(
    requirement.split("==")[1]
    for requirement in PYPROJECT["project"]["dependencies"]
    if requirement.startswith("dagster==")
)
# A kubeconfig for loading the launcher outside a cluster (nothing connects to it).
KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: test, user: {token: unused}}]
contexts: [{name: test, context: {cluster: test, user: test}}]
current-context: test
"""


def instance_file() -> dict[str, Any]:
    return yaml.safe_load((K8S_DIR / "dagster.yaml").read_text(encoding="utf-8"))


def helm_values() -> dict[str, Any]:
    return yaml.safe_load((K8S_DIR / "values.yaml").read_text(encoding="utf-8"))


def pins(text: str, package: str) -> set[str]:
    """Every version `package==V` is pinned to in `text`."""
    return set(re.findall(rf"{re.escape(package)}==([\w.]+)", text))


@pytest.fixture
def postgres(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A real PostgreSQL server (the `pgserver` wheel) on a unix socket; the `DAGSTER_PG_*`
    variables the instance file reads point at it. Yields the socket directory. (Its data folder
    is not under pytest's private temp folder: run as root, pgserver runs PostgreSQL as another
    user, who must reach it.)"""
    data = tempfile.mkdtemp(prefix="rag-eval-pg-")
    server = pgserver.get_server(data, cleanup_mode="stop")
    socket_dir = server.get_uri().split("host=")[1]
    for name, value in {
        "DAGSTER_PG_USERNAME": "postgres",
        "DAGSTER_PG_PASSWORD": "unused (trust authentication)",
        "DAGSTER_PG_HOST": "localhost",
        "DAGSTER_PG_DB": "postgres",
    }.items():
        monkeypatch.setenv(name, value)
    try:
        yield socket_dir
    finally:
        server.cleanup()
        shutil.rmtree(data, ignore_errors=True)


def loadable_here(config: dict[str, Any], socket_dir: str, kubeconfig: Path) -> dict[str, Any]:
    """`config` as this machine can load it: PostgreSQL through the test server's socket (a
    connection parameter) and the launcher's Kubernetes credentials from `kubeconfig` instead of
    the pod's service account. Everything else is left as written."""
    loadable = yaml.safe_load(yaml.safe_dump(config))
    for storage in ("run_storage", "event_log_storage", "schedule_storage"):
        loadable[storage]["config"]["postgres_db"]["params"] = {"host": socket_dir}
    launcher = loadable["run_launcher"]["config"]
    launcher.update(load_incluster_config=False, kubeconfig_file=str(kubeconfig))
    return loadable


def test_the_instance_file_loads_with_dagster_k8s_on_postgresql(
    postgres: str, tmp_path: Path
) -> None:
    """Dagster validates the file against its instance schema and each class's config schema,
    then builds it: PostgreSQL storage (used for real), the K8sRunLauncher, the run queue and
    the concurrency pools. A misspelt launcher key is refused, so the check is live."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    config = loadable_here(instance_file(), postgres, kubeconfig)
    with instance_for_test(overrides=config) as instance:
        launcher = instance.run_launcher
        assert isinstance(launcher, K8sRunLauncher)
        assert launcher.job_namespace == "rag-eval"
        assert launcher.env_secrets == ["rag-eval-secrets"]
        assert isinstance(instance.run_coordinator, QueuedRunCoordinator)
        limits = instance.get_concurrency_config()
        assert limits.run_queue_config.max_concurrent_runs == 8
        assert limits.run_queue_config.tag_concurrency_limits == [
            {"key": "rag_eval/kind", "value": "evaluation", "limit": 4},
            {"key": "dagster/partition", "value": {"applyLimitPerUniqueValue": True}, "limit": 1},
        ]
        assert limits.pool_config.default_pool_limit == 2
        instance.add_dynamic_partitions("dataset_version", ["demo-v1"])
        assert instance.get_dynamic_partitions("dataset_version") == ["demo-v1"]
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"

    config["run_launcher"]["config"]["env_secret"] = ["rag-eval-secrets"]
    with (
        instance_for_test(overrides=config) as instance,
        pytest.raises(DagsterInvalidConfigError, match="env_secret"),
    ):
        assert instance.run_launcher  # the launcher is built (and its config checked) on first use


def test_the_helm_values_agree_with_the_instance_file() -> None:
    values, instance = helm_values(), instance_file()
    header = (K8S_DIR / "values.yaml").read_text(encoding="utf-8")
    assert f"version {DAGSTER_VERSION}" in header and f"--version {DAGSTER_VERSION}" in header

    queued = values["dagsterDaemon"]["runCoordinator"]
    assert queued["enabled"] and queued["type"] == "QueuedRunCoordinator"
    assert queued["config"]["queuedRunCoordinator"] == {}
    assert "config" not in instance["run_coordinator"]
    concurrency = values["concurrency"]
    assert concurrency["enabled"]
    assert instance["concurrency"] == {
        "runs": {
            "max_concurrent_runs": concurrency["runs"]["maxConcurrentRuns"],
            "tag_concurrency_limits": concurrency["runs"]["tagConcurrencyLimits"],
        },
        "pools": {
            "default_limit": concurrency["pools"]["defaultLimit"],
            "granularity": concurrency["pools"]["granularity"],
        },
    }
    monitoring = values["dagsterDaemon"]["runMonitoring"]
    assert instance["run_monitoring"] == {
        "enabled": monitoring["enabled"],
        "start_timeout_seconds": monitoring["startTimeoutSeconds"],
        "poll_interval_seconds": monitoring["pollIntervalSeconds"],
    }

    assert values["runLauncher"]["type"] == "K8sRunLauncher"
    k8s = values["runLauncher"]["config"]["k8sRunLauncher"]
    launcher = instance["run_launcher"]["config"]
    assert launcher["load_incluster_config"] == k8s["loadInclusterConfig"]
    assert launcher["image_pull_policy"] == k8s["imagePullPolicy"]
    assert [s["name"] for s in k8s["envSecrets"]] == launcher["env_secrets"]
    assert {c["name"] for c in k8s["envConfigMaps"]} <= set(launcher["env_config_maps"])
    assert launcher["run_k8s_config"]["container_config"] == k8s["runK8sConfig"]["containerConfig"]
    assert instance["compute_logs"]["class"] == values["computeLogManager"]["type"]
    assert instance["python_logs"]["python_log_level"] == values["pythonLogs"]["pythonLogLevel"]
    assert instance["telemetry"] == values["telemetry"]

    (deployment,) = values["dagster-user-deployments"]["deployments"]
    module = PYPROJECT["tool"]["dagster"]["module_name"]
    assert deployment["codeServerArgs"] == ["--module-name", module]
    assert deployment["includeConfigInLaunchedRuns"] == {"enabled": True}
    postgresql = values["postgresql"]
    assert not postgresql["enabled"] and postgresql["service"]["port"] == 5432
    for storage in ("run_storage", "event_log_storage", "schedule_storage"):
        database = instance[storage]["config"]["postgres_db"]
        assert database["scheme"] == postgresql["postgresqlScheme"]
        assert database["port"] == postgresql["service"]["port"]


def test_the_image_pins_are_the_makefiles_and_pyprojects() -> None:
    dockerfile = (K8S_DIR / "Dockerfile").read_text(encoding="utf-8")
    makefile = (PROJECT_ROOT / "Makefile").read_text(encoding="utf-8")
    dependencies = "\n".join(PYPROJECT["project"]["dependencies"])
    torch = pins(dockerfile, "torch")
    assert len(torch) == 1 and torch == pins(makefile, "torch") == pins(dependencies, "torch")
    assert re.search(
        r"pip install torch==[\w.]+ --index-url https://download\.pytorch\.org/whl/cpu", dockerfile
    )
    python = PYPROJECT["project"]["requires-python"].removeprefix(">=")
    assert re.search(rf"^FROM python:{re.escape(python)}-slim$", dockerfile, re.MULTILINE)
    assert "HF_HUB_OFFLINE=1" in dockerfile and "TRANSFORMERS_OFFLINE=1" in dockerfile

    (extras,) = re.findall(r"pip install -e '\.\[([\w,]+)\]'", dockerfile)
    extras_defined = PYPROJECT["project"]["optional-dependencies"]
    assert set(extras.split(",")) <= set(extras_defined)
    # Dagster's libraries are versioned 0.(minor + 16).patch alongside dagster 1.minor.patch.
    _, minor, patch = DAGSTER_VERSION.split(".")
    library = f"0.{int(minor) + 16}.{patch}"
    image = "\n".join(extras_defined["k8s"] + extras_defined["postgres"])
    assert "rag_eval_pipeline[postgres]" in extras_defined["k8s"]  # the driver the yaml names
    for package in ("dagster-k8s", "dagster-postgres"):
        assert pins(image, package) == {library}
    context = (K8S_DIR / "Dockerfile.dockerignore").read_text(encoding="utf-8").splitlines()
    for copied in re.findall(r"^COPY (.+) \./", dockerfile, re.MULTILINE):
        for source in copied.split():
            assert (PROJECT_ROOT / source).exists() and f"!{source}" in context, source
    module = PYPROJECT["tool"]["dagster"]["module_name"]
    assert f'"--module-name", "{module}"' in dockerfile
