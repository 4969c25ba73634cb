"""A self-contained HTML report of one evaluation partition (dataset version × date).

The page has inline CSS and inline SVG charts only (no script, no external resource), so it can
be mailed, attached to a ticket or opened from disk. It shows:

- a header: dataset version, date, baseline, generation time, the models that produced the
  scores (read from the scorecard's embedder, judge and generator systems) and dataset sizes;
- a summary of the partition's scorecard (thresholded and headline metrics, coloured bands,
  change against the baseline), and the full scorecard in a collapsed section;
- the alerts of the partition against its baseline (`metric_regressions`: regressed metrics
  and metrics missing today), with their q-value and paired items; metrics that cannot be
  compared because the judge, generator or embedder changed say so next to Δ;
- trend charts of the headline metrics over the version's stored dates up to the partition's
  date, one line per system, 95% CI band, regressions (alert history and this partition's)
  marked in red with a tooltip;
- the latest value of each headline metric for every version evaluated on or before the date.

`collect_report_data` (`report_data`) reads the inputs from a `WarehouseStore`. This module
turns them into the page's plain data (rows of display strings, `tables`; chart geometry,
`charts`), and the jinja2 templates of `templates/` write every tag, with autoescaping and the
house's visible-text rule on every value (`templating`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from rag_eval_pipeline.evaluation.headline import (
    IMPROVEMENT,
    MONITORED,
    OUTAGE,
    QUIET,
    REGRESSION,
    Headline,
    headline,
)
from rag_eval_pipeline.evaluation.scorecard import EXCELLENT, GOOD, NEEDS_ATTENTION
from rag_eval_pipeline.metrics.ppi import EXPLANATION
from rag_eval_pipeline.reporting.alerting import items_needed_lines, sample_size
from rag_eval_pipeline.reporting.changes import (
    KIND_SECTIONS,
    PRIMARY,
    changes_by_section,
    roles,
    skipped_tiers,
    week_summary,
)
from rag_eval_pipeline.reporting.charts import (
    PALETTE,
    TICK_CHAR_PX,
    LineChart,
    Series,
    SeriesStyle,
    Sparkline,
    line_chart,
    nice_ticks,
    series_style,
    sparkline,
)
from rag_eval_pipeline.reporting.formats import (
    format_change,
    format_count,
    format_detectable,
    format_q,
    format_value,
)
from rag_eval_pipeline.reporting.report_data import ReportData, collect_report_data, models_used
from rag_eval_pipeline.reporting.tables import (
    DATASET_TIER,
    SummaryTable,
    bridged_rows,
    correlation_tables,
    cross_version_table,
    full_rows,
    judge_corrected_rows,
    summary_table,
)
from rag_eval_pipeline.reporting.templating import render, render_macro

__all__ = [
    "DATASET_TIER",
    "JUDGE_TIERS",
    "PALETTE",
    "SYSTEM_TIERS",
    "TICK_CHAR_PX",
    "TIER_ORDER",
    "ReportData",
    "Series",
    "collect_report_data",
    "day_headline",
    "format_change",
    "format_detectable",
    "format_value",
    "judge_corrected_html",
    "line_chart_svg",
    "model_bridge_html",
    "nice_ticks",
    "render_report",
    "series_styles",
    "sparkline_svg",
]

# Pipeline order: the system's tiers, then the judge's (reliability and agreement come last).
SYSTEM_TIERS = (
    "tier0_embedding",
    "tier1_retrieval",
    "tier2_generation",
    "tier3_e2e",
    "traffic",
    "ux",
)
JUDGE_TIERS = ("judge_reliability", "show_judge")
TIER_ORDER = (*SYSTEM_TIERS, *JUDGE_TIERS, DATASET_TIER)
DATASET_STATS = {
    "n_queries": "questions",
    "n_corpus": "documents",
    "n_qrels": "qrels",
    "n_sessions": "sessions",
    "n_logs": "logged interactions",
    "n_judge_labels": "judge labels",
}
# Regressions listed before the rest is collapsed.
MAX_REGRESSION_ROWS = 12

Marks = Mapping[tuple[str, str, str, str], str]  # (date, tier, system, metric) → tooltip


@dataclass(frozen=True)
class Best:
    """The best of several systems on a tier's first shared headline metric."""

    system: str
    metric: str
    value: str
    n_systems: int


@dataclass(frozen=True)
class TierTable:
    """A tier's section: its best system (if several compete) and its summary table (None:
    no thresholded or headline metric)."""

    tier: str
    best: Best | None
    table: SummaryTable | None


@dataclass(frozen=True)
class Figure:
    """A trend chart of one metric."""

    metric: str
    lower_is_better: bool
    chart: LineChart


# --------------------------------------------------------------------------- charts


