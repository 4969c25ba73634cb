"""One budget across runs: two runs side by side, each judging with `max_concurrency` requests in
flight, share the instance's `llm_judge` concurrency pool, so the judge never sees more than
``pool limit × max_concurrency`` requests at once.

Real parts only: a Dagster instance in a temporary DAGSTER_HOME configured like the shipped
`dagster.yaml` (pool limit lowered to 1), two processes materializing against it at once, and the
loopback OpenAI-compatible server counting requests in flight.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import yaml
from dagster import DagsterInstance

from rag_eval_pipeline.defs.pools import LLM_JUDGE_POOL
from rag_eval_pipeline_tests.conftest import PROJECT_ROOT, SHIPPED_INSTANCE_CONFIG
from rag_eval_pipeline_tests.openai_server import run_openai_server

POOL_LIMIT, CONCURRENCY, PROMPTS = 1, 4, 16


def start_run(home: Path, base_url: str, label: str, cache: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "DAGSTER_HOME": str(home), "PYTHONPATH": str(PROJECT_ROOT)}
    command = [
        sys.executable,
        "-m",
        "rag_eval_pipeline_tests.pool_worker",
        base_url,
        label,
        str(PROMPTS),
        str(CONCURRENCY),
        str(cache),
    ]
    return subprocess.Popen(command, env=env, cwd=PROJECT_ROOT)


def test_two_runs_side_by_side_never_exceed_pool_limit_times_concurrency(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    config = yaml.safe_load(SHIPPED_INSTANCE_CONFIG.read_text(encoding="utf-8"))
    assert config["concurrency"]["pools"]["granularity"] == "op"
    config["concurrency"]["pools"]["default_limit"] = POOL_LIMIT
    (home / "dagster.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")

    # Each run's judging takes PROMPTS / CONCURRENCY × 1 s = 4 s, longer than the processes'
    # start-up skew, so without the pool the two would overlap.
    with run_openai_server(latency_s=1.0) as server:
        runs = [start_run(home, server.base_url, label, tmp_path / "cache") for label in "ab"]
        deadline = time.monotonic() + 240
        codes = [run.wait(timeout=max(1.0, deadline - time.monotonic())) for run in runs]
        requests = list(server.requests)

    assert codes == [0, 0]
    with DagsterInstance.from_config(str(home)) as instance:
        pool = instance.event_log_storage.get_concurrency_info(LLM_JUDGE_POOL)
    assert pool.slot_count == POOL_LIMIT  # the steps claimed slots of the configured pool
    assert len(requests) == 2 * PROMPTS
    assert server.max_in_flight <= POOL_LIMIT * CONCURRENCY
    # The pool serialized the runs' judging steps: one run's requests all ended before the
    # other's began (without the pool both would overlap, 2 × CONCURRENCY in flight).
    spans = {
        label: [r for r in requests if r.body["messages"][-1]["content"].startswith(label)]
        for label in "ab"
    }
    first, second = sorted(spans.values(), key=lambda rs: min(r.started_at for r in rs))
    assert max(r.finished_at or 0.0 for r in first) <= min(r.started_at for r in second)
