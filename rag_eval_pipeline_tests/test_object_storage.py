"""The warehouse, reports and caches on `s3://`, over the real S3 protocol (moto's server on
127.0.0.1): atomic publication, bounded generations, the caches shared through a bucket."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

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
from rag_eval_pipeline_tests.conftest import DATASETS_DIR, rag_eval_process
from rag_eval_pipeline_tests.s3_server import (
    bucket_keys,
    pending_uploads,
    s3_bucket,
    s3_environment,
    s3_server,
)
from rag_eval_pipeline_tests.test_io_manager import unserializable_frame

pytestmark = [pytest.mark.integration, pytest.mark.slow]

__all__ = ["s3_bucket", "s3_server"]  # fixtures

DATE = "2026-11-20"


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


def test_a_folder_of_tables_is_published_as_one_generation(s3_server: str, s3_bucket: str) -> None:
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


def warehouse_tables(bucket: str, keys: list[str]) -> dict[str, pd.DataFrame]:
    """Every single-file partition stored under `<bucket>/warehouse/`, by key."""
    return {
        key: read_parquet(storage_path(f"{bucket}/{key}"))
        for key in keys
        if key.startswith("warehouse/") and key.count("/") == 3 and key.endswith(".parquet")
    }


def computed_values(table: pd.DataFrame) -> pd.DataFrame:
    """`table` without what is measured or says where a value came from rather than what it is:
    latencies (columns and metrics named so) and the `cached` flag of judgments."""
    if "metric" in table:
        table = table[~table["metric"].astype(str).str.contains("latency")]
    return table.drop(columns=[c for c in table if "latency" in str(c) or c == "cached"])


def generation_shape(keys: list[str]) -> set[str]:
    """`keys` with every generation name replaced by `<generation>`."""
    return {
        "/".join(
            "<generation>" if part.startswith(GENERATION_PREFIX) else part
            for part in key.split("/")
        )
        for key in keys
    }


def test_a_full_partition_and_its_rerun_on_s3(
    s3_server: str, s3_bucket: str, tmp_path: Path
) -> None:
    """`rag-eval run` on a real Dagster instance evaluates one dataset version and date with
    the warehouse, the report and the caches in the bucket (nothing under the data folder);
    the unchanged partition is then up to date, and a forced re-run writes the same values,
    reads its embeddings and judgments from the caches in the bucket (stores no new cache
    entry) and leaves no temporary object."""
    shutil.copytree(DATASETS_DIR / "demo-v1", tmp_path / "datasets" / "demo-v1")
    home = tmp_path / "home"
    home.mkdir()
    env = {
        **s3_environment(s3_server),
        "RAG_EVAL_WAREHOUSE": f"{s3_bucket}/warehouse",
        "RAG_EVAL_REPORTS": f"{s3_bucket}/reports",
        "RAG_EVAL_CACHE": f"{s3_bucket}/cache",
    }

    def run(*extra: str) -> str:
        arguments = ["run", "--dataset-version", "demo-v1", "--date", DATE, *extra]
        completed = rag_eval_process(tmp_path, home, *arguments, env=env, timeout_s=900)
        assert completed.returncode == 0, completed.stdout + completed.stderr
        return completed.stdout

    first_output = run()
    assert f"{s3_bucket}/reports/demo-v1/{DATE}.html" in first_output
    first = bucket_keys(s3_server, s3_bucket)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["datasets", "home"]
    assert f"warehouse/evaluation_scorecard/demo-v1/{DATE}.parquet" in first
    assert f"warehouse/golden_dataset/demo-v1/{DATE}/_tables.json" in first
    assert any(key.startswith("cache/embeddings/") and key.endswith(".npz") for key in first)
    assert any(key.startswith("cache/results/") for key in first)
    report = storage_path(f"{s3_bucket}/reports/demo-v1/{DATE}.html").read_text()
    assert "demo-v1" in report
    scorecard = read_parquet(
        storage_path(f"{s3_bucket}/warehouse/evaluation_scorecard/demo-v1/{DATE}.parquet")
    )
    assert len(scorecard) > 50

    assert f"demo-v1|{DATE} is up to date" in run()

    values = warehouse_tables(s3_bucket, first)
    assert "materializing" in run("--force")
    again = bucket_keys(s3_server, s3_bucket)
    assert pending_uploads(s3_server, s3_bucket) == []
    assert not [key for key in again if ".tmp" in key]
    cache_keys = [key for key in again if key.startswith("cache/")]
    assert cache_keys == [key for key in first if key.startswith("cache/")]
    assert generation_shape(again) == generation_shape(first)
    rerun = warehouse_tables(s3_bucket, again)
    judgments = [key for key in rerun if key.split("/")[1].endswith("_judgments")]
    cached = {key: (values[key]["cached"].sum(), rerun[key]["cached"].sum()) for key in judgments}
    assert judgments and all(before < after for before, after in cached.values()), cached
    changed = []
    for key, table in rerun.items():
        try:
            pd.testing.assert_frame_equal(
                computed_values(table), computed_values(values[key]), obj=key
            )
        except AssertionError as difference:
            changed.append(str(difference).splitlines()[0])
    assert not changed, changed
