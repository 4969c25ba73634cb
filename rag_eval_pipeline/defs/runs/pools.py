"""The Dagster concurrency pools that bound LLM traffic across all runs of an instance.

A pool limits *steps* in flight, not HTTP requests: every asset that calls the judge LLM takes a
slot of `LLM_JUDGE_POOL` for the whole step, every asset that calls the generator LLM one of
`LLM_GENERATOR_POOL`, and within a step the LLM client keeps at most `max_concurrency` requests in
flight. So all runs together send at most ``pool limit × max_concurrency`` requests to a judge at
once. The limit is the instance's ``concurrency: pools: default_limit`` (shipped `dagster.yaml`
and `deploy/`), or ``dagster instance concurrency set llm_judge N`` for this pool alone.

Dagster 1.13 creates a pool's row from `default_limit` when a step first claims it, and on
PostgreSQL two runs doing so at the same instant fail one of them (dagster-io/dagster#33552).
`ensure_pools` creates the missing pools from `default_limit` before `rag-eval` launches
anything, through the instance's event log storage (what `dagster instance concurrency` uses),
idempotently: a pool that exists is left as it is (a limit set by hand stays), and a creation
that loses a race with another process is checked, not retried blindly.
"""

from __future__ import annotations

from dagster import DagsterInstance
from sqlalchemy.exc import SQLAlchemyError

LLM_JUDGE_POOL = "llm_judge"
LLM_GENERATOR_POOL = "llm_generator"
POOLS = (LLM_JUDGE_POOL, LLM_GENERATOR_POOL)


def ensure_pools(instance: DagsterInstance, pools: tuple[str, ...] = POOLS) -> list[str]:
    """Create each of `pools` the instance does not have yet from its `default_limit` (no-op
    without one: pools are then unlimited and nothing is created on claim); the pools created."""
    storage = instance.event_log_storage
    if instance.global_op_concurrency_default_limit is None:
        return []
    created = []
    for pool in sorted(set(pools) - storage.get_concurrency_keys()):
        try:
            storage.initialize_concurrency_limit_to_default(pool)
        except SQLAlchemyError:
            # Another process created it in the same instant (its INSERT won): fine if it exists.
            if pool not in storage.get_concurrency_keys():
                raise
            continue
        created.append(pool)
    return created
