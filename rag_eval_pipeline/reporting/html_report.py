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

`collect_report_data` reads the inputs from a `WarehouseStore`; everything else is a pure
function of DataFrames. Every string from the data is escaped with `escaping.html_text`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date as Day
from datetime import datetime
from typing import Any

import jinja2
import pandas as pd
from markupsafe import Markup

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
from rag_eval_pipeline.evaluation.verdicts.columns import KEY
from rag_eval_pipeline.evaluation.verdicts.wording import BRIDGED, NOT_COMPARABLE
from rag_eval_pipeline.metrics.correlation import correlations_by_system
from rag_eval_pipeline.metrics.ppi import CLASSICAL_PREFIX, EXPLANATION, PPI_PREFIX
from rag_eval_pipeline.reporting.alerting import change_text, items_needed_lines, sample_size
from rag_eval_pipeline.reporting.changes import (
    KIND_SECTIONS,
    PRIMARY,
    changes_by_section,
    roles,
    skipped_tiers,
    week_summary,
)
from rag_eval_pipeline.storage.warehouse import (
    REGRESSIONS_ASSET,
    SCORECARD_ASSET,
    Baseline,
    WarehouseStore,
)
from rag_eval_pipeline.text.escaping import html_text, visible_text

DATASET_TIER = "dataset"
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
E2E_JUDGMENTS_ASSET = "e2e_judgments"
E2E_GENERATIONS_ASSET = "e2e_generations"
# The tiers whose system is a model name (see the tier assets), shown in the header.
MODEL_TIERS = {
    "Embedder": "tier0_embedding",
    "Judge": "judge_reliability",
    "Generator": "tier2_generation",
}
DATASET_STATS = {
    "n_queries": "questions",
    "n_corpus": "documents",
    "n_qrels": "qrels",
    "n_sessions": "sessions",
    "n_logs": "logged interactions",
    "n_judge_labels": "judge labels",
}
BANDS = (EXCELLENT, GOOD, NEEDS_ATTENTION)
# Series colours (colour-blind-friendly Tableau hues without red, which marks regressions).
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#b07aa1",
    "#76b7b2",
    "#9c755f",
    "#b6992d",
    "#1f3b73",
    "#17becf",
    "#7f7f7f",
)
REGRESSION_COLOR = "#d62728"
# Regressions listed before the rest is collapsed.
MAX_REGRESSION_ROWS = 12
# Dates of the version summarised under "What changed" (this one included).
WEEK_DAYS = 7


def _visible(value: object) -> object:
    """A template value with its invisible characters shown (`escaping.visible_text`): markup
    built here stays markup (the characters it escapes are never HTML syntax)."""
    if isinstance(value, Markup):
        return Markup(visible_text(value))
    return visible_text(value) if isinstance(value, str) else value


TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("rag_eval_pipeline.reporting", "templates"),
    autoescape=True,
    keep_trailing_newline=True,
    finalize=_visible,
)
# A tick label's width: at most this many px per character at the charts' 12.5 px font (digits,
# `.` and `,` are narrower), plus the gap to the axis and a margin at the SVG's edge.
TICK_CHAR_PX = 7.6
TICK_LABEL_GAP = 14
# Above this many dates a trend line has no per-point markers (regressions are always marked).
MAX_POINT_MARKERS = 60


