"""Metadata shared by assets that call an LLM: model names, calls, cache hits, tokens, cost."""

from typing import Any

from dagster import MetadataValue

from rag_eval_pipeline.judging.client import LLMClient


def llm_usage_metadata(role: str, model: str, client: LLMClient | None) -> dict[str, Any]:
    """`<role>_model` plus, for a real LLM, the client's usage counters as metadata."""
    metadata: dict[str, Any] = {f"{role}_model": MetadataValue.text(model)}
    if client is not None:
        metadata.update(
            {f"{role}_{name}": value for name, value in client.usage.as_metadata().items()}
        )
        metadata[f"{role}_breaker_skipped"] = client.breaker.skipped
        metadata[f"{role}_breaker_open"] = client.breaker.is_open
    return metadata