def line_chart_svg(
    title: str, series: Sequence[Series], *, width: int = 640, plot_height: int = 210
) -> str:
    """An SVG line chart of `series` over dates: axes, ticks, grid, CI bands, legend.

    Each series is one `<polyline class="series" data-series=...>` per run of known values;
    a regression is a red `<g class="regression">` with a `<title>` tooltip at its point.
    """
    chart = line_chart(title, series, width=width, plot_height=plot_height)
    return render_macro("charts.svg.j2", "line_chart", chart)


def sparkline_svg(values: Sequence[float], marked: Sequence[bool], label: str, **style: str) -> str:
    """A 96×22 inline SVG line of `values` (oldest first), red dots where `marked`; `style`:
    its `color` and `dash` (the system `series`'s style in every chart, `series_styles`) and
    `series` (`charts.sparkline`). A muted `—` with fewer than two known values."""
    return render_macro("charts.svg.j2", "sparkline", sparkline(values, marked, label, **style))


def regression_marks(data: ReportData) -> dict[tuple[str, str, str, str], str]:
    """(date, tier, system, metric) → tooltip, for recorded alerts and this partition's."""
    recent = [f[f["alert"].astype(bool)] for f in data.week.values() if len(f)]
    frames = [f for f in (data.alerts, *recent, data.regressions) if not f.empty]
    if not frames:
        return {}
    marks = pd.concat(frames, ignore_index=True).drop_duplicates("alert_key", keep="last")
    return {
        (r.date, r.tier, r.system, r.metric): (
            f"Regression on {r.date}: {r.system} {r.metric} = {format_value(r.value)}, "
            f"{format_change(r.relative_change, r.baseline_value, r.value)} vs "
            f"{format_value(r.baseline_value)} on "
            f"{r.baseline_version} {r.baseline_date} (tolerance {r.threshold:.0%})"
        )
        for r in marks.itertuples()
    }


def trend_series(
    history: pd.DataFrame, metric: str, styles: Mapping[str, SeriesStyle], marks: Marks
) -> list[Series]:
    """One series per (tier, system) of `metric`; labelled by system (tier too if ambiguous)."""
    rows = history[history["metric"] == metric].sort_values("date")
    ambiguous = rows.groupby("system")["tier"].nunique() > 1
    series = []
    for (tier, system), group in rows.groupby(["tier", "system"], sort=True):
        label = f"{system} ({tier})" if ambiguous[system] else str(system)
        series.append(
            Series(
                label=label,
                color=styles[str(system)].color,
                dash=styles[str(system)].dash,
                dates=list(group["date"]),
                values=group["value"].astype(float).tolist(),
                ci_low=group["ci_low"].astype(float).tolist(),
                ci_high=group["ci_high"].astype(float).tolist(),
                regressions={
                    day: marks[(day, tier, system, metric)]
                    for day in group["date"]
                    if (day, tier, system, metric) in marks
                },
            )
        )
    return series


def series_styles(history: pd.DataFrame) -> dict[str, SeriesStyle]:
    """System → its colour and dash pattern in every chart (trend charts and sparklines).
    Systems drawn in the same chart (the same metric) never share a style: greedy, in name
    order, each takes the first style (`series_style` 0, 1, ...: the palette's colours solid,
    then dashed, dotted, ...) none of its chart-mates has. The same history gives the same
    styles."""
    charts = [set(g.astype(str)) for _, g in history.groupby("metric")["system"]]
    styles: dict[str, int] = {}
    for system in sorted(set(history["system"].astype(str))):
        taken = {styles[o] for chart in charts if system in chart for o in chart if o in styles}
        styles[system] = next(i for i in range(len(taken) + 1) if i not in taken)
    return {system: series_style(index) for system, index in styles.items()}


def trend_figures(data: ReportData) -> list[Figure]:
    """A chart per headline metric present in the history, then per other primary metric."""
    if data.history.empty:
        return []
    styles = series_styles(data.history)
    marks = regression_marks(data)
    present = set(data.history["metric"])
    primary = data.history.get("role", pd.Series("", index=data.history.index)).eq(PRIMARY)
    also = sorted(set(data.history.loc[primary, "metric"]) - set(data.headline_metrics))
    figures = []
    for metric in (m for m in (*data.headline_metrics, *also) if m in present):
        series = trend_series(data.history, metric, styles, marks)
        rows = data.history.loc[data.history["metric"] == metric, "higher_is_better"]
        chart = line_chart(f"{metric} by date ({data.version})", series)
        figures.append(Figure(metric, not bool(rows.iloc[0]), chart))
    return figures


