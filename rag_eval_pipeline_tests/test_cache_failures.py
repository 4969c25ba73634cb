"""A cache that cannot serve is one warning line, never a traceback, and the results are the
uncached ones: a corrupt file (garbage, truncated, another schema) is set aside as
``*.corrupt-<time>`` and built again, so the next run has a cache; a lock another process holds
past the (here shortened) timeout is left to it and the cache skipped for that call; a file that
cannot be opened is skipped. Real files, real SQLite, a real second process holding the lock and
litellm against a real HTTP server (`storage.shared_sqlite`, `storage.digest_cache`,
`llm.cache`, `storage.result_cache`)."""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd
import pytest
from filelock import FileLock, Timeout

from rag_eval_pipeline.llm.cache import CACHE_FILENAME as REPLIES_FILENAME
from rag_eval_pipeline.llm.cache import CachedReply, ReplyCache
from rag_eval_pipeline.llm.client import LLMClient, LLMConfig
from rag_eval_pipeline.storage import digest_cache, machine
from rag_eval_pipeline.storage.code_version import files_digest
from rag_eval_pipeline.storage.digest_cache import CACHE_FILENAME as DIGESTS_FILENAME
from rag_eval_pipeline.storage.file_fingerprint import files_fingerprint
from rag_eval_pipeline.storage.objects import storage_path
from rag_eval_pipeline.storage.result_cache import ResultCache
from rag_eval_pipeline.storage.shared_sqlite import LOCK_TIMEOUT_ENV, lock_timeout_s
from rag_eval_pipeline_tests.openai_server import OpenAIServer, run_openai_server
from rag_eval_pipeline_tests.s3_server import s3_bucket, s3_server
from rag_eval_pipeline_tests.test_file_digest_cache import uncached, version

pytestmark = [pytest.mark.integration]
__all__ = ["s3_bucket", "s3_server"]  # fixtures

SHORT_TIMEOUT_S = 0.5
PROMPTS = [[{"role": "user", "content": f"question {i}"}] for i in range(4)]


class Lines(logging.Handler):
    """The messages of the warnings logged while attached."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture
def warned(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The warning lines the caches log during the test (none logged before it counted)."""
    monkeypatch.setattr(machine, "_WARNED", set())
    handler, log = Lines(), logging.getLogger(machine.__name__)
    log.addHandler(handler)
    try:
        yield handler.lines
    finally:
        log.removeHandler(handler)


@pytest.fixture
def short_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LOCK_TIMEOUT_ENV, str(SHORT_TIMEOUT_S))


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with run_openai_server(responder=lambda body: f"to {body['messages'][-1]['content']}") as s:
        yield s


def replies(
    server: OpenAIServer,
    cache_dir: Path | str | None,
    prompts: list[list[dict[str, str]]] = PROMPTS,
) -> list[str | None]:
    config = LLMConfig(
        model="openai/judge", api_base=server.base_url, api_key="sk-test", cache_dir=cache_dir
    )
    client = LLMClient(config)
    try:
        return [reply.text for reply in client.complete_many(prompts)]
    finally:
        client.close()


def garbage(path: Path) -> None:
    path.write_bytes(b"not a database at all\n" * 200)


def truncated(path: Path) -> None:
    """Keep only the file's first page: the tables' pages are gone."""
    path.write_bytes(path.read_bytes()[:4096])


def other_schema(path: Path) -> None:
    path.unlink()
    with sqlite3.connect(path) as connection:
        for table in ("replies", "folder_digests"):
            connection.execute(f"CREATE TABLE {table} (key TEXT PRIMARY KEY, value BLOB)")


DAMAGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "garbage": (garbage, "(file is not a database)"),
    "truncated": (truncated, "(database disk image is malformed)"),
    "other schema": (other_schema, "(wrong schema: table "),
}


