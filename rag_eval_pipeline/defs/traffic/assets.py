"""The traffic tier: production interactions of the partition's date, from `logs.*` or
`traces/` (read as logs, docs/traces.md), streamed by day from the stored golden dataset.

The date partition holds the interactions logged on that date in the schedule's timezone
(`RAG_EVAL_SCHEDULE_TIMEZONE`), so a version whose logs span many days feeds many partitions
and a backfill over those dates builds the day-by-day history.
"""

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date

import pandas as pd
from dagster import AssetExecutionContext, Config, MetadataValue

from rag_eval_pipeline.datasets.manifest import DatasetManifest
from rag_eval_pipeline.defs.dataset.schedules import SCHEDULE_TIMEZONE
from rag_eval_pipeline.defs.runs.pools import LLM_JUDGE_POOL
from rag_eval_pipeline.defs.shared.llm_metadata import criteria_metadata, llm_usage_metadata
from rag_eval_pipeline.defs.shared.metadata import summary_metadata, text_metadata
from rag_eval_pipeline.defs.shared.partitions import partition_parts
from rag_eval_pipeline.defs.shared.resources import EmbedderResource, LLMResource
from rag_eval_pipeline.defs.shared.skipping import skipped
from rag_eval_pipeline.defs.traffic import asset
from rag_eval_pipeline.evaluation.generation import (
    JUDGMENT_COLUMNS,
)
from rag_eval_pipeline.evaluation.summaries import empty_quality, summarize_judgments
from rag_eval_pipeline.evaluation.traffic import (
    TRAFFIC_ITEM_COLUMNS,
    TRAFFIC_TIER,
    frame_day_interactions,
    judged_sample_of_chunks,
    parquet_day_interactions,
    traffic_item_values,
    traffic_items,
    traffic_quality_rows,
    traffic_values,
)
from rag_eval_pipeline.evaluation.traffic_sample import judge_sample
from rag_eval_pipeline.storage.parquet import StoredTables

PLOTTED_METRICS = (
    "volume",
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "error_rate",
    "avg_cost_usd",
    "total_cost_usd",
    "avg_satisfaction",
    "avg_faithfulness",
    "avg_answer_relevance",
    "avg_context_relevance",
)

NO_TRAFFIC = "this version has no logs.* with a timestamp column, and no traces/"
SAMPLED_COLUMNS = ("question", "answer", "contexts", "retrieved_doc_ids")


class TrafficConfig(Config):
    """The timezone whose calendar day a partition's date is (default: the schedule's)."""

    timezone: str = SCHEDULE_TIMEZONE


class TrafficJudgmentConfig(TrafficConfig):
    """How many of the day's interactions the judge scores (all when fewer), and the seed."""

    sample_size: int = 50
    seed: int = 0


@dataclass(frozen=True)
class DayTraffic:
    """The partition's day of production interactions, read from the stored `golden_dataset`
    logs as a stream of time-ordered chunks (re-readable: the judged sample reads it twice).

    The stored logs are in day order (`GoldenDataset.stored_tables`), so the day's filter is
    pushed down to their Parquet row groups (`parquet_day_interactions`) and the day is never
    held whole; a version whose logs are one replayed typical day (`traffic_replay`) reads that
    day whole and moves it onto the date.
    """

    tables: StoredTables
    day: date
    timezone: str

    @staticmethod
    def of(context: AssetExecutionContext, tables: StoredTables, timezone: str) -> "DayTraffic":
        _, day = partition_parts(context)
        return DayTraffic(tables, date.fromisoformat(day), timezone)

    @property
    def present(self) -> bool:
        """The version logs production traffic with timestamps (the traffic tier applies)."""
        return "timestamp" in self.tables.columns("logs")

    def chunks(self, columns: Sequence[str] | None = None) -> Iterator[pd.DataFrame]:
        """The day's interactions in time-ordered chunks (only `columns` when given)."""
        manifest = DatasetManifest.from_frame(self.tables.read("manifest"))
        if manifest.traffic_replay:
            logs = self.tables.read("logs")
            return frame_day_interactions(logs, self.day, self.timezone, replay=True)
        path, filesystem = self.tables.arrow_location("logs")
        return parquet_day_interactions(
            path, self.day, self.timezone, columns=columns, filesystem=filesystem
        )


