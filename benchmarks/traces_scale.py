"""Scale: a `traces/` folder of OTLP JSON read as production interactions.

Writes `--traces` synthetic RAG traces (about 5 spans each, over four days, shuffled into
batches of 3 spans and spread over files per day, as the Collector's file exporter leaves them)
in a child process; then, each in its own child process, (1) reads every trace as
`golden_dataset` does (`trace_interactions`) and (2) reads and aggregates each day as the
library's traces source does (`traces_day_interactions` → `day_quality`), checking every day's
figures against numpy on the raw spans. Prints time, spans per second and peak resident memory.

    .venv/bin/python benchmarks/traces_scale.py                 # 20k traces
    .venv/bin/python benchmarks/traces_scale.py --traces 100000
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import date
from pathlib import Path


def write(folder: Path, n: int) -> int:
    """Write `n` traces under `folder/traces`; return the number of spans."""
    from rag_eval_pipeline_tests.trace_fixtures import synthetic_traces, write_otlp

    traces = synthetic_traces(n)
    write_otlp(folder / "traces", traces, files_per_day=4)
    return sum(len(t.spans) for t in traces)


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def read_all(folder: Path) -> tuple[int, float, float, float]:
    """Interactions read, wall and CPU seconds, and the peak RSS (MiB) it added to the
    process's once its modules (litellm among them) are imported."""
    import litellm  # noqa: F401  (imported by the pricing; its memory is not the reading's)

    from rag_eval_pipeline.datasets.traces import trace_interactions

    imported = peak_mib()
    wall, cpu = time.perf_counter(), time.process_time()
    interactions = trace_interactions(folder)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return len(interactions), wall, cpu, peak_mib() - imported


def read_days(folder: Path, n: int) -> tuple[list[tuple[str, int, float]], float, float]:
    """Per day: volume and wall seconds of `traces_day_interactions` → `day_quality`; the peak
    RSS (MiB) the reading added to the imported modules'; then the largest relative difference
    of the figures from numpy on the raw spans (regenerated after the peak is taken)."""
    import litellm  # noqa: F401

    from rag_eval_pipeline.evaluation.traffic import day_quality, traces_day_interactions
    from rag_eval_pipeline_tests.trace_fixtures import (
        DAYS,
        TIMEZONE,
        expected_day,
        synthetic_traces,
    )

    imported = peak_mib()
    qualities, seconds = {}, {}
    for day in DAYS:
        started = time.perf_counter()
        chunks = traces_day_interactions(folder, date.fromisoformat(day), TIMEZONE)
        qualities[day] = day_quality(chunks).set_index("metric")["mean"]
        seconds[day] = time.perf_counter() - started
    peak = peak_mib() - imported
    raw, rows, worst = synthetic_traces(n), [], 0.0
    for day in DAYS:
        expected = expected_day(raw, day)
        for metric, value in expected.items():
            difference = abs(qualities[day][metric] - value) / max(abs(value), 1e-300)
            worst = max(worst, difference)
        rows.append((day, int(expected["volume"]), seconds[day]))
    return rows, worst, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=20_000)
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with ProcessPoolExecutor(1, mp_context=context) as pool:
            spans = pool.submit(write, folder, args.traces).result()
        size = sum(p.stat().st_size for p in (folder / "traces").iterdir()) / 2**20
        files = len(list((folder / "traces").iterdir()))
        print(f"{args.traces:,} traces, {spans:,} spans, {files} files, {size:,.0f} MiB")
        with ProcessPoolExecutor(1, mp_context=context) as pool:
            count, wall, cpu, peak = pool.submit(read_all, folder).result()
        print(
            f"all traces (golden_dataset's read): {count:,} interactions in {wall:.1f} s "
            f"({cpu:.1f} s CPU: {spans / cpu:,.0f} spans per CPU second), +{peak:,.0f} MiB peak RSS"
        )
        with ProcessPoolExecutor(1, mp_context=context) as pool:
            days, worst, peak = pool.submit(read_days, folder, args.traces).result()
        for day, volume, seconds in days:
            print(f"  {day}: {volume:,} interactions, read and aggregated in {seconds:.1f} s")
        print(
            f"day by day: +{peak:,.0f} MiB peak RSS; max relative difference from numpy {worst:.1e}"
        )


if __name__ == "__main__":
    main()
