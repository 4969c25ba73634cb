"""`rag-eval run --select`: the assets an asset selection names, and the refusal of a selection
whose upstream is neither selected nor stored."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rag_eval_pipeline.cli.common import UsageError
from rag_eval_pipeline.settings import WAREHOUSE_URL
from rag_eval_pipeline.storage.objects import storage_path

if TYPE_CHECKING:
    from dagster import AssetKey, Definitions


def selected_assets_of(text: str, defs: Definitions) -> list[AssetKey]:
    """The asset keys an asset selection string selects; `UsageError` when it is invalid or
    selects no asset (Dagster's message, first line)."""
    from dagster import AssetSelection, DagsterError

    try:
        keys = sorted(AssetSelection.from_string(text).resolve(defs.resolve_asset_graph()))
    except DagsterError as error:
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise UsageError(f"invalid --select {text!r}: {reason}") from error
    if not keys:
        raise UsageError(f"--select {text!r} selects no asset")
    return keys


def check_upstream_stored(
    defs: Definitions, selection: Sequence[AssetKey], versions: Sequence[str], days: Sequence[str]
) -> None:
    """Raise `UsageError` (one line saying what to select) when a selected asset reads an
    upstream asset that is neither selected nor stored for every partition to run."""
    from rag_eval_pipeline.evaluation.run_fingerprint import outputs_present

    graph = defs.resolve_asset_graph()
    chosen = set(selection)
    warehouse = storage_path(WAREHOUSE_URL)
    for key in selection:
        for parent in sorted(graph.get(key).parent_keys - chosen):
            name = "/".join(parent.path)
            absent = [
                f"{version}|{day}"
                for day in days
                for version in versions
                if not outputs_present(warehouse, [name], version, day)
            ]
            if absent:
                shown = "/".join(key.path)
                raise UsageError(
                    f"--select {shown} reads {name}, not stored for {absent[0]}"
                    f"{f' and {len(absent) - 1} more' if len(absent) > 1 else ''}: "
                    f"select its upstream too (--select '+{shown}') or run without --select"
                )
