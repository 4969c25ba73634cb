"""The traffic tier in library form: one day of production interactions from `logs.*`.

A date partition holds the interactions whose `timestamp` falls on that date in the schedule's
timezone. Per interaction (long table, pairable day over day by metric):
`latency_ms` (total), `retrieval_latency_ms`, `generation_latency_ms`, `error` (1 when the
optional `error` column holds a message), `cost_usd` (the logged cost, else token counts priced
through litellm), `satisfaction` (0–1) and `positive_feedback` (0/1) from `feedback`.
Per day (quality rows): volume, latency p50/p95/p99, error rate, cost per query and in total,
mean satisfaction and the positive-feedback rate.

At production size a day is a stream: a source (`DAY_SOURCES`: Parquet with the day's filter
pushed down, JSONL, a `traces/` folder, or the in-memory `logs`) yields its interactions in
time-ordered chunks of the frame `day_interactions` gives, `TrafficDay` aggregates them and
`judged_sample_of_chunks` draws the judged sample in two passes, so the day is never held whole.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from statistics import NormalDist

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds
from pyarrow import json as pa_json

from rag_eval_pipeline.datasets.traces import trace_interactions
from rag_eval_pipeline.evaluation.summaries import QUALITY_COLUMNS, single_values
from rag_eval_pipeline.metrics.stats import NORMAL_APPROXIMATION_ABOVE, percentiles, summarize
from rag_eval_pipeline.metrics.traffic import (
    LATENCY_COLUMNS,
    LATENCY_PERCENTILES,
    latency_metric,
    on_date,
    positive_feedback,
    satisfaction_scores,
    time_ordered,
    token_costs,
)
from rag_eval_pipeline.storage.batches import CHUNK_ROWS, TableBatches
from rag_eval_pipeline.systems.retrievers import document_texts

TRAFFIC_TIER = "traffic"
TRAFFIC_SYSTEM = "production"
TRAFFIC_ITEM_COLUMNS = ["system", "log_id", "timestamp", "metric", "value"]
MEAN_METRICS = {
    "error": "error_rate",
    "cost_usd": "avg_cost_usd",
    "satisfaction": "avg_satisfaction",
    "positive_feedback": "positive_feedback_rate",
}


def replayed_on(timestamps: pd.Series, day: date, timezone: str) -> pd.Series:
    """Each timestamp moved to `day`, keeping its time of day in `timezone` (a replay of one
    typical day of traffic on any date); a missing timestamp stays missing."""
    local = pd.to_datetime(timestamps, utc=True).dt.tz_convert(timezone)
    time_of_day = local - local.dt.normalize()
    midnight = pd.Timestamp(day).tz_localize(timezone)
    return (midnight + time_of_day).dt.tz_convert("UTC")


def day_interactions(
    logs: pd.DataFrame | None, day: date, timezone: str, replay: bool = False
) -> pd.DataFrame:
    """The log rows whose `timestamp` is on `day` in `timezone`, in time order, with a
    `log_id` (the row number when the file has none). Rows without a timestamp are on no day.

    With `replay` (a version whose `dataset.yaml` sets `traffic_replay`), the logs are one
    typical day: every row is moved onto `day` at its time of day (:func:`replayed_on`)."""
    if logs is None or "timestamp" not in logs.columns:
        return pd.DataFrame(columns=["log_id", "timestamp"])
    logs = logs.reset_index(drop=True)
    if "log_id" not in logs.columns:
        logs = logs.assign(log_id=logs.index.astype(str))
    if replay:
        logs = logs.assign(timestamp=replayed_on(logs["timestamp"], day, timezone))
    return time_ordered(logs[on_date(logs["timestamp"], day, timezone)])


def interaction_costs(interactions: pd.DataFrame) -> np.ndarray:
    """Cost in USD per interaction: `cost_usd` where logged, else `model` + `prompt_tokens` +
    `completion_tokens` priced by :func:`token_costs`, else NaN."""
    cost = np.full(len(interactions), np.nan)
    if "cost_usd" in interactions.columns:
        cost = interactions["cost_usd"].to_numpy(dtype=float, na_value=np.nan)
    token_columns = {"model", "prompt_tokens", "completion_tokens"}
    if token_columns <= set(interactions.columns):
        priced = token_costs(
            interactions["model"].tolist(),
            interactions["prompt_tokens"].to_numpy(dtype=float, na_value=np.nan),
            interactions["completion_tokens"].to_numpy(dtype=float, na_value=np.nan),
        )
        cost = np.where(np.isnan(cost), priced, cost)
    return cost


def traffic_item_values(interactions: pd.DataFrame) -> pd.DataFrame:
    """Wide per-interaction values: `log_id`, `timestamp`, `volume` (1 per interaction) and
    one column per metric the logs carry."""
    values = pd.DataFrame(
        {
            "log_id": interactions["log_id"],
            "timestamp": interactions["timestamp"],
            "volume": np.ones(len(interactions)),
        }
    )
    for column in LATENCY_COLUMNS:
        if column in interactions.columns:
            values[column] = interactions[column].to_numpy(dtype=float, na_value=np.nan)
    if "error" in interactions.columns:
        values["error"] = interactions["error"].notna().to_numpy(dtype=float)
    cost = interaction_costs(interactions)
    if not np.isnan(cost).all():
        values["cost_usd"] = cost
    if "feedback" in interactions.columns:
        satisfaction = interactions["feedback"].to_numpy(dtype=float, na_value=np.nan)
        values["satisfaction"] = satisfaction
        values["positive_feedback"] = positive_feedback(satisfaction)
    return values


def traffic_items(values: pd.DataFrame) -> pd.DataFrame:
    """Long per-interaction table (`system, log_id, timestamp, metric, value`), NaN dropped."""
    metrics = [c for c in values.columns if c not in ("log_id", "timestamp")]
    long = values.melt(
        id_vars=["log_id", "timestamp"], value_vars=metrics, var_name="metric"
    ).dropna(subset=["value"])
    return long.assign(system=TRAFFIC_SYSTEM)[TRAFFIC_ITEM_COLUMNS].reset_index(drop=True)


def traffic_values(items: pd.DataFrame) -> pd.DataFrame:
    """The wide per-interaction values back from the long table of :func:`traffic_items`."""
    if items.empty:
        return pd.DataFrame(columns=["log_id", "volume"])
    wide = items.pivot_table(
        index="log_id", columns="metric", values="value", aggfunc="first", dropna=False
    )
    return wide.reset_index().rename_axis(columns=None)


def traffic_quality_rows(values: pd.DataFrame) -> pd.DataFrame:
    """The day's quality rows from its wide per-interaction values (:class:`TrafficDay`)."""
    day = TrafficDay()
    day.add_values(values)
    return day.quality_rows()


