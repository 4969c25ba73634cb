"""Scale: memory and time of one day's partition of a version holding many days of logs.

Writes a version (5 queries, 1,000 documents) whose `logs.parquet` holds `--days` days of
`--per-day` interactions (the traffic benchmark's synthetic interactions, in time order). Then,
each in a fresh child process (peak RSS is the child's own, measured after its imports):

1. `golden_dataset`'s work for one partition: `load_dataset` (read and validate every table)
   and the snapshot it stores (`write_tables_atomically(stored_tables())`);
2. the traffic tier's read of one day from that snapshot (`parquet_day_interactions` →
   `day_quality`), the day's filter pushed down to the row groups.

Prints each step's wall time and peak RSS, against the 3 GiB a day's partition should fit in
(issue 37). Step 1 holds the whole version's logs; step 2 one day's.

    .venv/bin/python benchmarks/version_day_memory.py                       # 30 days x 20k
    .venv/bin/python benchmarks/version_day_memory.py --per-day 1000000     # the issue's goal
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import timedelta
from pathlib import Path

BUDGET_MIB = 3 * 1024
sys.path.insert(0, str(Path(__file__).parent))  # traffic_scale's generator


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_version(folder: Path, days: int, per_day: int) -> float:
    """The version folder; returns the size of its logs in MiB."""
    import traffic_scale

    traffic_scale.DAYS = days  # the generator spreads its interactions over DAYS days
    folder.mkdir(parents=True)
    (folder / "queries.jsonl").write_text(
        "".join(
            json.dumps({"query_id": f"q{i}", "question": f"Question {i}?"}) + "\n" for i in range(5)
        )
    )
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"doc_id": f"d{i}", "text": f"Text {i}."}) + "\n" for i in range(1000))
    )
    (folder / "qrels.csv").write_text("query_id,doc_id,relevance\nq0,d0,1\n")
    traffic_scale.write_logs(folder / "logs.parquet", days * per_day)
    return (folder / "logs.parquet").stat().st_size / 2**20


def golden_step(folder: Path, snapshot: Path) -> tuple[float, float, int]:
    """Wall seconds, peak RSS added (MiB) and rows of logs of `golden_dataset`'s work."""
    from rag_eval_pipeline.datasets.golden import load_dataset
    from rag_eval_pipeline.storage.objects import storage_path
    from rag_eval_pipeline.storage.parquet import write_tables_atomically

    imported = peak_mib()
    started = time.perf_counter()
    dataset = load_dataset(folder)
    write_tables_atomically(dataset.stored_tables(), storage_path(snapshot))
    return time.perf_counter() - started, peak_mib() - imported, len(dataset.logs)


def day_step(snapshot: Path, offset: int) -> tuple[float, float, int]:
    """Wall seconds, peak RSS added (MiB) and volume of the traffic read of one day."""
    from traffic_scale import FIRST_DAY, TIMEZONE

    from rag_eval_pipeline.evaluation.traffic import day_quality, parquet_day_interactions
    from rag_eval_pipeline.storage.objects import storage_path
    from rag_eval_pipeline.storage.parquet import StoredTables

    imported = peak_mib()
    started = time.perf_counter()
    path, filesystem = StoredTables.open(storage_path(snapshot)).arrow_location("logs")
    day = FIRST_DAY + timedelta(days=offset)
    quality = day_quality(parquet_day_interactions(path, day, TIMEZONE, filesystem=filesystem))
    volume = int(quality.set_index("metric").loc["volume", "mean"])
    return time.perf_counter() - started, peak_mib() - imported, volume


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--per-day", type=int, default=20_000)
    args = parser.parse_args()
    spawn = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        folder, snapshot = Path(tmp) / "big", Path(tmp) / "snapshot"
        with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as child:
            size = child.submit(write_version, folder, args.days, args.per_day).result()
        print(f"{args.days} days x {args.per_day:,} interactions: logs.parquet {size:,.0f} MiB")
        steps = [
            ("golden_dataset (load, validate, store)", golden_step, (folder, snapshot)),
            ("traffic: one day from the snapshot", day_step, (snapshot, args.days // 2)),
        ]
        for label, step, step_args in steps:
            with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as child:
                wall, peak, rows = child.submit(step, *step_args).result()
            print(
                f"{label:<40} {wall:8.1f} s  peak +{peak:8,.0f} MiB "
                f"({peak / BUDGET_MIB:6.1%} of 3 GiB)  rows {rows:,}"
            )


if __name__ == "__main__":
    main()
