"""The traffic tier streamed: a day read from Parquet (pushdown) or JSONL chunk by chunk gives
the per-day figures of numpy on the whole day, and the same judged sample."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from upath import UPath

from rag_eval_pipeline.datasets.golden import GoldenDataset
from rag_eval_pipeline.evaluation import traffic
from rag_eval_pipeline.evaluation.traffic import (
    day_bounds,
    day_interactions,
    day_quality,
    frame_day_interactions,
    jsonl_day_interactions,
    judged_sample,
    judged_sample_of_chunks,
    parquet_day_interactions,
)
from rag_eval_pipeline.metrics.stats import bootstrap_ci
from rag_eval_pipeline.metrics.traffic import on_date, satisfaction_scores
from rag_eval_pipeline.storage.parquet import StoredTables, write_tables_atomically

pytestmark = [pytest.mark.unit]

TIMEZONE = "America/New_York"
DAYS = [date(2026, 11, 1), date(2026, 11, 2), date(2026, 11, 3)]  # DST ends on Nov 1
FEEDBACK = ["up", "down", "5", "1", "3", None, "👍", "4"]
SAMPLED = ("question", "answer", "retrieved_doc_ids")


def logs_frame(n: int = 3_000, seed: int = 3) -> pd.DataFrame:
    """Logs in time order over four local days, with ties on the timestamp."""
    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2026-10-31T22:00:00", tz=TIMEZONE).tz_convert("UTC")
    seconds = np.sort(rng.integers(0, 4 * 24 * 3600, n))
    return pd.DataFrame(
        {
            "log_id": [f"log-{i:05d}" for i in range(n)],
            "timestamp": start + pd.to_timedelta(seconds, unit="s"),
            "question": [f"question {i}" for i in range(n)],
            "answer": [None if i % 5 == 0 else f"answer {i}" for i in range(n)],
            "retrieved_doc_ids": [["d1", "d2"] if i % 3 else ["unknown"] for i in range(n)],
            "latency_ms": np.round(rng.gamma(2.0, 400.0, n), 1),
            "retrieval_latency_ms": np.where(rng.random(n) < 0.1, np.nan, rng.gamma(2, 40, n)),
            "error": [None if rng.random() > 0.05 else "timeout" for _ in range(n)],
            "cost_usd": np.where(rng.random(n) < 0.2, np.nan, rng.random(n) / 100),
            "feedback": [FEEDBACK[i % len(FEEDBACK)] for i in range(n)],
        }
    )


CORPUS = pd.DataFrame({"doc_id": ["d1", "d2"], "title": ["T1", "T2"], "text": ["x", "y"]})


def numpy_figures(day_rows: pd.DataFrame) -> dict[str, float]:
    """The per-day figures computed directly with numpy on the day's rows (also the check of
    benchmarks/traffic_scale.py)."""
    latency = day_rows["latency_ms"].to_numpy()
    retrieval = day_rows["retrieval_latency_ms"].dropna().to_numpy()
    cost = day_rows["cost_usd"].dropna().to_numpy()
    satisfaction = satisfaction_scores(day_rows["feedback"].tolist())
    satisfaction = satisfaction[~np.isnan(satisfaction)]
    return {
        "volume": float(len(day_rows)),
        "latency_p50_ms": np.percentile(latency, 50),
        "latency_p95_ms": np.percentile(latency, 95),
        "latency_p99_ms": np.percentile(latency, 99),
        "retrieval_latency_p99_ms": np.percentile(retrieval, 99),
        "error_rate": day_rows["error"].notna().mean(),
        "avg_cost_usd": cost.mean(),
        "total_cost_usd": cost.sum(),
        "avg_satisfaction": satisfaction.mean(),
        "positive_feedback_rate": (satisfaction >= 0.75).mean(),
    }


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> tuple[pd.DataFrame, Path, Path]:
    frame = logs_frame()
    folder = tmp_path_factory.mktemp("logs")
    parquet = folder / "logs.parquet"
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), parquet, row_group_size=200)
    jsonl = folder / "logs.jsonl"
    records = frame.assign(timestamp=frame["timestamp"].map(pd.Timestamp.isoformat))
    with open(jsonl, "w") as handle:
        for record in records.to_dict("records"):
            clean = {
                k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in record.items()
            }
            handle.write(json.dumps(clean) + "\n")
    return frame, parquet, jsonl


def validated(frame: pd.DataFrame) -> pd.DataFrame:
    """What validation makes of the logs: feedback as satisfaction."""
    return frame.assign(feedback=satisfaction_scores(frame["feedback"].tolist()))


@pytest.mark.parametrize("source", ["parquet", "jsonl"])
@pytest.mark.parametrize("day", DAYS)
def test_streamed_day_equals_numpy_on_the_whole_day(
    logs: tuple[pd.DataFrame, Path, Path], source: str, day: date
) -> None:
    frame, parquet, jsonl = logs
    reader = parquet_day_interactions if source == "parquet" else jsonl_day_interactions
    quality = day_quality(reader(parquet if source == "parquet" else jsonl, day, TIMEZONE, 97))
    got = dict(zip(quality["metric"], quality["mean"], strict=True))
    day_rows = frame[on_date(frame["timestamp"], day, TIMEZONE)]
    assert 500 < len(day_rows) < 1000
    for metric, expected in numpy_figures(day_rows).items():
        assert got[metric] == pytest.approx(expected, rel=1e-12, abs=1e-15), metric
    whole = day_quality([day_interactions(validated(frame), day, TIMEZONE)])
    pd.testing.assert_frame_equal(quality, whole, rtol=1e-12)


def test_means_beyond_the_bootstrap_threshold_use_streamed_moments(
    logs: tuple[pd.DataFrame, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    frame, parquet, _ = logs
    monkeypatch.setattr(traffic, "NORMAL_APPROXIMATION_ABOVE", 50)
    quality = day_quality(parquet_day_interactions(parquet, DAYS[1], TIMEZONE, 64))
    cost = frame.loc[on_date(frame["timestamp"], DAYS[1], TIMEZONE), "cost_usd"].dropna()
    row = quality.set_index("metric").loc["avg_cost_usd"]
    low, high = bootstrap_ci(cost.to_numpy(), normal_above=50)
    assert row["count"] == len(cost)
    assert row["std"] == pytest.approx(cost.std(ddof=1), rel=1e-12)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((low, high), rel=1e-12)


@pytest.mark.parametrize("size", [0, 7, 10_000])
def test_judged_sample_streamed_equals_the_sample_of_the_whole_day(
    logs: tuple[pd.DataFrame, Path, Path], size: int
) -> None:
    frame, parquet, _ = logs
    whole_day = day_interactions(validated(frame), DAYS[2], TIMEZONE)
    expected = judged_sample(whole_day, CORPUS, size, seed=11)
    streamed = judged_sample_of_chunks(
        lambda: parquet_day_interactions(parquet, DAYS[2], TIMEZONE, 50, SAMPLED), CORPUS, size, 11
    )
    in_memory = judged_sample_of_chunks(
        lambda: frame_day_interactions(validated(frame), DAYS[2], TIMEZONE, 33), CORPUS, size, 11
    )
    assert len(expected) == min(size, len(expected)) if size < 10_000 else len(expected) > 100
    pd.testing.assert_frame_equal(streamed, expected)
    pd.testing.assert_frame_equal(in_memory, expected)


def test_day_bounds_are_the_local_calendar_day_across_a_dst_change() -> None:
    start, end = day_bounds(DAYS[0], TIMEZONE)
    assert end - start == pd.Timedelta(hours=25)
    stamps = pd.Series([start - pd.Timedelta("1ns"), start, end - pd.Timedelta("1ns"), end])
    assert on_date(stamps, DAYS[0], TIMEZONE).tolist() == [False, True, True, False]


def test_a_source_out_of_time_order_is_an_error(tmp_path: Path) -> None:
    frame = logs_frame(200).iloc[::-1]
    path = tmp_path / "logs.parquet"
    frame.to_parquet(path, index=False)
    with pytest.raises(ValueError, match="not in time order at log_id"):
        list(parquet_day_interactions(path, DAYS[1], TIMEZONE, 20))


@pytest.mark.parametrize("base", ["memory://traffic-streaming", "local"])
def test_stored_golden_logs_stream_a_day_locally_and_from_fsspec(tmp_path: Path, base: str) -> None:
    """What the traffic assets read: the golden dataset's stored logs (shuffled, no `log_id`,
    so stored in day order with row-number ids) streamed by day with pushdown, equal to
    `day_interactions` on the table held whole; on the local disk and on an fsspec store."""
    logs = logs_frame(600).drop(columns="log_id").sample(frac=1.0, random_state=1)
    dataset = GoldenDataset(version="v", queries=pd.DataFrame(), qrels=pd.DataFrame(), logs=logs)
    folder = UPath(base) / "golden" / "v" / "2026-11-02" if base != "local" else None
    folder = folder or UPath(tmp_path) / "golden" / "v" / "2026-11-02"
    write_tables_atomically(dataset.stored_tables(), folder)
    tables = StoredTables.open(folder)
    path, filesystem = tables.arrow_location("logs")
    assert (filesystem is None) == (base == "local")
    for day in DAYS:
        streamed = pd.concat(
            parquet_day_interactions(path, day, TIMEZONE, 64, filesystem=filesystem),
            ignore_index=True,
        )
        held = day_interactions(logs, day, TIMEZONE)
        scores = satisfaction_scores(held["feedback"].tolist())
        pd.testing.assert_frame_equal(streamed[held.columns], held.assign(feedback=scores))
