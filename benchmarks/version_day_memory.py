"""Scale: memory and time of one day's partition of a version holding many days of logs.

Writes a version (5 queries, 1,000 documents) whose logs (`logs.parquet`, or with `--format`
`logs.jsonl` / `logs.csv`, converted batch by batch) hold `--days` days of `--per-day`
interactions (the traffic benchmark's synthetic interactions, in time order). Then, each in a
fresh child process (peak RSS is the child's own, measured after its imports):

- `--before`: `golden_dataset`'s work as it was, the whole version in memory: `load_dataset`
  without a stage and the snapshot of every log row;
- the first run of a partition: `load_dataset` with a stage (the logs validated chunk by chunk
  and staged by day, `datasets/staged_logs.py`) and the partition's snapshot
  (`write_tables_atomically(stored_tables(day))`);
- a later partition (another day): the staged copy found by the files' fingerprint (read from
  the stat cache, `storage/digest_cache.py`, under a temporary `RAG_EVAL_CACHE`: no byte of the
  version hashed again), the snapshot of its day;
- what each tier asset reads of it (`read_tables` + `GoldenDataset.from_tables`: the day's
  logs) and the traffic tier's read of the day (`parquet_day_interactions` → `day_quality`).

Prints each step's wall time and peak RSS against the 3 GiB a day's partition should fit in
(issue 37), and the staged copy's size on disk.

    .venv/bin/python benchmarks/version_day_memory.py --before              # 30 days x 20k
    .venv/bin/python benchmarks/version_day_memory.py --per-day 1000000     # the issue's goal
    .venv/bin/python benchmarks/version_day_memory.py --per-day 1000000 --prestage
                                    # the day partitions only, the staged copy written unvalidated
    .venv/bin/python benchmarks/version_day_memory.py --per-day 100000 --format jsonl
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from datetime import timedelta
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq

from rag_eval_pipeline.storage.digest_cache import RACY_MARGIN_NS

BUDGET_MIB = 3 * 1024
Step = tuple[float, float, int]  # wall seconds, peak RSS added (MiB), rows
sys.path.insert(0, str(Path(__file__).parent))  # traffic_scale's generator


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def write_version(folder: Path, days: int, per_day: int, fmt: str = "parquet") -> float:
    """The version folder, its logs as `logs.<fmt>`; returns the size of its logs in MiB."""
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
    if fmt != "parquet":
        convert_logs(folder / "logs.parquet", folder / f"logs.{fmt}")
    return (folder / f"logs.{fmt}").stat().st_size / 2**20


def convert_logs(parquet: Path, target: Path) -> None:
    """The Parquet logs as JSON lines (ISO timestamps, lists as arrays) or CSV (lists as
    `a|b|c`), batch by batch; the Parquet file is removed."""
    with target.open("w") as out:
        for number, batch in enumerate(pq.ParquetFile(parquet).iter_batches(batch_size=100_000)):
            frame = batch.to_pandas()
            if target.suffix == ".jsonl":
                out.write(frame.to_json(orient="records", lines=True, date_unit="ns"))
                out.write("\n")
                continue
            frame["retrieved_doc_ids"] = frame["retrieved_doc_ids"].map("|".join)
            frame["timestamp"] = frame["timestamp"].map(pd.Timestamp.isoformat)
            frame.to_csv(out, index=False, header=number == 0)
    parquet.unlink()


def golden_step(folder: Path, snapshot: Path, offset: int, staged: str | None) -> Step:
    """`golden_dataset`'s work for the partition of day `offset`: load (staging the logs, or
    finding them staged, under `staged`; the whole version without) and store the snapshot."""
    from traffic_scale import FIRST_DAY

    from rag_eval_pipeline.datasets.golden import load_dataset
    from rag_eval_pipeline.datasets.staged_logs import LogStage
    from rag_eval_pipeline.storage.objects import storage_path
    from rag_eval_pipeline.storage.parquet import write_tables_atomically

    imported = peak_mib()
    started = time.perf_counter()
    stage = LogStage(storage_path(staged)) if staged else None
    dataset = load_dataset(folder, stage=stage)
    day = FIRST_DAY + timedelta(days=offset) if staged else None
    write_tables_atomically(dataset.stored_tables(day), storage_path(snapshot))
    rows = len(dataset.logs) if dataset.logs is not None else dataset.statistics()["n_logs"]
    return time.perf_counter() - started, peak_mib() - imported, rows


def prestage_step(folder: Path, staged: str) -> Step:
    """`--prestage`: the staged copy written from the generated rows, their feedback coerced as
    validation coerces it (`satisfaction_scores`) but not validated row by row: the staging
    pass at a size whose validation (~100 µs a row here) would not finish in a session."""
    from rag_eval_pipeline.datasets.golden import DatasetLimits, interactions_key
    from rag_eval_pipeline.datasets.staged_logs import LogStage
    from rag_eval_pipeline.metrics.traffic import satisfaction_scores
    from rag_eval_pipeline.storage.objects import storage_path

    imported = peak_mib()
    started = time.perf_counter()
    key = interactions_key(folder, DatasetLimits())
    batches = pq.ParquetFile(folder / "logs.parquet").iter_batches(batch_size=200_000)
    chunks = (
        frame.assign(feedback=satisfaction_scores(frame["feedback"].tolist()))
        for frame in (batch.to_pandas() for batch in batches)
    )
    copy = LogStage(storage_path(staged)).stage(key, chunks)
    return time.perf_counter() - started, peak_mib() - imported, copy.num_rows


def tier_step(snapshot: Path, offset: int) -> Step:
    """What a tier asset reads of the snapshot: every table, the logs of its day."""
    from traffic_scale import FIRST_DAY, TIMEZONE

    from rag_eval_pipeline.datasets.golden import GoldenDataset
    from rag_eval_pipeline.storage.objects import storage_path
    from rag_eval_pipeline.storage.parquet import read_tables

    imported = peak_mib()
    started = time.perf_counter()
    day = FIRST_DAY + timedelta(days=offset)
    dataset = GoldenDataset.from_tables("big", read_tables(storage_path(snapshot)), day, TIMEZONE)
    assert dataset.logs is not None
    return time.perf_counter() - started, peak_mib() - imported, len(dataset.logs)


def day_step(snapshot: Path, offset: int) -> Step:
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


def folder_mib(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def steps(
    tmp: Path, days: int, before: bool, prestage: bool
) -> list[tuple[str, Callable[..., Step], tuple]]:
    folder, staged = tmp / "big", str(tmp / "staged")
    first, later = tmp / "snapshot-first", tmp / "snapshot-later"
    listed: list[tuple[str, Callable[..., Step], tuple]] = []
    first_args = (folder, first, days // 2, staged)
    if prestage:
        listed.append(("prestage: rows staged unvalidated", prestage_step, (folder, staged)))
    if before:
        listed.append(
            ("before: golden_dataset, version whole", golden_step, (folder, tmp / "old", 0, None))
        )
    return [
        *listed,
        *([] if prestage else [("first run: stage + snapshot of a day", golden_step, first_args)]),
        ("later day: staged + snapshot of a day", golden_step, (folder, later, days // 3, staged)),
        ("a tier reads the snapshot (its day)", tier_step, (later, days // 3)),
        ("traffic: one day from the snapshot", day_step, (later, days // 3)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--per-day", type=int, default=20_000)
    parser.add_argument("--before", action="store_true", help="also the whole-version path")
    parser.add_argument(
        "--prestage", action="store_true", help="stage the rows without validating them first"
    )
    parser.add_argument("--tmp", default=None, help="where to write (default: the system's)")
    parser.add_argument("--format", choices=["parquet", "jsonl", "csv"], default="parquet")
    args = parser.parse_args()
    if args.prestage and args.format != "parquet":
        parser.error("--prestage reads logs.parquet")
    spawn = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(dir=args.tmp) as name:
        tmp = Path(name)
        with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as child:
            size = child.submit(
                write_version, tmp / "big", args.days, args.per_day, args.format
            ).result()
        print(
            f"{args.days} days x {args.per_day:,} interactions: logs.{args.format} {size:,.0f} MiB",
            flush=True,
        )
        os.environ["RAG_EVAL_CACHE"] = str(tmp / "cache")  # the children's file digest cache
        time.sleep(RACY_MARGIN_NS / 1e9 + 0.5)  # a version is older than the racy margin
        for label, step, step_args in steps(tmp, args.days, args.before, args.prestage):
            with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as child:
                wall, peak, rows = child.submit(step, *step_args).result()
            print(
                f"{label:<40} {wall:8.1f} s  peak +{peak:8,.0f} MiB "
                f"({peak / BUDGET_MIB:6.1%} of 3 GiB)  rows {rows:,}",
                flush=True,
            )
        print(f"staged copy on disk: {folder_mib(tmp / 'staged'):,.0f} MiB")


if __name__ == "__main__":
    main()
