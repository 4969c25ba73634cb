"""The Dagster layer: one folder per tier with its assets, checks, sensors, schedules and the
resources it owns; `shared/` and `runs/` beneath them, `outcome/` above.

`rag_eval_pipeline.definitions` loads the folder as a whole. Checks are partitioned like their
assets (a preview feature of Dagster 1.13 that works as documented), so its warning is silenced
here, before any check is defined.
"""

import warnings

from dagster import PreviewWarning

warnings.filterwarnings(
    "ignore", message="Specifying a partitions_def on an AssetCheckSpec", category=PreviewWarning
)
