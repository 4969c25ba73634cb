"""The traffic tier: production interactions of the partition's date, from `logs.*`.

The date partition holds the interactions logged on that date in the schedule's timezone
(`RAG_EVAL_SCHEDULE_TIMEZONE`), so a version whose logs span many days feeds many partitions
and a backfill over those dates builds the day-by-day history.
"""

from datetime import date

import pandas as pd
from dagster import AssetExecutionContext, Config, MetadataValue, asset

from rag_eval_pipeline.datasets.golden import GoldenDataset
from rag_eval_pipeline.defs.dataset.assets import DatasetTables, as_dataset
from rag_eval_pipeline.defs.dataset.schedules import SCHEDULE_TIMEZONE
from rag_eval_pipeline.defs.llm_metadata import criteria_metadata, llm_usage_metadata
from rag_eval_pipeline.defs.metadata import summary_metadata
from rag_eval_pipeline.defs.partitions import evaluation_partitions, partition_parts
from rag_eval_pipeline.defs.pools import LLM_JUDGE_POOL
from rag_eval_pipeline.defs.resources import EmbedderResource, LLMResource
from rag_eval_pipeline.defs.skipping import skipped
from rag_eval_pipeline.evaluation.generation import (
    JUDGMENT_COLUMNS,
    context_relevance_rows,
    judge_answers,
    judge_criteria,
)
from rag_eval_pipeline.evaluation.summaries import empty_quality, summarize_judgments
from rag_eval_pipeline.evaluation.traffic import (
    TRAFFIC_ITEM_COLUMNS,
    TRAFFIC_TIER,
    day_interactions,
    has_traffic,
    judged_sample,
    traffic_item_values,
    traffic_items,
    traffic_quality_rows,
    traffic_values,
)
from rag_eval_pipeline.judges.criteria import configured_criteria

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

NO_TRAFFIC = "this version has no logs.* with a timestamp column"


TRAFFIC_JUDGE_METRICS = ("faithfulness", "answer_relevance")


class TrafficConfig(Config):
    """The timezone whose calendar day a partition's date is (default: the schedule's)."""

    timezone: str = SCHEDULE_TIMEZONE


class TrafficJudgmentConfig(TrafficConfig):
    """How many of the day's interactions the judge scores (all when fewer), and the seed."""

    sample_size: int = 50
    seed: int = 0


def _interactions(
    context: AssetExecutionContext, dataset: GoldenDataset, timezone: str
) -> pd.DataFrame:
    _, day = partition_parts(context)
    return day_interactions(
        dataset.logs, date.fromisoformat(day), timezone, dataset.manifest.traffic_replay
    )


@asset(
    partitions_def=evaluation_partitions,
    group_name="6_traffic",
    kinds={"pandas", "parquet"},
    description=(
        "One row per (production interaction of the day, metric): latency (total, retrieval, "
        "generation), error, cost in USD, satisfaction and positive feedback, from `logs.*`."
    ),
)
def traffic_metrics(
    context: AssetExecutionContext,
    config: TrafficConfig,
    golden_dataset: DatasetTables,
) -> pd.DataFrame:
    dataset = as_dataset(context, golden_dataset)
    if not has_traffic(dataset.logs):
        return skipped(context, NO_TRAFFIC, pd.DataFrame(columns=TRAFFIC_ITEM_COLUMNS))
    interactions = _interactions(context, dataset, config.timezone)
    items = traffic_items(traffic_item_values(interactions))
    context.add_output_metadata(
        {
            "volume": MetadataValue.int(len(interactions)),
            "timezone": MetadataValue.text(config.timezone),
            "n_rows": MetadataValue.int(len(items)),
        }
    )
    return items


@asset(
    pool=LLM_JUDGE_POOL,
    partitions_def=evaluation_partitions,
    group_name="6_traffic",
    kinds={"pandas", "parquet"},
    description=(
        "Reference-free metrics on a seeded sample of the day's interactions (default 50, all "
        "when fewer) that logged an answer and contexts or retrieved ids: judge faithfulness "
        "and answer relevance (cached like every judgment), context relevance."
    ),
)
def traffic_judgments(
    context: AssetExecutionContext,
    config: TrafficJudgmentConfig,
    golden_dataset: DatasetTables,
    embedder: EmbedderResource,
    judge_llm: LLMResource,
) -> pd.DataFrame:
    dataset = as_dataset(context, golden_dataset)
    empty = pd.DataFrame(columns=JUDGMENT_COLUMNS)
    if not has_traffic(dataset.logs):
        return skipped(context, NO_TRAFFIC, empty)
    interactions = _interactions(context, dataset, config.timezone)
    sample = judged_sample(interactions, dataset.corpus, config.sample_size, config.seed)
    if sample.empty:
        return skipped(context, "no interaction of the day logged an answer and contexts", empty)
    model = embedder.get()
    judge, client = judge_llm.judge(model)
    custom, not_computed = judge_criteria(sample, judge, configured_criteria("traffic"))
    judgments = pd.concat(
        [
            judge_answers(sample, judge, TRAFFIC_JUDGE_METRICS),
            context_relevance_rows(sample, model),
            custom,
        ],
        ignore_index=True,
    )
    context.add_output_metadata(
        {
            **criteria_metadata(not_computed),
            "n_interactions": MetadataValue.int(len(interactions)),
            "n_sampled": MetadataValue.int(len(sample)),
            "n_errors": MetadataValue.int(int(judgments["error"].notna().sum())),
            **llm_usage_metadata("judge", judge.judge_model, client),
        }
    )
    return judgments


@asset(
    partitions_def=evaluation_partitions,
    group_name="6_traffic",
    kinds={"pandas", "parquet"},
    description=(
        "The day's production traffic: volume, latency p50/p95/p99, error rate, cost per "
        "query and total, user satisfaction and positive-feedback rate; judge faithfulness, "
        "answer relevance and context relevance on the day's sample."
    ),
)
def traffic_quality(
    context: AssetExecutionContext,
    golden_dataset: DatasetTables,
    traffic_metrics: pd.DataFrame,
    traffic_judgments: pd.DataFrame,
) -> pd.DataFrame:
    if not has_traffic(as_dataset(context, golden_dataset).logs):
        return skipped(context, NO_TRAFFIC, empty_quality())
    quality = pd.concat(
        [
            traffic_quality_rows(traffic_values(traffic_metrics)),
            summarize_judgments(traffic_judgments, TRAFFIC_TIER),
        ],
        ignore_index=True,
    )
    context.add_output_metadata(summary_metadata(quality, PLOTTED_METRICS))
    return quality
