"""Asset checks: threshold bands on the scorecard, regressions, judge error rates on tiers.

Every check is partitioned like its asset, so it evaluates only the partition just
materialized. Failing checks flag the partition in the UI without failing the run; they have
WARN severity, except a judge outage (most judgments failed), which is an ERROR. `rag-eval run`
prints every failed check at the end (`--fail-on-regression` exits non-zero).
"""

import warnings

import pandas as pd
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetIn,
    AssetKey,
    MetadataValue,
    PreviewWarning,
    asset_check,
)

from rag_eval_pipeline.assets.scorecard import evaluation_scorecard
from rag_eval_pipeline.evaluation.generation import JUDGE_CALLS
from rag_eval_pipeline.evaluation.regression import CHANGE_COLUMNS, OUTAGE_ERROR_RATE
from rag_eval_pipeline.evaluation.scorecard import NEEDS_ATTENTION
from rag_eval_pipeline.evaluation.store import REGRESSIONS_ASSET
from rag_eval_pipeline.metadata import markdown_table
from rag_eval_pipeline.partitions import evaluation_partitions

MAX_JUDGE_ERROR_RATE = 0.05
# Above this share of failed judge calls the check is an ERROR (an outage), not a WARN.
JUDGE_OUTAGE_RATE = OUTAGE_ERROR_RATE

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
    name="scorecard_regressions",
    additional_ins={"metric_regressions": AssetIn(REGRESSIONS_ASSET)},
    partitions_def=evaluation_partitions,
    description=(
        "No metric regressed against the baseline (previous date by default) and none that had "
        "a value there is missing today, as `metric_regressions` decided: a paired one-sided "
        "test with Benjamini–Hochberg q < α and a change beyond the metric's tolerance."
    ),
)
def scorecard_regressions(
    context: AssetCheckExecutionContext,
    evaluation_scorecard: pd.DataFrame,
    metric_regressions: pd.DataFrame,
) -> AssetCheckResult:
    alerted = metric_regressions[metric_regressions["alert"].astype(bool)]
    first = metric_regressions.head(1)
    baseline = (
        f"{first['baseline_version'].iloc[0]} {first['baseline_date'].iloc[0]}"
        if len(first) and first["baseline_version"].notna().iloc[0]
        else "none yet (first evaluation)"
    )
    shown = alerted[[*CHANGE_COLUMNS, "q_value"]]
    return AssetCheckResult(
        passed=alerted.empty,
        severity=AssetCheckSeverity.WARN,
        metadata={
            "baseline": MetadataValue.text(baseline),
            "n_regressions": MetadataValue.int(len(alerted)),
            "regressions": MetadataValue.md(markdown_table(shown)),
        },
    )


def judge_error_rate_check(asset_name: str) -> AssetChecksDefinition:
    """A check that the judgments of `asset_name` have at most 5% error rows."""

    @asset_check(
        asset=AssetKey(asset_name),
        name=f"{asset_name}_error_rate",
        partitions_def=evaluation_partitions,
        description=(
            f"At most {MAX_JUDGE_ERROR_RATE:.0%} of the judgments are error rows (WARN); more "
            f"than {JUDGE_OUTAGE_RATE:.0%} of the judge calls failing is an outage (ERROR)."
        ),
    )
    def _check(context: AssetCheckExecutionContext, judgments: pd.DataFrame) -> AssetCheckResult:
        rate = float(judgments["error"].notna().mean()) if len(judgments) else 0.0
        calls = judgments[judgments["metric"].isin(list(JUDGE_CALLS))]
        call_rate = float(calls["error"].notna().mean()) if len(calls) else 0.0
        outage = call_rate > JUDGE_OUTAGE_RATE
        return AssetCheckResult(
            passed=rate <= MAX_JUDGE_ERROR_RATE,
            severity=AssetCheckSeverity.ERROR if outage else AssetCheckSeverity.WARN,
            description=(f"Judge outage: {rate:.0%} of the judgments failed." if outage else None),
            metadata={
                "error_rate": MetadataValue.float(rate),
                "judge_call_error_rate": MetadataValue.float(call_rate),
                "n_rows": MetadataValue.int(len(judgments)),
                "n_errors": MetadataValue.int(int(judgments["error"].notna().sum())),
                "outage": MetadataValue.bool(outage),
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
