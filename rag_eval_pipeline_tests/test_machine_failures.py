"""Machine failures read as one line: a full warehouse fails the run in Dagster with one line
naming the path, the cause and the free space, exits non-zero and prints no older report; a
cache that cannot be written is one warning and the run goes on; a full `DAGSTER_HOME` (SQLite's
disk I/O error) is one line.

The full disks are real: small tmpfs mounts filled up (skipped where this process may not
mount), and real `rag-eval` processes.
"""

from __future__ import annotations

import errno
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from dagster import DagsterInstance, DagsterRunStatus

from rag_eval_pipeline.llm.cache import CachedReply, open_reply_cache
from rag_eval_pipeline.storage import machine
from rag_eval_pipeline.storage.machine import machine_failure_line
from rag_eval_pipeline.storage.result_cache import ResultCache
from rag_eval_pipeline_tests.conftest import DATASETS_DIR, rag_eval_process

pytestmark = [pytest.mark.integration]

VERSION = "demo-v1"
DATE = "2026-11-14"
GOLDEN = ["run", "--dataset-version", VERSION, "--date", DATE, "--select", "key:golden_dataset"]


def test_machine_failures_are_one_line_and_other_errors_are_not_theirs(tmp_path: Path) -> None:
    full = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "a.parquet"))
    line = machine_failure_line(full)
    assert line is not None and "\n" not in line
    assert f"{tmp_path / 'a.parquet'}: no space left on device (" in line and " free " in line
    read_only = OSError(errno.EROFS, "Read-only file system")
    assert (
        machine_failure_line(read_only, "/srv/x")
        == "machine failure: /srv/x: read-only file system"
    )
    try:
        try:
            raise PermissionError(errno.EACCES, "Permission denied", "/srv/y")
        except PermissionError as error:
            raise RuntimeError("while storing") from error
    except RuntimeError as wrapped:
        assert machine_failure_line(wrapped) == "machine failure: /srv/y: permission denied"
    disk = sqlite3.OperationalError("disk I/O error")
    assert "SQLite: disk I/O error" in machine_failure_line(disk, str(tmp_path))
    assert machine_failure_line(ValueError("a bug")) is None
    assert machine_failure_line(FileNotFoundError(errno.ENOENT, "gone", "/x")) is None


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 256 kB tmpfs at `tmp_path/full`, filled up but for a few kB."""
    mount = tmp_path / "full"
    mount.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        (mount / "filler").write_bytes(b"\0" * 250_000)
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def deployment(tmp_path: Path) -> Path:
    shutil.copytree(DATASETS_DIR / VERSION, tmp_path / "datasets" / VERSION)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return home


def test_a_full_warehouse_fails_the_run_in_one_line(tmp_path: Path, full_disk: Path) -> None:
    home = deployment(tmp_path)
    older_report = tmp_path / "reports" / VERSION / f"{DATE}.html"
    older_report.parent.mkdir(parents=True)
    older_report.write_text("<html>an older run's report</html>")
    completed = rag_eval_process(
        tmp_path, home, *GOLDEN, env={"RAG_EVAL_WAREHOUSE": str(full_disk / "warehouse")}
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 1, output
    assert "Traceback" not in output and "Stack Trace" not in output, output
    failures = [line for line in output.splitlines() if "machine failure:" in line]
    assert failures and all("STEP_FAILURE" in f or "RUN_FAILURE" in f for f in failures), output
    assert f"{full_disk / 'warehouse' / 'golden_dataset' / VERSION / DATE}: no space" in failures[0]
    assert "free on its filesystem" in failures[0]
    assert str(older_report) not in output and "reports:" not in output
    with DagsterInstance.from_config(str(home)) as instance:
        (run,) = instance.get_runs()
    assert run.status == DagsterRunStatus.FAILURE


def test_a_cache_that_cannot_be_written_is_one_warning(tmp_path: Path, full_disk: Path) -> None:
    home = deployment(tmp_path)
    completed = rag_eval_process(
        tmp_path,
        home,
        *GOLDEN[:-1],
        "*retrieval_metrics",
        env={"RAG_EVAL_CACHE": str(full_disk / "cache")},
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert f"ok: {VERSION}|{DATE}" in completed.stdout
    lines = completed.stderr.splitlines()
    warnings = [line for line in lines if "the run goes on without it" in line]
    assert warnings == [
        line for line in warnings if "the run goes on without it: machine failure:" in line
    ]
    caches = [line.split(" not ")[0] for line in warnings]  # once per cache at most
    assert len(caches) == len(set(caches)) and "embedding cache" in caches, warnings
    assert set(caches) <= {"embedding cache", "file digest cache"}, warnings
    assert "Traceback" not in completed.stderr


def test_a_full_dagster_home_is_one_line(tmp_path: Path, full_disk: Path) -> None:
    deployment(tmp_path)
    completed = rag_eval_process(tmp_path, full_disk, *GOLDEN)
    assert completed.returncode == 1
    assert completed.stderr.count("\n") == 1, completed.stderr
    assert completed.stderr.startswith(f"rag-eval run: machine failure: {full_disk}")


def test_caches_on_a_full_disk_warn_once_and_go_on(
    full_disk: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(machine, "_WARNED", set())
    replies = open_reply_cache(full_disk / "llm")
    reply = CachedReply("x" * 100_000, 1, 1, 0.0, 1.0)
    replies.put("a" * 64, reply, model="m")
    replies.put("b" * 64, reply, model="m")
    assert replies.get_many(["a" * 64, "b" * 64]) == {}
    results = ResultCache(full_disk / "results")
    frame = pd.DataFrame({"text": ["x" * 100_000]})
    results.put("a" * 40, frame)
    results.put("b" * 40, frame)
    assert results.get("a" * 40) is None
    messages = [r.getMessage() for r in caplog.records]
    warned = [m for m in messages if "the run goes on without it" in m]
    assert len(warned) == 2, warned  # once per cache, not once per entry
    assert warned[0].startswith("LLM reply cache not used") and "SQLite" in warned[0]
    assert "paid) again by a later run" in warned[0]
    assert warned[1].startswith("result cache not written") and "no space left" in warned[1]
