"""Scale: a synthetic dataset version with 100,000 queries through Tier 1, end to end.

Writes a dataset version (queries, graded TREC qrels, one TREC run of `--depth` documents per
query) to a temporary folder, then materializes golden_dataset → retrieval_runs →
retrieval_metrics → retrieval_quality through Dagster on a temporary instance, and prints the
time of every step and the peak resident memory of the process.

    .venv/bin/python benchmarks/tier1_scale.py [--queries 100000] [--depth 100]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def write_dataset(folder: Path, n_queries: int, depth: int, seed: int = 0) -> None:
    """A synthetic version: ~5 judged docs per query (grades 0-3), runs with score ties."""
    rng = np.random.default_rng(seed)
    (folder / "runs").mkdir(parents=True)
    query_ids = np.char.add("q", np.arange(n_queries).astype(str))
    with open(folder / "queries.jsonl", "w") as handle:
        handle.writelines(
            json.dumps({"query_id": q, "question": f"synthetic question {q}"}) + "\n"
            for q in query_ids
        )
    judged = 5
    qrels = pd.DataFrame(
        {
            "query_id": np.repeat(query_ids, judged),
            "iteration": 0,
            "doc_id": np.char.add("d", rng.integers(0, 10_000_000, n_queries * judged).astype(str)),
            "relevance": rng.integers(0, 4, n_queries * judged),
        }
    ).drop_duplicates(["query_id", "doc_id"])
    qrels.to_csv(folder / "qrels.trec", sep=" ", header=False, index=False)
    run_doc_ids = np.char.add("d", rng.integers(0, 10_000_000, n_queries * depth).astype(str))
    relevant = qrels.groupby("query_id")["doc_id"].first().reindex(query_ids).to_numpy()
    hit_rows = np.arange(n_queries) * depth + rng.integers(0, depth, n_queries)
    run_doc_ids[hit_rows] = relevant
    run = pd.DataFrame(
        {
            "query_id": np.repeat(query_ids, depth),
            "q0": "Q0",
            "doc_id": run_doc_ids,
            "rank": np.tile(np.arange(1, depth + 1), n_queries),
            "score": np.round(rng.random(n_queries * depth), 3),
            "tag": "synthetic",
        }
    ).drop_duplicates(["query_id", "doc_id"])
    run.to_csv(folder / "runs" / "synthetic.trec", sep=" ", header=False, index=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        version = "synthetic-100k"
        started = time.perf_counter()
        write_dataset(root / "datasets" / version, args.queries, args.depth)
        print(
            f"dataset written in {time.perf_counter() - started:.1f} s "
            f"({args.queries:,} queries x {args.depth} docs)"
        )
        os.environ["RAG_EVAL_WAREHOUSE"] = str(root / "warehouse")
        from dagster import instance_for_test, materialize

        from rag_eval_pipeline.definitions import default_resources
        from rag_eval_pipeline.defs.dataset.assets import golden_dataset
        from rag_eval_pipeline.defs.io_managers import ParquetIOManagerResource
        from rag_eval_pipeline.defs.partitions import DATASET_VERSION, evaluation_partition_key
        from rag_eval_pipeline.defs.resources import DatasetsResource
        from rag_eval_pipeline.defs.tier0_embedding.assets import corpus_embeddings
        from rag_eval_pipeline.defs.tier1_retrieval.assets import (
            retrieval_metrics,
            retrieval_quality,
            retrieval_runs,
        )

        resources = {
            **default_resources(),
            "io_manager": ParquetIOManagerResource(base_path=str(root / "warehouse")),
            "datasets": DatasetsResource(root=str(root / "datasets")),
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
                partition_key=evaluation_partition_key(version, "2026-11-21"),
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
        quality = pd.read_parquet(
            root / "warehouse" / "retrieval_quality" / version / "2026-11-21.parquet"
        )
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        pd.DataFrame({"step": list(steps), "seconds": list(steps.values())}).to_string(
            index=False, float_format="{:.2f}".format
        )
    )
    print(f"total materialization: {total:.1f} s; peak RSS of the process: {peak_mib:,.0f} MiB")
    print(
        quality[quality["metric"].isin(["mrr", "ndcg@10", "hit_rate@10"])][
            ["metric", "mean", "ci_low", "ci_high", "count"]
        ].to_string(index=False)
    )


if __name__ == "__main__":
    main()
