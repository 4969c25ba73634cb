"""Parquet IO manager: `<base>/<asset>/<dataset_version>/<date>.parquet`, written atomically.

Built on Dagster's `UPathIOManager`, so the base may be a local folder or any fsspec URL
(`s3://`, `gs://`, `memory://`). A DataFrame is one Parquet file; a mapping of DataFrames (the
golden dataset's tables) is a folder `<date>/` with one `<table>.parquet` each. The writes are
`rag_eval_pipeline.storage.parquet`'s atomic ones (Dagster's base class opens the target for
writing and truncates it). A `TableBatches` output (Tier 1's runs at production size) is written
one row group per chunk, and an input annotated `TableBatches` is read back chunk by chunk, so
memory stays bounded through the asset boundary; a folder of tables read as an input annotated
`StoredTables` is opened, not read (the consumer reads the tables it needs, or part of one).
"""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd
from dagster import (
    ConfigurableIOManagerFactory,
    DagsterInvariantViolationError,
    InitResourceContext,
    InputContext,
    MetadataValue,
    OutputContext,
    UPathIOManager,
)
from pydantic import Field
from upath import UPath

from rag_eval_pipeline.defs.runs.machine_failures import machine_failures_fail_the_step
from rag_eval_pipeline.defs.runs.ownership import claim_run
from rag_eval_pipeline.defs.runs.up_to_date import FINGERPRINT_KEY, ROW_COUNT_KEY, TABLE_ROWS_KEY
from rag_eval_pipeline.defs.shared.metadata import text_metadata
from rag_eval_pipeline.settings import WAREHOUSE_URL
from rag_eval_pipeline.storage.batches import TableBatches
from rag_eval_pipeline.storage.objects import is_local, storage_path
from rag_eval_pipeline.storage.parquet import (
    LOCKS_FOLDER,
    MissingPartitionError,
    StoredTables,
    escape_partition_path,
    read_batches,
    read_parquet,
    read_tables,
    write_parquet_atomically,
    write_tables_atomically,
)


class ParquetIOManager(UPathIOManager):
    """Stores DataFrames (and mappings of them) as Parquet under a UPath base.

    Every output's metadata records what `up_to_date.partition_freshness` compares with the
    stored file: its row count (per table for a folder) and the fingerprint of the inputs the
    run was launched with (`rag_eval/fingerprint`, from the run's tag, when it has one).
    """

    extension: str = ".parquet"

    def __init__(self, base_path: UPath, fingerprint: str | None = None) -> None:
        super().__init__(base_path=base_path)
        self.fingerprint = fingerprint
        self.locks = Path(base_path.path) / LOCKS_FOLDER if is_local(base_path) else None

    def make_safe_partition_path(self, base_path: UPath, partition: str) -> UPath:
        """Escape a leading `/` and `..` segments: partition keys never climb out of the base."""
        return base_path / escape_partition_path(partition)

    def dump_to_path(self, context: OutputContext, obj: Any, path: UPath) -> None:
        if isinstance(obj, pd.DataFrame | TableBatches):
            with machine_failures_fail_the_step(path):
                write_parquet_atomically(obj, path)
        elif isinstance(obj, Mapping):
            with machine_failures_fail_the_step(path.with_suffix("")):
                write_tables_atomically(obj, path.with_suffix(""), locks=self.locks)
        else:
            raise TypeError(
                f"{context.asset_key.to_user_string()}: ParquetIOManager stores DataFrames or "
                f"mappings of DataFrames, got {type(obj).__name__}"
            )

    def load_from_path(self, context: InputContext, path: UPath) -> Any:
        if path.exists():
            if _wants(context, TableBatches):
                return read_batches(path)
            return read_parquet(path)
        folder = path.with_suffix("")
        if folder.exists():
            if _wants(context, StoredTables):
                return StoredTables.open(folder)
            return read_tables(folder)
        asset = context.asset_key.to_user_string() if context.has_asset_key else "input"
        raise MissingPartitionError(
            f"No stored data for '{asset}' at {path}: materialize that asset for this partition "
            "first (e.g. `rag-eval run` or select it in the Dagster UI)."
        )

    def has_output(self, context: OutputContext) -> bool:
        path = self._get_path(context)
        return self.path_exists(path) or self.path_exists(path.with_suffix(""))

    def get_metadata(self, context: OutputContext, obj: Any) -> dict[str, Any]:
        metadata: dict[str, Any] = {}
        if self.fingerprint:
            metadata[FINGERPRINT_KEY] = text_metadata(self.fingerprint)
        if isinstance(obj, pd.DataFrame | TableBatches):
            rows = len(obj) if isinstance(obj, pd.DataFrame) else obj.num_rows
            metadata[ROW_COUNT_KEY] = MetadataValue.int(rows)
        elif isinstance(obj, Mapping):
            counts = {name: _rows(table) for name, table in obj.items()}
            metadata[TABLE_ROWS_KEY] = MetadataValue.json(counts)
        return metadata


def _rows(table: pd.DataFrame | TableBatches) -> int:
    return len(table) if isinstance(table, pd.DataFrame) else table.num_rows


def _wants(context: InputContext, annotation: type) -> bool:
    """The input is annotated `annotation` (a context built without a type: no)."""
    try:
        return context.dagster_type.typing_type is annotation
    except DagsterInvariantViolationError:
        return False


class ParquetIOManagerResource(ConfigurableIOManagerFactory):
    """Configurable Parquet storage: `base_path` is a local folder or any fsspec URL."""

    base_path: str = WAREHOUSE_URL
    storage_options: dict[str, Any] = Field(default_factory=dict)

    def create_io_manager(self, context: InitResourceContext) -> ParquetIOManager:
        """The IO manager of a run's worker; every step stores through it, so this is also where
        the run is claimed by the process executing it (`run_ownership.claim_run`)."""
        claim_run(context.instance, context.run_id)
        run = context.dagster_run
        return ParquetIOManager(
            base_path=storage_path(self.base_path, **self.storage_options),
            fingerprint=run.tags.get(FINGERPRINT_KEY) if run is not None else None,
        )
