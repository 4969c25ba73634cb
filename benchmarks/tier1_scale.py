"""Scale: a synthetic dataset version with many queries through Tier 1, end to end.

Writes a dataset version (queries, graded TREC qrels, one TREC run of `--depth` documents per
query) to a temporary folder, block by block, then materializes golden_dataset →
retrieval_runs → retrieval_metrics → retrieval_quality through Dagster on a temporary instance
with the Parquet IO manager, and prints the time of every step, the time per query and the peak
resident memory of the process. The per-query metrics of the first `--check` queries are then
compared with pytrec_eval (trec_eval 9.0.8) on the same run lines.

    .venv/bin/python benchmarks/tier1_scale.py [--queries 100000] [--depth 100] [--check 2000]
    .venv/bin/python benchmarks/tier1_scale.py --queries 1000000 --keep /tmp/t1  # 100M lines
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import shutil
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

BLOCK_QUERIES = 20_000
DATE = "2026-11-21"
JUDGED_PER_QUERY = 5
TREC_TO_OURS = {
    "recip_rank": "mrr",
    "ndcg_cut_10": "ndcg@10",
    "recall_10": "recall@10",
    "P_10": "precision@10",
    "map": "map",
    "Rprec": "r_precision",
}


def dataset_blocks(
    n_queries: int, depth: int, seed: int
) -> Iterator[tuple[np.ndarray, pd.DataFrame, pd.DataFrame]]:
    """Queries, qrels and run of each block of `BLOCK_QUERIES` queries (seeded per block)."""
    for start in range(0, n_queries, BLOCK_QUERIES):
        n = min(BLOCK_QUERIES, n_queries - start)
        rng = np.random.default_rng([seed, start])
        query_ids = np.char.add("q", np.arange(start, start + n).astype(str))
        qrels = pd.DataFrame(
            {
                "query_id": np.repeat(query_ids, JUDGED_PER_QUERY),
                "iteration": 0,
                "doc_id": np.char.add(
                    "d", rng.integers(0, 10_000_000, n * JUDGED_PER_QUERY).astype(str)
                ),
                "relevance": rng.integers(0, 4, n * JUDGED_PER_QUERY),
            }
        ).drop_duplicates(["query_id", "doc_id"])
        run_doc_ids = np.char.add("d", rng.integers(0, 10_000_000, n * depth).astype(str))
        judged = qrels.groupby("query_id", sort=False)["doc_id"].first()
        hit_rows = np.arange(n) * depth + rng.integers(0, depth, n)
        run_doc_ids[hit_rows] = judged.reindex(query_ids).to_numpy()
        run = pd.DataFrame(
            {
                "query_id": np.repeat(query_ids, depth),
                "q0": "Q0",
                "doc_id": run_doc_ids,
                "rank": np.tile(np.arange(1, depth + 1), n),
                "score": np.round(rng.random(n * depth), 3),
                "tag": "synthetic",
            }
        ).drop_duplicates(["query_id", "doc_id"])
        yield query_ids, qrels, run


def write_dataset(folder: Path, n_queries: int, depth: int, seed: int = 0) -> int:
    """A synthetic version: ~5 judged docs per query (grades 0-3), runs with score ties.

    Written block by block; returns the number of run lines.
    """
    (folder / "runs").mkdir(parents=True)
    lines = 0
    with (
        open(folder / "queries.jsonl", "w") as queries_file,
        open(folder / "qrels.trec", "w") as qrels_file,
        open(folder / "runs" / "synthetic.trec", "w") as run_file,
    ):
        for query_ids, qrels, run in dataset_blocks(n_queries, depth, seed):
            queries_file.writelines(
                json.dumps({"query_id": q, "question": f"synthetic question {q}"}) + "\n"
                for q in query_ids
            )
            qrels.to_csv(qrels_file, sep=" ", header=False, index=False)
            run.to_csv(run_file, sep=" ", header=False, index=False)
            lines += len(run)
    return lines


def check_with_pytrec_eval(folder: Path, per_query: pd.DataFrame, n_queries: int) -> float:
    """Largest |ours - pytrec_eval| over the first `n_queries` queries and six measures
    (a query the run missed scores 0, trec_eval -c)."""
    import pytrec_eval

    columns = ["query_id", "q0", "doc_id", "rank", "score", "tag"]
    wanted = {f"q{i}" for i in range(n_queries)}
    qrels_frame = pd.read_csv(
        folder / "qrels.trec", sep=" ", header=None, names=["query_id", "it", "doc_id", "rel"]
    )
    qrels: dict[str, dict[str, int]] = {}
    for q, d, r in qrels_frame[qrels_frame["query_id"].isin(wanted)][
        ["query_id", "doc_id", "rel"]
    ].itertuples(index=False):
        qrels.setdefault(q, {})[d] = int(r)
    run: dict[str, dict[str, float]] = {}
    rows = n_queries * 100 * 2
    run_frame = pd.read_csv(
        folder / "runs" / "synthetic.trec", sep=" ", header=None, names=columns, nrows=rows
    )
    for q, d, s in run_frame[run_frame["query_id"].isin(wanted)][
        ["query_id", "doc_id", "score"]
    ].itertuples(index=False):
        run.setdefault(q, {})[d] = float(s)
    theirs = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_TO_OURS)).evaluate(run)
    ours = per_query.set_index("query_id")  # queries with a relevant judgment (trec_eval's)
    return max(
        abs(ours.at[q, name] - theirs[q][trec]) if q in theirs else abs(ours.at[q, name])
        for q in ours.index
        for trec, name in TREC_TO_OURS.items()
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--check", type=int, default=2_000, help="queries checked by pytrec_eval")
    parser.add_argument(
        "--keep",
        type=Path,
        help="write the dataset under this folder and keep it (reused by the next run)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        datasets = args.keep or root / "datasets"
        version = f"synthetic-{args.queries}x{args.depth}"
        data = datasets / version
        if not (data / "runs" / "synthetic.trec").exists():
            started = time.perf_counter()
            spawn = multiprocessing.get_context("spawn")  # the writer's memory is not counted
            partial = data.with_name(data.name + ".partial")
            shutil.rmtree(partial, ignore_errors=True)
            with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as writer:
                lines = writer.submit(write_dataset, partial, args.queries, args.depth).result()
            partial.rename(data)
            print(
                f"dataset written in {time.perf_counter() - started:.1f} s "
                f"({args.queries:,} queries x {args.depth} docs = {lines:,} run lines)"
            )
        os.environ["RAG_EVAL_WAREHOUSE"] = str(root / "warehouse")
        from dagster import instance_for_test, materialize

        from rag_eval_pipeline.definitions import default_resources
        from rag_eval_pipeline.defs.dataset.assets import golden_dataset
        from rag_eval_pipeline.defs.shared.io_managers import ParquetIOManagerResource
        from rag_eval_pipeline.defs.shared.partitions import (
            DATASET_VERSION,
            evaluation_partition_key,
        )
        from rag_eval_pipeline.defs.shared.resources import DatasetsResource
        from rag_eval_pipeline.defs.tier0_embedding.assets import corpus_embeddings
        from rag_eval_pipeline.defs.tier1_retrieval.assets import (
            retrieval_metrics,
            retrieval_quality,
            retrieval_runs,
        )

        resources = {
            **default_resources(),
            "io_manager": ParquetIOManagerResource(base_path=str(root / "warehouse")),
            "datasets": DatasetsResource(root=str(datasets)),
        }
        with instance_for_test() as instance:
            instance.add_dynamic_partitions(DATASET_VERSION, [version])
            started = time.perf_counter()
            result = materialize(
                [
                    golden_dataset,
                    corpus_embeddings,
                    retrieval_runs,
                    retrieval_metrics,
                    retrieval_quality,
                ],
                partition_key=evaluation_partition_key(version, DATE),
                instance=instance,
                resources=resources,
                run_config={"loggers": {"console": {"config": {"log_level": "WARNING"}}}},
            )
            total = time.perf_counter() - started
            steps = {
                event.step_key: event.event_specific_data.duration_ms / 1000
                for event in result.all_events
                if event.event_type_value == "STEP_SUCCESS"
            }
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        warehouse = root / "warehouse"
        quality = pd.read_parquet(warehouse / "retrieval_quality" / version / f"{DATE}.parquet")
        per_query = pd.read_parquet(
            warehouse / "retrieval_metrics" / version / f"{DATE}.parquet",
            filters=[("query_id", "in", [f"q{i}" for i in range(args.check)])],
        )
        difference = check_with_pytrec_eval(data, per_query, args.check)
    print(
        pd.DataFrame({"step": list(steps), "seconds": list(steps.values())}).to_string(
            index=False, float_format="{:.2f}".format
        )
    )
    print(
        f"total materialization: {total:.1f} s ({1e6 * total / args.queries:.0f} µs per query); "
        f"peak RSS of the process: {peak_mib:,.0f} MiB (the dataset is written by a child "
        "process)"
    )
    print(
        f"pytrec_eval on the first {args.check:,} queries (6 measures): "
        f"max |difference| = {difference:.2e}"
    )
    print(
        quality[quality["metric"].isin(["mrr", "ndcg@10", "hit_rate@10"])][
            ["metric", "mean", "ci_low", "ci_high", "count"]
        ].to_string(index=False)
    )


if __name__ == "__main__":
    main()
