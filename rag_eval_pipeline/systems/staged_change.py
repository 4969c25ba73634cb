"""A staged change for the demo: the reference RAG's index loses the answers of some questions.

`lost_answers_corpus` removes, for a seeded fraction of the questions, every document judged
relevant to them from the corpus the system indexes: those questions can no longer retrieve
their answer (other questions that share a removed document lose it too). The evaluation then
measures the change like any other: nothing downstream knows it was staged.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def questions_hit(query_ids: pd.Series, fraction: float, seed: int = 0) -> list[str]:
    """`round(fraction × n)` distinct question ids chosen with `seed` (sorted ids, so the choice
    depends on the set of questions only, never on their order)."""
    ids = np.sort(query_ids.astype(str).unique())
    count = round(fraction * len(ids))
    chosen = np.random.default_rng(seed).choice(ids, size=count, replace=False)
    return sorted(chosen.tolist())


def lost_answers_corpus(
    corpus: pd.DataFrame, relevant_qrels: pd.DataFrame, fraction: float, seed: int = 0
) -> tuple[pd.DataFrame, list[str]]:
    """The corpus without the documents relevant to a seeded `fraction` of the judged
    questions, and the ids of those questions."""
    hit = questions_hit(relevant_qrels["query_id"], fraction, seed)
    lost = set(relevant_qrels.loc[relevant_qrels["query_id"].astype(str).isin(hit), "doc_id"])
    kept = corpus[~corpus["doc_id"].isin(lost)].reset_index(drop=True)
    return kept, hit
