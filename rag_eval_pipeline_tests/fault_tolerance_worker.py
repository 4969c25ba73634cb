"""Materialize assets of one partition in a fresh process (run by `test_fault_tolerance.py`).

    python -m rag_eval_pipeline_tests.fault_tolerance_worker VERSION DATE ASSET [ASSET ...]

Like `rag-eval run --select`: the `evaluation_job` of the code location, executed in process on
the persistent instance of `DAGSTER_HOME`, with the default resources, so `RAG_EVAL_DATA_DIR`
and `RAG_EVAL_WAREHOUSE` decide where datasets, caches and Parquet live. Registers the dataset
version if needed. Prints `started` once the code location is loaded and `finished <ok|failed>
<run id>` at the end; the exit code is 0 only for a successful run.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main(argv: list[str]) -> int:
    version, date, *assets = argv
    from dagster import AssetKey, DagsterInstance

    from rag_eval_pipeline.definitions import defs
    from rag_eval_pipeline.defs.runs.jobs import EVALUATION_JOB_NAME
    from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key

    instance = DagsterInstance.get()
    if not instance.has_dynamic_partition(DATASET_VERSION, version):
        instance.add_dynamic_partitions(DATASET_VERSION, [version])
    job = defs.resolve_job_def(EVALUATION_JOB_NAME)
    print("started", flush=True)
    result = job.execute_in_process(
        partition_key=evaluation_partition_key(version, date),
        instance=instance,
        asset_selection=[AssetKey(name) for name in assets],
        raise_on_error=False,
    )
    print(f"finished {'ok' if result.success else 'failed'} {result.run_id}", flush=True)
    return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