@dataclass(frozen=True)
class ReportData:
    """Everything the report shows for one partition.

    `history` holds the headline-metric rows of every stored scorecard of `version` up to
    `date` (this partition's included); `alerts` the version's recorded regression alerts;
    `cross_version` the headline rows of the latest scorecard on or before `date` of every
    version (with their `dataset_version` and `date`); `regressions` the partition's alerted
    rows of `metric_regressions` and `comparisons` all its rows; `correlations` the Pearson
    matrix of the RAGAS-style metrics over the partition's questions, per system; `week` the
    `metric_regressions` table of each of the version's last `WEEK_DAYS` stored dates;
    `in_progress` the other versions with a run in progress when the report was written.
    """

    version: str
    date: str
    scorecard: pd.DataFrame
    baseline: Baseline | None
    regressions: pd.DataFrame
    history: pd.DataFrame
    alerts: pd.DataFrame
    cross_version: pd.DataFrame
    headline_metrics: Sequence[str]
    generated_at: datetime
    comparisons: pd.DataFrame = field(default_factory=pd.DataFrame)
    correlations: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    week: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    in_progress: frozenset[str] = frozenset()
    models: Mapping[str, Sequence[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Series:
    """One line of a trend chart: values (and CI bounds, NaN when absent) by ISO date."""

    label: str
    color: str
    dates: Sequence[str]
    values: Sequence[float]
    ci_low: Sequence[float]
    ci_high: Sequence[float]
    regressions: Mapping[str, str] = field(default_factory=dict)  # date → tooltip


def format_value(value: object) -> str:
    """A metric value for display: thousands grouped, precision by magnitude, `—` if missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    number = float(value)  # type: ignore[arg-type]
    if number.is_integer() and abs(number) >= 10:
        return f"{number:,.0f}"
    if abs(number) >= 100:
        return f"{number:,.1f}"
    return f"{number:.2f}" if abs(number) >= 10 else f"{number:.3f}"


def format_q(value: object) -> str:
    """A q-value with two significant digits (`0.00022`), `—` if missing."""
    number = float(value)  # type: ignore[arg-type]
    return "—" if math.isnan(number) else f"{number:.2g}"


def format_count(value: object) -> str:
    """A count with thousands grouped, `—` if missing."""
    number = float(value)  # type: ignore[arg-type]
    return "—" if math.isnan(number) else f"{number:,.0f}"


def format_change(relative: float, base: object = None, value: object = None) -> str:
    """A relative change as a signed percentage (`+4.2%`, `−12.0%`); from a zero baseline the
    change in points (`alerting.change_text`); `new` without a baseline."""
    text = change_text(relative, base, value)
    return "new" if text == "—" else text.replace("-", "−")


# --------------------------------------------------------------------------- inputs


def stored_versions(store: WarehouseStore) -> list[str]:
    """Dataset versions with at least one stored scorecard folder, sorted."""
    root = store.base / SCORECARD_ASSET
    if not root.exists():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def collect_report_data(
    store: WarehouseStore,
    version: str,
    date: str,
    scorecard: pd.DataFrame,
    baseline: Baseline | None,
    headline_metrics: Sequence[str],
    generated_at: datetime,
    regressions: pd.DataFrame,
    in_progress: Collection[str] = (),
) -> ReportData:
    """Read what the report of (`version`, `date`) needs; `scorecard` and `regressions` (the
    `metric_regressions` table) are that partition's; `in_progress` the other versions with a
    run in progress (their stored scorecard may be about to change)."""
    current = scorecard.assign(dataset_version=version, date=date)
    headline = list(headline_metrics)

    def headline_rows(frame: pd.DataFrame, frame_version: str, frame_date: str) -> pd.DataFrame:
        """The headline metrics' rows and every primary metric's (each gets a trend chart
        and a sparkline)."""
        primary = frame.get("role", pd.Series("", index=frame.index)).eq(PRIMARY)
        rows = frame[frame["metric"].isin(headline) | primary]
        return rows.assign(dataset_version=frame_version, date=frame_date)

    earlier = [
        (day, store.read_scorecard(version, day))
        for day in store.scorecard_dates(version)
        if day < date
    ]
    history = [headline_rows(card, version, day) for day, card in earlier if card is not None]
    latest = []
    for other in stored_versions(store):
        if other == version:
            continue
        dates = [day for day in store.scorecard_dates(other) if day <= date]
        card = store.read_scorecard(other, dates[-1]) if dates else None
        if card is not None:
            latest.append(headline_rows(card, other, dates[-1]))
    this = headline_rows(current, version, date)
    judgments = store.read_partition(E2E_JUDGMENTS_ASSET, version, date)
    generations = store.read_partition(E2E_GENERATIONS_ASSET, version, date)
    days = [day for day, _ in earlier][-(WEEK_DAYS - 1) :]
    week = {day: store.read_partition(REGRESSIONS_ASSET, version, day) for day in days}
    return ReportData(
        version=version,
        date=date,
        scorecard=current,
        baseline=baseline,
        regressions=regressions[regressions["alert"].astype(bool)]
        if len(regressions)
        else regressions,
        history=pd.concat([*history, this], ignore_index=True),
        alerts=store.read_alerts(version),
        cross_version=pd.concat([*latest, this], ignore_index=True),
        headline_metrics=headline,
        generated_at=generated_at,
        comparisons=regressions,
        in_progress=frozenset(in_progress) - {version},
        correlations={} if judgments is None else correlations_by_system(judgments),
        models=models_used(current, judgments, generations),
        week={
            **{day: frame for day, frame in week.items() if frame is not None},
            date: regressions,
        },
    )


# --------------------------------------------------------------------------- charts


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round axis ticks (steps of 1, 2, 2.5 or 5 × 10^k) covering [`low`, `high`]."""
    if high - low < 1e-12:
        pad = abs(low) * 0.1 or 0.5
        low, high = low - pad, high + pad
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw * (1 - 1e-9))
    start = math.floor(low / step + 1e-9) * step
    stop = math.ceil(high / step - 1e-9) * step
    return [round(start + i * step, 12) + 0.0 for i in range(round((stop - start) / step) + 1)]


def _tick_label(value: float, step: float) -> str:
    decimals = next(d for d in range(10) if abs(round(step, d) - step) < 1e-9 * step)
    return f"{value:,.{decimals}f}"


def _date_ticks(dates: Sequence[str], x_of: Callable[[str], float], gap: float = 84) -> list[str]:
    """Dates to label, at least `gap` px apart: the latest one always, then back in time."""
    chosen: list[str] = []
    for day in reversed(dates):
        if not chosen or x_of(chosen[-1]) - x_of(day) >= gap:
            chosen.append(day)
    return chosen[::-1]


def _points(pairs: Iterable[tuple[float, float]]) -> str:
    return " ".join(f"{x:.1f},{y:.1f}" for x, y in pairs)


def _runs(mask: Sequence[bool]) -> list[list[int]]:
    """Indices of the maximal runs of True in `mask`."""
    runs: list[list[int]] = []
    for i, ok in enumerate(mask):
        if ok and runs and runs[-1][-1] == i - 1:
            runs[-1].append(i)
        elif ok:
            runs.append([i])
    return runs


def line_chart_svg(
    title: str, series: Sequence[Series], *, width: int = 640, plot_height: int = 210
) -> str:
    """An SVG line chart of `series` over dates: axes, ticks, grid, CI bands, legend.

    Each series is one `<polyline class="series" data-series=...>` per run of known values;
    a regression is a red `<g class="regression">` with a `<title>` tooltip at its point.
    """
    finite = [
        v
        for s in series
        for v in (*s.values, *s.ci_low, *s.ci_high)
        if v is not None and math.isfinite(v)
    ]
    ticks = nice_ticks(min(finite), max(finite)) if finite else [0.0, 0.5, 1.0]
    low, high = ticks[0], ticks[-1]
    labels = [_tick_label(tick, ticks[1] - ticks[0]) for tick in ticks]
    # wide enough for the longest tick label (never clipped at the SVG's left edge)
    left = max(58, math.ceil(TICK_LABEL_GAP + TICK_CHAR_PX * max(map(len, labels))))
    right, top = 24, 14
    plot_width = width - left - right
    all_dates = sorted({d for s in series for d in s.dates})
    ordinals = {d: Day.fromisoformat(d).toordinal() for d in all_dates}
    first, last = (ordinals[all_dates[0]], ordinals[all_dates[-1]]) if all_dates else (0, 0)
    inner = 14  # keeps the first, last, lowest and highest points off the axes

    def x_of(day: str) -> float:
        if last == first:
            return left + plot_width / 2
        return left + inner + (ordinals[day] - first) / (last - first) * (plot_width - 2 * inner)

    def y_of(value: float) -> float:
        return top + inner / 2 + (high - value) / (high - low) * (plot_height - inner)

    bottom = top + plot_height
    legend_items = [(s.label, s.color, "line") for s in series]
    if any(math.isfinite(v) for s in series for v in s.ci_low):
        legend_items.append(("95% CI", "#8a94a6", "band"))
    if any(s.regressions for s in series):
        legend_items.append(("regression", REGRESSION_COLOR, "dot"))
    legend, legend_height = _legend(legend_items, left, bottom + 34, width - right)
    height = bottom + 34 + legend_height + 6

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{html_text(title)}">',
        f"<title>{html_text(title)}</title>",
    ]
    for tick, label in zip(ticks, labels, strict=True):
        y = y_of(tick)
        parts.append(
            f'<line class="grid" x1="{left}" x2="{left + plot_width}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="tick" x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">'
            f"{label}</text>"
        )
    for day in _date_ticks(all_dates, x_of):
        x = x_of(day)
        parts.append(
            f'<line class="axis" x1="{x:.1f}" x2="{x:.1f}" y1="{bottom}" y2="{bottom + 5}"/>'
            f'<text class="tick" x="{x:.1f}" y="{bottom + 19}" text-anchor="middle">'
            f"{html_text(day)}</text>"
        )
    parts.append(
        f'<line class="axis" x1="{left}" x2="{left}" y1="{top}" y2="{bottom}"/>'
        f'<line class="axis" x1="{left}" x2="{left + plot_width}" y1="{bottom}" y2="{bottom}"/>'
    )
    for s in series:
        parts.extend(_series_svg(s, x_of, y_of, markers=len(all_dates) <= MAX_POINT_MARKERS))
    parts.extend(legend)
    parts.append("</svg>")
    return "".join(parts)


