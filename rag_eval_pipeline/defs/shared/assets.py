"""The defaults every evaluation asset and check shares, set in this one place.

Every asset is partitioned by dataset version × date (`evaluation_partitions`), stored as
Parquet by the `io_manager` resource (`kinds` pandas and parquet unless it says otherwise) and
shown in its tier's group; every check is partitioned like its asset. Each tier's folder binds
its group once in its `__init__.py` (`asset = evaluation_asset("2_retrieval")`) and its modules
decorate with that `asset`, adding only what is theirs (pool, description, inputs).
"""

from collections.abc import Callable
from functools import partial
from typing import Any

from dagster import asset, asset_check

from rag_eval_pipeline.defs.shared.partitions import evaluation_partitions

IO_MANAGER_KEY = "io_manager"
PARQUET_KINDS = frozenset({"pandas", "parquet"})

evaluation_check: Callable[..., Any] = partial(asset_check, partitions_def=evaluation_partitions)


def evaluation_asset(group_name: str, kinds: frozenset[str] = PARQUET_KINDS) -> Callable[..., Any]:
    """`dagster.asset` with the evaluation defaults and the group `group_name` (any of them can
    still be given per asset, e.g. `kinds={"csv", "pandas"}`)."""
    return partial(
        asset,
        partitions_def=evaluation_partitions,
        kinds=set(kinds),
        group_name=group_name,
        io_manager_key=IO_MANAGER_KEY,
    )
