"""The Parquet IO manager writes the documented paths atomically, locally and through fsspec."""

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    build_input_context,
    build_output_context,
    materialize,
)
from upath import UPath

from rag_eval_pipeline.defs.dataset.assets import golden_dataset
from rag_eval_pipeline.defs.shared.io_managers import ParquetIOManager, ParquetIOManagerResource
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.defs.shared.resources import WarehouseResource
from rag_eval_pipeline.defs.tier0_embedding.assets import corpus_embeddings
from rag_eval_pipeline.defs.tier1_retrieval.assets import (
    retrieval_metrics,
    retrieval_quality,
    retrieval_runs,
)
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.storage.objects import current_umask
from rag_eval_pipeline.storage.parquet import (
    LOCKS_FOLDER,
    MissingPartitionError,
    escape_partition_path,
    read_tables,
    write_parquet_atomically,
    write_tables_atomically,
)
from rag_eval_pipeline_tests.conftest import evaluation_resources

pytestmark = [pytest.mark.integration]


def unserializable_frame() -> pd.DataFrame:
    """A frame pyarrow starts writing and then fails on (mixed types in one column)."""
    return pd.DataFrame({"ok": range(1000), "bad": [1] * 999 + [object()]})


def test_crash_mid_write_leaves_previous_file_intact(tmp_path: Path) -> None:
    target = UPath(tmp_path / "asset" / "v1" / "2026-11-21.parquet")
    good = pd.DataFrame({"metric": ["mrr"], "value": [0.5]})
    write_parquet_atomically(good, target)
    with pytest.raises(Exception, match=r"bad|object|Conversion"):
        write_parquet_atomically(unserializable_frame(), target)
    pd.testing.assert_frame_equal(pd.read_parquet(target.path), good)
    assert [p.name for p in Path(target.path).parent.iterdir()] == ["2026-11-21.parquet"]


def test_a_table_folder_writer_waits_for_another_process_holding_its_lock(tmp_path: Path) -> None:
    """Writers of one partition's table folder are serialized by a `filelock` in the
    warehouse's one locks folder (the IO manager's), not by a lock file beside the partition."""
    tables = {"t": pd.DataFrame({"x": [1, 2]})}
    target = UPath(tmp_path / "golden_dataset" / "v1" / "2026-11-21")
    locks = ParquetIOManager(base_path=UPath(tmp_path)).locks
    assert locks == tmp_path / LOCKS_FOLDER
    write_tables_atomically(tables, target, locks=locks)
    [lock_file] = locks.iterdir()
    assert sorted(p.name for p in target.parent.iterdir()) == ["2026-11-21"]
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(lock_file)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        writer = threading.Thread(
            target=write_tables_atomically,
            args=({"t": pd.DataFrame({"x": [3]})}, target),
            kwargs={"locks": locks},
        )
        writer.start()
        writer.join(timeout=1.0)
        assert writer.is_alive()  # waiting for the other process's lock
        assert read_tables(target)["t"]["x"].tolist() == [1, 2]
    finally:
        holder.communicate("")  # releases the lock
    writer.join(timeout=30)
    assert not writer.is_alive() and read_tables(target)["t"]["x"].tolist() == [3]


HOLD_LOCK = (
    "import sys; from filelock import FileLock; lock = FileLock(sys.argv[1]); lock.acquire(); "
    "print('held', flush=True); sys.stdin.read(); lock.release()"
)


def test_next_write_removes_a_killed_writers_stale_leftovers_only(tmp_path: Path) -> None:
    """A SIGKILLed writer leaves a hidden `.tmp` sibling; the next successful write of the same
    partition removes it once it is older than an hour, but never a fresh one (a writer that may
    still be running) nor another partition's."""
    folder = tmp_path / "asset" / "v1"
    folder.mkdir(parents=True)
    two_hours_ago = time.time() - 7200
    stale_file = folder / ".2026-11-21.parquet.k1ll3d.tmp"
    stale_dir = folder / ".2026-11-22.a8c1.tmp.old"
    fresh_file = folder / ".2026-11-21.parquet.runn1ng.tmp"
    other = folder / ".2026-11-20.parquet.0ther.tmp"
    for leftover in (stale_file, fresh_file, other):
        leftover.write_bytes(b"partial")
    (stale_dir / "inner").mkdir(parents=True)
    for leftover in (stale_file, stale_dir, other):
        os.utime(leftover, (two_hours_ago, two_hours_ago))

    write_parquet_atomically(pd.DataFrame({"x": [1]}), UPath(folder / "2026-11-21.parquet"))
    write_tables_atomically({"t": pd.DataFrame({"x": [1]})}, UPath(folder / "2026-11-22"))

    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [fresh_file.name, other.name, "2026-11-21.parquet", "2026-11-22"]
    )


KILLED_WRITER = """
import os, signal, sys
import pandas as pd
from upath import UPath
from rag_eval_pipeline.storage import parquet

point, kind, target = sys.argv[1:]

def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)

if point == "fsync":
    os.fsync = die
elif point == "rename":
    os.replace = die
    parquet._renameat2 = lambda: None  # the folder swap falls back to os.replace
else:
    parquet._write_parquet = die
frame = pd.DataFrame({"x": [1, 2]})
if kind == "file":
    parquet.write_parquet_atomically(frame, UPath(target))
else:
    parquet.write_tables_atomically({"t": frame, "u": frame}, UPath(target))
"""


