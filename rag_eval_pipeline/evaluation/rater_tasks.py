"""The human loop: a seeded sample of the system's answers as the next judge-labels file."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rag_eval_pipeline.evaluation.judging import HUMAN_CRITERIA

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
CONTEXT_SEPARATOR = "\n\n---\n\n"


def spreadsheet_safe(text: object) -> object:
    """A cell a spreadsheet will not run as a formula: text starting with = + - @ or a tab or
    carriage return gets a leading apostrophe (OWASP's CSV-injection rule); other values
    are unchanged."""
    if isinstance(text, str) and text.startswith(FORMULA_PREFIXES):
        return "'" + text
    return text


def rater_tasks(
    generations: pd.DataFrame, size: int, seed: int, raters: Sequence[str], day: str
) -> pd.DataFrame:
    """`size` answered questions drawn without replacement (numpy `default_rng(seed)`; all
    when fewer), in question order, as a judge-labels table to fill in: `label_id`
    (`<day>-<query_id>`), `system`, `query_id`, `question`, `context` (the retrieved
    contexts joined by a `---` line), `answer`, an empty `ground_truth_show`, and an empty
    `human_<criterion>_<rater>` column per criterion (faithfulness, relevance, correctness,
    overall; 1–5) and rater. Text cells are made spreadsheet-safe (:func:`spreadsheet_safe`).
    """
    answered = generations[generations["answer"].notna()].reset_index(drop=True)
    if len(answered) > size:
        chosen = np.sort(np.random.default_rng(seed).choice(len(answered), size, replace=False))
        answered = answered.iloc[chosen].reset_index(drop=True)
    contexts = [
        CONTEXT_SEPARATOR.join(map(str, items)) if isinstance(items, list | np.ndarray) else ""
        for items in answered["contexts"]
    ]
    tasks = pd.DataFrame(
        {
            "label_id": [f"{day}-{q}" for q in answered["query_id"]],
            "system": answered["system"].to_numpy(),
            "query_id": answered["query_id"].to_numpy(),
            "question": answered["question"].map(spreadsheet_safe).to_numpy(),
            "context": [spreadsheet_safe(c) for c in contexts],
            "answer": answered["answer"].map(spreadsheet_safe).to_numpy(),
            "ground_truth_show": None,
        }
    )
    for criterion in HUMAN_CRITERIA:
        for rater in raters:
            tasks[f"human_{criterion}_{rater}"] = np.nan
    return tasks
