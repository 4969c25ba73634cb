"""The one rule deciding whether a partition is up to date, so a run of it can be skipped.

A partition is up to date for a set of assets when, for every one of them, the *latest*
materialization of that partition carries the current fingerprint of the partition's inputs
(`evaluation.run_fingerprint`; the IO manager records the run's fingerprint on each output's
metadata) and the stored output reads back: its Parquet footer is valid and holds the row count
the materialization recorded (`storage.readback`). An older materialization from the same
inputs does not count: after a revert, what is stored is the later run's. Extra files written
outside the warehouse (the HTML report) must exist and not be empty.

`rag-eval run` (one date or `--days`), its `--from/--to` backfill and the daily schedule all
ask `partition_freshness`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from dagster import AssetKey, AssetRecordsFilter, DagsterInstance
from upath import UPath

from rag_eval_pipeline.evaluation.run_fingerprint import partition_fingerprint
from rag_eval_pipeline.settings import REPORTS_URL, WAREHOUSE_URL
from rag_eval_pipeline.storage.objects import storage_path
from rag_eval_pipeline.storage.readback import output_problem
from rag_eval_pipeline.storage.warehouse import REPORT_ASSET, WarehouseStore

FINGERPRINT_KEY = "rag_eval/fingerprint"
ROW_COUNT_KEY = "dagster/row_count"
TABLE_ROWS_KEY = "rag_eval/table_rows"


@dataclass(frozen=True)
class Freshness:
    """Whether a partition is up to date: the run that materialized it last (when it is), or
    the first reason it is not."""

    run_id: str | None
    reason: str | None

    @property
    def up_to_date(self) -> bool:
        return self.reason is None


def partition_freshness(
    instance: DagsterInstance,
    partition_key: str,
    assets: Sequence[str],
    fingerprint: str | None,
    warehouse: UPath,
    files: Iterable[UPath] = (),
) -> Freshness:
    """Whether `partition_key` (``version|date``) is up to date for `assets` under
    `fingerprint` (None: inputs that cannot be fingerprinted, never up to date), their outputs
    stored under `warehouse`, and `files` written beside them."""
    if not fingerprint:
        return Freshness(None, "its inputs cannot be fingerprinted")
    version, date = partition_key.split("|", 1)
    latest: tuple[int, str] | None = None
    for asset in assets:
        records = instance.fetch_materializations(
            AssetRecordsFilter(asset_key=AssetKey(asset), asset_partitions=[partition_key]),
            limit=1,
        ).records
        if not records:
            return Freshness(None, f"{asset} was never materialized")
        record = records[0]
        metadata = record.asset_materialization.metadata if record.asset_materialization else {}
        recorded = metadata.get(FINGERPRINT_KEY)
        if recorded is None or recorded.value != fingerprint:
            return Freshness(None, f"{asset} was last materialized from other inputs")
        rows, tables = metadata.get(ROW_COUNT_KEY), metadata.get(TABLE_ROWS_KEY)
        problem = output_problem(
            warehouse / asset / version / f"{date}.parquet",
            rows=None if rows is None else int(rows.value),
            tables=None if tables is None else tables.value,
        )
        if problem:
            return Freshness(None, problem)
        this = (record.storage_id, record.run_id)
        latest = max(latest or this, this)
    for file in files:
        if not file.exists() or file.stat().st_size == 0:
            return Freshness(None, f"{file} is missing or empty")
    return Freshness(latest[1] if latest else None, None)


def fingerprint_tags(version_dir: Path, version: str, day: str) -> dict[str, str]:
    """The fingerprint tag of a run of `version` (read from `version_dir`) on `day` (none when
    its inputs cannot be fingerprinted, e.g. a user callable as system under test)."""
    fingerprint = partition_fingerprint(
        version_dir=version_dir,
        version=version,
        date=day,
        store=WarehouseStore(WAREHOUSE_URL),
    )
    return {FINGERPRINT_KEY: fingerprint} if fingerprint else {}


def evaluation_freshness(
    instance: DagsterInstance, version: str, day: str, assets: Sequence[str], tags: dict[str, str]
) -> Freshness:
    """`partition_freshness` of `version` on `day` for `assets` in the deployment's warehouse,
    under the fingerprint in `tags`, with the HTML report among the files when it is selected."""
    from rag_eval_pipeline.reporting.paths import report_path

    reports = [report_path(REPORTS_URL, version, day)] if REPORT_ASSET in assets else []
    return partition_freshness(
        instance,
        f"{version}|{day}",
        assets,
        tags.get(FINGERPRINT_KEY),
        storage_path(WAREHOUSE_URL),
        files=reports,
    )


def evaluation_assets() -> list[str]:
    """The names of the assets the evaluation job materializes (every materializable one)."""
    from rag_eval_pipeline.definitions import defs

    return ["/".join(key.path) for key in defs.resolve_asset_graph().materializable_asset_keys]