def set_aside(path: Path) -> Path:
    (aside,) = path.parent.glob(f"{path.name}.corrupt-*")
    assert aside.name.removeprefix(f"{path.name}.corrupt-").endswith("Z")
    return aside


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_corrupt_digest_cache_is_set_aside_built_again_and_the_digest_right(
    tmp_path: Path, damage: str, warned: list[str]
) -> None:
    folder, cache = version(tmp_path / "v1"), tmp_path / "cache"
    database = cache / DIGESTS_FILENAME
    files_fingerprint(version(tmp_path / "v0"), cache)  # a cache with an entry
    spoil, reason = DAMAGES[damage]
    spoil(database)
    spoiled = database.read_bytes()

    assert files_fingerprint(folder, cache) == uncached(folder)

    assert len(warned) == 1, warned
    assert warned[0].startswith(f"file digest cache {database} is corrupt {reason}"), warned
    aside = set_aside(database)
    assert f"set aside as {aside.name}, a new one is built" in warned[0]
    assert aside.read_bytes() == spoiled
    with sqlite3.connect(database) as rebuilt:  # the next run has a cache again
        (entries,) = rebuilt.execute("SELECT COUNT(*) FROM folder_digests").fetchone()
    assert entries == 1


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_corrupt_reply_cache_asks_the_provider_and_is_built_again(
    tmp_path: Path, damage: str, server: OpenAIServer, warned: list[str]
) -> None:
    database = tmp_path / REPLIES_FILENAME
    filler = ReplyCache(tmp_path)
    for i in range(200):  # tables over more than one page
        filler.put(f"{i:064x}", CachedReply("x" * 200, 1, 1, 0.0, 1.0), model="m")
    filler.close()
    spoil, reason = DAMAGES[damage]
    spoil(database)
    spoiled = database.read_bytes()

    expected = replies(server, None)
    assert replies(server, tmp_path) == expected
    assert server.request_count == 2 * len(PROMPTS)
    assert replies(server, tmp_path) == expected  # rebuilt: answered from the new cache
    assert server.request_count == 2 * len(PROMPTS)

    assert len(warned) == 1, warned
    assert warned[0].startswith(f"LLM reply cache {database} is corrupt {reason}"), warned
    assert set_aside(database).read_bytes() == spoiled


