"""The UX tier in library form: semantic-cache hit rate and multi-turn conversation metrics."""

from __future__ import annotations

import pandas as pd

from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.scorecard import REAL_USERS_SYSTEM
from rag_eval_pipeline.metrics.ux import (
    cache_hit_rate,
    context_preservation,
    multi_turn_consistency,
)


def arrival_ordered_questions(
    queries: pd.DataFrame, logs: pd.DataFrame | None
) -> dict[str, list[str]]:
    """Question streams in arrival order: logged traffic (by timestamp) and the golden set."""
    streams = {"golden-queries": queries["question"].tolist()}
    if logs is not None and len(logs):
        ordered = logs.sort_values("timestamp", kind="stable") if "timestamp" in logs else logs
        streams[REAL_USERS_SYSTEM] = ordered["question"].tolist()
    return streams


def ux_values(
    queries: pd.DataFrame,
    logs: pd.DataFrame | None,
    answers: pd.DataFrame,
    embedder: Embedder,
    cache_threshold: float,
) -> dict[str, dict[str, float]]:
    """UX metrics per stream/system: `cache_hit_rate`, `context_preservation`,
    `multi_turn_consistency` (definitions in `rag_eval_pipeline.metrics.ux` and README)."""
    values: dict[str, dict[str, float]] = {}
    for stream, questions in arrival_ordered_questions(queries, logs).items():
        values[stream] = {
            "cache_hit_rate": cache_hit_rate(embedder.encode(questions), cache_threshold)
        }
    sessions = queries.dropna(subset=["session_id"]) if "session_id" in queries else queries[:0]
    if len(sessions):
        preservation = context_preservation(
            sessions.reset_index(drop=True), embedder.encode(sessions["question"].tolist())
        )
        values["golden-queries"]["context_preservation"] = preservation.overall
        session_turns = sessions[["query_id", "session_id", "turn"]]
        for system, rows in answers.groupby("system"):
            answered = rows.merge(session_turns, on="query_id").dropna(subset=["answer"])
            if answered.empty:
                continue
            consistency = multi_turn_consistency(
                answered.reset_index(drop=True), embedder.encode(answered["answer"].tolist())
            )
            values.setdefault(str(system), {})["multi_turn_consistency"] = consistency.overall
    return values
