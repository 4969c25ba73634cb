"""The stat cache of local files' fingerprints (`storage.digest_cache`): the cached value is the
uncached one; a file is read again when any of its recorded stat values changed (a same-size
rewrite with its mtime restored included) or when it was changed within the racy window of the
moment it was hashed; an unwritable cache is one warning and the fingerprint is still right;
processes writing the cache at once all get the right value."""

from __future__ import annotations

import hashlib
import logging
import multiprocessing
import os
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from rag_eval_pipeline.storage import digest_cache, machine
from rag_eval_pipeline.storage.code_version import files_digest, source_files
from rag_eval_pipeline.storage.file_fingerprint import files_fingerprint

pytestmark = [pytest.mark.unit]

SMALL_MARGIN_NS = 20_000_000  # 20 ms: the tests wait this out instead of the 2 s default


def version(folder: Path) -> Path:
    (folder / "logs").mkdir(parents=True)
    (folder / "queries.jsonl").write_text('{"query_id": "q1", "question": "Why?"}\n')
    (folder / "logs" / "day.jsonl").write_bytes(b'{"a": 1}\n' * 1000)
    return folder


def uncached(folder: Path) -> str:
    return files_digest(source_files(folder, "*"), folder)


def by_hand(folder: Path) -> str:
    """The fingerprint's definition, written out: BLAKE2b-160 of each sorted file's relative
    path, a NUL, its bytes and a NUL (the value stored run fingerprints were computed with)."""
    digest = hashlib.blake2b(digest_size=20)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The folders whose bytes `files_fingerprint` read, in order (a counting `files_digest`)."""
    calls: list[Path] = []

    def counting(files: list[Path], root: Path) -> str:
        calls.append(root)
        return files_digest(files, root)

    monkeypatch.setattr(digest_cache, "files_digest", counting)
    return calls


@pytest.fixture
def small_margin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(digest_cache, "RACY_MARGIN_NS", SMALL_MARGIN_NS)


def settle() -> None:
    """Wait until the files just written are older than the (small) racy margin."""
    time.sleep(3 * SMALL_MARGIN_NS / 1e9)


def test_the_cached_fingerprint_is_the_uncached_one_and_reads_nothing_the_second_time(
    tmp_path: Path, hashed: list[Path], small_margin: None
) -> None:
    folder, cache = version(tmp_path / "v1"), tmp_path / "cache"
    settle()
    first = files_fingerprint(folder, cache)
    assert first == uncached(folder) == by_hand(folder) and len(hashed) == 1
    assert files_fingerprint(folder, cache) == first and len(hashed) == 1  # no byte read
    assert (cache / digest_cache.CACHE_FILENAME).is_file()
    (folder / "logs" / "day2.jsonl").write_text("{}\n")  # a file added
    settle()
    assert files_fingerprint(folder, cache) == uncached(folder) != first and len(hashed) == 2
    (folder / "logs" / "day2.jsonl").unlink()  # and removed again: the first value is back
    assert files_fingerprint(folder, cache) == first and len(hashed) == 3


def test_a_same_size_rewrite_with_its_mtime_restored_is_read_again(
    tmp_path: Path, hashed: list[Path], small_margin: None
) -> None:
    folder, cache = version(tmp_path / "v1"), tmp_path / "cache"
    logs = folder / "logs" / "day.jsonl"
    settle()
    first = files_fingerprint(folder, cache)
    before = logs.stat()
    with logs.open("r+b") as stream:  # in place: same inode, same size, other bytes
        stream.write(b'{"a": 2}')
    os.utime(logs, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = logs.stat()
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (
        before.st_size,
        before.st_mtime_ns,
        before.st_ino,
    )
    assert after.st_ctime_ns != before.st_ctime_ns
    assert files_fingerprint(folder, cache) == uncached(folder) != first and len(hashed) == 2


def test_a_file_changed_within_the_racy_window_is_read_again(
    tmp_path: Path, hashed: list[Path]
) -> None:
    folder, cache = version(tmp_path / "v1"), tmp_path / "cache"
    assert digest_cache.RACY_MARGIN_NS >= 2_000_000_000  # the default: coarse filesystems
    first = files_fingerprint(folder, cache)  # written just now: racily clean
    assert files_fingerprint(folder, cache) == first and len(hashed) == 2
    ahead = time.time_ns() + 60 * 10**9  # a timestamp ahead of the clock is never trusted
    os.utime(folder / "queries.jsonl", ns=(ahead, ahead))
    assert files_fingerprint(folder, cache) == first and len(hashed) == 3
    assert files_fingerprint(folder, cache) == first and len(hashed) == 4


def test_the_racy_rule_at_its_boundary() -> None:
    margin, hashed_at = digest_cache.RACY_MARGIN_NS, 10**19
    old = hashed_at - margin - 1
    assert digest_cache.trusted([("a", 1, old, old, 7, 9)], hashed_at)
    assert not digest_cache.trusted([("a", 1, old, old + 1, 7, 9)], hashed_at)  # ctime in it
    assert not digest_cache.trusted([("a", 1, old + 1, old, 7, 9)], hashed_at)  # mtime in it
    assert not digest_cache.trusted(
        [("a", 1, old, old, 7, 9), ("b", 1, hashed_at, old, 8, 9)], hashed_at
    )


def test_a_cache_on_an_object_store_hashes_each_time(
    tmp_path: Path, hashed: list[Path], small_margin: None
) -> None:
    folder = version(tmp_path / "v1")
    settle()
    for count in (1, 2):
        assert files_fingerprint(folder, "memory://digests") == uncached(folder)
        assert len(hashed) == count


@pytest.fixture
def unwritable(tmp_path: Path) -> Iterator[Path]:
    """A folder this process cannot write: read-only (chmod) for a user, a read-only tmpfs
    for root (skipped where it may not mount one)."""
    folder = tmp_path / "readonly"
    folder.mkdir()
    if os.geteuid() != 0:
        folder.chmod(0o500)
        yield folder
        folder.chmod(0o700)
        return
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "ro,size=64k", "tmpfs", str(folder)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


@pytest.mark.integration
def test_an_unwritable_cache_warns_once_and_the_fingerprint_is_right(
    tmp_path: Path,
    unwritable: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    hashed: list[Path],
) -> None:
    monkeypatch.setattr(machine, "_WARNED", set())
    folder = version(tmp_path / "v1")
    with caplog.at_level(logging.WARNING):
        for count in (1, 2):
            assert files_fingerprint(folder, unwritable / "cache") == uncached(folder)
            assert len(hashed) == count
    warned = [r.getMessage() for r in caplog.records if "goes on without it" in r.getMessage()]
    assert len(warned) == 1, warned
    assert warned[0].startswith("file digest cache not used, the run goes on without it")
    assert str(unwritable / "cache") in warned[0]


@pytest.mark.integration
def test_processes_fingerprinting_at_once_share_the_cache(tmp_path: Path) -> None:
    folder, cache = version(tmp_path / "v1"), tmp_path / "cache"
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=3, mp_context=spawn) as pool:
        values = list(pool.map(files_fingerprint, [folder] * 6, [cache] * 6))
    assert values == [uncached(folder)] * 6
    assert (cache / digest_cache.CACHE_FILENAME).is_file()
