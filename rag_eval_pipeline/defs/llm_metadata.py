"""Metadata shared by assets that call an LLM: model names, calls, cache hits, tokens, cost;
and the counts every judgments asset records.

A cost litellm could not price is reported as unknown (`<role>_cost_usd` NaN and a
`<role>_cost` note), never as 0.0; the prompts the circuit breaker or a spent budget kept from
being sent are counted too, and the lowest in-flight limit rate limits brought the client to.
"""

from collections.abc import Mapping
from typing import Any

import pandas as pd
from dagster import MetadataValue

from rag_eval_pipeline.evaluation.composite import describe
from rag_eval_pipeline.evaluation.generation import n_refusals
from rag_eval_pipeline.llm.client import LLMClient


def llm_usage_metadata(role: str, model: str, client: LLMClient | None) -> dict[str, Any]:
    """`<role>_model` plus, for a real LLM, the client's usage counters as metadata."""
    metadata: dict[str, Any] = {f"{role}_model": MetadataValue.text(model)}
    if client is not None:
        metadata.update(
            {f"{role}_{name}": value for name, value in client.usage.as_metadata().items()}
        )
        metadata[f"{role}_breaker_open"] = client.breaker.is_open
        metadata[f"{role}_lowest_concurrency"] = client.lowest_concurrency
        if client.unpriced_calls:
            metadata[f"{role}_cost_usd"] = MetadataValue.float(float("nan"))
            metadata[f"{role}_cost"] = MetadataValue.text(
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
        "composite": MetadataValue.text(describe(dict(weights))),
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
