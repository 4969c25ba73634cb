"""The warehouse, reports and caches on `s3://`, over the real S3 protocol (moto's server on
127.0.0.1): atomic publication, bounded generations, the caches shared through a bucket."""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import pytest
from upath import UPath

from rag_eval_pipeline.embedding.cache import EmbeddingCache
from rag_eval_pipeline.llm.cache import CachedReply, ObjectReplyCache, open_reply_cache
from rag_eval_pipeline.storage.batches import TableBatches
from rag_eval_pipeline.storage.objects import storage_path, write_text_atomically
from rag_eval_pipeline.storage.parquet import (
    GENERATION_PREFIX,
    TABLES_MANIFEST,
    read_batches,
    read_parquet,
    read_tables,
    write_parquet_atomically,
    write_tables_atomically,
)
from rag_eval_pipeline.storage.result_cache import ResultCache
from rag_eval_pipeline_tests.s3_server import (
    bucket_keys,
    pending_uploads,
    s3_bucket,
    s3_server,
)
from rag_eval_pipeline_tests.test_io_manager import unserializable_frame

__all__ = ["s3_bucket", "s3_server"]  # fixtures


def tables_of(version: int, rows: int = 20_000) -> dict[str, pd.DataFrame]:
    """Two tables that must change together: every row of both carries `version`."""
    ids = np.arange(rows)
    return {
        "queries": pd.DataFrame({"query_id": ids, "version": version}),
        "qrels": pd.DataFrame({"query_id": ids, "doc_id": ids * 7, "version": version}),
    }


def test_parquet_files_and_batches_round_trip(s3_bucket: str) -> None:
    frame = pd.DataFrame({"a": range(5), "b": list("abcde")})
    path = storage_path(s3_bucket) / "asset" / "v1" / "2026-11-21.parquet"
    write_parquet_atomically(frame, path)
    pd.testing.assert_frame_equal(read_parquet(path), frame)
    batches = TableBatches.of(pd.DataFrame({"x": range(10)}), rows=3)
    write_parquet_atomically(batches, path)
    stored = read_batches(path)
    assert stored.num_rows == 10
    assert stored.to_pandas()["x"].tolist() == list(range(10))


def test_a_failed_write_keeps_the_previous_object_and_leaves_no_upload(
    s3_server: str, s3_bucket: str
) -> None:
    """An exception mid-write (pyarrow fails after starting) publishes nothing: the object is
    the previous one and the upload is aborted, not left pending."""
    path = storage_path(s3_bucket) / "asset" / "2026-11-21.parquet"
    good = pd.DataFrame({"ok": [1, 2, 3]})
    write_parquet_atomically(good, path)
    with pytest.raises(Exception, match=r"bad|object|Conversion"):
        write_parquet_atomically(unserializable_frame(), path)
    pd.testing.assert_frame_equal(read_parquet(path), good)
    assert pending_uploads(s3_server, s3_bucket) == []
    assert bucket_keys(s3_server, s3_bucket) == ["asset/2026-11-21.parquet"]


def test_a_folder_of_tables_is_published_as_one_generation(
    s3_server: str, s3_bucket: str
) -> None:
    """Each write is a new generation named by the manifest; the replaced one is kept for
    readers in flight, older ones are deleted: never more than two."""
    folder = storage_path(s3_bucket) / "golden_dataset" / "v1" / "2026-11-21"
    for version in range(1, 4):
        write_tables_atomically(tables_of(version, rows=10), folder)
        stored = read_tables(folder)
        assert {name: set(table["version"]) for name, table in stored.items()} == {
            "queries": {version},
            "qrels": {version},
        }
    prefix = "golden_dataset/v1/2026-11-21/"
    keys = [key.removeprefix(prefix) for key in bucket_keys(s3_server, s3_bucket)]
    generations = sorted({key.split("/")[0] for key in keys if key != TABLES_MANIFEST})
    assert len(generations) == 2
    assert all(name.startswith(GENERATION_PREFIX) for name in generations)
    assert sorted(keys) == sorted(
        [TABLES_MANIFEST]
        + [f"{generation}/{table}.parquet" for generation in generations for table in tables_of(0)]
    )
    assert pending_uploads(s3_server, s3_bucket) == []


