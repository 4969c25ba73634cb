"""The Dagster code location: the `rag_eval_pipeline/defs/` folder loaded as a whole.

Each folder under `defs/` brings its own assets, checks, sensors, schedules and, in its
`resources.py`, the resources it owns (the layout of Dagster's `dagster-open-platform`); Dagster's
defs-folder loader (`ComponentTree`, what `dagster.load_from_defs_folder` runs) collects every
definition at module scope and merges each folder's `@definitions`. Only the instance-wide bits
are set here: the console logger and the executor.

`ComponentTree.from_module` rather than `load_from_defs_folder`: the latter finds the defs
module through a `pyproject.toml` `[tool.dg]` section, which a `pip install .` does not ship.
"""

import warnings

from dagster import (
    AssetChecksDefinition,
    AssetsDefinition,
    ComponentTree,
    Definitions,
    PreviewWarning,
    in_process_executor,
)

from rag_eval_pipeline import defs as defs_folder
from rag_eval_pipeline.defs.runs.machine_failures import console_logger
from rag_eval_pipeline.settings import PROJECT_ROOT


def load_defs_folder() -> Definitions:
    """Every folder's definitions under `defs/`, merged (resources read from the environment)."""
    tree = ComponentTree.from_module(defs_module=defs_folder, project_root=PROJECT_ROOT)
    with warnings.catch_warnings():
        # The loader calls `load_definitions_from_module`, marked preview, for each plain module.
        warnings.simplefilter("ignore", PreviewWarning)
        return tree.build_defs()


def default_resources() -> dict[str, object]:
    """The resources of a default deployment, each folder's own: offline unless the environment
    names models (read at each call)."""
    return dict(load_defs_folder().resources or {})


defs = Definitions.merge(
    load_defs_folder(),
    Definitions(
        loggers={"console": console_logger},
        # Assets materialized from the UI outside evaluation_job run in one process too (jobs.py).
        executor=in_process_executor,
    ),
)

# Each asset once (a module importing another's asset, as a check does, brings it again).
ALL_ASSETS: list[AssetsDefinition] = list(
    {id(a): a for a in defs.assets or () if isinstance(a, AssetsDefinition) and a.keys}.values()
)
ALL_CHECKS: list[AssetChecksDefinition] = list(defs.asset_checks or ())
