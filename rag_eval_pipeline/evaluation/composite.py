"""The composite score as judgment rows, with its weights read from `config/composite.yaml`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import numpy as np
import pandas as pd
import yaml
from pydantic import Field

from rag_eval_pipeline.evaluation.declined import declined_keys
from rag_eval_pipeline.evaluation.generation import JUDGMENT_COLUMNS, scorer_rows
from rag_eval_pipeline.metrics.composite import composite_score
from rag_eval_pipeline.settings import PROJECT_ROOT
from rag_eval_pipeline.storage.config_files import ConfigModel, validated
from rag_eval_pipeline.storage.yaml_files import load_yaml_file

COMPOSITE = "composite"
COMPOSITE_FILE = Path(
    os.environ.get("RAG_EVAL_COMPOSITE", PROJECT_ROOT / "config" / "composite.yaml")
)


def load_weights(path: Path = COMPOSITE_FILE) -> dict[str, float]:
    """The `weights` mapping of a composite file; a problem raises ValueError naming the file."""
    try:
        raw = load_yaml_file(path) or {}
    except (OSError, yaml.YAMLError) as error:
        raise ValueError(f"{path}: cannot read composite weights: {error}") from error
    weights = dict(validated(CompositeFile, raw, path).weights)
    try:
        composite_score(pd.DataFrame(), weights)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from error
    return weights


class CompositeFile(ConfigModel):
    """`config/composite.yaml`: the weight of each metric in the per-question composite."""

    weights: Annotated[dict[str, float], Field(min_length=1)]


def describe(weights: dict[str, float]) -> str:
    """`composite(0.4·answer_relevance + ...)`: the scorer name in judgment rows."""
    return "composite(" + " + ".join(f"{w:g}·{m}" for m, w in weights.items()) + ")"


def composite_rows(judgments: pd.DataFrame, weights: dict[str, float]) -> pd.DataFrame:
    """One `composite` row per (system, question) that has every weighted metric scored, and
    a 0 for every declined answer (`evaluation.declined`: declining never raises the mean).

    Questions missing a component (not judged, or an error row) get no composite row: the
    failure is already counted in that component's error rate.
    """
    if judgments.empty:
        return pd.DataFrame(columns=JUDGMENT_COLUMNS)
    wide = judgments.pivot_table(
        index=["system", "query_id"], columns="metric", values="score", aggfunc="first"
    ).reset_index()
    scores = composite_score(wide, weights)
    keys = pd.MultiIndex.from_frame(wide[["system", "query_id"]].astype(str))
    scores[keys.isin(declined_keys(judgments))] = 0.0
    complete = ~np.isnan(scores)
    rows = wide[complete]
    return scorer_rows(
        rows, COMPOSITE, scores[complete], describe(weights), np.zeros(len(rows), dtype=bool)
    )
