"""Benchmark the Tier 1 IR-metric kernel against pytrec_eval and ranx.

Generates a synthetic run (default 100,000 queries x 100 retrieved documents, str ids, scores
rounded to 4 decimals so ties occur) with graded qrels (default 5 judged documents per query,
some of them not retrieved), then times, on the same in-memory pandas tables:

* ours: :func:`rag_eval_pipeline.metrics.retrieval.evaluate_run` with all default metrics;
* pytrec_eval: building its nested-dict input from the tables, plus evaluating;
* ranx: building its nested dicts and ``Qrels``/``Run`` from the tables, plus evaluating
  (its numba JIT warm-up on a tiny input is timed separately).

It checks our values against pytrec_eval's on a sample of queries and prints wall-clock and
CPU seconds (CPU time, summed over threads, is steadier on a shared machine) with their ratios
to ours, and the peak memory numpy allocates inside ``evaluate_run``.
Usage: ``python benchmarks/ir_metrics.py [--queries N --depth D]``.
"""

from __future__ import annotations

import argparse
import sys
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pandas as pd
import pyarrow as pa
import pytrec_eval
import ranx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runs from a checkout, too

from rag_eval_pipeline.metrics.retrieval import DEFAULT_RETRIEVAL_METRICS, evaluate_run

_CUTOFFS = (1, 3, 5, 10)
PYTREC_MEASURES = {
    f"success.{','.join(map(str, _CUTOFFS))}",
    "recip_rank",
    f"P.{','.join(map(str, _CUTOFFS))}",
    f"recall.{','.join(map(str, _CUTOFFS))}",
    "ndcg_cut.5,10",
    "map",
    "Rprec",
}
PYTREC_NAMES: dict[str, str] = {
    **{f"hit_rate@{k}": f"success_{k}" for k in _CUTOFFS},
    **{f"precision@{k}": f"P_{k}" for k in _CUTOFFS},
    **{f"recall@{k}": f"recall_{k}" for k in _CUTOFFS},
    "mrr": "recip_rank",
    "ndcg@5": "ndcg_cut_5",
    "ndcg@10": "ndcg_cut_10",
    "map": "map",
    "r_precision": "Rprec",
}
RANX_NAMES: dict[str, str] = {
    name: name.replace("ndcg_exp", "ndcg_burges").replace("r_precision", "r-precision")
    for name in DEFAULT_RETRIEVAL_METRICS
    if not name.startswith("judged@")  # ranx has no Judged@k (ir_measures has: tests)
}
CORPUS_SIZE = 1_000_003  # prime, so (start + i * step) % CORPUS_SIZE never repeats within a query

Result = TypeVar("Result")


def _string_ids(prefix: str, codes: np.ndarray, vocabulary_size: int) -> pd.Series:
    vocabulary = pa.array([f"{prefix}{code}" for code in range(vocabulary_size)])
    return pd.Series(vocabulary.take(pa.array(codes)), dtype="str")


