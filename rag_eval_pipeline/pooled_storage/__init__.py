"""Opt-in pooled SQLite storage, guarded by the Dagster version it was written against.

`sqlite.PooledSqliteStorage` subclasses Dagster's private SQLite storage classes (about half the
time of a forced re-run on this project's 2-core machine; see README "Scale out"), so a
Dagster upgrade may break it. It is therefore not in the shipped ``dagster.yaml``; a deployment
that wants it copies ``deploy/dagster.pooled-sqlite.yaml`` into ``$DAGSTER_HOME``, which names
`PooledSqliteStorage` from this module: the pooled storage on a tested Dagster version, and on
any other version (or if it fails to import) Dagster's stock SQLite storage, with a warning.
It lives outside `defs/` so the code location never imports it: only a deployment that opts in
loads Dagster's private modules.
"""

from __future__ import annotations

import warnings

import dagster

TESTED_DAGSTER_VERSIONS = frozenset({"1.13.27"})


def storage_class(dagster_version: str) -> tuple[type, str | None]:
    """The storage class for `dagster_version` and, when it is the stock fallback, why."""
    reason = None
    if dagster_version in TESTED_DAGSTER_VERSIONS:
        try:
            from rag_eval_pipeline.pooled_storage.sqlite import PooledSqliteStorage as pooled
        except (ImportError, AttributeError) as error:
            reason = f"the pooled storage failed to load ({error})"
        else:
            return pooled, None
    else:
        reason = (
            f"it was tested with Dagster {', '.join(sorted(TESTED_DAGSTER_VERSIONS))}, "
            f"this is Dagster {dagster_version}"
        )
    from dagster._core.storage.sqlite_storage import DagsterSqliteStorage

    return DagsterSqliteStorage, reason


PooledSqliteStorage, _fallback_reason = storage_class(dagster.__version__)
if _fallback_reason:
    warnings.warn(
        f"rag_eval_pipeline.pooled_storage: using Dagster's stock SQLite storage, because "
        f"{_fallback_reason}. Same files and schema; only slower.",
        stacklevel=1,
    )
