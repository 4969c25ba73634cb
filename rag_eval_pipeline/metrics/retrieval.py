"""Tier 1 retrieval metrics: a vectorized IR-metric kernel that reproduces trec_eval 9.0.8.

:func:`evaluate_run` scores a logged retrieval run against graded relevance judgments, one row
per query, in a single vectorized pass over all queries (numpy/pandas only). Every value
equals what trec_eval 9.0.8 (as wrapped by ``pytrec_eval``) reports per query:

* **Ranking** (trec_eval ``form_res_rels.c``): scores are cast to float32 (trec_eval's C
  ``float``); documents are ranked by score descending; equal float32 scores are ordered by
  document id descending in byte (``strcmp``) order, e.g. ``"9"`` ranks above ``"10"``. A
  ``rank`` column in the run is ignored. Ranks below are 1-based.
* **Ids** are strings (non-string id columns are converted), compared exactly.
* **Relevance** (trec_eval ``-l``): a document is relevant when its qrels grade (any integer)
  is ≥ the relevance level (default 1; the TREC Deep Learning tracks use 2). Lower grades
  (0, negative) and unjudged documents are not relevant. ``R`` is the number of relevant
  judgments of the query (trec_eval ``num_rel``), whether retrieved or not. The relevance
  level changes every metric except NDCG, whose gains are grades (as in trec_eval).
* ``hit_rate@k``: 1 if a relevant document is in the top k, else 0 (trec_eval ``success.k``).
* ``mrr``: 1 / rank of the first relevant document, no cutoff; 0 if none was retrieved
  (trec_eval ``recip_rank``). ``mrr@k``: the same, but 0 when that rank is beyond k.
* ``precision@k``: relevant documents in the top k divided by k, even when fewer than k
  documents were retrieved (trec_eval ``P.k``).
* ``recall@k``: relevant documents in the top k divided by R (trec_eval ``recall.k``).
* ``ndcg@k``: DCG@k / ideal DCG@k (trec_eval ``ndcg_cut.k``) with linear gain (the grade,
  for every grade > 0 whatever the relevance level; 0 for lower grades and unjudged
  documents) and discount log2(rank + 1). The ideal ranking is built from *all* judgments of
  the query with a grade > 0, retrieved or not, sorted by grade descending and cut at k.
* ``ndcg_exp@k``: the same with exponential gain 2^grade - 1 (ranx ``ndcg_burges@k``).
* ``map``: average precision without cutoff: the sum of precision at the rank of each
  relevant retrieved document, divided by R (trec_eval ``map``).
* ``r_precision``: relevant documents in the top R divided by R (trec_eval ``Rprec``).
* ``judged@k``: documents in the top k that have a judgment of any grade (0 and negative
  included), divided by the number of documents in the top k, which is k or, when the query
  retrieved fewer, all of them; 0 when the run has nothing for the query (ir_measures
  ``Judged@k``). A coverage figure, not quality: how much of what a system retrieves the
  qrels can judge at all. Unlike ir_measures, queries without a relevant judgment are not
  scored (as for every metric here), and ties are ordered as trec_eval orders them.

Queries: only queries with at least one relevant judgment are scored (trec_eval gives the
rest 0 on every metric but NDCG). Such a query that the run has no rows for scores 0 on every
metric, as trec_eval does with ``-c``. Run rows of queries without relevant judgments are
ignored. A document listed twice for one query (in the run or in the qrels) is an error, as it
is for trec_eval.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rag_eval_pipeline.metrics._ranking import (
    RankedHits,
    id_strings,
    load_judgments,
    rank_judged_hits,
)

__all__ = ["DEFAULT_RETRIEVAL_METRICS", "JUDGED_K", "RunScorer", "evaluate_run"]

JUDGED_K = 10  # the cutoff of the Tier 1 judged@k, and of the unjudged documents exported
DEFAULT_RETRIEVAL_METRICS: tuple[str, ...] = (
    "hit_rate@1",
    "hit_rate@3",
    "hit_rate@5",
    "hit_rate@10",
    "mrr",
    "mrr@10",
    "recall@1",
    "recall@3",
    "recall@5",
    "recall@10",
    "precision@1",
    "precision@3",
    "precision@5",
    "precision@10",
    "ndcg@5",
    "ndcg@10",
    "ndcg_exp@5",
    "ndcg_exp@10",
    "map",
    "r_precision",
    f"judged@{JUDGED_K}",
)

_METRIC_NAME = re.compile(r"(?P<family>[a-z_]+)(?:@(?P<cutoff>[1-9][0-9]*))?")


@dataclass(frozen=True)
class _Evidence:
    """Everything the metrics need, as flat arrays over all queries.

    ``hits`` are the relevant documents the run retrieved at their trec_eval ranks; ``gains``
    the retrieved documents with a grade > 0 (NDCG's gains); ``ideal`` is every query's ideal
    ranking: all its judgments with a grade > 0, sorted by grade descending; ``judged`` the
    retrieved documents with any judgment; ``num_retrieved`` the run's documents per query
    (counted only when ``judged@k`` is requested).
    """

    num_queries: int
    num_relevant: np.ndarray
    hits: RankedHits
    gains: RankedHits
    ideal: RankedHits
    judged: RankedHits
    num_retrieved: np.ndarray | None


_MetricFunction = Callable[[_Evidence, int | None], np.ndarray]


@dataclass(frozen=True)
class _Metric:
    name: str
    compute: _MetricFunction
    cutoff: int | None


def evaluate_run(
    run: pd.DataFrame,
    qrels: pd.DataFrame,
    metrics: Sequence[str] = DEFAULT_RETRIEVAL_METRICS,
    relevance_level: int = 1,
) -> pd.DataFrame:
    """Score ``run`` against ``qrels`` per query, exactly as trec_eval 9.0.8 would.

    Args:
        run: Columns ``query_id`` (str), ``doc_id`` (str) and ``score`` (float); any other
            column (``rank``, ``system``, ...) is ignored. Documents are ranked by float32
            score descending, ties broken by ``doc_id`` descending in byte order.
        qrels: Columns ``query_id``, ``doc_id`` and ``relevance`` (any integer grade; grades
            ≥ ``relevance_level`` are relevant, grades > 0 are the linear NDCG gain).
        metrics: Metric names, each ``hit_rate@k``, ``mrr``, ``mrr@k``, ``recall@k``,
            ``precision@k``, ``ndcg@k``, ``ndcg_exp@k``, ``judged@k``, ``map`` or
            ``r_precision`` for any
            integer k ≥ 1. The module docstring defines each, with its trec_eval measure.
            A single string is treated as one name.
        relevance_level: The lowest relevant grade, an integer ≥ 1 (trec_eval ``-l``).

    Returns:
        One row per query with at least one relevant judgment, sorted by ``query_id``:
        column ``query_id``, then one float64 column per metric, named as requested. A query
        the run did not retrieve anything for scores 0 everywhere (trec_eval ``-c``); run rows
        of other queries are ignored. An empty run gives all zeros; qrels without any relevant
        judgment give an empty frame with these columns.

    Raises:
        ValueError: An unknown, malformed or repeated metric name (named in the message);
            missing columns or ids; NaN scores; or a (query_id, doc_id) pair listed twice in
            the run or in the qrels (trec_eval ``form_res_rels.c`` rejects both); a relevance
            level below 1.
    """
    scorer = RunScorer(qrels, metrics, relevance_level)
    scorer.add(run)
    return scorer.result()


class RunScorer:
    """:func:`evaluate_run` over a run given chunk by chunk, in bounded memory.

    Memory holds the judgments, one chunk of the run and one value per metric and judged
    query; the results equal :func:`evaluate_run` on the whole run. Each query's rows must all
    be in one chunk (:func:`~rag_eval_pipeline.storage.batches.query_chunks` cuts chunks so);
    a query found in two chunks raises ``ValueError``.
    """

    def __init__(
        self,
        qrels: pd.DataFrame,
        metrics: Sequence[str] = DEFAULT_RETRIEVAL_METRICS,
        relevance_level: int = 1,
    ) -> None:
        self._requested = _parse_metrics([metrics] if isinstance(metrics, str) else list(metrics))
        self._judgments = load_judgments(qrels, relevance_level)
        self._values = {
            metric.name: np.zeros(self._judgments.num_queries) for metric in self._requested
        }
        self._seen = np.zeros(self._judgments.num_queries, dtype=bool)
        self._counts_retrieved = any(m.compute is _judged_share for m in self._requested)

    def add(self, run: pd.DataFrame) -> None:
        """Score one chunk of the run (columns as in :func:`evaluate_run`)."""
        if "query_id" not in run.columns:
            raise ValueError("run is missing column(s) ['query_id']")
        present = pd.unique(id_strings(run["query_id"]).dropna())
        codes = np.unique(self._judgments.query_ids.get_indexer(present))
        codes = codes[codes >= 0]
        repeated = codes[self._seen[codes]]
        if repeated.size:
            raise ValueError(
                f"run lists query_id {self._judgments.query_ids[repeated[0]]!r} in two chunks "
                "(a chunked run must hold each query's rows together)"
            )
        self._seen[codes] = True
        judgments = self._judgments.restrict(codes)
        judged = rank_judged_hits(run, judgments)
        positive = judgments.grade > 0
        evidence = _Evidence(
            num_queries=judgments.num_queries,
            num_relevant=judgments.num_relevant().astype(np.float64),
            hits=judged.where(judged.grade >= judgments.relevance_level),
            gains=judged.where(judged.grade > 0),
            ideal=RankedHits(
                query=judgments.query[positive],
                rank=_position_within_query(judgments.query[positive]),
                grade=judgments.grade[positive],
            ),
            judged=judged,
            num_retrieved=_retrieved_per_query(run, judgments.query_ids)
            if self._counts_retrieved
            else None,
        )
        for metric in self._requested:
            self._values[metric.name][codes] = metric.compute(evidence, metric.cutoff)

    def result(self) -> pd.DataFrame:
        """One row per judged query, as :func:`evaluate_run` returns (unseen queries: 0)."""
        query_ids = pd.array(self._judgments.query_ids, dtype="str")
        return pd.DataFrame({"query_id": query_ids, **self._values})


def _retrieved_per_query(run: pd.DataFrame, query_ids: pd.Index) -> np.ndarray:
    """The number of run rows of each of ``query_ids``."""
    counts = id_strings(run["query_id"]).value_counts()
    return counts.reindex(query_ids, fill_value=0).to_numpy(dtype=np.int64)


def _parse_metrics(names: list[str]) -> list[_Metric]:
    duplicated = sorted({name for name in names if names.count(name) > 1})
    if duplicated:
        raise ValueError(f"retrieval metric(s) requested more than once: {duplicated}")
    return [_parse_metric(name) for name in names]


def _parse_metric(name: str) -> _Metric:
    match = _METRIC_NAME.fullmatch(name) if isinstance(name, str) else None
    if match is not None:
        cutoff = int(match["cutoff"]) if match["cutoff"] else None
        families = _CUTOFF_METRICS if cutoff is not None else _UNCUT_METRICS
        compute = families.get(match["family"])
        if compute is not None:
            return _Metric(name=name, compute=compute, cutoff=cutoff)
    raise ValueError(
        f"unknown retrieval metric {name!r}; expected one of {sorted(_UNCUT_METRICS)} or "
        f"{sorted(_CUTOFF_METRICS)} followed by '@k' with an integer k ≥ 1"
    )


def _position_within_query(query: np.ndarray) -> np.ndarray:
    """0-based position of each entry within its run of equal values in sorted ``query``."""
    index = np.arange(len(query))
    is_start = np.ones(len(query), dtype=bool)
    is_start[1:] = query[1:] != query[:-1]
    return index - np.maximum.accumulate(np.where(is_start, index, 0))


def _within(ranking: RankedHits, cutoff: int | None) -> np.ndarray:
    """Mask of the entries ranked in the top ``cutoff`` (all entries when ``None``)."""
    if cutoff is None:
        return np.ones(len(ranking.rank), dtype=bool)
    return ranking.rank < cutoff


def _hits_in_top(evidence: _Evidence, cutoff: int | None) -> np.ndarray:
    top = _within(evidence.hits, cutoff)
    return np.bincount(evidence.hits.query[top], minlength=evidence.num_queries)


def _hit_rate(evidence: _Evidence, cutoff: int | None) -> np.ndarray:
    """trec_eval ``success.k``."""
    return (_hits_in_top(evidence, cutoff) > 0).astype(np.float64)


def _precision(evidence: _Evidence, cutoff: int | None) -> np.ndarray:
    """trec_eval ``P.k``: always divided by k."""
    return _hits_in_top(evidence, cutoff) / cutoff


def _recall(evidence: _Evidence, cutoff: int | None) -> np.ndarray:
    """trec_eval ``recall.k``."""
    return _hits_in_top(evidence, cutoff) / evidence.num_relevant


def _reciprocal_rank(evidence: _Evidence, cutoff: int | None) -> np.ndarray:
    """trec_eval ``recip_rank`` (no cutoff), or that value zeroed beyond rank ``cutoff``."""
    hits = evidence.hits
    first = _position_within_query(hits.query) == 0
    counted = first & _within(hits, cutoff)
    reciprocal = np.zeros(evidence.num_queries)
    reciprocal[hits.query[counted]] = 1.0 / (hits.rank[counted] + 1)
    return reciprocal


def _dcg(ranking: RankedHits, num_queries: int, cutoff: int | None, gain: np.ndarray) -> np.ndarray:
    top = _within(ranking, cutoff)
    discounted = gain[top] / np.log2(ranking.rank[top] + 2.0)
    return np.bincount(ranking.query[top], weights=discounted, minlength=num_queries)


def _ndcg_with_gain(
    evidence: _Evidence, cutoff: int | None, gain: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """DCG / ideal DCG; every scored query has a relevant judgment, so the ideal is > 0."""
    hits, ideal = evidence.gains, evidence.ideal
    dcg = _dcg(hits, evidence.num_queries, cutoff, gain(hits.grade))
    return dcg / _dcg(ideal, evidence.num_queries, cutoff, gain(ideal.grade))


def _ndcg(evidence: _Evidence, cutoff: int | None) -> np.ndarray:
    """trec_eval ``ndcg_cut.k``: gain = grade."""
    return _ndcg_with_gain(evidence, cutoff, lambda grade: grade.astype(np.float64))


def _ndcg_exponential(evidence: _Evidence, cutoff: int | None) -> np.ndarray:
    """ranx ``ndcg_burges@k``: gain = 2^grade - 1."""
    return _ndcg_with_gain(evidence, cutoff, lambda grade: np.exp2(grade) - 1.0)


def _average_precision(evidence: _Evidence, cutoff: int | None) -> np.ndarray:
    """trec_eval ``map``: precision at each relevant retrieved rank, summed, divided by R."""
    hits = evidence.hits
    precision_at_hit = (_position_within_query(hits.query) + 1) / (hits.rank + 1)
    total = np.bincount(hits.query, weights=precision_at_hit, minlength=evidence.num_queries)
    return total / evidence.num_relevant


def _r_precision(evidence: _Evidence, cutoff: int | None) -> np.ndarray:
    """trec_eval ``Rprec``: relevant documents in the top R, divided by R."""
    hits = evidence.hits
    top = hits.rank < evidence.num_relevant[hits.query]
    counts = np.bincount(hits.query[top], minlength=evidence.num_queries)
    return counts / evidence.num_relevant


def _judged_share(evidence: _Evidence, cutoff: int | None) -> np.ndarray:
    """ir_measures ``Judged@k``: judged documents (any grade) among the top k, divided by the
    number of documents in the top k (k, or fewer when fewer were retrieved); 0 when none."""
    judged = evidence.judged
    top = _within(judged, cutoff)
    counts = np.bincount(judged.query[top], minlength=evidence.num_queries)
    shown = np.minimum(evidence.num_retrieved, cutoff)
    return np.divide(counts, shown, out=np.zeros(evidence.num_queries), where=shown > 0)


_CUTOFF_METRICS: dict[str, _MetricFunction] = {
    "hit_rate": _hit_rate,
    "mrr": _reciprocal_rank,
    "recall": _recall,
    "precision": _precision,
    "ndcg": _ndcg,
    "ndcg_exp": _ndcg_exponential,
    "judged": _judged_share,
}
_UNCUT_METRICS: dict[str, _MetricFunction] = {
    "mrr": _reciprocal_rank,
    "map": _average_precision,
    "r_precision": _r_precision,
}