def test_a_reader_during_writes_sees_the_old_or_the_new_tables_never_a_mix(
    s3_bucket: str,
) -> None:
    """A writer rewrites a partition's two tables, alternating versions, while a reader reads
    the folder and a single file over and over: every read is one whole version."""
    folder = storage_path(s3_bucket) / "golden_dataset" / "v1" / "2026-11-21"
    single = storage_path(s3_bucket) / "retrieval_metrics" / "v1" / "2026-11-21.parquet"
    write_tables_atomically(tables_of(0), folder)
    write_parquet_atomically(tables_of(0)["qrels"], single)
    writes = 6
    done = threading.Event()
    errors: list[BaseException] = []

    def writer() -> None:
        try:
            for version in range(1, writes + 1):
                write_tables_atomically(tables_of(version), folder)
                write_parquet_atomically(tables_of(version)["qrels"], single)
        except BaseException as error:  # reported by the main thread
            errors.append(error)
        finally:
            done.set()

    seen: set[int] = set()
    reads = 0
    thread = threading.Thread(target=writer)
    thread.start()
    while not done.is_set():
        tables = read_tables(folder)
        versions = {name: set(table["version"]) for name, table in tables.items()}
        assert len(tables["queries"]) == len(tables["qrels"]) == 20_000
        assert versions["queries"] == versions["qrels"] and len(versions["queries"]) == 1
        file_versions = set(read_parquet(single)["version"])
        assert len(file_versions) == 1 and len(read_parquet(single)) == 20_000
        seen |= versions["queries"] | file_versions
        reads += 1
    thread.join()
    assert not errors, errors
    assert reads >= 3 and len(seen) >= 3, (reads, seen)  # the reads overlapped the writes


def test_reports_and_caches_live_in_the_bucket(s3_bucket: str) -> None:
    report = storage_path(s3_bucket) / "reports" / "v1" / "2026-11-21.html"
    write_text_atomically("<p>é</p>", report)
    assert report.read_text(encoding="utf-8") == "<p>é</p>"
    assert report.as_uri() == f"{s3_bucket}/reports/v1/2026-11-21.html"

    results = ResultCache(f"{s3_bucket}/cache/results")
    assert results.get("k") is None
    results.put("k", pd.DataFrame({"score": [0.5]}))
    pd.testing.assert_frame_equal(
        ResultCache(f"{s3_bucket}/cache/results").get("k"), pd.DataFrame({"score": [0.5]})
    )

    vectors = np.arange(6, dtype=np.float32).reshape(2, 3)
    EmbeddingCache(f"{s3_bucket}/cache/embeddings/m").store(["a", "b"], vectors)
    other_process = EmbeddingCache(f"{s3_bucket}/cache/embeddings/m")
    with other_process.exclusive():  # no lock file on an object store: a no-op
        found = other_process.lookup(["b", "c", "a"])
    assert found[1] is None
    np.testing.assert_array_equal(np.vstack([found[2], found[0]]), vectors)
    assert other_process.dimension() == 3


def test_llm_replies_in_the_bucket_first_reply_wins(s3_bucket: str) -> None:
    cache = open_reply_cache(f"{s3_bucket}/cache/llm")
    assert isinstance(cache, ObjectReplyCache)
    first = CachedReply("yes", 10, 1, 0.001, 120.0)
    cache.put("k1", first, model="m")
    cache.put("k1", CachedReply("no", 11, 2, 0.002, 99.0), model="m")
    cache.put("k2", CachedReply("maybe", 5, 1, 0.0, 50.0), model="m")
    shared = open_reply_cache(f"{s3_bucket}/cache/llm")
    assert shared.get_many(["k1", "k3", "k1"]) == {"k1": first}
    assert len(shared) == 2
    shared.discard(["k1", "k3"])
    assert set(cache.get_many(["k1", "k2"])) == {"k2"}
    assert len(cache) == 1


def test_local_locations_stay_local(tmp_path: UPath) -> None:
    """A folder is a local UPath made absolute; the SQLite reply cache stays the local store."""
    assert storage_path("relative/warehouse").is_absolute()
    assert not isinstance(open_reply_cache(tmp_path / "llm"), ObjectReplyCache)
