"""Tier 1 in library form: build the retrieval runs of a dataset version and score them.

Three sources of runs, one table (`source, system, query_id, doc_id, rank, score`):
- `reference`: the built-in retrievers over the corpus (dense, BM25, RRF hybrid);
- `logged_run`: TREC runs shipped with the version (`runs/*.trec`), judged with its qrels;
- `real_users`: retrieved ids logged from real traffic, judged against the document that was
  shown to the user (`shown_doc_id`, graded at the version's relevance level, so it is
  relevant whatever the level): the real-users benchmark;
- `system_under_test`: the ids the system under test (reference RAG, a callable, logged
  answers) returned with its answers in Tier 3, judged with the version's qrels and named after
  the system.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd

from rag_eval_pipeline.datasets.golden import GoldenDataset
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.scorecard import REAL_USERS_SYSTEM
from rag_eval_pipeline.metrics.retrieval import DEFAULT_RETRIEVAL_METRICS, RunScorer
from rag_eval_pipeline.storage.batches import TableBatches, query_chunks
from rag_eval_pipeline.systems.retrievers import (
    BM25,
    DENSE,
    HYBRID,
    RUN_COLUMNS,
    bm25_scores,
    dense_scores,
    document_texts,
    reciprocal_rank_fusion,
    top_k_run,
)

RUN_TABLE_COLUMNS = ["source", *RUN_COLUMNS]
SYSTEM_UNDER_TEST = "system_under_test"
UNKNOWN_ID_COLUMNS = ["system", "n_retrieved", "n_unknown", "examples"]


def ranked_lists(
    query_ids: pd.Series | pd.Index, doc_id_lists: pd.Series, source: str, system: str
) -> pd.DataFrame:
    """A run from one list of retrieved ids per query, in returned order.

    Ranks are 1..n and scores -1..-n, so trec_eval's score order is the returned order; a
    document listed twice for a query keeps its first rank; missing lists add no rows.
    """
    exploded = (
        pd.DataFrame({"query_id": query_ids.to_numpy(), "doc_id": doc_id_lists.to_numpy()})
        .explode("doc_id")
        .dropna(subset=["doc_id"])
    )
    exploded["doc_id"] = exploded["doc_id"].astype(str)
    exploded = exploded.drop_duplicates(["query_id", "doc_id"])
    exploded["rank"] = exploded.groupby("query_id").cumcount() + 1
    exploded["score"] = -exploded["rank"].astype(float)
    run = exploded.assign(source=source, system=system)[RUN_TABLE_COLUMNS]
    return run.reset_index(drop=True)


def reference_runs(
    dataset: GoldenDataset,
    embedder: Embedder,
    doc_vectors: np.ndarray,
    depth: int = 100,
    skip_top: int = 0,
) -> pd.DataFrame:
    """Dense, BM25 and hybrid runs of the built-in retrievers over the version's corpus.

    `skip_top` drops each query's best `skip_top` documents (fault injection, see README).
    """
    corpus, queries = dataset.corpus, dataset.queries
    if corpus is None:
        raise ValueError(f"dataset version {dataset.version!r} has no corpus to retrieve from")
    query_ids, doc_ids = queries["query_id"].tolist(), corpus["doc_id"].tolist()
    query_vectors = embedder.encode(queries["question"].tolist())
    documents = document_texts(corpus)
    depth_with_skip = depth + skip_top
    dense = top_k_run(
        dense_scores(query_vectors, doc_vectors), query_ids, doc_ids, depth_with_skip, DENSE
    )
    bm25 = top_k_run(
        bm25_scores(queries["question"].tolist(), documents),
        query_ids,
        doc_ids,
        depth_with_skip,
        BM25,
    )
    hybrid = reciprocal_rank_fusion(dense, bm25, system=HYBRID, k=depth_with_skip)
    runs = pd.concat([dense, bm25, hybrid], ignore_index=True)
    if skip_top:
        runs = runs[runs["rank"] > skip_top].assign(rank=lambda r: r["rank"] - skip_top)
    return runs.assign(source="reference")[RUN_TABLE_COLUMNS]


def logged_runs(dataset: GoldenDataset) -> TableBatches:
    """The TREC runs shipped with the version, chunk by chunk."""
    runs = dataset.runs
    if runs is None:
        return TableBatches.of(pd.DataFrame(columns=RUN_TABLE_COLUMNS))

    def frames() -> Iterator[pd.DataFrame]:
        for frame in runs.frames():
            yield frame.assign(source="logged_run")[RUN_TABLE_COLUMNS]

    return TableBatches(runs.num_rows, frames)


def all_runs(frames: Sequence[pd.DataFrame | TableBatches]) -> TableBatches:
    """One run table (`RUN_TABLE_COLUMNS`) from the runs of every source, chunk by chunk."""
    present = [
        frame if isinstance(frame, TableBatches) else TableBatches.of(frame)
        for frame in frames
        if (frame.num_rows if isinstance(frame, TableBatches) else len(frame))
    ]
    return (
        TableBatches.concat(present)
        if present
        else TableBatches.of(pd.DataFrame(columns=RUN_TABLE_COLUMNS))
    )


def real_user_run(dataset: GoldenDataset) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The run and qrels of logged real-user traffic (ground truth: the shown document).

    Each log row is a query (`log_id`); its retrieved ids in logged order get ranks 1..n and
    scores n..1; logs without a `shown_doc_id` are not judged.
    """
    logs = dataset.logs
    if logs is None or "shown_doc_id" not in logs.columns:
        return pd.DataFrame(columns=RUN_TABLE_COLUMNS), pd.DataFrame(
            columns=["query_id", "doc_id", "relevance"]
        )
    logs = logs.reset_index(drop=True)
    query_ids = logs["log_id"] if "log_id" in logs.columns else logs.index.astype(str)
    run = ranked_lists(query_ids, logs["retrieved_doc_ids"], "real_users", REAL_USERS_SYSTEM)
    judged = logs["shown_doc_id"].notna()
    qrels = pd.DataFrame(
        {
            "query_id": query_ids[judged],
            "doc_id": logs.loc[judged, "shown_doc_id"],
            "relevance": dataset.relevance_level,
        }
    )
    return run, qrels.reset_index(drop=True)