@dataclass
class _Moments:
    """Count, mean and sum of squared deviations of a stream (Chan et al.'s parallel merge)."""

    count: int = 0
    mean: float = 0.0
    squares: float = 0.0

    def add(self, values: np.ndarray) -> None:
        if not values.size:
            return
        count, mean = values.size, float(values.mean())
        squares = float(((values - mean) ** 2).sum())
        total = self.count + count
        delta = mean - self.mean
        self.squares += squares + delta * delta * self.count * count / total
        self.mean += delta * count / total
        self.count = total

    def summary(self, confidence: float = 0.95) -> dict[str, float | int]:
        """`summarize`'s columns with `bootstrap_ci`'s normal interval (count above
        `NORMAL_APPROXIMATION_ABOVE`, where that interval is the one it uses)."""
        std = math.sqrt(self.squares / (self.count - 1))
        half_width = NormalDist().inv_cdf(0.5 + confidence / 2.0) * std / math.sqrt(self.count)
        return {
            "mean": self.mean,
            "std": std,
            "count": self.count,
            "ci_low": self.mean - half_width,
            "ci_high": self.mean + half_width,
        }


class TrafficDay:
    """One day's quality rows, aggregated chunk by chunk of interactions.

    Rows: `volume`; `<latency>_p50_ms`/`_p95_ms`/`_p99_ms` (numpy linear percentiles, exact,
    over the interactions that logged it: the only per-interaction values kept, 8 bytes each);
    `error_rate`, `avg_cost_usd`, `avg_satisfaction`, `positive_feedback_rate` (means with
    95% CIs over the interactions that have the value: `summarize`'s bootstrap on the values
    up to `NORMAL_APPROXIMATION_ABOVE` of them, beyond that its normal interval from streamed
    moments, so memory does not grow with the day); `total_cost_usd` (sum of known costs).
    Equal to numpy on the whole day (sums in another order: within float rounding).
    """

    def __init__(self) -> None:
        self.volume = 0
        self.latencies: dict[str, list[np.ndarray]] = {column: [] for column in LATENCY_COLUMNS}
        self.moments = {metric: _Moments() for metric in MEAN_METRICS}
        self.kept: dict[str, list[np.ndarray] | None] = {metric: [] for metric in MEAN_METRICS}
        self.present: set[str] = set()
        self.total_cost = 0.0

    def add(self, interactions: pd.DataFrame) -> None:
        """Add a chunk of the day's interactions (the frame :func:`day_interactions` gives)."""
        self.add_values(traffic_item_values(interactions))

    def add_values(self, values: pd.DataFrame) -> None:
        """Add wide per-interaction values (:func:`traffic_item_values`)."""
        self.volume += len(values)
        for column, chunks in self.latencies.items():
            if column in values.columns:
                latency = values[column].to_numpy(dtype=float, na_value=np.nan)
                chunks.append(latency[~np.isnan(latency)])
        for metric, moments in self.moments.items():
            if metric not in values.columns:
                continue
            self.present.add(metric)
            known = values[metric].to_numpy(dtype=float, na_value=np.nan)
            known = known[~np.isnan(known)]
            moments.add(known)
            if metric == "cost_usd":
                self.total_cost += float(known.sum())
            kept = self.kept[metric]
            if kept is not None:
                kept.append(known)
                self.kept[metric] = kept if moments.count <= NORMAL_APPROXIMATION_ABOVE else None

    def quality_rows(self) -> pd.DataFrame:
        """The day's quality rows (`QUALITY_COLUMNS`)."""
        volume = self.volume
        rows = [single_values({"volume": float(volume)}, TRAFFIC_TIER, TRAFFIC_SYSTEM, volume)]
        for column, prefix in LATENCY_COLUMNS.items():
            latency = np.concatenate(self.latencies[column]) if self.latencies[column] else []
            if len(latency):
                values = percentiles(latency, LATENCY_PERCENTILES)
                rows.append(
                    single_values(
                        {latency_metric(prefix, q): values[f"p{q}"] for q in LATENCY_PERCENTILES},
                        TRAFFIC_TIER,
                        TRAFFIC_SYSTEM,
                        count=len(latency),
                    )
                )
        seen = [m for m in MEAN_METRICS if m in self.present and volume]
        if seen:
            rows.append(
                pd.DataFrame([self._mean_row(metric) for metric in seen]).assign(
                    tier=TRAFFIC_TIER, system=TRAFFIC_SYSTEM, n_errors=0, error_rate=0.0
                )
            )
        if "cost_usd" in self.present:
            count = self.moments["cost_usd"].count
            rows.append(
                single_values(
                    {"total_cost_usd": self.total_cost}, TRAFFIC_TIER, TRAFFIC_SYSTEM, count
                )
            )
        return pd.concat(rows, ignore_index=True)[QUALITY_COLUMNS]

    def _mean_row(self, metric: str) -> dict[str, float | int | str]:
        kept = self.kept[metric]
        if kept is None:
            return {"metric": MEAN_METRICS[metric], **self.moments[metric].summary()}
        summary = summarize(pd.DataFrame({metric: np.concatenate(kept)}), [metric])
        return {**summary.iloc[0].to_dict(), "metric": MEAN_METRICS[metric]}