def _series_svg(
    s: Series, x_of: Callable[[str], float], y_of: Callable[[float], float], *, markers: bool
) -> list[str]:
    """The CI band, line(s), point markers and regression marks of one series."""
    label = html_text(s.label)
    has_ci = [
        math.isfinite(lo) and math.isfinite(hi) for lo, hi in zip(s.ci_low, s.ci_high, strict=True)
    ]
    parts = []
    for run in _runs(has_ci):
        xs = [x_of(s.dates[i]) for i in run]
        if len(run) == 1:  # a lone CI is an error bar
            parts.append(
                f'<line class="ci" data-series="{label}" x1="{xs[0]:.1f}" x2="{xs[0]:.1f}" '
                f'y1="{y_of(s.ci_low[run[0]]):.1f}" y2="{y_of(s.ci_high[run[0]]):.1f}" '
                f'stroke="{s.color}"/>'
            )
            continue
        upper = [(x, y_of(s.ci_high[i])) for x, i in zip(xs, run, strict=True)]
        lower = [(x, y_of(s.ci_low[i])) for x, i in zip(xs, run, strict=True)]
        parts.append(
            f'<polygon class="ci" data-series="{label}" fill="{s.color}" '
            f'points="{_points([*upper, *reversed(lower)])}"/>'
        )
    known = [math.isfinite(v) for v in s.values]
    for run in _runs(known):
        points = _points((x_of(s.dates[i]), y_of(s.values[i])) for i in run)
        parts.append(
            f'<polyline class="series" data-series="{label}" stroke="{s.color}" points="{points}"/>'
        )
    for i, day in enumerate(s.dates):
        if not known[i]:
            continue
        x, y = x_of(day), y_of(s.values[i])
        ci = f" (95% CI {format_value(s.ci_low[i])}–{format_value(s.ci_high[i])})"
        tip = f"{s.label} · {day}: {format_value(s.values[i])}{ci if has_ci[i] else ''}"
        if day in s.regressions:
            parts.append(
                f'<g class="regression" data-series="{label}" data-date="{html_text(day)}">'
                f"<title>{html_text(s.regressions[day])}</title>"
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="7" fill="none" '
                f'stroke="{REGRESSION_COLOR}" stroke-width="2"/>'
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{REGRESSION_COLOR}"/></g>'
            )
        elif markers:
            parts.append(
                f'<circle class="point" data-series="{label}" data-date="{html_text(day)}" '
                f'cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{s.color}"><title>{html_text(tip)}</title>'
                "</circle>"
            )
    return parts


def _legend(
    items: Sequence[tuple[str, str, str]], left: int, top: int, right: int
) -> tuple[list[str], int]:
    """Legend entries laid out in wrapping rows; returns the SVG parts and the height used."""
    parts, x, y = ['<g class="legend">'], float(left), float(top)
    for label, color, kind in items:
        item_width = 26 + 7.2 * len(label) + 18
        if x > left and x + item_width > right:
            x, y = float(left), y + 18
        if kind == "line":
            swatch = (
                f'<line x1="{x:.1f}" x2="{x + 18:.1f}" y1="{y:.1f}" y2="{y:.1f}" '
                f'stroke="{color}" stroke-width="2.5"/>'
            )
        elif kind == "band":
            swatch = (
                f'<rect x="{x:.1f}" y="{y - 5:.1f}" width="18" height="10" fill="{color}" '
                'fill-opacity="0.25"/>'
            )
        else:
            swatch = f'<circle cx="{x + 9:.1f}" cy="{y:.1f}" r="4" fill="{color}"/>'
        parts.append(f'{swatch}<text x="{x + 24:.1f}" y="{y + 4:.1f}">{html_text(label)}</text>')
        x += item_width
    parts.append("</g>")
    return parts, int(y - top) + 18


# --------------------------------------------------------------------------- tables


def _band_pill(value: object) -> str:
    if not isinstance(value, str) or value not in BANDS:
        return '<span class="muted">—</span>'
    return f'<span class="band band-{value.replace(" ", "-")}">{html_text(value)}</span>'


def _direction(higher_is_better: object) -> str:
    if bool(higher_is_better):
        return ""
    return ' <span class="hint" title="lower is better">↓</span>'


def _ci(low: float, high: float) -> str:
    if not (math.isfinite(low) and math.isfinite(high)):
        return '<span class="muted">—</span>'
    return f"{format_value(low)} – {format_value(high)}"


