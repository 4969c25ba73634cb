"""One run per partition at a time: a second `rag-eval run` of a partition in progress is
refused with one line naming the run in progress, and the run queue of the shipped instance
lets one run per partition through (a tag limit per unique `dagster/partition`).

Real `rag-eval` processes on a temporary SQLite deployment.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from dagster import DagsterInstance, DagsterRunStatus, RunsFilter, instance_for_test

from rag_eval_pipeline_tests.conftest import (
    CLI_TIMEOUT_S,
    DATASETS_DIR,
    SHIPPED_INSTANCE_CONFIG,
    deployment_env,
    rag_eval,
    rag_eval_process,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

VERSION = "demo-v1"
DATE = "2026-11-12"
RUN = ["run", "--dataset-version", VERSION, "--date", DATE, "--select", "*retrieval_metrics"]


def started_run(
    home: Path, partition_key: str = f"{VERSION}|{DATE}", deadline_s: float = 120.0
) -> str:
    """The id of the first run of `partition_key` to reach STARTED in the instance at `home`."""
    stop = time.monotonic() + deadline_s
    with DagsterInstance.from_config(str(home)) as instance:
        while time.monotonic() < stop:
            runs = instance.get_runs(
                RunsFilter(
                    tags={"dagster/partition": partition_key},
                    statuses=[DagsterRunStatus.STARTED],
                )
            )
            if runs:
                return runs[0].run_id
            time.sleep(0.2)
    raise AssertionError("the first run never started")


def test_a_second_run_of_a_partition_in_progress_is_refused_in_one_line(tmp_path: Path) -> None:
    shutil.copytree(DATASETS_DIR / VERSION, tmp_path / "datasets" / VERSION)
    home = tmp_path / "home"
    home.mkdir()
    shutil.copy(SHIPPED_INSTANCE_CONFIG, home / "dagster.yaml")
    first = subprocess.Popen(
        [sys.executable, "-m", "rag_eval_pipeline.cli", *RUN],
        env=deployment_env(tmp_path, home),
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        run_id = started_run(home)
        second = rag_eval_process(tmp_path, home, *RUN)
        output, errors = first.communicate(timeout=CLI_TIMEOUT_S)
    finally:
        first.kill()
    assert second.returncode == 1, second.stdout + second.stderr
    assert second.stderr.count("\n") == 1, second.stderr
    assert f"{VERSION}|{DATE} is already being evaluated by run {run_id}" in second.stderr
    assert "materializing" in second.stdout and "ok:" not in second.stdout
    assert first.returncode == 0, output + errors
    assert f"run {run_id}" in output
    with DagsterInstance.from_config(str(home)) as instance:
        assert len(instance.get_runs()) == 1, "the refused run was never created"
    assert "is up to date" in rag_eval(tmp_path, home, *RUN)


def test_the_shipped_run_queue_lets_one_run_per_partition_through() -> None:
    config = yaml.safe_load(SHIPPED_INSTANCE_CONFIG.read_text(encoding="utf-8"))
    with instance_for_test(overrides={"concurrency": config["concurrency"]}) as instance:
        limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
    assert {
        "key": "dagster/partition",
        "value": {"applyLimitPerUniqueValue": True},
        "limit": 1,
    } in (limits)