SAMPLE_COLUMNS = ["system", "query_id", "question", "answer", "contexts"]


def judged_sample(
    interactions: pd.DataFrame, corpus: pd.DataFrame | None, size: int, seed: int
) -> pd.DataFrame:
    """:func:`judged_sample_of_chunks` of the day's interactions held in one frame."""
    return judged_sample_of_chunks(lambda: iter([interactions]), corpus, size, seed)


def judged_sample_of_chunks(
    chunks: Callable[[], Iterator[pd.DataFrame]],
    corpus: pd.DataFrame | None,
    size: int,
    seed: int,
) -> pd.DataFrame:
    """A seeded sample of the day's interactions for the reference-free judge metrics.

    Eligible: interactions with an `answer` and retrieved context, either logged `contexts`
    or `retrieved_doc_ids` found in the corpus (their `title. text`, as every tier reads them,
    in retrieved order). Draws `size` of them without replacement (numpy
    `default_rng(seed).choice` over the eligible ones in time order), all when there are
    fewer; rows come back in time order as `system, query_id (= log_id), question, answer,
    contexts`. `chunks()` yields the day's interactions in time order (:func:`day_interactions`
    or a source of :data:`DAY_SOURCES`) and is called twice: once to find the eligible
    positions, once to fetch the drawn rows, so the day is never held whole.
    """
    texts = (
        {} if corpus is None else dict(zip(corpus["doc_id"], document_texts(corpus), strict=True))
    )
    known_ids = pd.Index(list(texts), dtype=object)
    eligible, offset = [], 0
    for chunk in chunks():
        eligible.append(offset + np.flatnonzero(_is_eligible(chunk, known_ids)))
        offset += len(chunk)
    positions = np.concatenate(eligible) if eligible else np.zeros(0, np.int64)
    if len(positions) > size:
        drawn = np.random.default_rng(seed).choice(len(positions), size, replace=False)
        positions = positions[np.sort(drawn)]
    picked, offset = [], 0
    for chunk in chunks():
        wanted = positions[(positions >= offset) & (positions < offset + len(chunk))] - offset
        if wanted.size:
            picked.append(sample_candidates(chunk.iloc[wanted], texts))
        offset += len(chunk)
    if not picked:
        return pd.DataFrame(columns=SAMPLE_COLUMNS)
    return pd.concat(picked, ignore_index=True)