@pytest.mark.parametrize(
    ("point", "kind"),
    [("fsync", "file"), ("rename", "file"), ("write", "tables"), ("rename", "tables")],
)
def test_a_writer_killed_at_fsync_or_rename_leaves_nothing_after_the_next_write(
    tmp_path: Path, point: str, kind: str
) -> None:
    """A writer SIGKILLed at its fsync, its rename or mid-staging leaves a temporary file or
    staging folder; the next write of the same partition removes it at once (its writer has
    ended; no hour to wait), and what is published is 0644 / 0755 under the umask."""
    folder = tmp_path / "asset" / "v1"
    target = folder / ("2026-11-21.parquet" if kind == "file" else "2026-11-21")
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, point, kind, str(target)],
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        capture_output=True,
        text=True,
    )
    assert killed.returncode == -9, killed.stderr
    leftovers = [p.name for p in folder.iterdir() if p.name.endswith(".tmp")]
    assert leftovers and not target.exists(), leftovers

    frame = pd.DataFrame({"x": [3]})
    if kind == "file":
        write_parquet_atomically(frame, UPath(target))
    else:
        write_tables_atomically({"t": frame}, UPath(target))
    assert [p.name for p in folder.iterdir()] == [target.name]
    umask = current_umask()
    published = [target, *target.iterdir()] if target.is_dir() else [target]
    for path in published:
        expected = (0o777 if path.is_dir() else 0o666) & ~umask
        assert path.stat().st_mode & 0o777 == expected, (path, oct(path.stat().st_mode))


def test_crash_mid_write_of_table_folder_keeps_previous_folder(tmp_path: Path) -> None:
    target = UPath(tmp_path / "golden" / "v1" / "2026-11-21")
    good = {"queries": pd.DataFrame({"query_id": ["q1"]}), "qrels": pd.DataFrame({"x": [1]})}
    write_tables_atomically(good, target)
    with pytest.raises(Exception, match=r"bad|object|Conversion"):
        write_tables_atomically(
            {"queries": good["queries"], "qrels": unserializable_frame()}, target
        )
    assert sorted(p.name for p in Path(target.path).iterdir()) == [
        "_tables.json",
        "qrels.parquet",
        "queries.parquet",
    ]
    assert sorted(p.name for p in Path(target.path).parent.iterdir()) == ["2026-11-21"]


def test_memory_filesystem_round_trip() -> None:
    manager = ParquetIOManager(base_path=UPath("memory://warehouse"))
    frame = pd.DataFrame({"a": [1, 2]})
    key = AssetKey("retrieval_metrics")
    manager.handle_output(build_output_context(asset_key=key), frame)
    assert UPath("memory://warehouse/retrieval_metrics.parquet").exists()
    loaded = manager.load_input(build_input_context(asset_key=key))
    pd.testing.assert_frame_equal(loaded, frame)


def test_missing_partition_has_a_clear_error(tmp_path: Path) -> None:
    manager = ParquetIOManager(base_path=UPath(tmp_path))
    with pytest.raises(MissingPartitionError, match="No stored data for 'golden_dataset'"):
        manager.load_input(build_input_context(asset_key=AssetKey("golden_dataset")))


def test_pipeline_materializes_to_an_fsspec_memory_base(
    dagster_instance: DagsterInstance, embedder: Embedder, tmp_path: Path
) -> None:
    dagster_instance.add_dynamic_partitions(DATASET_VERSION, ["scifact-test"])
    base = "memory://rag-eval-warehouse"
    resources = evaluation_resources(
        tmp_path,
        embedder,
        io_manager=ParquetIOManagerResource(base_path=base),
        warehouse=WarehouseResource(base_path=base),
    )
    selection = [
        golden_dataset,
        corpus_embeddings,
        retrieval_runs,
        retrieval_metrics,
        retrieval_quality,
    ]
    result = materialize(
        selection,
        partition_key=evaluation_partition_key("scifact-test", "2026-11-21"),
        instance=dagster_instance,
        resources=resources,
    )
    assert result.success
    stored = UPath(f"{base}/retrieval_quality/scifact-test/2026-11-21.parquet")
    with stored.open("rb") as handle:
        quality = pd.read_parquet(handle)
    assert quality.set_index("metric").loc["mrr", "system"] == "reranked"
    golden = read_tables(UPath(f"{base}/golden_dataset/scifact-test/2026-11-21"))
    assert {"queries", "qrels"} <= set(golden)
    assert not (tmp_path / "warehouse").exists()


@pytest.mark.parametrize(
    ("partition", "escaped"),
    [
        ("demo-v1/2026-11-20", "demo-v1/2026-11-20"),
        ("/etc/passwd", "%2Fetc/passwd"),
        ("../../x", "%2E%2E/%2E%2E/x"),
        ("a/../b", "a/%2E%2E/b"),
        ("my..backup/..", "my..backup/%2E%2E"),
        ("/..", "%2F.."),
    ],
)
def test_partition_paths_never_climb_out_of_the_base(partition: str, escaped: str) -> None:
    assert escape_partition_path(partition) == escaped
    path = ParquetIOManager(base_path=UPath("/warehouse")).make_safe_partition_path(
        UPath("/warehouse/asset"), partition
    )
    assert str(path) == f"/warehouse/asset/{escaped}"
