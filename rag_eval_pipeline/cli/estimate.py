"""`rag-eval estimate` (and `rag-eval run --dry-run`): the uncached LLM prompts, tokens and
cost a run would send, calling nothing."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from rag_eval_pipeline.cli.common import UsageError, check_partition_date, today, valid_date
from rag_eval_pipeline.text.escaping import terminal_text

if TYPE_CHECKING:
    from dagster import DagsterInstance, JobDefinition

    from rag_eval_pipeline.defs.shared.resources import LLMResource


def cmd_estimate(args: argparse.Namespace) -> int:
    """Print, per partition, the judge and generator prompts a run would send that the reply
    cache cannot answer, their tokens and (upper-bound) price, without calling any LLM.

    The assets that call an LLM (the `llm_judge` and `llm_generator` pools) and their upstream
    run in this process on a throw-away instance and warehouse, with the LLM resources in
    estimate-only mode (`llm.estimate`) and the result cache off; only the embedding cache (real
    vectors) is written outside a temporary folder.
    """
    import tempfile

    from dagster import DagsterInstance

    from rag_eval_pipeline.definitions import default_resources
    from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION
    from rag_eval_pipeline.defs.shared.resources import DatasetsResource

    check_partition_date(args.date)
    scan = DatasetsResource().scan()
    versions = args.dataset_version or scan.valid
    unknown = [v for v in versions if v not in scan.valid]
    if unknown:
        raise UsageError(f"unknown or invalid dataset version(s): {', '.join(unknown)}")
    resources = default_resources()
    llms = {name: cast_llm(resources[name]) for name in ("judge_llm", "generator_llm")}
    if all(llm.is_offline for llm in llms.values()):
        print("judge and generator are offline (RAG_EVAL_JUDGE_MODEL / _GENERATOR_MODEL unset):")
        print("nothing is sent to a provider, nothing to pay.")
        return 0
    with tempfile.TemporaryDirectory() as scratch, DagsterInstance.ephemeral() as instance:
        job = estimate_job(resources, llms, str(Path(scratch) / "warehouse"))
        instance.add_dynamic_partitions(DATASET_VERSION, list(versions))
        codes = [_estimate_partition(job, instance, version, args.date) for version in versions]
    return max(codes, default=0)


def estimate_job(
    resources: dict[str, object], llms: dict[str, LLMResource], warehouse: str
) -> JobDefinition:
    """The job that materializes the assets calling an LLM and their upstream with `llms` in
    estimate-only mode, writing to `warehouse`, the result cache off."""
    from dagster import AssetSelection, Definitions, define_asset_job, in_process_executor

    from rag_eval_pipeline.definitions import ALL_ASSETS
    from rag_eval_pipeline.defs.runs.pools import LLM_GENERATOR_POOL, LLM_JUDGE_POOL
    from rag_eval_pipeline.defs.shared.io_managers import ParquetIOManagerResource
    from rag_eval_pipeline.defs.shared.resources import (
        LLMResource,
        ResultCacheResource,
        WarehouseResource,
    )

    llm_assets = [a.key for a in ALL_ASSETS if a.op.pool in (LLM_JUDGE_POOL, LLM_GENERATOR_POOL)]
    estimating = {
        name: LLMResource(**{**llm.model_dump(), "estimate_only": True})
        for name, llm in llms.items()
    }
    defs = Definitions(
        assets=ALL_ASSETS,
        jobs=[
            define_asset_job(
                "estimate",
                selection=AssetSelection.assets(*llm_assets).upstream(),
                executor_def=in_process_executor,
            )
        ],
        resources={
            **resources,
            **estimating,
            "io_manager": ParquetIOManagerResource(base_path=warehouse),
            "warehouse": WarehouseResource(base_path=warehouse),
            # Results computed from stand-in replies must never be kept for real runs.
            "result_cache": ResultCacheResource(enabled=False),
        },
    )
    return defs.resolve_job_def("estimate")


def _estimate_partition(
    job: JobDefinition, instance: DagsterInstance, version: str, day: str
) -> int:
    """Run the estimate of `version` on `day` and print it: 0, or 1 when a step failed."""
    from rag_eval_pipeline.defs.shared.partitions import evaluation_partition_key
    from rag_eval_pipeline.llm.estimate import run_estimate

    print(f"{version}|{day}:", flush=True)
    result = job.execute_in_process(
        partition_key=evaluation_partition_key(version, day),
        instance=instance,
        raise_on_error=False,
        run_config={"loggers": {"console": {"config": {"log_level": "ERROR"}}}},
    )
    for line in run_estimate(result.run_id).lines():
        print(terminal_text(f"  {line}"))
    if result.success:
        return 0
    failed = [e.step_key for e in result.get_step_failure_events()]
    print(f"  incomplete: step(s) failed: {', '.join(map(str, failed))}")
    return 1


def cast_llm(resource: object) -> LLMResource:
    """`resource` as the `LLMResource` it is (the resources dict is typed loosely)."""
    from rag_eval_pipeline.defs.shared.resources import LLMResource

    if not isinstance(resource, LLMResource):
        raise TypeError(f"expected an LLMResource, got {type(resource).__name__}")
    return resource


def add_parser(commands: argparse._SubParsersAction) -> None:
    """`rag-eval estimate [--dataset-version V ...] [--date D]`."""
    estimate = commands.add_parser(
        "estimate",
        help="count the uncached LLM prompts, tokens and cost of a run, calling nothing",
    )
    estimate.add_argument("--dataset-version", action="append", help="repeatable; default: all")
    estimate.add_argument("--date", type=valid_date, default=today(), help="default: today")
    estimate.set_defaults(handler=cmd_estimate)
