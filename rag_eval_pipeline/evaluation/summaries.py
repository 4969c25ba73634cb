"""Per-row scores → per-system summary rows (mean, std, count, 95% bootstrap CI, errors).

Every quality asset returns this long layout, so the scorecard is a concatenation:
`tier, system, metric, mean, std, count, ci_low, ci_high, n_errors, error_rate`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from rag_eval_pipeline.judges.criteria import configured_criteria
from rag_eval_pipeline.judges.metrics import scorecard_names
from rag_eval_pipeline.metrics.stats import summarize

QUALITY_COLUMNS = [
    "tier",
    "system",
    "metric",
    "mean",
    "std",
    "count",
    "ci_low",
    "ci_high",
    "n_errors",
    "error_rate",
]


def empty_quality() -> pd.DataFrame:
    """A quality table with no rows (a tier that does not apply to this dataset version)."""
    return pd.DataFrame(columns=QUALITY_COLUMNS)


def summarize_wide(
    frame: pd.DataFrame, metrics: Sequence[str], tier: str, system_column: str = "system"
) -> pd.DataFrame:
    """Summaries of wide per-row metric columns, grouped by system (no error rows here)."""
    if frame.empty:
        return empty_quality()
    summary = summarize(frame, list(metrics), [system_column]).rename(
        columns={system_column: "system"}
    )
    return summary.assign(tier=tier, n_errors=0, error_rate=0.0)[QUALITY_COLUMNS]


def summarize_judgments(judgments: pd.DataFrame, tier: str, prefix: str = "avg_") -> pd.DataFrame:
    """Summaries of long judgments (`system, query_id, metric, score, error`).

    Error rows (score NaN with an error) are excluded from the mean and CI and reported as
    `n_errors` and `error_rate` = errors / all rows of that system and metric, so a failing
    judge can never silently lower or raise an average.
    """
    if judgments.empty:
        return empty_quality()
    wide = judgments.pivot_table(
        index=["system", "query_id"],
        columns="metric",
        values="score",
        aggfunc="first",
        dropna=False,
    ).reset_index()
    metrics = sorted(judgments["metric"].unique())
    summary = summarize(wide, metrics, ["system"])
    errors = (
        judgments.assign(is_error=judgments["error"].notna())
        .groupby(["system", "metric"])["is_error"]
        .agg(n_errors="sum", n_rows="size")
        .reset_index()
    )
    summary = summary.merge(errors, on=["system", "metric"], how="left")
    summary["error_rate"] = summary["n_errors"] / summary["n_rows"].where(summary["n_rows"] > 0)
    summary["metric"] = scorecard_metric(summary["metric"], prefix)
    return summary.assign(tier=tier)[QUALITY_COLUMNS]


def scorecard_metric(metrics: pd.Series, prefix: str) -> pd.Series:
    """Judgment metric names as the scorecard shows them: a judged metric's `scorecard_name`
    (`judges.metrics.METRICS`, e.g. `avg_faithfulness`, and the criteria declared in
    `config/criteria.yaml`, named as declared); rates (`refusal_rate`) unchanged, as they are
    already named as what they are; any other metric (ROUGE, BLEU, ...) `prefix` + name."""
    names = metrics.astype(str)
    judged = scorecard_names() | {c.name: c.metric.scorecard_name for c in configured_criteria()}
    generic = names.where(names.str.endswith("_rate"), prefix + names)
    return generic.where(~names.isin(judged), names.map(judged))


def single_values(
    values: Mapping[str, float],
    tier: str,
    system: str,
    count: int,
    n_errors: int = 0,
    error_rate: float = 0.0,
) -> pd.DataFrame:
    """Quality rows for metrics that are one number, not a mean over rows (e.g. silhouette);
    `n_errors`/`error_rate`: the failed items behind them (e.g. unparseable judge replies)."""
    return pd.DataFrame(
        {
            "tier": tier,
            "system": system,
            "metric": list(values),
            "mean": [float(v) for v in values.values()],
            "std": np.nan,
            "count": count,
            "ci_low": np.nan,
            "ci_high": np.nan,
            "n_errors": n_errors,
            "error_rate": error_rate,
        }
    )[QUALITY_COLUMNS]