def sparklines(data: ReportData) -> dict[tuple[str, str, str], Sparkline]:
    """(tier, system, metric) → sparkline of the stored history, for primary rows."""
    if data.history.empty:
        return {}
    history = data.history.assign(role=roles(data.history, data.headline_metrics))
    history = history[history["role"] == PRIMARY]
    dates = sorted(set(data.history["date"]))
    marks = regression_marks(data)
    styles = series_styles(data.history)
    lines = {}
    for (tier, system, metric), group in history.groupby(["tier", "system", "metric"]):
        by_date = dict(zip(group["date"], group["value"].astype(float), strict=True))
        values = [by_date.get(day, math.nan) for day in dates]
        marked = [(day, tier, system, metric) in marks for day in dates]
        label = f"{metric} of {system}, {dates[0]} to {dates[-1]}"
        style = styles[str(system)]
        lines[(tier, system, metric)] = sparkline(
            values, marked, label, style.color, str(system), style.dash
        )
    return lines


# --------------------------------------------------------------------------- tiers


def best_system(rows: pd.DataFrame, headline_metrics: Sequence[str]) -> Best | None:
    """The best system on the tier's first headline metric that several systems report;
    None when no such metric."""
    for metric in headline_metrics:
        candidates = rows[(rows["metric"] == metric) & rows["value"].notna()]
        if candidates["system"].nunique() < 2:
            continue
        values = candidates["value"].astype(float)
        higher = bool(candidates["higher_is_better"].iloc[0])
        best = candidates.loc[values.idxmax() if higher else values.idxmin()]
        n_systems = candidates["system"].nunique()
        return Best(str(best["system"]), metric, format_value(best["value"]), n_systems)
    return None


def tier_tables(data: ReportData, tiers: Sequence[str]) -> list[TierTable]:
    """One table per tier of `tiers` present in the scorecard, in that order, with the best
    system and a trend sparkline for each primary metric."""
    sparks = sparklines(data)
    found = []
    for tier in tiers:
        rows = data.scorecard[data.scorecard["tier"] == tier]
        if rows.empty:
            continue
        table = summary_table(
            rows, data.baseline, data.regressions, data.headline_metrics, data.comparisons, sparks
        )
        found.append(TierTable(tier, best_system(rows, data.headline_metrics), table))
    return found


# --------------------------------------------------------------------------- what changed


def day_headline(data: ReportData) -> Headline:
    """The partition's headline (`evaluation.headline`): the counts and words of every surface."""
    rows = data.comparisons if data.baseline is not None else data.comparisons.iloc[0:0]
    return headline(rows.assign(role=roles(rows, data.headline_metrics)) if len(rows) else rows)


def change_rows(rows: pd.DataFrame) -> list[dict[str, object]]:
    """The rows of one section of changes; `worse` when the change went the bad way (every
    section but improvements, and the monitored changes that got worse)."""
    found = []
    for r in rows.itertuples():
        delta = float(r.value) - float(r.baseline_value)
        got_worse = delta < 0 if bool(r.higher_is_better) else delta > 0
        monitored = r.section == KIND_SECTIONS[MONITORED]
        found.append(
            {
                "role": str(r.role),
                "tier": r.tier,
                "system": r.system,
                "metric": r.metric,
                "lower_is_better": not bool(r.higher_is_better),
                "baseline": format_value(r.baseline_value),
                "now": format_value(r.value),
                "change": format_change(r.relative_change, r.baseline_value, r.value),
                "worse": r.section != "Improvements" and (not monitored or got_worse),
                "q": format_q(r.q_value),
                "n": sample_size(r),
                "where": r.where,
                "reason": r.reason,
            }
        )
    return found


def changes(data: ReportData) -> dict[str, object]:
    """The "What changed" section: the headline, one table per section of verdicts
    (regressions, outages, untestable changes, improvements, any new verdict kind), how many
    questions a drop needs, and the tiers that were skipped."""
    compared = data.baseline is not None
    sections = changes_by_section(data.comparisons, data.headline_metrics) if compared else {}
    told = day_headline(data) if compared else None
    return {
        "headline": told.text if told else "",
        "quiet": bool(told and told.state == QUIET),
        "changes": [
            {
                "title": title,
                "rows": change_rows(rows),
                "n_primary": int((rows["role"] == PRIMARY).sum()),
            }
            for title, rows in sections.items()
        ],
        "max_rows": MAX_REGRESSION_ROWS,
        "items_needed": items_needed_lines(data.comparisons) if compared else [],
        "skipped": [] if data.scorecard.empty else skipped_tiers(data.scorecard, SYSTEM_TIERS),
    }


def week_rows(data: ReportData) -> list[dict[str, object]]:
    """One row per recent date: regressions, outages, improvements (each flagged bad when
    non-zero, improvements never), the largest regression or the day's headline."""
    summary = week_summary(dict(data.week), data.headline_metrics)
    return [
        {
            "date": r.date,
            "current": r.date == data.date,
            "counts": [
                (r.regressions, bool(r.regressions)),
                (r.outages, bool(r.outages)),
                (r.improvements, False),
            ],
            "text": r.largest or r.headline,
        }
        for r in summary.itertuples()
    ]


