"""The human loop: a seeded sample of the system's answers as the next judge-labels file, and
the top-ranked documents the qrels do not judge yet as the next qrels to fill in."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from rag_eval_pipeline.evaluation.judging import HUMAN_CRITERIA

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
UNJUDGED_COLUMNS = ["query_id", "doc_id", "system", "rank"]
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


def unjudged_top_k(
    runs: Iterable[pd.DataFrame],
    qrels: pd.DataFrame,
    k: int,
    relevance_level: int = 1,
    limit: int = 100,
) -> tuple[pd.DataFrame, int]:
    """The documents in the top `k` of each run that the qrels do not judge, as judging tasks:
    `query_id, doc_id, system, rank`, and the count of such (system, query, document) rows.

    Documents are ranked as the Tier 1 metrics rank them (trec_eval: float32 score descending,
    ties by doc id descending) over the queries they score (those with a judgment graded
    ≥ `relevance_level`), so these are the documents `judged@k` counts as unjudged. `runs`
    (chunks with `system, query_id, doc_id, score`, each system's query in one chunk) is read
    chunk by chunk. A document several systems retrieved is one task, under the system that
    ranked it best (ties: the first system by name); the `limit` best-ranked tasks are kept
    (ordered by rank, query, document), so memory holds one chunk plus `limit` tasks.
    """
    scored = pd.Index(qrels.loc[qrels["relevance"] >= relevance_level, "query_id"].astype(str))
    judged = pd.MultiIndex.from_arrays([qrels["query_id"].astype(str), qrels["doc_id"].astype(str)])
    tasks: pd.DataFrame | None = None
    total = 0
    for chunk in runs:
        rows = chunk.assign(
            query_id=chunk["query_id"].astype(str), doc_id=chunk["doc_id"].astype(str)
        )
        rows = rows[rows["query_id"].isin(scored)]
        ordered = rows.assign(order=rows["score"].astype(np.float32)).sort_values(
            ["system", "query_id", "order", "doc_id"],
            ascending=[True, True, False, False],
            kind="stable",
        )
        rank = ordered.groupby(["system", "query_id"], sort=False).cumcount() + 1
        top = ordered[rank <= k].assign(rank=rank[rank <= k])
        pairs = pd.MultiIndex.from_arrays([top["query_id"], top["doc_id"]])
        unjudged = top.loc[~pairs.isin(judged), UNJUDGED_COLUMNS]
        total += len(unjudged)
        tasks = _best_tasks(unjudged if tasks is None else pd.concat([tasks, unjudged]), limit)
    return (pd.DataFrame(columns=UNJUDGED_COLUMNS) if tasks is None else tasks), total


def _best_tasks(tasks: pd.DataFrame, limit: int) -> pd.DataFrame:
    """One row per (query, document), its best rank's, the `limit` best-ranked ones."""
    ordered = tasks.astype({"rank": "int64"}).sort_values(
        ["rank", "query_id", "doc_id", "system"], kind="stable"
    )
    return ordered.drop_duplicates(["query_id", "doc_id"]).head(limit).reset_index(drop=True)


def judging_tasks(
    unjudged: pd.DataFrame, queries: pd.DataFrame, corpus: pd.DataFrame | None
) -> pd.DataFrame:
    """The unjudged documents (:func:`unjudged_top_k`) as qrels rows to fill in: `query_id`,
    `doc_id`, `system`, `rank`, the `question`, the document's `title` and `text` (empty
    without a corpus), and an empty `relevance` (an integer grade, as in `qrels.*`). Text
    cells, ids included, are made spreadsheet-safe (:func:`spreadsheet_safe`)."""
    questions = queries.set_index(queries["query_id"].astype(str))["question"]
    tasks = unjudged.assign(question=unjudged["query_id"].map(questions))
    for column in ("title", "text"):
        texts = (
            corpus.set_index(corpus["doc_id"].astype(str))[column]
            if corpus is not None and column in corpus.columns
            else pd.Series(dtype=object)
        )
        tasks[column] = tasks["doc_id"].map(texts)
    for column in ("query_id", "doc_id", "system", "question", "title", "text"):
        tasks[column] = tasks[column].map(spreadsheet_safe)
    return tasks.assign(relevance=None)