def sample_candidates(interactions: pd.DataFrame, texts: dict[str, str]) -> pd.DataFrame:
    """`SAMPLE_COLUMNS` of every interaction (contexts empty where none is known)."""
    if interactions.empty or "answer" not in interactions.columns:
        return pd.DataFrame(columns=SAMPLE_COLUMNS)
    logged = (
        interactions["contexts"]
        if "contexts" in interactions.columns
        else pd.Series([None] * len(interactions), index=interactions.index)
    )
    contexts = [
        list(own)
        if isinstance(own, list | np.ndarray) and len(own)
        else [texts[d] for d in (ids if isinstance(ids, list | np.ndarray) else []) if d in texts]
        for own, ids in zip(logged, interactions["retrieved_doc_ids"], strict=True)
    ]
    return pd.DataFrame(
        {
            "system": TRAFFIC_SYSTEM,
            "query_id": interactions["log_id"].to_numpy(),
            "question": interactions["question"].to_numpy(),
            "answer": interactions["answer"].to_numpy(),
            "contexts": contexts,
        }
    )


def _is_eligible(interactions: pd.DataFrame, known_ids: pd.Index) -> np.ndarray:
    """Vectorized: the interaction has an `answer`, and logged `contexts` or a retrieved id in
    `known_ids` (what makes :func:`sample_candidates` give it non-empty contexts)."""
    if interactions.empty or "answer" not in interactions.columns:
        return np.zeros(len(interactions), dtype=bool)

    def lists(column: str) -> pd.Series:
        values = interactions[column].reset_index(drop=True)
        return values.where(values.map(lambda v: isinstance(v, list | np.ndarray)))

    has_context = np.zeros(len(interactions), dtype=bool)
    if "contexts" in interactions.columns:
        has_context |= lists("contexts").map(len, na_action="ignore").gt(0).to_numpy()
    retrieved = lists("retrieved_doc_ids").explode()
    found = retrieved.isin(known_ids).groupby(level=0).any()
    has_context |= found.reindex(range(len(interactions)), fill_value=False).to_numpy(bool)
    return interactions["answer"].notna().to_numpy() & has_context


def day_bounds(day: date, timezone: str) -> tuple[pd.Timestamp, pd.Timestamp]:
    """The UTC instants [start, end) of `day` in `timezone`: a timestamp is on the day
    (:func:`~rag_eval_pipeline.metrics.traffic.on_date`) exactly when start ≤ it < end."""
    start, end = (
        pd.Timestamp(d).tz_localize(timezone, ambiguous=True, nonexistent="shift_forward")
        for d in (day, day + timedelta(days=1))
    )
    return start.tz_convert("UTC"), end.tz_convert("UTC")


def frame_day_interactions(
    logs: pd.DataFrame | None,
    day: date,
    timezone: str,
    rows: int = CHUNK_ROWS,
    replay: bool = False,
) -> Iterator[pd.DataFrame]:
    """The in-memory source: :func:`day_interactions` of a validated `logs` table, in slices."""
    return TableBatches.of(day_interactions(logs, day, timezone, replay), rows).frames()


def parquet_day_interactions(
    path: str | Path,
    day: date,
    timezone: str,
    rows: int = CHUNK_ROWS,
    columns: Sequence[str] | None = None,
    filesystem: object | None = None,
) -> Iterator[pd.DataFrame]:
    """The Parquet source: the interactions of `day` from a logs file (or a folder of them),
    on the local disk or on `filesystem` (an fsspec or Arrow filesystem, e.g. a UPath's `fs`).

    The filter start ≤ `timestamp` < end (:func:`day_bounds`) is pushed down to the row
    groups, so the other days' row groups are skipped unread; only `columns` are read (all
    when None; `log_id` and `timestamp` always); the rows come `rows` at a time, in file order.
    `timestamp` is a Parquet timestamp column, the other columns as in `logs.*` (`log_id`
    required, `feedback` as logged: thumbs or 1-5 ratings).
    """
    logs = ds.dataset(path, format="parquet", filesystem=filesystem)
    start, end = day_bounds(day, timezone)
    timestamp = ds.field("timestamp")
    on_day = (timestamp >= pa.scalar(start)) & (timestamp < pa.scalar(end))
    if columns is not None:
        wanted = {"log_id", "timestamp", *columns}
        columns = [name for name in logs.schema.names if name in wanted]
    batches = logs.to_batches(columns=columns, filter=on_day, batch_size=rows)
    return _ordered_day(batch.to_pandas() for batch in batches)


