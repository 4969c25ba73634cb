"""Metadata shared by assets that call an LLM: model names, calls, cache hits, tokens, cost;
the counts every judgments asset records; and a run's LLM usage read back from it
(`run_llm_usage`).

A cost litellm could not price is reported as unknown (`<role>_cost_usd` NaN and a
`<role>_cost` note), never as 0.0; the prompts the circuit breaker or a spent budget kept from
being sent are counted too, and the lowest in-flight limit rate limits brought the client to.
"""

from collections.abc import Mapping
from typing import Any

import pandas as pd
from dagster import DagsterEventType, DagsterInstance, MetadataValue

from rag_eval_pipeline.defs.shared.metadata import text_metadata
from rag_eval_pipeline.evaluation.composite import describe
from rag_eval_pipeline.evaluation.cost import usage_table
from rag_eval_pipeline.evaluation.generation import n_refusals
from rag_eval_pipeline.llm.client import LLMClient


def llm_usage_metadata(role: str, model: str, client: LLMClient | None) -> dict[str, Any]:
    """`<role>_model` plus, for a real LLM, the client's usage counters as metadata."""
    metadata: dict[str, Any] = {f"{role}_model": text_metadata(model)}
    if client is not None:
        metadata.update(
            {f"{role}_{name}": value for name, value in client.usage.as_metadata().items()}
        )
        metadata[f"{role}_breaker_open"] = client.breaker.is_open
        metadata[f"{role}_lowest_concurrency"] = client.lowest_concurrency
        if client.unpriced_calls:
            metadata[f"{role}_cost_usd"] = MetadataValue.float(float("nan"))
            metadata[f"{role}_cost"] = text_metadata(
                f"unknown: no price for {model} ({client.unpriced_calls} call(s))"
            )
    return metadata


def judgments_metadata(
    judgments: pd.DataFrame,
    weights: Mapping[str, float],
    judge_model: str,
    client: LLMClient | None,
) -> dict[str, Any]:
    """Rows, error rows and refusals of a judgments table, its composite, and the judge's usage."""
    return {
        "n_rows": MetadataValue.int(len(judgments)),
        "n_errors": MetadataValue.int(int(judgments["error"].notna().sum())),
        "n_refusals": MetadataValue.int(n_refusals(judgments)),
        "composite": text_metadata(describe(dict(weights))),
        **llm_usage_metadata("judge", judge_model, client),
    }


def criteria_metadata(not_computed: Mapping[str, str]) -> dict[str, Any]:
    """The declared criteria (`config/criteria.yaml`) not computed, each with why (under the
    offline judge: `needs an LLM judge`); nothing when every criterion was judged."""
    if not not_computed:
        return {}
    return {
        "criteria_not_computed": MetadataValue.md(
            "\n".join(f"- `{name}`: {reason}" for name, reason in sorted(not_computed.items()))
        )
    }


def run_llm_usage(instance: DagsterInstance, run_id: str) -> pd.DataFrame:
    """One row per (asset, LLM role) that `run_id`'s materializations so far record
    (`evaluation.cost.usage_table`): the model, the calls sent, the cache hits, the tokens, the
    cost in USD (NaN: litellm could not price it) and the prompts a spent
    ``RAG_EVAL_MAX_COST_USD`` kept from being sent."""
    records = instance.get_records_for_run(
        run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION
    ).records
    materializations = [
        record.event_log_entry.dagster_event.event_specific_data.materialization
        for record in records
        if record.event_log_entry.dagster_event is not None
    ]
    return usage_table(
        (
            materialization.asset_key.to_user_string(),
            {k: getattr(v, "value", v) for k, v in materialization.metadata.items()},
        )
        for materialization in materializations
    )
