"""The scorecard's asset checks: threshold bands, and the alerts of `metric_regressions`.

Every check is partitioned like its asset, so it evaluates only the partition just
materialized. Failing checks flag the partition in the UI without failing the run (WARN).
`rag-eval run` prints every failed check at the end (`--fail-on-regression` exits non-zero).
"""

import pandas as pd
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetIn,
    MetadataValue,
)

from rag_eval_pipeline.defs.scorecard.assets import evaluation_scorecard
from rag_eval_pipeline.defs.shared.assets import evaluation_check
from rag_eval_pipeline.defs.shared.metadata import markdown_table, text_metadata
from rag_eval_pipeline.evaluation.headline import OUTAGE, REGRESSION, headline
from rag_eval_pipeline.evaluation.scorecard import NEEDS_ATTENTION
from rag_eval_pipeline.evaluation.verdicts.columns import CHANGE_COLUMNS
from rag_eval_pipeline.storage.warehouse import REGRESSIONS_ASSET
from rag_eval_pipeline.text.escaping import visible_text

# Tiers whose bands rate the judge's agreement with human raters.
AGREEMENT_TIERS = ("judge_reliability", "show_judge")


@evaluation_check(
    asset=evaluation_scorecard,
    description=(
        "Every banded metric is at least 'good' (WARN lists those needing attention). The "
        "judge-vs-human agreement bands (judge_reliability, show_judge) are shown in the "
        "scorecard and the report but never fail this check: they describe the judge, not the "
        "system under test."
    ),
)
def scorecard_thresholds(
    context: AssetCheckExecutionContext, evaluation_scorecard: pd.DataFrame
) -> AssetCheckResult:
    levels = evaluation_scorecard[~evaluation_scorecard["tier"].isin(AGREEMENT_TIERS)]
    attention = levels[levels["band"] == NEEDS_ATTENTION]
    shown = attention[["tier", "system", "metric", "value"]]
    return AssetCheckResult(
        passed=attention.empty,
        severity=AssetCheckSeverity.WARN,
        metadata={
            "n_needs_attention": MetadataValue.int(len(attention)),
            "needs_attention": MetadataValue.md(markdown_table(shown)),
        },
    )


@evaluation_check(
    asset=evaluation_scorecard,
    name="scorecard_regressions",
    additional_ins={"metric_regressions": AssetIn(REGRESSIONS_ASSET)},
    description=(
        "No alert in `metric_regressions` (a regressed metric, one missing today, a judge "
        "outage): the day's headline (evaluation.headline), the words `rag-eval run` and the "
        "report print. Partitioned (one evaluation per version and date): Dagster lists it "
        "Failed while any partition's latest evaluation failed, so a regression day keeps it "
        "Failed after later days pass; the Overview's latest execution is the newest "
        "partition's, and the Partitions tab shows each day's own status."
    ),
)
def scorecard_regressions(
    context: AssetCheckExecutionContext,
    evaluation_scorecard: pd.DataFrame,
    metric_regressions: pd.DataFrame,
) -> AssetCheckResult:
    told = headline(metric_regressions)
    alerted = metric_regressions[metric_regressions["alert"].astype(bool)]
    first = metric_regressions.head(1)
    baseline = (
        f"{first['baseline_version'].iloc[0]} {first['baseline_date'].iloc[0]}"
        if len(first) and first["baseline_version"].notna().iloc[0]
        else "none yet (first evaluation)"
    )
    shown = alerted[[*CHANGE_COLUMNS, "q_value"]]
    return AssetCheckResult(
        passed=told.n_alerts == 0,
        severity=AssetCheckSeverity.WARN,
        description=visible_text(told.text),
        metadata={
            "baseline": text_metadata(baseline),
            "headline": text_metadata(told.text),
            "n_alerts": MetadataValue.int(told.n_alerts),
            "n_regressions": MetadataValue.int(told.counts[REGRESSION]),
            "n_outages": MetadataValue.int(told.counts[OUTAGE]),
            "n_untestable_primary": MetadataValue.int(told.undecided),
            "regressions": MetadataValue.md(markdown_table(shown)),
        },
    )
