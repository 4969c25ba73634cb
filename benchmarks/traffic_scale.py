"""Scale: the traffic tier on millions of logged interactions, streamed day by day.

Writes `--interactions` synthetic production interactions spread over three days (in time
order, as logs are appended) to one Parquet file, in a child process; then, for every day, reads
the day with the timestamp filter pushed down to the row groups and aggregates it chunk by chunk
(volume, exact latency percentiles, error rate, cost, satisfaction) and draws the judged sample
in two passes. Prints the time per day and the peak resident memory, then checks the streamed
figures against numpy on a `--check` subset held whole in memory.

    .venv/bin/python benchmarks/traffic_scale.py                       # 300k interactions
    .venv/bin/python benchmarks/traffic_scale.py --interactions 10000000
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

TIMEZONE = "UTC"
FIRST_DAY = date(2026, 11, 2)
DAYS = 3
BLOCK = 500_000
FEEDBACK = np.array(["up", "down", "5", "1", "3", "4", ""], dtype=object)
SAMPLED = ("question", "answer", "contexts", "retrieved_doc_ids")  # what the sample reads


def interactions_block(start: int, n: int, total: int, seed: int) -> pa.Table:
    """Interactions `start`..`start + n` of `total`, evenly over the days, in time order."""
    rng = np.random.default_rng([seed, start])
    span_ns = DAYS * 86_400 * 10**9
    offsets = (np.arange(start, start + n) * (span_ns / total)).astype(np.int64)
    stamps = pd.Timestamp(FIRST_DAY, tz="UTC").value + offsets
    numbers = np.arange(start, start + n).astype(str)
    docs_per_row = 3
    doc_ids = np.char.add("d", rng.integers(0, 1000, n * docs_per_row).astype(str))
    feedback = FEEDBACK[rng.integers(0, len(FEEDBACK), n)]
    error = np.where(rng.random(n) < 0.02, "timeout", None)
    unknown_cost = rng.random(n) < 0.1  # a null, not a NaN (validation refuses a stored NaN)
    return pa.table(
        {
            "log_id": pa.array(np.char.add("log-", np.char.zfill(numbers, 9))),
            "timestamp": pa.array(stamps, pa.timestamp("ns", tz="UTC")),
            "question": pa.array(np.char.add("question ", numbers)),
            "answer": pa.array(np.where(rng.random(n) < 0.9, "an answer", None)),
            "retrieved_doc_ids": pa.ListArray.from_arrays(
                pa.array(np.arange(0, n * docs_per_row + 1, docs_per_row, dtype=np.int32)),
                pa.array(doc_ids),
            ),
            "latency_ms": rng.gamma(2.0, 400.0, n),
            "retrieval_latency_ms": rng.gamma(2.0, 40.0, n),
            "error": pa.array(error),
            "cost_usd": pa.array(rng.random(n) / 100, mask=unknown_cost),
            "feedback": pa.array(np.where(feedback == "", None, feedback)),
        }
    )


def write_logs(path: Path, total: int, seed: int = 0) -> None:
    """All interactions to one Parquet file, one row group per block of `BLOCK`."""
    writer = None
    for start in range(0, total, BLOCK):
        table = interactions_block(start, min(BLOCK, total - start), total, seed)
        writer = writer or pq.ParquetWriter(path, table.schema)
        writer.write_table(table, row_group_size=BLOCK // 4)
    if writer is not None:
        writer.close()


def validated_whole(path: Path) -> pd.DataFrame:
    """The logs held whole, feedback as satisfaction (what `golden_dataset` holds today)."""
    from rag_eval_pipeline.metrics.traffic import satisfaction_scores

    logs = pd.read_parquet(path)
    return logs.assign(feedback=satisfaction_scores(logs["feedback"].tolist()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interactions", type=int, default=300_000)
    parser.add_argument("--check", type=int, default=100_000, help="subset checked with numpy")
    parser.add_argument("--sample", type=int, default=50, help="judged sample size per day")
    parser.add_argument(
        "--whole",
        action="store_true",
        help="instead, the in-memory path the traffic assets take (the logs held whole)",
    )
    args = parser.parse_args()
    from rag_eval_pipeline.evaluation.traffic import (
        day_interactions,
        day_quality,
        judged_sample,
        judged_sample_of_chunks,
        parquet_day_interactions,
        traffic_item_values,
        traffic_items,
        traffic_quality_rows,
        traffic_values,
    )
    from rag_eval_pipeline_tests.test_traffic_streaming import numpy_figures

    corpus = pd.DataFrame(
        {
            "doc_id": [f"d{i}" for i in range(1000)],
            "title": "a title",
            "text": "a text",
        }
    )
    with tempfile.TemporaryDirectory() as tmp:
        logs, subset = Path(tmp) / "logs.parquet", Path(tmp) / "subset.parquet"
        started = time.perf_counter()
        spawn = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as writer:
            writer.submit(write_logs, logs, args.interactions).result()
            writer.submit(write_logs, subset, args.check).result()
        print(
            f"{args.interactions:,} interactions over {DAYS} days written in "
            f"{time.perf_counter() - started:.1f} s ({logs.stat().st_size / 2**20:,.0f} MiB)"
        )
        rows = []
        held = validated_whole(logs) if args.whole else None
        for offset in range(DAYS):
            day = FIRST_DAY + timedelta(days=offset)
            started = time.perf_counter()
            if held is None:
                quality = day_quality(parquet_day_interactions(logs, day, TIMEZONE))
            else:
                interactions = day_interactions(held, day, TIMEZONE)
                items = traffic_items(traffic_item_values(interactions))
                quality = traffic_quality_rows(traffic_values(items))
            aggregated = time.perf_counter() - started
            sample = (
                judged_sample_of_chunks(
                    lambda day=day: parquet_day_interactions(logs, day, TIMEZONE, columns=SAMPLED),
                    corpus,
                    args.sample,
                    seed=0,
                )
                if held is None
                else judged_sample(interactions, corpus, args.sample, seed=0)
            )
            figures = dict(zip(quality["metric"], quality["mean"], strict=True))
            rows.append(
                {
                    "day": day.isoformat(),
                    "volume": int(figures["volume"]),
                    "p99_ms": figures["latency_p99_ms"],
                    "error_rate": figures["error_rate"],
                    "aggregate_s": aggregated,
                    "sample_s": time.perf_counter() - started - aggregated,
                    "sampled": len(sample),
                }
            )
        held = None
        peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        table = pd.DataFrame(rows)
        print(table.to_string(index=False, float_format="{:.4g}".format))
        total_s = table["aggregate_s"].sum() + table["sample_s"].sum()
        print(
            f"total {total_s:.1f} s ({1e6 * total_s / args.interactions:.1f} µs per "
            f"interaction); peak RSS of the process: {peak_mib:,.0f} MiB"
        )
        whole = pd.read_parquet(subset)
        worst = 0.0
        for offset in range(DAYS):
            day = FIRST_DAY + timedelta(days=offset)
            on_day = whole[whole["timestamp"].dt.date == day]
            quality = day_quality(parquet_day_interactions(subset, day, TIMEZONE, rows=7_000))
            streamed = dict(zip(quality["metric"], quality["mean"], strict=True))
            expected_figures = numpy_figures(on_day)
            for metric, expected in expected_figures.items():
                worst = max(worst, abs(streamed[metric] - expected) / max(abs(expected), 1e-300))
        print(
            f"numpy on the {args.check:,}-interaction subset (held whole) vs streamed in chunks "
            f"of 7,000: max relative difference {worst:.1e} over {DAYS} days x "
            f"{len(expected_figures)} figures"
        )


if __name__ == "__main__":
    main()
