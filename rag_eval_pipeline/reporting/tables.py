"""The rows of the report's tables, as plain data for `templates/tables.html.j2`.

Each function turns DataFrames (a scorecard, the `metric_regressions` verdicts, correlation
matrices) into rows of display strings: values formatted (`reporting.formats`), states the
template colours (a band, a change's direction), `None` where the template shows a muted `—`.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from rag_eval_pipeline.evaluation.scorecard import EXCELLENT, GOOD, NEEDS_ATTENTION
from rag_eval_pipeline.evaluation.verdicts.columns import KEY
from rag_eval_pipeline.evaluation.verdicts.wording import BRIDGED, NOT_COMPARABLE
from rag_eval_pipeline.metrics.ppi import CLASSICAL_PREFIX, PPI_PREFIX
from rag_eval_pipeline.reporting.charts import Sparkline
from rag_eval_pipeline.reporting.formats import (
    format_change,
    format_ci,
    format_count,
    format_detectable,
    format_value,
)
from rag_eval_pipeline.storage.warehouse import Baseline

DATASET_TIER = "dataset"
BANDS = (EXCELLENT, GOOD, NEEDS_ATTENTION)

Key = tuple[str, str, str]  # (tier, system, metric)


@dataclass(frozen=True)
class ScoreRow:
    """One metric of a scorecard table. `change_state` colours Δ (`better`, `worse`, `flat`,
    `regressed`; None: muted); `trend` is the sparkline cell (None: empty)."""

    system: str
    metric: str
    lower_is_better: bool
    value: str
    ci: str | None
    n: str
    change: str
    change_state: str | None
    detectable: str
    band: str | None
    regressed: bool
    trend: Sparkline | None


@dataclass(frozen=True)
class SummaryTable:
    """A tier's scorecard table."""

    rows: list[ScoreRow]


@dataclass(frozen=True)
class CrossColumn:
    """A version's column: its latest date and the marks saying to compare with care."""

    version: str
    date: str
    current: bool
    marks: list[str]


@dataclass(frozen=True)
class CrossRow:
    """A metric × system row: `metric` on the first row of each metric only; cells are
    (formatted value or None when missing, band or "", in the current version's column)."""

    metric: str
    first: bool
    system: str
    cells: list[tuple[str | None, str, bool]]


def band_of(value: object) -> str | None:
    """The band to show (`excellent`, `good`, `needs attention`), None when unbanded."""
    return value if isinstance(value, str) and value in BANDS else None


def with_baseline_change(scorecard: pd.DataFrame, baseline: Baseline | None) -> pd.DataFrame:
    """`scorecard` plus `baseline_value` and `relative_change` (NaN without a baseline row)."""
    if baseline is None:
        return scorecard.assign(baseline_value=math.nan, relative_change=math.nan)
    base = baseline.scorecard[[*KEY, "value"]].rename(columns={"value": "baseline_value"})
    merged = scorecard.merge(base, on=KEY, how="left")
    base_abs = merged["baseline_value"].abs()
    change = (merged["value"] - merged["baseline_value"]) / base_abs.where(base_abs > 0)
    return merged.assign(relative_change=change)


def change_cell(r: Any, regressed: bool, incomparable: str | None = None) -> tuple[str, str | None]:
    """The Δ of scorecard row `r` (`format_change`) and its state: `regressed`, `worse`,
    `better` or `flat` (under 0.5% of the baseline); None (muted) when not comparable or new."""
    text = format_change(r.relative_change, r.baseline_value, r.value)
    if incomparable:
        return f"{text} ({incomparable})", None
    delta = float(r.value) - float(r.baseline_value)
    if text == "new" or math.isnan(delta):
        return "—", None
    worse = delta < 0 if bool(r.higher_is_better) else delta > 0
    flat = abs(delta) < 0.005 * abs(float(r.baseline_value)) or delta == 0
    state = "flat" if flat else ("worse" if worse else "better")
    return text, "regressed" if regressed else state


def summary_table(
    scorecard: pd.DataFrame,
    baseline: Baseline | None,
    regressions: pd.DataFrame,
    headline_metrics: Sequence[str],
    comparisons: pd.DataFrame | None,
    sparks: Mapping[Key, Sparkline],
) -> SummaryTable | None:
    """The thresholded and headline metrics of one tier's rows (None when there are none);
    Δ says when the metric is not comparable because a model changed, "Detectable" the
    smallest change in the bad direction the comparison could have flagged (its
    `detectable_change`), and "Trend" the metric's sparkline (of `sparks`, if it has one)."""
    rows = scorecard[
        (scorecard["tier"] != DATASET_TIER)
        & (scorecard["band"].isin(BANDS) | scorecard["metric"].isin(headline_metrics))
    ]
    if rows.empty:
        return None
    regressed = set(regressions[KEY].itertuples(index=False, name=None))
    incomparable = model_changes(comparisons)
    detectable = detectable_changes(comparisons)
    table_rows = []
    for r in with_baseline_change(rows, baseline).itertuples():
        key = (r.tier, r.system, r.metric)
        change, state = change_cell(r, key in regressed, incomparable.get(key))
        table_rows.append(
            ScoreRow(
                system=r.system,
                metric=r.metric,
                lower_is_better=not bool(r.higher_is_better),
                value=format_value(r.value),
                ci=format_ci(r.ci_low, r.ci_high),
                n=format_count(r.count),
                change=change,
                change_state=state,
                detectable=format_detectable(detectable.get(key, math.nan)),
                band=band_of(r.band),
                regressed=key in regressed,
                trend=sparks.get(key),
            )
        )
    return SummaryTable(table_rows)


