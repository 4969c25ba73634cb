"""OpenTelemetry traces (OTLP JSON, Phoenix exports) read as production interactions."""

from rag_eval_pipeline.datasets.traces.interactions import (
    INTERACTION_COLUMNS,
    TRACES_FOLDER,
    has_traces,
    logs_origin,
    trace_interaction_chunks,
    trace_interactions,
)

__all__ = [
    "INTERACTION_COLUMNS",
    "TRACES_FOLDER",
    "has_traces",
    "logs_origin",
    "trace_interaction_chunks",
    "trace_interactions",
]