def hold(script: str, *args: str) -> subprocess.Popen[str]:
    """A second process running `script`; returns once it printed that it holds its lock (it
    lets go when its stdin closes)."""
    holder = subprocess.Popen(
        [sys.executable, "-c", script, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def release(holder: subprocess.Popen[str]) -> None:
    assert holder.stdin is not None
    holder.stdin.close()
    assert holder.wait(timeout=30) == 0


WRITE_LOCK = """
import sqlite3, sys
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN IMMEDIATE")
connection.execute("INSERT INTO replies VALUES ('held', 'm', 'theirs', 1, 1, 0, 1, 0)")
print("held", flush=True)
sys.stdin.read()
connection.execute("COMMIT")
"""


def test_a_reply_cache_written_by_another_process_past_the_timeout_is_skipped_not_broken(
    tmp_path: Path, server: OpenAIServer, warned: list[str], short_timeout: None
) -> None:
    database = tmp_path / REPLIES_FILENAME
    expected = replies(server, None)
    assert replies(server, tmp_path, PROMPTS[:2]) == expected[:2]  # an earlier run's replies
    holder = hold(WRITE_LOCK, str(database))
    try:
        assert replies(server, tmp_path) == expected
    finally:
        release(holder)
    # Reading went on beside the writer: only the two new prompts were asked.
    assert server.request_count == len(PROMPTS) + 2 + 2

    assert len(warned) == 1, warned
    assert warned[0] == (
        f"LLM reply cache not used, the run goes on without it: {database}: its lock is held by"
        f" another process for more than {SHORT_TIMEOUT_S:g} s (left to its owner); its prompts"
        " are asked of the provider, and a reply it does not keep is asked (and paid) again by a"
        " later run"
    )
    cache = ReplyCache(tmp_path)
    try:  # the holder's write went through; the skipped replies were not kept
        assert len(cache) == 2 + 1 and cache.get_many(["held"])["held"].text == "theirs"
    finally:
        cache.close()


SETUP_LOCK = """
import sys
from filelock import FileLock
lock = FileLock(sys.argv[1])
lock.acquire()
print("held", flush=True)
sys.stdin.read()
lock.release()
"""


def test_a_digest_cache_whose_lock_is_held_past_the_timeout_is_skipped_not_broken(
    tmp_path: Path, warned: list[str], short_timeout: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, cache = version(tmp_path / "v1"), tmp_path / "cache"
    files_fingerprint(folder, cache)
    database = cache / DIGESTS_FILENAME
    lock = database.with_name(database.name + ".setup.lock")
    holder = hold(SETUP_LOCK, str(lock))
    hashed: list[Path] = []

    def counting(files: list[Path], root: Path) -> str:
        hashed.append(root)
        return files_digest(files, root)

    monkeypatch.setattr(digest_cache, "files_digest", counting)
    try:
        assert files_fingerprint(folder, cache) == uncached(folder)
        assert hashed == [folder]
        with pytest.raises(Timeout):  # still the other process's lock
            FileLock(lock).acquire(timeout=0)
    finally:
        release(holder)

    assert len(warned) == 1, warned
    assert warned[0] == (
        f"file digest cache not used, the run goes on without it: {database}: its lock is held by"
        f" another process for more than {SHORT_TIMEOUT_S:g} s (left to its owner); the files"
        " are hashed, and hashed again by the next run"
    )
    assert not list(cache.glob("*.corrupt-*"))


def test_a_cache_file_that_cannot_be_opened_is_skipped(
    tmp_path: Path, server: OpenAIServer, warned: list[str]
) -> None:
    """A folder where the file should be (as root, a mode of 000 would not stop the opening)."""
    (tmp_path / REPLIES_FILENAME).mkdir()
    assert replies(server, tmp_path) == replies(server, None)
    assert len(warned) == 1, warned
    assert warned[0].startswith(
        f"LLM reply cache not used, the run goes on without it: {tmp_path / REPLIES_FILENAME}: "
        "cannot be opened (SQLite: unable to open database file); its prompts are asked"
    )
    assert (tmp_path / REPLIES_FILENAME).is_dir()  # nothing set aside: it is not corrupt


def test_a_corrupt_result_is_set_aside_and_computed_again(
    tmp_path: Path, warned: list[str]
) -> None:
    cache, frame = ResultCache(tmp_path), pd.DataFrame({"score": [0.25, 0.5]})
    cache.put("k" * 40, frame)
    entry = tmp_path / f"{'k' * 40}.parquet"
    entry.write_bytes(entry.read_bytes()[:-20])  # truncated: no Parquet footer

    assert cache.get("k" * 40) is None
    assert len(warned) == 1, warned
    assert warned[0].startswith(f"result cache {entry} is corrupt (")
    assert warned[0].endswith(
        f"set aside as {set_aside(entry).name}, the run goes on without it and computes the"
        " result again"
    )
    cache.put("k" * 40, frame)
    pd.testing.assert_frame_equal(cache.get("k" * 40), frame)


def test_the_lock_timeout_is_a_positive_number_of_seconds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LOCK_TIMEOUT_ENV, raising=False)
    assert lock_timeout_s() == 30.0
    monkeypatch.setenv(LOCK_TIMEOUT_ENV, "2.5")
    assert lock_timeout_s() == 2.5
    for wrong in ("0", "-1", "soon", "inf"):
        monkeypatch.setenv(LOCK_TIMEOUT_ENV, wrong)
        with pytest.raises(ValueError, match=f"{LOCK_TIMEOUT_ENV}='{wrong}': not a positive"):
            lock_timeout_s()


def test_a_corrupt_reply_object_in_a_bucket_is_set_aside_and_asked_again(
    s3_bucket: str, server: OpenAIServer, warned: list[str]
) -> None:
    cache = f"{s3_bucket}/cache"
    expected = replies(server, cache)
    damaged = next(storage_path(cache).rglob("*.json"))
    damaged.write_bytes(b"{not json")

    assert replies(server, cache) == expected
    assert server.request_count == len(PROMPTS) + 1  # only the damaged reply asked again
    assert replies(server, cache) == expected  # its new reply is kept
    assert server.request_count == len(PROMPTS) + 1

    assert len(warned) == 1, warned
    assert warned[0].startswith(f"LLM reply cache {damaged} is corrupt (JSONDecodeError: ")
    (aside,) = damaged.parent.glob(f"{damaged.name}.corrupt-*")
    assert aside.read_bytes() == b"{not json" and damaged.exists()
