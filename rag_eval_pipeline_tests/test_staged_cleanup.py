"""The staged copies' cleanup rule (`storage.stage_entries`, `datasets.staged_logs`).

A stager killed mid-stage (a real process, SIGKILL) leaves a temporary named for it, which the
next stager removes; another host's only past the age bound. A copy not used for the keep time
goes, one a reader found stays, and a reader that read the manifest while a pruner was removing
the copy keeps it whole; any folder published by a manifest follows the rule. Two processes
staging one key on S3 (moto's server) at the same instant publish one whole copy (the only one
a polling reader is ever handed), and the losing generation goes once the grace is over. A
truncated `_staged.json` is a warning and a copy staged again. `rag-eval cache prune` prints
what it removed and the bytes freed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from upath import UPath

from rag_eval_pipeline.cli import main
from rag_eval_pipeline.datasets.golden import load_dataset
from rag_eval_pipeline.datasets.staged_logs import STAGED_MANIFEST, LogStage
from rag_eval_pipeline.storage import stage_entries
from rag_eval_pipeline.storage.objects import STALE_TEMPORARY_S, storage_path, temporary_prefix
from rag_eval_pipeline.storage.stage_entries import (
    USED_MARKER,
    USED_REFRESH_S,
    prune_stage,
    scratch_folder,
)
from rag_eval_pipeline_tests.s3_server import bucket_keys, s3_bucket, s3_environment, s3_server
from rag_eval_pipeline_tests.test_staged_logs import DAYS, PER_DAY, logs_frame, write_version

pytestmark = [pytest.mark.integration]

__all__ = ["s3_bucket", "s3_server"]  # fixtures

DAY_S = 86_400.0
WORKTREE = Path(__file__).resolve().parents[1]


def key_of(name: str) -> str:
    """A stage key (40 hex digits, as `stage_key` names an entry) for the test's name."""
    return hashlib.blake2b(name.encode(), digest_size=20).hexdigest()


K, K1, K2, K5, OLD, FOUND = map(key_of, ["k", "k1", "k2", "k5", "old", "found"])

# A stager in its own process: stages `frame.parquet` under KEY at the stage ROOT, in two chunks.
# With HANG, it stops mid-stage (its temporary folder written) and waits to be killed; with
# BARRIER, it says it is ready and waits for that file to appear before it stages.
STAGER = """
import json, os, sys, time
from pathlib import Path
import pandas as pd
from rag_eval_pipeline.datasets.staged_logs import LogStage
from rag_eval_pipeline.storage.objects import storage_path

root, key, folder = sys.argv[1], sys.argv[2], Path(sys.argv[3])
frame = pd.read_parquet(folder / "frame.parquet")

def chunks():
    yield frame.iloc[: len(frame) // 2]
    if os.environ.get("HANG"):
        (folder / "hanging").write_text(str(os.getpid()))
        time.sleep(600)
    yield frame.iloc[len(frame) // 2 :]

if os.environ.get("BARRIER"):
    (folder / f"ready-{os.getpid()}").touch()
    while not Path(os.environ["BARRIER"]).exists():
        time.sleep(0.001)
copy = LogStage(storage_path(root)).stage(key, chunks())
print(json.dumps({"generation": copy.folder.name, "num_rows": copy.num_rows}))
"""


def stager(root: str, key: str, folder: Path, **env: str) -> subprocess.Popen:
    """A stager process (see `STAGER`) with the extra environment `env`."""
    frame = logs_frame()
    frame.to_parquet(folder / "frame.parquet", index=False)
    environment = {**os.environ, "PYTHONPATH": str(WORKTREE), **env}
    return subprocess.Popen(
        [sys.executable, "-c", STAGER, root, key, str(folder)],
        env=environment,
        stdout=subprocess.PIPE,
        text=True,
    )