def system_under_test_run(generations: pd.DataFrame) -> pd.DataFrame:
    """The run of the system under test from its Tier 3 outputs (`e2e_generations`).

    One ranked list per question: the `retrieved_doc_ids` the system returned with its answer,
    in returned order, under the system's own name. Questions it returned no ids for (or failed
    on) add no rows, so they score 0 like every unretrieved query (trec_eval -c). A system that
    returned no ids at all has no run (an empty table).
    """
    if generations.empty or "retrieved_doc_ids" not in generations.columns:
        return pd.DataFrame(columns=RUN_TABLE_COLUMNS)
    frames = [
        ranked_lists(rows["query_id"], rows["retrieved_doc_ids"], SYSTEM_UNDER_TEST, str(system))
        for system, rows in generations.groupby("system", sort=True)
    ]
    return pd.concat(frames, ignore_index=True)


def qrels_judged_runs(runs: TableBatches, generations: pd.DataFrame) -> Iterator[pd.DataFrame]:
    """The runs judged with the version's qrels, chunk by chunk (each system's query whole):
    every source of `runs` but the real users (judged by the shown document), then the
    system under test's (:func:`system_under_test_run` of `generations`)."""
    for chunk in query_chunks(runs.frames(), ["source", "system", "query_id"]):
        yield chunk[chunk["source"] != "real_users"]
    yield system_under_test_run(generations)


def evaluate_system_under_test(
    generations: pd.DataFrame,
    qrels: pd.DataFrame,
    metrics: Sequence[str] = DEFAULT_RETRIEVAL_METRICS,
    relevance_level: int = 1,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The run of the system under test (:func:`system_under_test_run`) and its per-query
    metrics against the version's `qrels` at `relevance_level` (:func:`evaluate_runs`)."""
    run = system_under_test_run(generations)
    return run, evaluate_runs(run, qrels, qrels.iloc[:0], metrics, relevance_level)


def unknown_doc_ids(runs: pd.DataFrame, corpus_ids: set[str], examples: int = 5) -> pd.DataFrame:
    """Per system, retrieved ids that are not in the corpus: count and the first `examples`.

    Such ids can never be relevant (no qrels point at them), so they are reported rather than
    silently scored as unjudged. `n_retrieved` counts all (query, document) rows of the system.
    """
    if runs.empty:
        return pd.DataFrame(columns=UNKNOWN_ID_COLUMNS)
    unknown = ~runs["doc_id"].astype(str).isin(corpus_ids)
    grouped = runs.assign(unknown=unknown).groupby("system", sort=True)
    return pd.DataFrame(
        {
            "n_retrieved": grouped.size(),
            "n_unknown": grouped["unknown"].sum().astype(int),
            "examples": grouped.apply(
                lambda rows: ", ".join(
                    rows.loc[rows["unknown"], "doc_id"].astype(str).unique()[:examples]
                ),
                include_groups=False,
            ),
        }
    ).reset_index()[UNKNOWN_ID_COLUMNS]


def evaluate_runs(
    runs: pd.DataFrame | TableBatches,
    qrels: pd.DataFrame,
    real_user_qrels: pd.DataFrame,
    metrics: Sequence[str] = DEFAULT_RETRIEVAL_METRICS,
    relevance_level: int = 1,
) -> pd.DataFrame:
    """Per-query metrics of every system (`source, system, query_id, <metric>...`).

    Real-user runs are judged with `real_user_qrels`, all others with the version's qrels;
    grades ≥ `relevance_level` are relevant (trec_eval -l).
    Every query with a relevant judgment is scored, including those a system returned nothing
    for (they score 0, as trec_eval -c). A `TableBatches` run is scored in query-complete chunks
    (:func:`query_chunks`), so memory holds one chunk, not the run: each (source, system,
    query) must then list its rows together, as every run table built here does.
    """
    chunks = (
        query_chunks(runs.frames(), ["source", "system", "query_id"])
        if isinstance(runs, TableBatches)
        else [runs]
    )
    scorers: dict[tuple[str, str], RunScorer] = {}
    for chunk in chunks:
        for (source, system), run in chunk.groupby(["source", "system"], sort=False):
            if (source, system) not in scorers:
                judged_by = real_user_qrels if source == "real_users" else qrels
                scorers[source, system] = RunScorer(judged_by, metrics, relevance_level)
            scorers[source, system].add(run)
    if not scorers:
        return pd.DataFrame(columns=["source", "system", "query_id", *metrics])
    result = pd.concat(
        [
            scorers[source, system].result().assign(source=source, system=system)
            for source, system in sorted(scorers)
        ],
        ignore_index=True,
    )
    return result[["source", "system", "query_id", *metrics]]