# --------------------------------------------------------------------------- page


def header_facts(data: ReportData) -> list[tuple[str, str, list[str]]]:
    """(label, text, models shown as code) of the header: version, date, baseline, generation
    time, then the models of each role (`—` when none)."""
    baseline = f"{data.baseline.version} {data.baseline.date}" if data.baseline else "none yet"
    facts = [
        ("Dataset version", data.version, []),
        ("Date", data.date, []),
        ("Baseline", baseline, []),
        ("Generated", data.generated_at.strftime("%Y-%m-%d %H:%M:%S %Z").strip(), []),
    ]
    models = data.models or models_used(data.scorecard)
    return facts + [(role, "—", list(names)) for role, names in models.items()]


def dataset_sizes(scorecard: pd.DataFrame) -> str:
    """`50 questions · 1,000 documents …`: the dataset tier's non-zero counts."""
    stats = scorecard[scorecard["tier"] == DATASET_TIER].set_index("metric")["value"]
    return " · ".join(
        f"{format_count(stats[name])} {label}"
        for name, label in DATASET_STATS.items()
        if name in stats.index and stats[name] > 0
    )


def kpis(data: ReportData) -> list[dict[str, object]]:
    """The cards under the header: the day's changes (regressions and improvements always,
    the others when non-zero), then the system metrics by band."""
    metrics = data.scorecard[data.scorecard["tier"].isin(SYSTEM_TIERS)]
    counts = metrics["band"].value_counts()
    told = day_headline(data)
    changed = [
        ("Regressions", told.counts[REGRESSION], "needs-attention"),
        ("Outages", told.counts[OUTAGE], "needs-attention"),
        ("Untestable primary", told.undecided, "needs-attention"),
        ("Improvements", told.counts[IMPROVEMENT], "excellent"),
        ("Monitored changes", told.counts[MONITORED], "neutral"),
    ]
    cards = [
        (label, n, css if n else ("excellent" if label == "Regressions" else "neutral"))
        for label, n, css in changed
        if n or label in ("Regressions", "Improvements")
    ]
    cards += [
        ("System metrics", len(metrics), "neutral"),
        ("Excellent", int(counts.get(EXCELLENT, 0)), "excellent"),
        ("Good", int(counts.get(GOOD, 0)), "good"),
        ("Below band", int(counts.get(NEEDS_ATTENTION, 0)), "needs-attention"),
    ]
    return [{"label": label, "value": value, "css": css} for label, value, css in cards]


def render_report(data: ReportData) -> str:
    """The complete HTML page of the report (`templates/report.html.j2`)."""
    columns, rows = (
        cross_version_table(
            data.cross_version, data.version, data.headline_metrics, data.date, data.in_progress
        )
        if not data.cross_version.empty
        else ([], [])
    )
    return render(
        "report.html.j2",
        version=data.version,
        date=data.date,
        baseline=data.baseline,
        facts=header_facts(data),
        sizes=dataset_sizes(data.scorecard),
        kpis=kpis(data),
        **changes(data),
        week_days=len(data.week),
        week=week_rows(data),
        system_tiers=tier_tables(data, SYSTEM_TIERS),
        judge_tiers=tier_tables(data, JUDGE_TIERS),
        figures=trend_figures(data),
        dates=sorted(set(data.history["date"])) if not data.history.empty else [],
        version_columns=columns,
        version_rows=rows,
        correlations=correlation_tables(data.correlations),
        bridged=bridged_rows(data.comparisons),
        judge_corrected_rows=judge_corrected_rows(data.scorecard),
        ppi_explanation=EXPLANATION,
        full=full_rows(data.scorecard),
    )


def model_bridge_html(comparisons: pd.DataFrame | None) -> str:
    """The section of the metrics compared across a model change (judge, generator, embedder)
    because the baseline was rebuilt with today's models from its stored inputs, each with how
    far the change alone moved it (the verdict's reason, `evaluation.model_bridge`); empty when
    no model changed or nothing could be rebuilt."""
    return render_macro("tables.html.j2", "model_bridge", bridged_rows(comparisons))


def judge_corrected_html(scorecard: pd.DataFrame) -> str:
    """The section, per system and judged criterion with human labels, of the judge's mean
    (and how many items it scored, N), the prediction-powered estimate of the raters' mean with
    its 95% CI, and the labels' own mean and CI (n labels); empty when the scorecard has no
    `ppi_` rows."""
    rows = judge_corrected_rows(scorecard)
    return render_macro("tables.html.j2", "judge_corrected", rows, EXPLANATION)
