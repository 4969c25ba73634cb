"""Scale: a `traces/` folder of OTLP JSON read as production interactions.

Writes `--traces` synthetic RAG traces (about 5 spans each, over four days, shuffled into
batches of 3 spans and spread over files per day, as the Collector's file exporter leaves them)
in a child process; then, each in its own child process, (1) reads every trace as
`golden_dataset` does (`trace_interactions`) and (2) reads and aggregates each day as the
library's traces source does (`traces_day_interactions` → `day_quality`), checking every day's
figures against numpy on the raw spans. Prints time, spans per second and peak resident memory.

With `--days N` it measures `golden_dataset`'s first reading of a traces version instead: a
version of `N` days of `--per-day` traces, one OTLP JSON file per UTC day (the Collector's
daily rotation), each child process staging it as `load_dataset(folder, stage)` does: the
first run (peak RSS, wall time), then, the version holding one day less, the run after the
last day's file is added (only that file parsed, `span_store`). Run it once more with the
package before this change on `PYTHONPATH` for the whole-table reading's figures.

    .venv/bin/python benchmarks/traces_scale.py                 # 20k traces
    .venv/bin/python benchmarks/traces_scale.py --traces 100000
    .venv/bin/python benchmarks/traces_scale.py --days 30 --per-day 3000
"""

from __future__ import annotations

import argparse
import json
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


def write_month(folder: Path, days: int, per_day: int) -> tuple[int, int]:
    """A version folder of `days` × `per_day` traces (`synthetic_traces` of each day shifted
    to it, ids made unique), one OTLP JSON file per day (that day's traces, in their order);
    return the spans and files."""
    from dataclasses import replace

    from rag_eval_pipeline_tests.trace_fixtures import DOC_TEXTS, json_lines_file, synthetic_traces

    def shifted(day: int) -> list:
        def moved(span: object) -> object:
            ids = {k: f"{day:04x}{getattr(span, k)[4:]}" for k in ("trace_id", "span_id")}
            parent = span.parent_id and f"{day:04x}{span.parent_id[4:]}"
            offset = day * 86_400 * 10**9
            return replace(
                span,
                **ids,
                parent_id=parent,
                start_ns=span.start_ns + offset,
                end_ns=span.end_ns + offset,
            )

        return [
            replace(
                t, spans=[moved(s) for s in t.spans], start_ns=t.start_ns + day * 86_400 * 10**9
            )
            for t in synthetic_traces(per_day, seed=day)
        ]

    (folder / "traces").mkdir(parents=True)
    (folder / "queries.jsonl").write_text(json.dumps({"query_id": "q1", "question": "Q?"}) + "\n")
    (folder / "qrels.csv").write_text("query_id,doc_id,relevance\nq1,d1,1\n")
    corpus = "".join(json.dumps({"doc_id": d, "text": t}) + "\n" for d, t in DOC_TEXTS.items())
    (folder / "corpus.jsonl").write_text(corpus)
    spans = 0
    for day in range(days):
        day_spans = [s for t in shifted(day) for s in t.spans]
        batches = [day_spans[i : i + 3] for i in range(0, len(day_spans), 3)]
        (folder / "traces" / f"traces-{day:03d}.json").write_bytes(json_lines_file(batches))
        spans += len(day_spans)
    return spans, days


def stage_version(folder: Path, stage: Path) -> tuple[int, float, float]:
    """Rows staged, wall seconds and the peak RSS (MiB) `load_dataset(folder, stage)` added."""
    import litellm  # noqa: F401

    from rag_eval_pipeline.datasets.golden import load_dataset
    from rag_eval_pipeline.datasets.staged_logs import LogStage
    from rag_eval_pipeline.storage.objects import storage_path

    imported = peak_mib()
    wall = time.perf_counter()
    staged = load_dataset(folder, stage=LogStage(storage_path(stage))).staged_logs
    return staged.num_rows, time.perf_counter() - wall, peak_mib() - imported


def month(days: int, per_day: int) -> None:
    """The first and the incremental staging of a `days`-day traces version (see module)."""
    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "month"
        with ProcessPoolExecutor(1, mp_context=context) as pool:
            spans, files = pool.submit(write_month, folder, days, per_day).result()
        size = sum(p.stat().st_size for p in (folder / "traces").iterdir()) / 2**20
        print(f"{days} days × {per_day:,} traces, {spans:,} spans, {files} files, {size:,.0f} MiB")
        with ProcessPoolExecutor(1, mp_context=context) as pool:
            rows, wall, peak = pool.submit(stage_version, folder, Path(tmp) / "first").result()
        print(f"first run: {rows:,} interactions staged in {wall:.1f} s, +{peak:,.0f} MiB peak RSS")
        last = sorted((folder / "traces").iterdir())[-1]
        held = last.rename(Path(tmp) / last.name)
        with ProcessPoolExecutor(1, mp_context=context) as pool:
            rows, wall, _ = pool.submit(stage_version, folder, Path(tmp) / "daily").result()
        print(f"  (the version one file short staged first: {rows:,} interactions, {wall:.1f} s)")
        held.rename(last)
        with ProcessPoolExecutor(1, mp_context=context) as pool:
            rows, wall, peak = pool.submit(stage_version, folder, Path(tmp) / "daily").result()
        print(
            f"one day's file added: {rows:,} interactions staged in {wall:.1f} s, "
            f"+{peak:,.0f} MiB peak RSS"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=20_000)
    parser.add_argument("--days", type=int, default=0)
    parser.add_argument("--per-day", type=int, default=3_000)
    args = parser.parse_args()
    if args.days:
        month(args.days, args.per_day)
        return
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