def jsonl_day_interactions(
    path: str | Path, day: date, timezone: str, rows: int = CHUNK_ROWS
) -> Iterator[pd.DataFrame]:
    """The JSONL source: the interactions of `day` from a `logs.jsonl` read block by block
    (Arrow's streaming JSON reader; text has no statistics to skip by, so every block is
    parsed and filtered). Fields as in `logs.*`, `log_id` required."""
    start, end = day_bounds(day, timezone)

    def on_day() -> Iterator[pd.DataFrame]:
        reader = pa_json.open_json(path, read_options=pa_json.ReadOptions(block_size=rows * 256))
        for batch in reader:
            frame = batch.to_pandas()
            stamps = pd.to_datetime(frame["timestamp"], utc=True, format="ISO8601")
            yield frame[((stamps >= start) & (stamps < end)).to_numpy()]

    return _ordered_day(on_day())


def _ordered_day(frames: Iterable[pd.DataFrame]) -> Iterator[pd.DataFrame]:
    """Coerce the traffic columns as validation does and check the time order.

    The day's interactions must come in (`timestamp`, `log_id`) order, as logs are appended:
    the order :func:`day_interactions` sorts a frame into, which the judged sample's draw
    depends on. A chunk out of order raises `ValueError` naming the first offending log_id.
    """
    previous: tuple[int, str] | None = None
    for frame in frames:
        if frame.empty:
            continue
        if "log_id" not in frame.columns:
            raise ValueError("a streamed logs source needs a 'log_id' column")
        frame = frame.reset_index(drop=True)
        frame["log_id"] = frame["log_id"].astype(str)
        frame["timestamp"] = pd.to_datetime(frame["timestamp"], utc=True, format="ISO8601")
        if "feedback" in frame.columns and not pd.api.types.is_float_dtype(frame["feedback"]):
            codes, distinct = pd.factorize(frame["feedback"])  # a few distinct values
            scores = np.append(satisfaction_scores(distinct.tolist()), np.nan)
            frame["feedback"] = scores[codes]  # code -1 (missing) is the appended NaN
        stamps = pd.DatetimeIndex(frame["timestamp"]).as_unit("ns").asi8
        ids = frame["log_id"].to_numpy(dtype=object)
        if previous is not None:
            stamps = np.concatenate([[previous[0]], stamps])
            ids = np.concatenate([np.array([previous[1]], dtype=object), ids])
        later = stamps[1:] > stamps[:-1]
        tied = (stamps[1:] == stamps[:-1]) & (ids[1:] >= ids[:-1])
        out_of_order = np.flatnonzero(~(later | tied))
        if out_of_order.size:
            raise ValueError(
                f"logs not in time order at log_id {ids[out_of_order[0] + 1]!r}: a streamed "
                "source lists each day's interactions by (timestamp, log_id); a golden_dataset "
                "partition stored before logs were kept in that order needs materializing again"
            )
        previous = (int(stamps[-1]), str(ids[-1]))
        yield frame


def traces_day_interactions(
    folder: str | Path, day: date, timezone: str, rows: int = CHUNK_ROWS
) -> Iterator[pd.DataFrame]:
    """The traces source: the interactions of `day` from a version folder's `traces/`, the
    traces whose root span starts on the day
    (:func:`~rag_eval_pipeline.datasets.traces.trace_interactions`: spans read file by file and
    grouped by trace, only those near the day kept)."""
    start, end = day_bounds(day, timezone)
    interactions = trace_interactions(Path(folder), (start.value, end.value))
    return _ordered_day(TableBatches.of(interactions, rows).frames())


DAY_SOURCES = {".parquet": parquet_day_interactions, ".jsonl": jsonl_day_interactions}
"""Streamed logs sources by file suffix: `(path, day, timezone, rows)` → the day's interactions
in time-ordered chunks of the frame the traffic tier consumes (:func:`day_interactions`'s)."""


def day_quality(chunks: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """The day's quality rows (:class:`TrafficDay`) from its interactions, chunk by chunk."""
    day = TrafficDay()
    for chunk in chunks:
        day.add(chunk)
    return day.quality_rows()
