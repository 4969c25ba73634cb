"""Asset checks: threshold bands and regressions on the scorecard, judge error rates on tiers.

Every check is partitioned like its asset, so it evaluates only the partition just
materialized, and has WARN severity: a failing check flags the partition in the UI (and feeds
the regression sensor's alerts) without failing the run.
"""

import warnings

import pandas as pd
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetKey,
    MetadataValue,
    PreviewWarning,
    asset_check,
)

from rag_eval_pipeline.assets.scorecard import evaluation_scorecard
from rag_eval_pipeline.evaluation.alerts import regressions_for
from rag_eval_pipeline.evaluation.scorecard import NEEDS_ATTENTION
from rag_eval_pipeline.metadata import markdown_table
from rag_eval_pipeline.partitions import DATASET_VERSION, DATE, evaluation_partitions
from rag_eval_pipeline.resources import BaselineResource, WarehouseResource

MAX_JUDGE_ERROR_RATE = 0.05

warnings.filterwarnings(
    "ignore", message="Specifying a partitions_def on an AssetCheckSpec", category=PreviewWarning
)


@asset_check(
    asset=evaluation_scorecard,
    partitions_def=evaluation_partitions,
    description="Every banded metric is at least 'good' (WARN lists those needing attention).",
)
def scorecard_thresholds(
    context: AssetCheckExecutionContext, evaluation_scorecard: pd.DataFrame
) -> AssetCheckResult:
    attention = evaluation_scorecard[evaluation_scorecard["band"] == NEEDS_ATTENTION]
    shown = attention[["tier", "system", "metric", "value"]]
    return AssetCheckResult(
        passed=attention.empty,
        severity=AssetCheckSeverity.WARN,
        metadata={
            "n_needs_attention": MetadataValue.int(len(attention)),
            "needs_attention": MetadataValue.md(markdown_table(shown)),
        },
    )


@asset_check(
    asset=evaluation_scorecard,
    partitions_def=evaluation_partitions,
    description=(
        "No metric regressed against the baseline (previous date by default): a drop beyond "
        "the metric's tolerance in the bad direction and outside the bootstrap CI."
    ),
)
def scorecard_regressions(
    context: AssetCheckExecutionContext,
    evaluation_scorecard: pd.DataFrame,
    warehouse: WarehouseResource,
    baseline: BaselineResource,
) -> AssetCheckResult:
    keys = context.partition_key.keys_by_dimension  # type: ignore[attr-defined]
    chosen = baseline.select(warehouse.store(), keys[DATASET_VERSION], keys[DATE])
    regressions = regressions_for(evaluation_scorecard, chosen)
    shown = regressions[["tier", "system", "metric", "baseline_value", "value", "relative_change"]]
    return AssetCheckResult(
        passed=regressions.empty,
        severity=AssetCheckSeverity.WARN,
        metadata={
            "baseline": MetadataValue.text(
                f"{chosen.version} {chosen.date}" if chosen else "none yet (first evaluation)"
            ),
            "n_regressions": MetadataValue.int(len(regressions)),
            "regressions": MetadataValue.md(markdown_table(shown)),
        },
    )


def judge_error_rate_check(asset_name: str) -> AssetChecksDefinition:
    """A check that the judgments of `asset_name` have at most 5% error rows."""

    @asset_check(
        asset=AssetKey(asset_name),
        name=f"{asset_name}_error_rate",
        partitions_def=evaluation_partitions,
        description=f"At most {MAX_JUDGE_ERROR_RATE:.0%} of the judgments are error rows.",
    )
    def _check(context: AssetCheckExecutionContext, judgments: pd.DataFrame) -> AssetCheckResult:
        rate = float(judgments["error"].notna().mean()) if len(judgments) else 0.0
        return AssetCheckResult(
            passed=rate <= MAX_JUDGE_ERROR_RATE,
            severity=AssetCheckSeverity.WARN,
            metadata={
                "error_rate": MetadataValue.float(rate),
                "n_rows": MetadataValue.int(len(judgments)),
            },
        )

    return _check


ALL_CHECKS = [
    scorecard_thresholds,
    scorecard_regressions,
    judge_error_rate_check("generation_judgments"),
    judge_error_rate_check("e2e_judgments"),
    judge_error_rate_check("traffic_judgments"),
]
