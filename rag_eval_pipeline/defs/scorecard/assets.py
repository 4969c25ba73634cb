"""The `evaluation_scorecard` asset: one row per (tier, system, metric) for the partition.

Its `cost` tier is what the run's LLM calls cost up to the scorecard (`evaluation.cost`, from the
run's materializations: `defs.shared.llm_metadata.run_llm_usage`); the model bridge's calls, made
after it by `metric_regressions`, are in the run's `rag_eval/cost_usd` tag (`defs.outcome.cost`).
"""

import pandas as pd
from dagster import AssetExecutionContext, Config, MetadataValue

from rag_eval_pipeline.defs.dataset.assets import DatasetTables, as_dataset
from rag_eval_pipeline.defs.scorecard import asset
from rag_eval_pipeline.defs.shared.llm_metadata import run_llm_usage
from rag_eval_pipeline.defs.shared.metadata import (
    headline_metadata,
    markdown_table,
    plotted_key,
    text_metadata,
)
from rag_eval_pipeline.defs.shared.partitions import partition_parts
from rag_eval_pipeline.evaluation.cost import cost_quality, unpriced_models
from rag_eval_pipeline.evaluation.scorecard import NEEDS_ATTENTION, Thresholds, build_scorecard
from rag_eval_pipeline.evaluation.summaries import single_values
from rag_eval_pipeline.judges.criteria import configured_criteria
from rag_eval_pipeline.settings import THRESHOLDS_FILE

HEADLINE_METRICS = (
    "hit_rate@1",
    "mrr",
    "ndcg@10",
    "avg_faithfulness",
    "avg_answer_relevance",
    "avg_e2e_score",
    "avg_semantic_similarity",
    "silhouette_score",
    "consistency_score",
    "f1_score",
    "cache_hit_rate",
    "avg_composite",
    "avg_context_relevance",
    "volume",
    "avg_satisfaction",
    "avg_cost_usd",
    "cost_usd",
)


class ScorecardConfig(Config):
    """Where the threshold bands and regression tolerances are read from."""

    thresholds_file: str = str(THRESHOLDS_FILE)


def headline_values(scorecard: pd.DataFrame, version: str) -> dict[str, float]:
    """`<version>/<tier>/<system>/<metric>` → value for the headline metrics (plotted by the
    UI, one series per version: `defs.shared.metadata.plotted_key`)."""
    rows = scorecard[scorecard["metric"].isin(HEADLINE_METRICS)]
    return {
        plotted_key(version, r.tier, r.system, r.metric): float(r.value) for r in rows.itertuples()
    }


@asset(
    description=(
        "Every tier's metrics for the partition, one row per tier/system/metric, with the "
        "95% CI, error counts, threshold band and direction of 'better'."
    ),
)
def evaluation_scorecard(
    context: AssetExecutionContext,
    config: ScorecardConfig,
    golden_dataset: DatasetTables,
    embedding_quality: pd.DataFrame,
    retrieval_quality: pd.DataFrame,
    generation_quality: pd.DataFrame,
    e2e_quality: pd.DataFrame,
    system_retrieval_quality: pd.DataFrame,
    judge_reliability: pd.DataFrame,
    judge_corrected_quality: pd.DataFrame,
    show_judge_quality: pd.DataFrame,
    ux_metrics: pd.DataFrame,
    traffic_quality: pd.DataFrame,
) -> pd.DataFrame:
    version, day = partition_parts(context)
    stats = as_dataset(context, golden_dataset).statistics()
    dataset_rows = single_values({k: float(v) for k, v in stats.items()}, "dataset", version, 1)
    usage = run_llm_usage(context.instance, context.run_id)
    qualities = [
        dataset_rows,
        embedding_quality,
        retrieval_quality,
        system_retrieval_quality,
        generation_quality,
        e2e_quality,
        judge_reliability,
        judge_corrected_quality,
        show_judge_quality,
        ux_metrics,
        traffic_quality,
        cost_quality(usage),
    ]
    thresholds = Thresholds.load(config.thresholds_file).with_defaults(
        {c.name: c.rule() for c in configured_criteria()}
    )
    scorecard = build_scorecard(qualities, version, day, thresholds)
    attention = scorecard[scorecard["band"] == NEEDS_ATTENTION]
    shown = ["tier", "system", "metric", "value", "ci_low", "ci_high", "count", "band"]
    unpriced = unpriced_models(usage)
    context.add_output_metadata(
        {
            **(
                {"cost": text_metadata(f"unknown: no price for {', '.join(unpriced)}")}
                if unpriced
                else {}
            ),
            **headline_metadata(headline_values(scorecard, version)),
            "n_metrics": MetadataValue.int(len(scorecard)),
            "n_needs_attention": MetadataValue.int(len(attention)),
            "scorecard": MetadataValue.md(markdown_table(scorecard[shown], max_rows=400)),
        }
    )
    return scorecard