def make_tables(
    num_queries: int, depth: int, judged: int, seed: int
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A run with ``depth`` distinct documents per query and ``judged`` graded qrels each.

    Judged documents are drawn from the first ``depth + judged`` documents of the query's
    candidate sequence, so most are retrieved and some are not.
    """
    rng = np.random.default_rng(seed)
    start = rng.integers(0, CORPUS_SIZE, num_queries)
    step = rng.integers(1, CORPUS_SIZE, num_queries)

    def doc_codes(query: np.ndarray, position: np.ndarray) -> np.ndarray:
        return (start[query] + position * step[query]) % CORPUS_SIZE

    run_query = np.repeat(np.arange(num_queries), depth)
    run_position = np.tile(np.arange(depth), num_queries)
    run = pd.DataFrame(
        {
            "query_id": _string_ids("q", run_query, num_queries),
            "doc_id": _string_ids("doc", doc_codes(run_query, run_position), CORPUS_SIZE),
            "score": np.round(rng.random(len(run_query)), 4),
        }
    )
    positions = rng.random((num_queries, depth + judged)).argsort(axis=1)[:, :judged].ravel()
    qrels_query = np.repeat(np.arange(num_queries), judged)
    qrels = pd.DataFrame(
        {
            "query_id": _string_ids("q", qrels_query, num_queries),
            "doc_id": _string_ids("doc", doc_codes(qrels_query, positions), CORPUS_SIZE),
            "relevance": rng.integers(0, 4, len(qrels_query)),
        }
    )
    return run, qrels


def nested_dict(frame: pd.DataFrame, value_column: str) -> dict[str, dict[str, Any]]:
    """``{query_id: {doc_id: value}}``, the input format of pytrec_eval and ranx."""
    nested: dict[str, dict[str, Any]] = {}
    columns = (frame["query_id"].tolist(), frame["doc_id"].tolist(), frame[value_column].tolist())
    for query_id, doc_id, value in zip(*columns, strict=True):
        nested.setdefault(query_id, {})[doc_id] = value
    return nested


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float


def timed(function: Callable[[], Result]) -> tuple[Timing, Result]:
    wall_start, cpu_start = time.perf_counter(), time.process_time()
    result = function()
    return Timing(time.perf_counter() - wall_start, time.process_time() - cpu_start), result


def peak_traced_bytes(function: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        function()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def run_pytrec_eval(run: pd.DataFrame, qrels: pd.DataFrame) -> dict[str, dict[str, float]]:
    evaluator = pytrec_eval.RelevanceEvaluator(nested_dict(qrels, "relevance"), PYTREC_MEASURES)
    return evaluator.evaluate(nested_dict(run, "score"))


def run_ranx(run: pd.DataFrame, qrels: pd.DataFrame) -> dict[str, Any]:
    ranx_qrels = ranx.Qrels(nested_dict(qrels, "relevance"))
    ranx_run = ranx.Run(nested_dict(run, "score"))
    return ranx.evaluate(ranx_qrels, ranx_run, list(RANX_NAMES.values()), return_mean=False)


def assert_matches_pytrec_eval(
    ours: pd.DataFrame, theirs: dict[str, dict[str, float]], sample_size: int, seed: int
) -> int:
    """Compare a random sample of queries on every metric pytrec_eval has; return its size."""
    ours = ours.set_index("query_id")
    rng = np.random.default_rng(seed)
    sample = rng.choice(ours.index.to_numpy(), min(sample_size, len(ours)), replace=False)
    for query_id in sample:
        for name, trec_name in PYTREC_NAMES.items():
            expected = theirs.get(query_id, {}).get(trec_name, 0.0)
            actual = ours.at[query_id, name]
            if abs(actual - expected) > 1e-9:
                raise AssertionError(f"{query_id} {name}: ours {actual} != pytrec {expected}")
    return len(sample)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--judged", type=int, default=5, help="judged documents per query")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sample", type=int, default=2_000, help="queries checked vs pytrec")
    args = parser.parse_args(argv)

    run, qrels = make_tables(args.queries, args.depth, args.judged, args.seed)
    print(f"run: {len(run):,} rows, {args.queries:,} queries; qrels: {len(qrels):,} rows")

    ours_time, ours = timed(lambda: evaluate_run(run, qrels))
    pytrec_time, pytrec_results = timed(lambda: run_pytrec_eval(run, qrels))
    checked = assert_matches_pytrec_eval(ours, pytrec_results, args.sample, args.seed)
    print(f"ours == pytrec_eval (1e-9) on {checked:,} sampled queries x {len(PYTREC_NAMES)}")
    del pytrec_results

    warmup_time, _ = timed(lambda: run_ranx(*make_tables(16, 10, 3, args.seed)))
    ranx_time, _ = timed(lambda: run_ranx(run, qrels))
    peak_bytes = peak_traced_bytes(lambda: evaluate_run(run, qrels))

    header = f"{'implementation':<38}{'wall s':>9}{'ratio':>8}{'CPU s':>9}{'ratio':>8}"
    print(f"\n{header}")
    rows = [
        ("ours (evaluate_run)", ours_time),
        ("pytrec_eval (dicts + evaluate)", pytrec_time),
        ("ranx (dicts + Qrels/Run + evaluate)", ranx_time),
    ]
    for label, timing in rows:
        print(
            f"{label:<38}{timing.wall:>9.2f}{timing.wall / ours_time.wall:>7.1f}x"
            f"{timing.cpu:>9.2f}{timing.cpu / ours_time.cpu:>7.1f}x"
        )
    print(
        f"{'ranx JIT warm-up (separate)':<38}{warmup_time.wall:>9.2f}{'':>8}{warmup_time.cpu:>9.2f}"
    )
    print(f"ours: peak numpy memory {peak_bytes / 2**20:,.0f} MiB (tracemalloc)")


if __name__ == "__main__":
    main()