def _table(headers: Sequence[str], rows: Sequence[str], numeric: set[int], css: str = "") -> str:
    head = "".join(
        f'<th class="num">{html_text(h)}</th>' if i in numeric else f"<th>{html_text(h)}</th>"
        for i, h in enumerate(headers)
    )
    return (
        f'<div class="table-wrap"><table class="{css}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def with_baseline_change(scorecard: pd.DataFrame, baseline: Baseline | None) -> pd.DataFrame:
    """`scorecard` plus `baseline_value` and `relative_change` (NaN without a baseline row)."""
    if baseline is None:
        return scorecard.assign(baseline_value=math.nan, relative_change=math.nan)
    base = baseline.scorecard[[*KEY, "value"]].rename(columns={"value": "baseline_value"})
    merged = scorecard.merge(base, on=KEY, how="left")
    base_abs = merged["baseline_value"].abs()
    change = (merged["value"] - merged["baseline_value"]) / base_abs.where(base_abs > 0)
    return merged.assign(relative_change=change)


def _change_cell(r: Any, regressed: bool, incomparable: str | None = None) -> str:
    """The Δ cell of scorecard row `r`: its change (`format_change`) coloured by direction."""
    text = format_change(r.relative_change, r.baseline_value, r.value)
    if incomparable:
        return f'<td class="num muted">{text} ({html_text(incomparable)})</td>'
    delta = float(r.value) - float(r.baseline_value)
    if text == "new" or math.isnan(delta):
        return '<td class="num muted">—</td>'
    worse = delta < 0 if bool(r.higher_is_better) else delta > 0
    flat = abs(delta) < 0.005 * abs(float(r.baseline_value)) or delta == 0
    css = "flat" if flat else ("worse" if worse else "better")
    css = "regressed" if regressed else css
    return f'<td class="num delta delta-{css}">{text}</td>'


def scorecard_summary_html(
    scorecard: pd.DataFrame,
    baseline: Baseline | None,
    regressions: pd.DataFrame,
    headline_metrics: Sequence[str],
    comparisons: pd.DataFrame | None = None,
    sparks: Mapping[tuple[str, str, str], str] | None = None,
) -> str:
    """Thresholded and headline metrics of the partition, grouped by tier, bands coloured; Δ
    says when the metric is not comparable because a model changed, "Detectable" the
    smallest change in the bad direction the comparison could have flagged (its
    `detectable_change`), and "Trend" (with `sparks`) the metric's sparkline."""
    rows = scorecard[
        (scorecard["tier"] != DATASET_TIER)
        & (scorecard["band"].isin(BANDS) | scorecard["metric"].isin(headline_metrics))
    ]
    if rows.empty:
        return '<p class="empty">No thresholded or headline metric in this scorecard.</p>'
    regressed = set(regressions[KEY].itertuples(index=False, name=None))
    incomparable = model_changes(comparisons)
    detectable = detectable_changes(comparisons)
    body = []
    grouped = with_baseline_change(rows, baseline).groupby("tier", sort=True)
    columns = 8 if sparks is None else 9
    for tier, group in grouped:
        if grouped.ngroups > 1:
            body.append(f'<tr class="group"><th colspan="{columns}">{html_text(tier)}</th></tr>')
        for r in group.itertuples():
            spark = (
                ""
                if sparks is None
                else f'<td class="trend">{sparks.get((r.tier, r.system, r.metric), "")}</td>'
            )
            is_regressed = (r.tier, r.system, r.metric) in regressed
            moved = incomparable.get((r.tier, r.system, r.metric))
            body.append(
                f'<tr class="{"row-regressed" if is_regressed else ""}">'
                f"<td>{html_text(r.system)}</td>"
                f"<td><code>{html_text(r.metric)}</code>{_direction(r.higher_is_better)}</td>"
                f'<td class="num strong">{format_value(r.value)}</td>'
                f'<td class="num">{_ci(r.ci_low, r.ci_high)}</td>'
                f'<td class="num">{format_count(r.count)}</td>'
                f"{_change_cell(r, is_regressed, moved)}"
                f'<td class="num muted">'
                f"{format_detectable(detectable.get((r.tier, r.system, r.metric), math.nan))}</td>"
                f"<td>{_band_pill(r.band)}</td>{spark}</tr>"
            )
    headers = ["System", "Metric", "Value", "95% CI", "n", "Δ vs baseline", "Detectable", "Band"]
    if sparks is not None:
        headers.append("Trend")
    return _table(headers, body, {2, 3, 4, 5, 6}, "scorecard")


def detectable_changes(comparisons: pd.DataFrame | None) -> dict[tuple[str, str, str], float]:
    """(tier, system, metric) → the comparison's `detectable_change` (relative, ≥ 0)."""
    if comparisons is None or comparisons.empty or "detectable_change" not in comparisons:
        return {}
    return {
        (r.tier, r.system, r.metric): float(r.detectable_change) for r in comparisons.itertuples()
    }


def format_detectable(relative: float) -> str:
    """The smallest flaggable change (`≥ 12.5%`; `≥ 364×` from 10 times the baseline on, e.g.
    a 100 ms floor on a 0.3 ms latency), `none at this n` when no change can be flagged, `—`
    when it is not computed (not compared, an unpaired test, a zero baseline)."""
    if math.isnan(relative):
        return "—"
    if math.isinf(relative):
        return "none at this n"
    return f"≥ {relative:,.0f}×" if relative >= 10 else f"≥ {relative * 100:.1f}%"


def model_changes(comparisons: pd.DataFrame | None) -> dict[tuple[str, str, str], str]:
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


def full_scorecard_html(scorecard: pd.DataFrame) -> str:
    """Every row of the scorecard, dataset statistics included."""
    body = [
        f"<tr><td>{html_text(r.tier)}</td><td>{html_text(r.system)}</td><td><code>{html_text(r.metric)}</code>"
        f"{_direction(r.higher_is_better)}</td>"
        f'<td class="num">{format_value(r.value)}</td><td class="num">{format_value(r.std)}</td>'
        f'<td class="num">{_ci(r.ci_low, r.ci_high)}</td>'
        f'<td class="num">{format_count(r.count)}</td>'
        f'<td class="num">{format_count(r.n_errors)}</td><td>{_band_pill(r.band)}</td></tr>'
        for r in scorecard.itertuples()
    ]
    headers = ["Tier", "System", "Metric", "Value", "Std", "95% CI", "n", "Errors", "Band"]
    return _table(headers, body, {3, 4, 5, 6, 7}, "scorecard compact")


def model_bridge_html(comparisons: pd.DataFrame | None) -> str:
    """The metrics compared across a model change (judge, generator, embedder) because the
    baseline was rebuilt with today's models from its stored inputs, each with how far the
    change alone moved it (the verdict's reason, `evaluation.model_bridge`); empty when no
    model changed or nothing could be rebuilt."""
    if comparisons is None or comparisons.empty:
        return ""
    bridged = comparisons[comparisons["reason"].fillna("").str.contains(BRIDGED, regex=False)]
    if bridged.empty:
        return ""
    body = [
        f"<tr><td>{html_text(r.tier)}</td><td>{html_text(r.system)}</td>"
        f"<td><code>{html_text(r.metric)}</code></td><td>{html_text(r.verdict)}</td>"
        f"<td>{html_text(r.reason)}</td></tr>"
        for r in bridged.itertuples()
    ]
    return (
        '<section id="model-bridge"><h2>Model changed: baseline rebuilt</h2><p class="lead">'
        "A model differs from the baseline's, so the baseline was rebuilt with today's models "
        "from its stored inputs (answers re-judged, re-generated, or the corpus re-embedded) "
        "and compared item by item under one set of models; each row says how far the change "
        "alone moved the metric on the baseline's items.</p>"
        f"{_table(['Tier', 'System', 'Metric', 'Verdict', 'Bridge'], body, set())}</section>"
    )


def judge_corrected_html(scorecard: pd.DataFrame) -> str:
    """Per system and judged criterion with human labels: the judge's mean (and how many items
    it scored, N), the prediction-powered estimate of the raters' mean with its 95% CI, and the
    labels' own mean and CI (n labels); empty when the scorecard has no `ppi_` rows."""
    ppi = scorecard[scorecard["metric"].str.startswith(PPI_PREFIX)]
    if ppi.empty:
        return ""
    rows = {(r.tier, r.system, r.metric): r for r in scorecard.itertuples()}
    missing = '<span class="muted">—</span>'
    body = []
    for r in ppi.itertuples():
        metric = r.metric.removeprefix(PPI_PREFIX)
        # the judge metrics PPI corrects are summarized as avg_<metric> (their SCORECARD_NAME)
        judge = rows.get((r.tier, r.system, f"avg_{metric}"))
        labels = rows.get((r.tier, r.system, CLASSICAL_PREFIX + metric))
        cells = [
            format_value(judge.value) if judge else missing,
            format_count(judge.count) if judge else missing,
            format_value(r.value),
            _ci(r.ci_low, r.ci_high),
            format_value(labels.value) if labels else missing,
            _ci(labels.ci_low, labels.ci_high) if labels else missing,
            format_count(r.count),
        ]
        body.append(
            f"<tr><td>{html_text(r.system)}</td><td><code>{html_text(metric)}</code></td>"
            + "".join(f'<td class="num">{cell}</td>' for cell in cells)
            + "</tr>"
        )
    headers = [
        "System",
        "Metric",
        "Judge mean",
        "N judged",
        "PPI estimate",
        "PPI 95% CI",
        "Labels mean",
        "Labels 95% CI",
        "n labeled",
    ]
    return (
        f'<section id="judge-corrected"><h2>Judge corrected by human labels</h2>'
        f'<p class="lead">{html_text(EXPLANATION)}</p>'
        f"{_table(headers, body, {2, 3, 4, 5, 6, 7, 8})}</section>"
    )


def correlations_html(correlations: Mapping[str, pd.DataFrame]) -> str:
    """One square table per system: Pearson r of each pair of metrics, `—` where undefined."""
    tables = []
    for system, matrix in correlations.items():
        body = [
            f"<tr><th><code>{html_text(metric)}</code></th>"
            + "".join(f'<td class="num">{format_value(r)}</td>' for r in row)
            + "</tr>"
            for metric, row in zip(matrix.index, matrix.to_numpy(dtype=float), strict=True)
        ]
        headers = ["Metric", *matrix.columns]
        table = _table(headers, body, set(range(1, len(headers))), "correlations compact")
        tables.append(f"<h3>{html_text(system)}</h3>{table}")
    return "".join(tables)


def cross_version_html(
    cross_version: pd.DataFrame,
    current_version: str,
    headline_metrics: Sequence[str],
    report_date: str | None = None,
    in_progress: Collection[str] = (),
) -> str:
    """Headline metric × system rows, one column per version (its latest date on or before),
    each column naming its date; a version whose date is older than `report_date`, or with a run
    in progress (`in_progress`), is marked, and a note under the table says what the marks mean.
    """
    if cross_version.empty:
        return '<p class="empty">No headline metric stored for any version.</p>'
    versions = (
        cross_version[["dataset_version", "date"]].drop_duplicates().sort_values("dataset_version")
    )
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
    marks = {
        v: _version_mark(d, report_date, v in in_progress)
        for v, d in versions.itertuples(index=False)
    }
    head = "<th>Metric</th><th>System</th>" + "".join(
        f'<th class="num{" current" if v == current_version else ""}">{html_text(v)}'
        f'<span class="sub">{html_text(d)}</span>{marks[v]}</th>'
        for v, d in versions.itertuples(index=False)
    )
    body = []
    previous = None
    for metric, tier, system in keys[["metric", "tier", "system"]].itertuples(index=False):
        first = metric != previous
        previous = metric
        name = f"<code>{html_text(metric)}</code>" if first else ""
        row = [f"<td>{name}</td><td>{html_text(system)}</td>"]
        for version in versions["dataset_version"]:
            current = " current" if version == current_version else ""
            found = cells.get((metric, tier, system, version))
            if found is None:
                row.append(f'<td class="num muted{current}">—</td>')
                continue
            value, band = found
            band = band if isinstance(band, str) else ""
            css = f" cell-{band.replace(' ', '-')}" if band in BANDS else ""
            row.append(f'<td class="num{css}{current}">{format_value(value)}</td>')
        body.append(f'<tr class="{"metric-start" if first else ""}">{"".join(row)}</tr>')
    note = (
        '<p class="muted">Marked: that version has no scorecard on this report\'s date (its '
        "latest earlier one is shown), or a run of it was in progress when the report was "
        "written; compare with care.</p>"
        if any(marks.values())
        else ""
    )
    return (
        '<div class="table-wrap"><table class="cross"><thead><tr>'
        f"{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>{note}"
    )


def _version_mark(day: str, report_date: str | None, in_progress: bool) -> str:
    """The mark of a version's column: older than the report's date, a run in progress."""
    marks = [f"older than {report_date}"] if report_date and day < report_date else []
    marks += ["run in progress"] if in_progress else []
    return "".join(f'<span class="sub stale">{html_text(mark)}</span>' for mark in marks)


# --------------------------------------------------------------------------- what changed


def _change_row(r: Any) -> str:
    delta = float(r.value) - float(r.baseline_value)
    got_worse = delta < 0 if bool(r.higher_is_better) else delta > 0
    worse = r.section != "Improvements" and (r.section != KIND_SECTIONS[MONITORED] or got_worse)
    css = "delta-regressed" if worse else "delta-better"
    role = str(r.role)
    return (
        f'<tr><td><span class="role role-{html_text(role)}">{html_text(role)}</span></td>'
        f"<td>{html_text(r.tier)}</td><td>{html_text(r.system)}</td>"
        f"<td><code>{html_text(r.metric)}</code>"
        f"{_direction(r.higher_is_better)}</td>"
        f'<td class="num">{format_value(r.baseline_value)}</td>'
        f'<td class="num strong">{format_value(r.value)}</td>'
        f'<td class="num delta {css}">'
        f"{format_change(r.relative_change, r.baseline_value, r.value)}</td>"
        f'<td class="num">{format_q(r.q_value)}</td>'
        f'<td class="num">{html_text(sample_size(r))}</td>'
        f'<td>{html_text(r.where)}<div class="hint">{html_text(r.reason)}</div></td></tr>'
    )


CHANGE_HEADERS = ("Role", "Tier", "System", "Metric", "Baseline", "Now", "Change", "q", "n")


def changes_html(data: ReportData) -> str:
    """The partition's changes, one table per section (regressions, outages, untestable
    changes, improvements, and any new verdict kind), then the tiers that were skipped."""
    if data.baseline is None:
        intro = (
            '<p class="empty">No baseline yet: this is the first stored evaluation of this '
            "dataset version, so there is nothing to compare with.</p>"
        )
        sections: dict[str, pd.DataFrame] = {}
    else:
        sections = changes_by_section(data.comparisons, data.headline_metrics)
        told = day_headline(data)
        css = "ok" if told.state == QUIET else "headline"
        intro = f'<p class="{css}" id="headline">{html_text(told.text)}</p>'
    parts = [intro]
    for section, rows in sections.items():
        body = [_change_row(r) for r in rows.itertuples()]
        n_primary = int((rows["role"] == PRIMARY).sum())
        anchor = ' id="regressions"' if section == "Regressions" else ""
        headers, numeric = [*CHANGE_HEADERS, "Where to look"], {4, 5, 6, 7, 8}
        shown = _table(headers, body[:MAX_REGRESSION_ROWS], numeric, "changes")
        rest = (
            f'<details class="more"><summary>{len(body) - MAX_REGRESSION_ROWS} more</summary>'
            f"{_table(headers, body[MAX_REGRESSION_ROWS:], numeric, 'changes')}</details>"
            if len(body) > MAX_REGRESSION_ROWS
            else ""
        )
        parts.append(
            f'<div class="change-group"{anchor}><h3>{html_text(section)} '
            f'<span class="count">{len(rows)}, {n_primary} primary</span></h3>{shown}{rest}</div>'
        )
    needed = items_needed_lines(data.comparisons) if data.baseline is not None else []
    if needed:
        items = "".join(f"<li>{html_text(line)}</li>" for line in needed)
        parts.append(
            '<div class="items-needed"><h3>How many questions do I need?</h3>'
            "<p>For each primary metric, about how many questions a 10% drop needs to be "
            "flagged on its own, at the metric's noise pooled over the stored days (with a "
            "floor) and its share of the alert budget:</p>"
            f"<ul>{items}</ul></div>"
        )
    skipped = skipped_tiers(data.scorecard, SYSTEM_TIERS)
    if skipped and not data.scorecard.empty:
        names = ", ".join(f"<code>{html_text(t)}</code>" for t in skipped)
        parts.append(
            f'<p class="skipped">Skipped tiers: {names} (no row in this scorecard: the tier '
            "needs data this version does not have; its asset's metadata in the UI says why).</p>"
        )
    return "".join(parts)


def week_html(data: ReportData) -> str:
    """One row per recent date: regressions, outages, improvements, the largest regression."""
    summary = week_summary(dict(data.week), data.headline_metrics)
    if summary.empty:
        return '<p class="empty">No verdict stored yet.</p>'
    body = []
    for r in summary.itertuples():
        current = " current" if r.date == data.date else ""
        cells = "".join(
            f'<td class="num{" bad" if n and name != "improvements" else ""}">{n}</td>'
            for name, n in (
                ("regressions", r.regressions),
                ("outages", r.outages),
                ("improvements", r.improvements),
            )
        )
        link = (
            html_text(r.date)
            if current
            else f'<a href="{html_text(r.date)}.html">{html_text(r.date)}</a>'
        )
        body.append(
            f'<tr class="{current.strip()}"><td>{link}</td>{cells}'
            f"<td>{html_text(r.largest or r.headline)}</td></tr>"
        )
    headers = ["Date", "Regressions", "Outages", "Improvements", "First regression, or the day"]
    return _table(headers, body, {1, 2, 3}, "week compact")


# --------------------------------------------------------------------------- tiers


def sparkline_svg(
    values: Sequence[float],
    marked: Sequence[bool],
    label: str,
    color: str = PALETTE[0],
    series: str = "",
) -> str:
    """A 96×22 inline SVG line of `values` (oldest first) in `color` (the system `series`'s
    colour in every chart, `series_colors`), red dots where `marked`."""
    width, height, pad = 96, 22, 3
    finite = [v for v in values if math.isfinite(v)]
    if len(finite) < 2:
        return '<span class="muted">—</span>'
    low, high = min(finite), max(finite)
    span = (high - low) or 1.0
    step = (width - 2 * pad) / (len(values) - 1)
    points = [
        (pad + i * step, height - pad - (v - low) / span * (height - 2 * pad))
        for i, v in enumerate(values)
    ]
    line = " ".join(
        f"{x:.1f},{y:.1f}" for (x, y), v in zip(points, values, strict=True) if math.isfinite(v)
    )
    dots = "".join(
        f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.4" fill="{REGRESSION_COLOR}"/>'
        for (x, y), m, v in zip(points, marked, values, strict=True)
        if m and math.isfinite(v)
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="spark" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{html_text(label)}"><title>{html_text(label)}</title>'
        f'<polyline data-series="{html_text(series)}" points="{line}" fill="none" '
        f'stroke="{color}" stroke-width="1.6"/>{dots}</svg>'
    )


def _sparklines(data: ReportData) -> dict[tuple[str, str, str], str]:
    """(tier, system, metric) → sparkline of the stored history, for primary rows."""
    if data.history.empty:
        return {}
    history = data.history.assign(role=roles(data.history, data.headline_metrics))
    history = history[history["role"] == PRIMARY]
    dates = sorted(set(data.history["date"]))
    marks = regression_marks(data)
    colors = series_colors(data.history)
    lines = {}
    for (tier, system, metric), group in history.groupby(["tier", "system", "metric"]):
        by_date = dict(zip(group["date"], group["value"].astype(float), strict=True))
        values = [by_date.get(day, math.nan) for day in dates]
        marked = [(day, tier, system, metric) in marks for day in dates]
        label = f"{metric} of {system}, {dates[0]} to {dates[-1]}"
        color = colors.get(str(system), PALETTE[0])
        lines[(tier, system, metric)] = sparkline_svg(values, marked, label, color, str(system))
    return lines


def best_system(rows: pd.DataFrame, headline_metrics: Sequence[str]) -> str:
    """'Best: <system> (<metric> = <value>)' on the tier's first headline metric that several
    systems report, '' when no such metric."""
    for metric in headline_metrics:
        candidates = rows[(rows["metric"] == metric) & rows["value"].notna()]
        if candidates["system"].nunique() < 2:
            continue
        higher = bool(candidates["higher_is_better"].iloc[0])
        best = candidates.loc[
            candidates["value"].astype(float).idxmax()
            if higher
            else candidates["value"].astype(float).idxmin()
        ]
        return (
            f'<p class="best">Best system: <strong>{html_text(best["system"])}</strong> '
            f"(<code>{html_text(metric)}</code> = {format_value(best['value'])} of "
            f"{candidates['system'].nunique()} systems)</p>"
        )
    return ""


def tier_tables_html(data: ReportData, tiers: Sequence[str]) -> str:
    """One table per tier of `tiers` present in the scorecard, in that order, with the best
    system and a trend sparkline for each primary metric."""
    parts = []
    sparks = _sparklines(data)
    for tier in tiers:
        rows = data.scorecard[data.scorecard["tier"] == tier]
        if rows.empty:
            continue
        table = scorecard_summary_html(
            rows,
            data.baseline,
            data.regressions,
            data.headline_metrics,
            data.comparisons,
            sparks,
        )
        parts.append(
            f'<div class="tier" id="tier-{html_text(tier)}"><h3>{html_text(tier)}</h3>'
            f"{best_system(rows, data.headline_metrics)}{table}</div>"
        )
    return (
        "".join(parts)
        or '<p class="empty">No thresholded or headline metric in this scorecard.</p>'
    )


# --------------------------------------------------------------------------- page


# The columns of the per-question rows that name the model which made them.
MODEL_COLUMNS = {"Judge": "judge_model", "Generator": "generator_model"}


def models_used(
    scorecard: pd.DataFrame,
    judgments: pd.DataFrame | None = None,
    generations: pd.DataFrame | None = None,
) -> dict[str, list[str]]:
    """Role (`Embedder`, `Judge`, `Generator`) → the model names the partition was made with:
    the tier named after the model (`MODEL_TIERS`), and the models the end-to-end judgments
    and generations name in their rows (a version without judge labels has no judge tier)."""
    found = {
        role: set(scorecard.loc[scorecard["tier"] == tier, "system"].astype(str))
        for role, tier in MODEL_TIERS.items()
    }
    for role, frame in (("Judge", judgments), ("Generator", generations)):
        column = MODEL_COLUMNS[role]
        if frame is not None and column in frame.columns:
            found[role] |= set(frame[column].dropna().astype(str))
    return {role: sorted(names) for role, names in found.items()}


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
    history: pd.DataFrame,
    metric: str,
    colors: Mapping[str, str],
    marks: Mapping[tuple[str, str, str, str], str],
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
                color=colors.get(str(system), PALETTE[0]),
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


def series_colors(history: pd.DataFrame) -> dict[str, str]:
    """System → its colour in every chart (trend charts and sparklines). Systems drawn in the
    same chart (the same metric) get different colours while the palette lasts: greedy, in name
    order, each takes the first colour none of its chart-mates has (the first one when all are
    taken)."""
    charts = [set(g.astype(str)) for _, g in history.groupby("metric")["system"]]
    colors: dict[str, str] = {}
    for system in sorted(set(history["system"].astype(str))):
        taken = {colors[o] for chart in charts if system in chart for o in chart if o in colors}
        colors[system] = next((c for c in PALETTE if c not in taken), PALETTE[0])
    return colors


def trends_html(data: ReportData) -> str:
    """A chart per headline metric present in the history, systems coloured consistently."""
    if data.history.empty:
        return '<p class="empty">No headline metric in the stored scorecards.</p>'
    colors = series_colors(data.history)
    marks = regression_marks(data)
    figures = []
    present = set(data.history["metric"])
    primary = data.history.get("role", pd.Series("", index=data.history.index)).eq(PRIMARY)
    also = sorted(set(data.history.loc[primary, "metric"]) - set(data.headline_metrics))
    for metric in (m for m in (*data.headline_metrics, *also) if m in present):
        series = trend_series(data.history, metric, colors, marks)
        lower = not bool(
            data.history.loc[data.history["metric"] == metric, "higher_is_better"].iloc[0]
        )
        hint = '<span class="hint">lower is better</span>' if lower else ""
        figures.append(
            f'<figure class="card chart-card" data-metric="{html_text(metric)}"><figcaption>'
            f"<code>{html_text(metric)}</code>{hint}</figcaption>"
            f"{line_chart_svg(f'{metric} by date ({data.version})', series)}</figure>"
        )
    dates = sorted(set(data.history["date"]))
    span = (
        f"{html_text(dates[0])} → {html_text(dates[-1])}" if len(dates) > 1 else html_text(dates[0])
    )
    return (
        f'<p class="lead">{len(dates)} stored date(s) of '
        f"<strong>{html_text(data.version)}</strong> "
        f"({span}). Hover a point for its value; red rings are regressions.</p>"
        f'<div class="charts">{"".join(figures)}</div>'
    )


def day_headline(data: ReportData) -> Headline:
    """The partition's headline (`evaluation.headline`): the counts and words of every surface."""
    rows = data.comparisons if data.baseline is not None else data.comparisons.iloc[0:0]
    return headline(rows.assign(role=roles(rows, data.headline_metrics)) if len(rows) else rows)


def _kpis(data: ReportData) -> str:
    metrics = data.scorecard[data.scorecard["tier"].isin(SYSTEM_TIERS)]
    counts = metrics["band"].value_counts()
    told = day_headline(data)
    changes = [
        ("Regressions", told.counts[REGRESSION], "needs-attention"),
        ("Outages", told.counts[OUTAGE], "needs-attention"),
        ("Untestable primary", told.undecided, "needs-attention"),
        ("Improvements", told.counts[IMPROVEMENT], "excellent"),
        ("Monitored changes", told.counts[MONITORED], "neutral"),
    ]
    cards = [
        (label, n, css if n else ("excellent" if label == "Regressions" else "neutral"))
        for label, n, css in changes
        if n or label in ("Regressions", "Improvements")
    ]
    cards += [
        ("System metrics", len(metrics), "neutral"),
        ("Excellent", int(counts.get(EXCELLENT, 0)), "excellent"),
        ("Good", int(counts.get(GOOD, 0)), "good"),
        ("Below band", int(counts.get(NEEDS_ATTENTION, 0)), "needs-attention"),
    ]
    return (
        '<div class="kpis">'
        + "".join(
            f'<div class="kpi kpi-{css}"><div class="kpi-value">{value}</div>'
            f'<div class="kpi-label">{html_text(label)}</div></div>'
            for label, value, css in cards
        )
        + "</div>"
    )


def _header(data: ReportData) -> str:
    baseline = (
        f"{html_text(data.baseline.version)} {html_text(data.baseline.date)}"
        if data.baseline
        else "none yet"
    )
    facts = [
        ("Dataset version", html_text(data.version)),
        ("Date", html_text(data.date)),
        ("Baseline", baseline),
        ("Generated", html_text(data.generated_at.strftime("%Y-%m-%d %H:%M:%S %Z").strip())),
    ]
    facts += [
        (role, ", ".join(f"<code>{html_text(m)}</code>" for m in models) or "—")
        for role, models in (data.models or models_used(data.scorecard)).items()
    ]
    stats = data.scorecard[data.scorecard["tier"] == DATASET_TIER].set_index("metric")["value"]
    sizes = " · ".join(
        f"{format_count(stats[name])} {label}"
        for name, label in DATASET_STATS.items()
        if name in stats.index and stats[name] > 0
    )
    items = "".join(f"<div><dt>{k}</dt><dd>{v}</dd></div>" for k, v in facts)
    return (
        '<header class="page-header"><p class="eyebrow">RAG evaluation report</p>'
        f'<h1>{html_text(data.version)} <span class="light">· {html_text(data.date)}</span></h1>'
        f'<dl class="facts">{items}</dl>'
        + (f'<p class="sizes">{sizes}</p>' if sizes else "")
        + "</header>"
    )


def render_report(data: ReportData) -> str:
    """The complete HTML page of the report (`templates/report.html.j2`); every fragment is
    built with its strings escaped by `html_text`."""
    against = (
        f" against {html_text(data.baseline.version)} {html_text(data.baseline.date)}"
        if data.baseline
        else ""
    )
    judge = tier_tables_html(data, JUDGE_TIERS)
    judge_numbers = model_bridge_html(data.comparisons) + judge_corrected_html(data.scorecard)
    fragments = {
        "header": _header(data),
        "kpis": _kpis(data),
        "against": against,
        "changes": changes_html(data),
        "week": week_html(data),
        "tiers": tier_tables_html(data, SYSTEM_TIERS),
        "trends": trends_html(data),
        "versions": cross_version_html(
            data.cross_version, data.version, data.headline_metrics, data.date, data.in_progress
        ),
        "correlations": correlations_html(data.correlations) if data.correlations else "",
        "judge": (judge if "<table" in judge else '<p class="empty">No judge scored.</p>')
        + judge_numbers,
        "full": full_scorecard_html(data.scorecard),
        "css": CSS,
    }
    return TEMPLATES.get_template("report.html.j2").render(
        version=data.version,
        date=data.date,
        week_days=len(data.week),
        n_rows=len(data.scorecard),
        **{name: Markup(text) for name, text in fragments.items()},
    )


CSS = """
:root{--ink:#1d2433;--muted:#6b7385;--line:#e3e6ed;--bg:#f6f7f9;--card:#fff;
--exc:#137a3f;--exc-bg:#e3f4e9;--good:#1c5fb8;--good-bg:#e6effb;--bad:#b42318;--bad-bg:#fdeceb}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);
font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1240px;margin:0 auto;padding:32px 24px 48px}
code{font:0.86em/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
h1{font-size:30px;margin:2px 0 16px;letter-spacing:-0.01em}
h1 .light{color:var(--muted);font-weight:400}
h2{font-size:19px;margin:0 0 12px}
section{background:var(--card);border:1px solid var(--line);border-radius:10px;
padding:20px 22px;margin:18px 0}
.eyebrow{margin:0;text-transform:uppercase;letter-spacing:.08em;font-size:12px;
color:var(--muted);font-weight:600}
.facts{display:grid;grid-template-columns:repeat(auto-fill,minmax(210px,1fr));gap:10px 24px;
margin:0}
.facts dt{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.05em}
.facts dd{margin:0;font-weight:500;overflow-wrap:anywhere}
.sizes{color:var(--muted);margin:12px 0 0;font-size:14px}
.kpis{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:12px;
margin:22px 0 0}
.kpi{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:14px 16px;
border-top:4px solid var(--muted)}
.kpi-value{font-size:28px;font-weight:650;font-variant-numeric:tabular-nums}
.kpi-label{color:var(--muted);font-size:13px}
.kpi-excellent{border-top-color:var(--exc)}.kpi-good{border-top-color:var(--good)}
.kpi-needs-attention{border-top-color:var(--bad)}
.kpi-needs-attention .kpi-value{color:var(--bad)}
.lead{color:var(--muted);margin:-4px 0 14px;font-size:14px}
.table-wrap{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:14px}
th,td{padding:7px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
thead th{font-size:12px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);
border-bottom:2px solid var(--line);white-space:nowrap}
tbody tr:hover{background:#fafbfc}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.strong{font-weight:600}
tr.group th{background:var(--bg);font-size:12px;text-transform:uppercase;letter-spacing:.05em;
color:var(--ink);padding-top:10px}
tr.row-regressed td{background:var(--bad-bg)}
tr.row-regressed td:first-child{box-shadow:inset 3px 0 var(--bad)}
.band{display:inline-block;padding:1px 9px;border-radius:999px;font-size:12px;font-weight:600;
white-space:nowrap}
.band-excellent{color:var(--exc);background:var(--exc-bg)}
.band-good{color:var(--good);background:var(--good-bg)}
.band-needs-attention{color:var(--bad);background:var(--bad-bg)}
.cell-excellent{color:var(--exc)}.cell-good{color:var(--good)}
.cell-needs-attention{color:var(--bad);font-weight:600}
.delta-better{color:var(--exc)}.delta-worse{color:#a15c00}.delta-flat{color:var(--muted)}
.delta-regressed{color:var(--bad);font-weight:700}
.muted{color:var(--muted)}
.hint{color:var(--muted);font-size:12px;margin-left:6px}
.empty,.ok,.headline{margin:0 0 12px;padding:12px 14px;border-radius:8px;background:var(--bg)}
.headline{background:var(--bad-bg);color:var(--bad);font-weight:600}
.ok{background:var(--exc-bg);color:var(--exc);font-weight:500}
table.changes td:nth-child(3){min-width:10em}
table.compact{font-size:13px}table.compact td,table.compact th{padding:4px 8px}
table.cross thead th.num{text-transform:none;letter-spacing:0;color:var(--ink)}
table.cross th .sub{display:block;font-weight:400;text-transform:none;letter-spacing:0}
table.cross{width:auto;min-width:min(100%,640px)}
table.cross tr.metric-start td{border-top:2px solid var(--line)}
table.cross .current{background:#f2f6fd}
table.cross th .stale{color:#a15c00}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(480px,1fr));gap:16px}
.chart-card{margin:0;border:1px solid var(--line);border-radius:8px;padding:10px 12px 4px}
.chart-card figcaption{font-weight:600;margin-bottom:2px}
svg.chart{width:100%;height:auto;display:block;font-family:inherit}
svg.chart text{font-size:12.5px;fill:#4a5263}
svg.chart .grid{stroke:#edf0f4}svg.chart .axis{stroke:#9aa3b2}
svg.chart polyline.series{fill:none;stroke-width:2;stroke-linejoin:round;stroke-linecap:round}
svg.chart polygon.ci{fill-opacity:.12;stroke:none}
svg.chart line.ci{stroke-width:6;stroke-opacity:.25}
svg.chart circle.point{stroke:#fff;stroke-width:1}
details summary{cursor:pointer;font-weight:600;font-size:17px}
details.more{margin-top:10px}details.more summary{font-size:14px;color:var(--good)}
details[open] summary{margin-bottom:12px}
footer{color:var(--muted);font-size:13px;margin-top:24px;text-align:center}
h3{font-size:16px;margin:18px 0 8px}h3 .count{color:var(--muted);font-weight:400;font-size:13px}
.role{display:inline-block;padding:0 7px;border-radius:999px;font-size:11px;font-weight:600;
background:var(--bg);color:var(--muted)}.role-primary{background:#1d2433;color:#fff}
.change-group{margin-bottom:14px}.best{margin:0 0 8px;font-size:14px}
.skipped{color:var(--muted);font-size:14px}td.bad{color:var(--bad);font-weight:700}
table.week tr.current td{background:#f2f6fd;font-weight:600}
td.trend{padding:2px 8px}svg.spark{display:block}
.tier{margin-bottom:18px}
@media (max-width:640px){main{padding:16px 10px}section{padding:14px}
.charts{grid-template-columns:1fr}h1{font-size:24px}}
@media print{body{background:#fff}section{break-inside:avoid;border:none;padding:0}}
"""
