"""Partitions materialize side by side in forked workers, and the caches they share hold up.

`run_partitions` is checked with plain functions (order, processes, errors), then `rag-eval run
--jobs 2` is run as a user runs it, in a fresh process on a temporary deployment: two dataset
versions become two Dagster runs that overlap in time, in two processes. Last, two processes
that embed the same texts at the same moment embed each text once.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import shutil
import threading
import time
from dataclasses import dataclass
from multiprocessing.synchronize import Barrier
from pathlib import Path

import numpy as np
import pytest
from dagster import DagsterEventType, DagsterInstance

from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.parallel_runs import PartitionRun, can_fork, run_partitions
from rag_eval_pipeline_tests.conftest import DATASETS_DIR, rag_eval

pytestmark = pytest.mark.skipif(not can_fork(), reason="workers are forked on Linux only")

RUNS = [PartitionRun(version=f"v{i}", key=f"v{i}|2026-11-20", tags={}) for i in range(3)]


def test_one_job_runs_in_this_process_in_order() -> None:
    results = list(run_partitions(lambda run: (str(os.getpid()), True), RUNS, jobs=1))
    assert [run for run, _, _ in results] == RUNS
    assert {pid for _, pid, _ in results} == {str(os.getpid())}


def test_two_jobs_run_in_two_forked_workers_that_inherit_the_materializer() -> None:
    unpicklable = threading.Lock()  # reaches the workers through the fork, not a pickle

    def materialize(run: PartitionRun) -> tuple[str, bool]:
        with unpicklable:
            time.sleep(0.3)
        return str(os.getpid()), run.version != "v1"

    results = list(run_partitions(materialize, RUNS, jobs=2))
    assert sorted(run.version for run, _, _ in results) == ["v0", "v1", "v2"]
    pids = {pid for _, pid, _ in results}
    assert len(pids) == 2 and str(os.getpid()) not in pids
    assert {run.version: ok for run, _, ok in results} == {"v0": True, "v1": False, "v2": True}


def test_an_error_in_a_worker_reaches_the_caller() -> None:
    def materialize(run: PartitionRun) -> tuple[str, bool]:
        if run.version == "v2":
            raise RuntimeError(f"cannot materialize {run.key}")
        return "run", True

    with pytest.raises(RuntimeError, match=r"cannot materialize v2\|2026-11-20"):
        list(run_partitions(materialize, RUNS, jobs=2))


def test_cli_materializes_two_versions_side_by_side(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for version in ("demo-v1", "demo-v2"):
        shutil.copytree(DATASETS_DIR / version, tmp_path / "datasets" / version)
    home = tmp_path / "home"
    home.mkdir()
    stdout = rag_eval(
        tmp_path,
        home,
        "run",
        "--date",
        "2026-11-20",
        "--select",
        "key:golden_dataset",
        "--jobs",
        "2",
    )
    assert "(2 at a time)" in stdout
    assert stdout.count("  ok: ") == 2, stdout

    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with DagsterInstance.get() as instance:
        spans, pids = [], []
        for run in instance.get_runs():
            events = instance.all_logs(run.run_id)
            by_type = {e.dagster_event_type: e for e in events if e.is_dagster_event}
            spans.append(
                (
                    by_type[DagsterEventType.RUN_START].timestamp,
                    by_type[DagsterEventType.RUN_SUCCESS].timestamp,
                )
            )
            pids.append({e.dagster_event.pid for e in events if e.is_dagster_event} - {None})
    assert len(spans) == 2
    (start_a, end_a), (start_b, end_b) = spans
    assert start_a < end_b and start_b < end_a, f"the two runs did not overlap: {spans}"
    assert [len(run_pids) for run_pids in pids] == [1, 1], pids
    assert pids[0] != pids[1], f"both runs ran in the same process: {pids}"
    for version in ("demo-v1", "demo-v2"):
        assert list((tmp_path / "warehouse" / "golden_dataset").glob(f"{version}/**/*.parquet"))


@dataclass
class SlowStandInEmbedder(Embedder):
    """The real cache protocol around a stand-in model: a text's vector comes from its hash, each
    text embedded is appended to `log`, and embedding takes long enough for processes to meet."""

    log: Path | None = None

    def _embed(self, texts: list[str]) -> np.ndarray:
        assert self.log is not None
        with self.log.open("a") as handle:
            handle.write("".join(f"{text}\n" for text in texts))
        time.sleep(0.5)
        rows = [np.frombuffer(hashlib.sha256(t.encode()).digest(), dtype=np.uint8) for t in texts]
        return np.asarray(rows, dtype=np.float32)


def _encode_after(barrier: Barrier, embedder: Embedder, own: str, out: Path) -> None:
    barrier.wait()
    np.save(out, embedder.encode(["shared one", "shared two", own]))


def test_two_processes_embedding_the_same_texts_embed_each_once(tmp_path: Path) -> None:
    log = tmp_path / "embedded.txt"
    embedder = SlowStandInEmbedder(cache_dir=tmp_path / "cache", log=log)
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(2)
    workers = [
        context.Process(
            target=_encode_after, args=(barrier, embedder, f"own {i}", tmp_path / f"{i}.npy")
        )
        for i in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    embedded = log.read_text().splitlines()
    assert sorted(embedded) == ["own 0", "own 1", "shared one", "shared two"]
    first, second = (np.load(tmp_path / f"{i}.npy") for i in range(2))
    np.testing.assert_array_equal(first[:2], second[:2])
    assert not np.array_equal(first[2], second[2])