@asset(
    description=(
        "One row per (production interaction of the day, metric): latency (total, retrieval, "
        "generation), error, cost in USD, satisfaction and positive feedback, from `logs.*` or "
        "`traces/`, the day streamed from the stored logs."
    ),
)
def traffic_metrics(
    context: AssetExecutionContext,
    config: TrafficConfig,
    golden_dataset: StoredTables,
) -> pd.DataFrame:
    traffic = DayTraffic.of(context, golden_dataset, config.timezone)
    if not traffic.present:
        return skipped(context, NO_TRAFFIC, pd.DataFrame(columns=TRAFFIC_ITEM_COLUMNS))
    volume, frames = 0, []
    for chunk in traffic.chunks():
        volume += len(chunk)
        frames.append(traffic_items(traffic_item_values(chunk)))
    items = (
        pd.concat(frames, ignore_index=True)
        if frames
        else pd.DataFrame(columns=TRAFFIC_ITEM_COLUMNS)
    )
    context.add_output_metadata(
        {
            "volume": MetadataValue.int(volume),
            "timezone": text_metadata(config.timezone),
            "n_rows": MetadataValue.int(len(items)),
        }
    )
    return items


@asset(
    pool=LLM_JUDGE_POOL,
    description=(
        "Reference-free metrics on a seeded sample of the day's interactions (default 50, all "
        "when fewer) that logged an answer and contexts or retrieved ids: judge faithfulness "
        "and answer relevance (cached like every judgment), context relevance."
    ),
)
def traffic_judgments(
    context: AssetExecutionContext,
    config: TrafficJudgmentConfig,
    golden_dataset: StoredTables,
    embedder: EmbedderResource,
    judge_llm: LLMResource,
) -> pd.DataFrame:
    traffic = DayTraffic.of(context, golden_dataset, config.timezone)
    empty = pd.DataFrame(columns=JUDGMENT_COLUMNS)
    if not traffic.present:
        return skipped(context, NO_TRAFFIC, empty)
    sample = judged_sample_of_chunks(
        lambda: traffic.chunks(SAMPLED_COLUMNS),
        golden_dataset.read("corpus"),
        config.sample_size,
        config.seed,
    )
    if sample.empty:
        return skipped(context, "no interaction of the day logged an answer and contexts", empty)
    model = embedder.get()
    judge, client = judge_llm.judge(model)
    judgments, not_computed = judge_sample(sample, judge, model)
    context.add_output_metadata(
        {
            **criteria_metadata(not_computed),
            "n_sampled": MetadataValue.int(len(sample)),
            "n_errors": MetadataValue.int(int(judgments["error"].notna().sum())),
            **llm_usage_metadata("judge", judge.judge_model, client),
        }
    )
    return judgments


@asset(
    description=(
        "The day's production traffic: volume, latency p50/p95/p99, error rate, cost per "
        "query and total, user satisfaction and positive-feedback rate; judge faithfulness, "
        "answer relevance and context relevance on the day's sample."
    ),
)
def traffic_quality(
    context: AssetExecutionContext,
    golden_dataset: StoredTables,
    traffic_metrics: pd.DataFrame,
    traffic_judgments: pd.DataFrame,
) -> pd.DataFrame:
    if not DayTraffic.of(context, golden_dataset, SCHEDULE_TIMEZONE).present:
        return skipped(context, NO_TRAFFIC, empty_quality())
    quality = pd.concat(
        [
            traffic_quality_rows(traffic_values(traffic_metrics)),
            summarize_judgments(traffic_judgments, TRAFFIC_TIER),
        ],
        ignore_index=True,
    )
    context.add_output_metadata(
        summary_metadata(quality, partition_parts(context)[0], PLOTTED_METRICS)
    )
    return quality