def detectable_changes(comparisons: pd.DataFrame | None) -> dict[Key, float]:
    """(tier, system, metric) → the comparison's `detectable_change` (relative, ≥ 0)."""
    if comparisons is None or comparisons.empty or "detectable_change" not in comparisons:
        return {}
    return {
        (r.tier, r.system, r.metric): float(r.detectable_change) for r in comparisons.itertuples()
    }


def model_changes(comparisons: pd.DataFrame | None) -> dict[Key, str]:
    """(tier, system, metric) → "judge changed" etc. for rows not comparable for that reason."""
    if comparisons is None or comparisons.empty:
        return {}
    rows = comparisons[
        (comparisons["verdict"] == NOT_COMPARABLE)
        & comparisons["reason"].str.contains(" changed", regex=False)
    ]
    return {
        (r.tier, r.system, r.metric): ", ".join(
            part.split(" (")[0] for part in str(r.reason).split("; ")
        )
        for r in rows.itertuples()
    }


def full_rows(scorecard: pd.DataFrame) -> list[dict[str, object]]:
    """Every row of the scorecard, dataset statistics included, formatted."""
    return [
        {
            "tier": r.tier,
            "system": r.system,
            "metric": r.metric,
            "lower_is_better": not bool(r.higher_is_better),
            "value": format_value(r.value),
            "std": format_value(r.std),
            "ci": format_ci(r.ci_low, r.ci_high),
            "n": format_count(r.count),
            "errors": format_count(r.n_errors),
            "band": band_of(r.band),
        }
        for r in scorecard.itertuples()
    ]


def bridged_rows(comparisons: pd.DataFrame | None) -> list[dict[str, object]]:
    """The metrics compared across a model change because the baseline was rebuilt with
    today's models (their reason names `BRIDGED`, `evaluation.model_bridge`)."""
    if comparisons is None or comparisons.empty:
        return []
    bridged = comparisons[comparisons["reason"].fillna("").str.contains(BRIDGED, regex=False)]
    return bridged[["tier", "system", "metric", "verdict", "reason"]].to_dict("records")


def judge_corrected_rows(scorecard: pd.DataFrame) -> list[dict[str, object]]:
    """Per system and judged criterion with human labels (its `ppi_` rows): the judge's mean
    and N judged, the prediction-powered estimate and its CI, the labels' mean and CI, n
    labeled; None where the scorecard has no such number."""
    rows = {(r.tier, r.system, r.metric): r for r in scorecard.itertuples()}
    found = []
    for r in scorecard[scorecard["metric"].str.startswith(PPI_PREFIX)].itertuples():
        metric = r.metric.removeprefix(PPI_PREFIX)
        # the judge metrics PPI corrects are summarized as avg_<metric> (their SCORECARD_NAME)
        judge = rows.get((r.tier, r.system, f"avg_{metric}"))
        labels = rows.get((r.tier, r.system, CLASSICAL_PREFIX + metric))
        cells = [
            format_value(judge.value) if judge else None,
            format_count(judge.count) if judge else None,
            format_value(r.value),
            format_ci(r.ci_low, r.ci_high),
            format_value(labels.value) if labels else None,
            format_ci(labels.ci_low, labels.ci_high) if labels else None,
            format_count(r.count),
        ]
        found.append({"system": r.system, "metric": metric, "cells": cells})
    return found


def correlation_tables(correlations: Mapping[str, pd.DataFrame]) -> list[dict[str, object]]:
    """Per system: its metrics and the Pearson r of each pair (`—` where undefined)."""
    return [
        {
            "system": system,
            "columns": list(matrix.columns),
            "rows": [
                (metric, [format_value(r) for r in row])
                for metric, row in zip(matrix.index, matrix.to_numpy(dtype=float), strict=True)
            ],
        }
        for system, matrix in correlations.items()
    ]


def cross_version_table(
    cross_version: pd.DataFrame,
    current_version: str,
    headline_metrics: Sequence[str],
    report_date: str | None = None,
    in_progress: Collection[str] = (),
) -> tuple[list[CrossColumn], list[CrossRow]]:
    """Headline metric × system rows, one column per version (its latest date on or before
    `report_date`); a version whose date is older than `report_date`, or with a run in
    progress (`in_progress`), is marked."""
    versions = (
        cross_version[["dataset_version", "date"]].drop_duplicates().sort_values("dataset_version")
    )
    columns = [
        CrossColumn(v, d, v == current_version, version_marks(d, report_date, v in in_progress))
        for v, d in versions.itertuples(index=False)
    ]
    order = {metric: i for i, metric in enumerate(headline_metrics)}
    keys = (
        cross_version[["metric", "tier", "system"]]
        .drop_duplicates()
        .assign(position=lambda f: f["metric"].map(order))
        .sort_values(["position", "tier", "system"])
    )
    cells: dict[tuple[str, str, str, str], tuple[float, object]] = {}
    for r in cross_version.itertuples(index=False):
        cells.setdefault((r.metric, r.tier, r.system, r.dataset_version), (r.value, r.band))
    rows, previous = [], None
    for metric, tier, system in keys[["metric", "tier", "system"]].itertuples(index=False):
        row_cells = []
        for column in columns:
            found = cells.get((metric, tier, system, column.version))
            value, band = (None, "") if found is None else (format_value(found[0]), found[1])
            row_cells.append((value, band_of(band) or "", column.current))
        rows.append(CrossRow(metric, metric != previous, system, row_cells))
        previous = metric
    return columns, rows


def version_marks(day: str, report_date: str | None, in_progress: bool) -> list[str]:
    """The marks of a version's column: older than the report's date, a run in progress."""
    marks = [f"older than {report_date}"] if report_date and day < report_date else []
    return marks + (["run in progress"] if in_progress else [])
