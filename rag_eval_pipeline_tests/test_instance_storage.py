"""The opt-in pooled instance storage: Dagster's SQLite files, pooled connections, nothing lost.

Runs real materializations on instances built from ``deploy/dagster.pooled-sqlite.yaml`` and
reads them back through a second, independent instance on the same folder (what the webserver
and the daemon do), across more runs than the engine LRU holds, and after a wipe. On a Dagster
version it was not tested with, the opt-in falls back to Dagster's stock storage.
"""

import logging
from pathlib import Path

import yaml
from dagster import (
    AssetExecutionContext,
    AssetKey,
    DagsterInstance,
    MaterializeResult,
    StaticPartitionsDefinition,
    asset,
    materialize,
)

from rag_eval_pipeline.pooled_storage import TESTED_DAGSTER_VERSIONS, storage_class
from rag_eval_pipeline.pooled_storage.sqlite import (
    MAX_OPEN_ENGINES,
    PooledSqliteEventLogStorage,
    PooledSqliteRunStorage,
    PooledSqliteStorage,
)
from rag_eval_pipeline_tests.conftest import PROJECT_ROOT

POOLED_INSTANCE_CONFIG = PROJECT_ROOT / "deploy" / "dagster.pooled-sqlite.yaml"

RUNS = MAX_OPEN_ENGINES + 4
PARTITIONS = StaticPartitionsDefinition([f"p{i}" for i in range(RUNS)])


@asset(partitions_def=PARTITIONS)
def counted(context: AssetExecutionContext) -> MaterializeResult:
    """One float per partition, so every materialization is distinguishable."""
    context.log.info("materializing %s", context.partition_key)
    return MaterializeResult(metadata={"index": float(context.partition_key[1:])})


def shipped_instance(home: Path) -> DagsterInstance:
    """An instance from the opt-in pooled dagster.yaml, with its storage rooted at `home`."""
    config = yaml.safe_load(POOLED_INSTANCE_CONFIG.read_text(encoding="utf-8"))
    config["storage"]["custom"]["config"]["base_dir"] = str(home)
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return DagsterInstance.from_config(str(home))


def indexes(instance: DagsterInstance) -> list[float]:
    records = instance.fetch_materializations(AssetKey("counted"), limit=1000, ascending=True)
    return [r.asset_materialization.metadata["index"].value for r in records.records]


def test_an_untested_dagster_version_falls_back_to_the_stock_storage() -> None:
    (tested,) = TESTED_DAGSTER_VERSIONS
    assert storage_class(tested) == (PooledSqliteStorage, None)
    fallback, reason = storage_class("99.0.0")
    assert fallback.__name__ == "DagsterSqliteStorage" and fallback is not PooledSqliteStorage
    assert reason is not None and "99.0.0" in reason


def test_pooled_config_selects_the_pooled_storage(tmp_path: Path) -> None:
    with shipped_instance(tmp_path / "home") as instance:
        assert isinstance(instance.get_ref().storage, PooledSqliteStorage)
        assert isinstance(instance.run_storage, PooledSqliteRunStorage)
        assert isinstance(instance.event_log_storage, PooledSqliteEventLogStorage)


def test_runs_beyond_the_engine_pool_stay_readable_by_another_instance(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with shipped_instance(home) as writer:
        results = [
            materialize([counted], partition_key=key, instance=writer)
            for key in PARTITIONS.get_partition_keys()
        ]
        assert all(result.success for result in results)
        with DagsterInstance.from_config(str(home)) as reader:
            assert indexes(reader) == [float(i) for i in range(RUNS)]
            for result in results:
                logs = reader.all_logs(result.run_id)
                info = [e.user_message for e in logs if e.level == logging.INFO]
                assert info == [f"materializing {result.dagster_run.tags['dagster/partition']}"]
                assert reader.get_run_by_id(result.run_id).is_success
        assert indexes(writer) == [float(i) for i in range(RUNS)]


def test_wipe_then_new_runs_are_stored(tmp_path: Path) -> None:
    with shipped_instance(tmp_path / "home") as instance:
        first = materialize([counted], partition_key="p1", instance=instance)
        instance.wipe()
        assert instance.get_runs() == []
        assert indexes(instance) == []
        again = materialize([counted], partition_key="p2", instance=instance)
        assert again.success
        assert indexes(instance) == [2.0]
        assert instance.all_logs(first.run_id) == []
        assert len(instance.all_logs(again.run_id)) > 5


def test_dynamic_partitions_are_found_and_commits_do_not_wait_for_fsync(tmp_path: Path) -> None:
    with shipped_instance(tmp_path / "home") as instance:
        storage = instance.event_log_storage
        assert isinstance(storage, PooledSqliteEventLogStorage)
        assert not instance.has_dynamic_partition("dataset_version", "v1")
        instance.add_dynamic_partitions("dataset_version", ["v1"])
        with DagsterInstance.from_config(str(tmp_path / "home")) as other:
            assert other.has_dynamic_partition("dataset_version", "v1")
            other.delete_dynamic_partition("dataset_version", "v1")
        assert not instance.has_dynamic_partition("dataset_version", "v1")
        assert storage.has_table("dynamic_partitions")
        assert not storage.has_table("no_such_table")
        with storage.index_connection() as connection:
            synchronous = connection.exec_driver_sql("PRAGMA synchronous").scalar()
            journal = connection.exec_driver_sql("PRAGMA journal_mode").scalar()
        assert (synchronous, journal) == (1, "wal")  # 1 = NORMAL