def wait_for(path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def stage_small(stage: LogStage, key: str) -> None:
    stage.stage(key, [logs_frame().iloc[:40]])


def age(path: Path, seconds: float) -> None:
    """Set `path`'s modification time `seconds` into the past."""
    then = time.time() - seconds
    os.utime(path, (then, then))


def in_order(frame: pd.DataFrame) -> pd.DataFrame:
    """`frame` by `log_id`, its timestamps in nanoseconds (as the staged Parquet reads back)."""
    frame = frame.assign(timestamp=frame["timestamp"].astype("datetime64[ns, UTC]"))
    return frame.sort_values("log_id").reset_index(drop=True)


def killed_stager(url: str, key: str, tmp_path: Path, **env: str) -> Path:
    """Start a stager of `key` into `url`, SIGKILL it mid-stage; return the folder it left."""
    process = stager(url, key, tmp_path, HANG="1", **env)
    scratch = scratch_folder(storage_path(url))
    try:
        wait_for(tmp_path / "hanging")
        (killed,) = scratch.glob(f".{key}.w~*.tmp")  # named for its writer: host, pid, start
        assert f"~{process.pid}~" in killed.name
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert process.returncode == -signal.SIGKILL
    return killed


def test_a_killed_stager_leaves_a_temporary_the_next_stager_removes(tmp_path: Path) -> None:
    root = tmp_path / "stage"
    killed = killed_stager(str(root), K1, tmp_path)
    other_host = root / f".{K2}.w~another-host~4242~77~abcd.tmp"
    old_other_host = root / f".{key_of('k3')}.w~another-host~4242~77~efgh.tmp"
    live = root / f"{temporary_prefix(root / key_of('k4'))}ijkl.tmp"  # this live process's
    for folder in (other_host, old_other_host, live):
        folder.mkdir()
        (folder / "part.parquet").write_bytes(b"x" * 10)
    age(old_other_host, STALE_TEMPORARY_S + 60)
    age(live, STALE_TEMPORARY_S + 60)
    stage_small(LogStage(storage_path(root)), K5)
    assert not killed.exists() and not old_other_host.exists()
    assert other_host.exists() and live.exists()
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == [K5]


def test_a_killed_stager_to_s3_leaves_a_scratch_folder_the_next_one_removes(
    tmp_path: Path, s3_server: str, s3_bucket: str
) -> None:
    url = f"{s3_bucket}/staged"
    killed_key = key_of(f"k-{tmp_path.name}")
    killed = killed_stager(url, killed_key, tmp_path, **s3_environment(s3_server))
    assert killed.parent == Path(tempfile.gettempdir()) / f"rag-eval-staging-{os.getuid()}"
    stage_small(LogStage(storage_path(url)), K2)
    assert not killed.exists()
    assert not [key for key in bucket_keys(s3_server, s3_bucket) if killed_key in key]


def test_a_copy_unused_past_the_keep_time_goes_and_a_found_one_stays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "stage"
    stage = LogStage(storage_path(root))
    for key in (OLD, FOUND):
        stage_small(stage, key)
    for key in (OLD, FOUND):
        for path in (root / key / USED_MARKER, root / key / STAGED_MANIFEST):
            age(path, 8 * DAY_S)
    assert stage.find(FOUND) is not None  # a reader: the marker is refreshed
    assert time.time() - (root / FOUND / USED_MARKER).stat().st_mtime < 60
    size = sum(p.stat().st_size for p in (root / OLD).rglob("*") if p.is_file())
    monkeypatch.setattr("rag_eval_pipeline.cli.cache.STAGED_URL", str(root))
    assert main(["cache", "prune", "--dry-run", "--keep-days", "7"]) == 0
    dry = capsys.readouterr().out.splitlines()
    assert (root / OLD).exists()
    assert main(["cache", "prune", "--keep-days", "7"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert not (root / OLD).exists() and stage.find(FOUND) is not None
    assert printed[0].startswith(f"removed {root / OLD}: not used since ")
    assert printed[0].endswith(f", {size:,} B")
    assert printed[-1] == f"freed {size:,} bytes in 1 path under {root}"
    assert dry == [line.replace("removed", "would remove", 1) for line in printed[:1]] + [
        printed[-1].replace("freed", "would free", 1)
    ]
    assert stage.find(OLD) is None


PARSED_OLD, PARSED_USED = "parsed-" + "a" * 40, "parsed-" + "b" * 40
BROKEN_OLD, BROKEN_YOUNG = "c" * 40, "d" * 40


def test_any_entry_with_a_manifest_follows_the_rule(tmp_path: Path) -> None:
    """Not only staged logs: any entry under the stage published by a `_*.json` manifest (a
    parse cache, say) goes when unused; one whose manifest does not read is unpublished and
    goes once older than the grace. A folder not named as an entry is never touched."""
    root = tmp_path / "stage"
    files = {
        "v1-not-an-entry": {"corpus.jsonl": b"{}" * 10, "generation-x/a.parquet": b"x"},
        PARSED_OLD: {"_parsed.json": b'{"files": 3}', "part-0.parquet": b"x" * 300},
        PARSED_USED: {"_parsed.json": b'{"files": 3}', "part-0.parquet": b"x" * 300},
        BROKEN_OLD: {"_staged.json": b'{"gener', "generation-a/2026-11-16.parquet": b"x" * 70},
        BROKEN_YOUNG: {"_staged.json": b'{"gener', "generation-b/2026-11-16.parquet": b"x"},
    }
    for entry, contents in files.items():
        for name, data in contents.items():
            (root / entry / name).parent.mkdir(parents=True, exist_ok=True)
            (root / entry / name).write_bytes(data)
            if entry != BROKEN_YOUNG:
                age(root / entry / name, 8 * DAY_S)
    for hidden in (".env.tmpl", ".notes.tmp"):  # not a stager's: kept, however old
        (root / hidden).write_text("mine")
        age(root / hidden, 8 * DAY_S)
    stage_entries.mark_used(storage_path(root / PARSED_USED))
    removals = prune_stage(storage_path(root), 7 * DAY_S, 3600.0)
    assert sorted(
        (Path(r.path).name, r.reason.split(" since")[0], r.num_bytes) for r in removals
    ) == [
        (BROKEN_OLD, "not published, older than the grace", 77),
        (PARSED_OLD, "not used", 312),
    ]
    kept = [".env.tmpl", ".notes.tmp", BROKEN_YOUNG, PARSED_USED, "v1-not-an-entry"]
    assert sorted(p.name for p in root.iterdir()) == kept


def test_the_use_marker_is_written_at_most_once_an_hour(tmp_path: Path) -> None:
    root = tmp_path / "stage"
    stage = LogStage(storage_path(root))
    stage_small(stage, K)
    marker = root / K / USED_MARKER
    age(marker, USED_REFRESH_S / 2)
    before = marker.stat().st_mtime
    assert stage.find(K) is not None
    assert marker.stat().st_mtime == before
    age(marker, USED_REFRESH_S + 1)
    assert stage.find(K) is not None
    assert time.time() - marker.stat().st_mtime < 60


def test_a_reader_handed_the_copy_while_it_is_pruned_keeps_it_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pruner decided on an old marker; a reader finds the copy just before the manifest is
    withdrawn: the pruner sees the refreshed marker, puts the manifest back, keeps the copy."""
    root = tmp_path / "stage"
    stage = LogStage(storage_path(root))
    stage_small(stage, K)
    for path in (root / K / USED_MARKER, root / K / STAGED_MANIFEST):
        age(path, 30 * DAY_S)
    handed = []
    withdraw = stage_entries._withdraw

    def reader_first(*args: object) -> bool:
        handed.append(stage.find(K))
        return withdraw(*args)

    monkeypatch.setattr(stage_entries, "_withdraw", reader_first)
    assert prune_stage(storage_path(root), 0.0, 60.0) == []
    (copy,) = handed
    assert copy is not None and copy.whole().num_rows == 40
    assert stage.find(K) == copy
    # handed just now: kept by any keep time (the keep time is at least an hour + the grace)
    assert prune_stage(storage_path(root), 0.0, 60.0) == []
    monkeypatch.setattr(stage_entries, "_withdraw", withdraw)
    for path in (root / K / USED_MARKER, root / K / STAGED_MANIFEST):
        age(path, USED_REFRESH_S + 61)
    (removal,) = prune_stage(storage_path(root), 0.0, 60.0)  # no reader: it goes
    assert removal.path == str(root / K) and not (root / K).exists()


@pytest.mark.parametrize("where", ["local", "s3"])
def test_a_truncated_manifest_is_a_warning_and_the_copy_is_staged_again(
    tmp_path: Path, where: str, request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"{request.getfixturevalue('s3_bucket')}/staged" if where == "s3" else tmp_path / "s"
    stage = LogStage(storage_path(url))
    folder = write_version(tmp_path / "v1", logs_frame())
    first = load_dataset(folder, stage=stage).staged_logs
    assert first is not None
    manifest = first.folder.parent / STAGED_MANIFEST
    manifest.write_bytes(manifest.read_bytes()[:20])  # as a full disk leaves it
    with caplog.at_level(logging.WARNING):
        again = load_dataset(folder, stage=stage).staged_logs
    assert again is not None and again.folder.name != first.folder.name
    assert any(
        "_staged.json does not read" in r.message and "staged again" in r.message
        for r in caplog.records
    )
    pd.testing.assert_frame_equal(in_order(again.whole().to_pandas()), in_order(logs_frame()))
    assert stage.find(first.folder.parent.name) == again


def read_until_done(url: str, processes: list[subprocess.Popen], seen: list) -> None:
    """A reader polling for the copy while the writers run: each copy it is handed, read whole."""
    stage = LogStage(storage_path(url))
    running = True
    while running:
        running = any(p.poll() is None for p in processes)  # one more look once they ended
        found = stage.find(K)
        if found is not None:
            seen.append((found.folder.name, len(found.whole().to_pandas())))
        time.sleep(0.02)


def test_two_processes_staging_on_s3_at_once_publish_one_whole_copy(
    tmp_path: Path, s3_server: str, s3_bucket: str
) -> None:
    url, grace, barrier = f"{s3_bucket}/staged", 8.0, tmp_path / "go"
    env = {**s3_environment(s3_server), "BARRIER": str(barrier)}
    folders = [tmp_path / "a", tmp_path / "b"]
    processes = []
    for folder in folders:
        folder.mkdir()
        processes.append(stager(url, K, folder, **env))
    for folder, process in zip(folders, processes, strict=True):
        wait_for(folder / f"ready-{process.pid}")
    seen: list[tuple[str, int]] = []
    reader = threading.Thread(target=read_until_done, args=(url, processes, seen))
    reader.start()
    barrier.touch()
    outputs = [json.loads(p.communicate(timeout=120)[0]) for p in processes]
    reader.join()
    root: UPath = storage_path(url)
    assert prune_stage(root, 7 * DAY_S, grace) == []  # within the grace: a writer may upload
    assert set(seen) == {(outputs[0]["generation"], DAYS * PER_DAY)}  # one whole copy, ever
    assert [p.returncode for p in processes] == [0, 0]
    assert outputs[0] == outputs[1]  # both were handed the winner's copy
    keys = bucket_keys(s3_server, s3_bucket)
    generations = {key.split("/")[2] for key in keys if "/generation-" in key}
    assert len(generations) == 2 and f"staged/{K}/{STAGED_MANIFEST}" in keys
    copy = LogStage(storage_path(url)).find(K)
    assert copy is not None and copy.folder.name == outputs[0]["generation"]
    assert copy.num_rows == DAYS * PER_DAY
    pd.testing.assert_frame_equal(in_order(copy.whole().to_pandas()), in_order(logs_frame()))
    abandoned = root / K2 / "generation-killed" / "2026-11-16.parquet"  # a killed uploader's
    abandoned.write_bytes(b"x" * 100)
    time.sleep(grace + 1.5)
    (lost,) = generations - {copy.folder.name}
    removals = sorted(prune_stage(root, 7 * DAY_S, grace), key=lambda r: r.path)
    assert sorted((r.path.split("/staged/")[1], r.num_bytes > 0) for r in removals) == sorted(
        [(f"{K}/{lost}", True), (K2, True)]
    )
    left = bucket_keys(s3_server, s3_bucket)
    assert not [key for key in left if lost in key or f"/{K2}/" in key]
    assert LogStage(storage_path(url)).find(K) == copy
    pd.testing.assert_frame_equal(in_order(copy.whole().to_pandas()), in_order(logs_frame()))


def test_on_s3_a_pruner_puts_the_manifest_back_when_a_reader_came(s3_bucket: str) -> None:
    """The pruner's last step on S3: the manifest withdrawn, the marker read again; a marker
    rewritten since the pruner's look puts the manifest back (create-only), else it stays out."""
    stage = LogStage(storage_path(f"{s3_bucket}/staged"))
    stage_small(stage, K)
    copy = stage.find(K)
    entry = storage_path(f"{s3_bucket}/staged/{K}")
    manifest, marker = entry / STAGED_MANIFEST, entry / USED_MARKER
    assert not stage_entries._withdraw(manifest, marker, time.time() - 2 * USED_REFRESH_S)
    assert copy is not None and stage.find(K) == copy
    assert stage_entries._withdraw(manifest, marker, time.time() + 60)
    assert stage.find(K) is None and not manifest.exists()


@pytest.mark.parametrize("value", ["-5", "nan", "soon"])
def test_a_bound_that_is_not_a_number_from_zero_is_a_warning_and_the_default(value: str) -> None:
    """A negative grace would delete a generation still being uploaded, NaN would keep every
    copy forever: either is one warning line naming the variable, and the default applies."""
    env = {**os.environ, "RAG_EVAL_STAGED_GRACE_S": value, "RAG_EVAL_STAGED_KEEP_DAYS": value}
    shown = (
        "from rag_eval_pipeline import settings as s; print(s.STAGED_GRACE_S, s.STAGED_KEEP_DAYS)"
    )
    done = subprocess.run(
        [sys.executable, "-c", shown], env=env, capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["3600.0", "7.0"]
    assert done.stderr.splitlines() == [
        f"RAG_EVAL_STAGED_KEEP_DAYS={value!r} is not a number >= 0: 7 used",
        f"RAG_EVAL_STAGED_GRACE_S={value!r} is not a number >= 0: 3600 used",
    ]


def test_the_shared_scratch_folder_must_be_this_users_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A stage on an object store builds in `<tmp>/rag-eval-staging-<uid>`: made private, and
    refused when it exists writable by others (someone could swap a day file before upload)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    remote = UPath("memory://stage")
    made = stage_entries.made_scratch_folder(remote)
    assert made == tmp_path / f"rag-eval-staging-{os.getuid()}"
    assert made.is_dir() and made.stat().st_mode & 0o077 == 0
    made.chmod(0o777)
    with pytest.raises(PermissionError, match="is not a private folder of this user"):
        stage_entries.made_scratch_folder(remote)
