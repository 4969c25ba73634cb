"""Metadata shared by assets that call an LLM: model names, calls, cache hits, tokens, cost.

A cost litellm could not price is reported as unknown (`<role>_cost_usd` NaN and a
`<role>_cost` note), never as 0.0; the circuit breaker's skipped prompts are counted too.
"""

from typing import Any

from dagster import MetadataValue

from rag_eval_pipeline.llm.client import LLMClient


def llm_usage_metadata(role: str, model: str, client: LLMClient | None) -> dict[str, Any]:
    """`<role>_model` plus, for a real LLM, the client's usage counters as metadata."""
    metadata: dict[str, Any] = {f"{role}_model": MetadataValue.text(model)}
    if client is not None:
        metadata.update(
            {f"{role}_{name}": value for name, value in client.usage.as_metadata().items()}
        )
        metadata[f"{role}_breaker_skipped"] = client.breaker.skipped
        metadata[f"{role}_breaker_open"] = client.breaker.is_open
        if client.unpriced_calls:
            metadata[f"{role}_cost_usd"] = MetadataValue.float(float("nan"))
            metadata[f"{role}_cost"] = MetadataValue.text(
                f"unknown: no price for {model} ({client.unpriced_calls} call(s))"
            )
    return metadata
