"""The geometry of the report's SVG charts: scales, ticks, coordinates, legend layout.

`line_chart` lays out a trend chart of `Series` over dates and `sparkline` a 96×22 line; both
return plain data (numbers in SVG user units, label strings) that `templates/charts.svg.j2`
draws. Nothing here writes markup.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date as Day

from rag_eval_pipeline.reporting.formats import format_value

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
# Past the palette, the same hues again with these dash patterns (SVG `stroke-dasharray`):
# dashed, dotted, dash-dot, long dash; a reader, colour-blind or not, tells them apart by shape.
DASHES = ("", "7 4", "2 3", "9 3 2 3", "14 4")
REGRESSION_COLOR = "#d62728"
CI_LEGEND_COLOR = "#8a94a6"
# A tick label's width: at most this many px per character at the charts' 12.5 px font (digits,
# `.` and `,` are narrower), plus the gap to the axis and a margin at the SVG's edge.
TICK_CHAR_PX = 7.6
TICK_LABEL_GAP = 14
# Above this many dates a trend line has no per-point markers (regressions are always marked).
MAX_POINT_MARKERS = 60
# A trend chart's margins (px) right and above the plot, and the inset that keeps the first,
# last, lowest and highest points off the axes.
RIGHT, TOP, INNER = 24, 14, 14
MIN_LEFT = 58
# From the plot's bottom: the date labels' baseline, the legend's first row; under the legend.
DATE_LABEL_DROP, LEGEND_DROP, BOTTOM_MARGIN = 19, 34, 6
# A value label: its right end left of the axis, its baseline under the tick (12.5 px font).
VALUE_LABEL_GAP, VALUE_LABEL_DROP = 8, 4
# Legend: row height, swatch width plus gap, px per label character, gap after an entry.
LEGEND_ROW, LEGEND_SWATCH, LEGEND_CHAR_PX, LEGEND_GAP = 18, 26, 7.2, 18
SPARK_WIDTH, SPARK_HEIGHT, SPARK_PAD = 96, 22, 3

Point = tuple[float, float]


@dataclass(frozen=True)
class SeriesStyle:
    """How a series is stroked: a palette colour and a dash pattern ("" for a solid line)."""

    color: str
    dash: str = ""


def series_style(index: int) -> SeriesStyle:
    """The `index`-th style (from 0), distinct for every index: the palette's colours solid,
    then each colour again per dash pattern of `DASHES` (50 styles), then dash-dot patterns
    with a dash of 3, 4, ... px (distinct, but more than 50 series in one chart are hard to
    tell apart whatever the style)."""
    round_, color = divmod(index, len(PALETTE))
    dash = DASHES[round_] if round_ < len(DASHES) else f"{round_ - len(DASHES) + 3} 2 1 2"
    return SeriesStyle(PALETTE[color], dash)


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
    dash: str = ""  # the line's dash pattern (`SeriesStyle`), "" for solid


@dataclass(frozen=True)
class Tick:
    """A tick at `at` (y of a value tick, x of a date tick) with its label at (`x`, `y`)."""

    at: float
    label: str
    x: float
    y: float


@dataclass(frozen=True)
class CiShape:
    """A CI run: a band (polygon `points`: upper bounds, then lower ones back) or, for one
    date alone, an error bar from `points[0]` (lower) to `points[1]` (upper)."""

    bar: bool
    points: list[Point]


@dataclass(frozen=True)
class Mark:
    """A point of a series at (`x`, `y`): a regression (red ring) or a plain marker."""

    date: str
    x: float
    y: float
    tooltip: str
    regression: bool


@dataclass(frozen=True)
class SeriesDrawing:
    """One series placed on the chart: CI shapes, lines (one per run of known values), marks."""

    label: str
    color: str
    ci: list[CiShape]
    lines: list[list[Point]]
    marks: list[Mark]
    dash: str = ""


@dataclass(frozen=True)
class LegendEntry:
    """A legend entry: swatch `kind` (`line`, `band` or `dot`) at row (`x`, `y`)."""

    label: str
    color: str
    kind: str
    x: float
    y: float
    dash: str = ""


@dataclass(frozen=True)
class LineChart:
    """A trend chart laid out: plot area [`left`, `right`] × [`top`, `bottom`] in a
    `width` × `height` SVG."""

    title: str
    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    value_ticks: list[Tick]
    date_ticks: list[Tick]
    series: list[SeriesDrawing]
    legend: list[LegendEntry]


@dataclass(frozen=True)
class Sparkline:
    """A sparkline laid out: the line's `points` (empty: too few values to draw, shown as `—`)
    and red `dots` at the marked values."""

    label: str
    color: str
    series: str
    points: list[Point]
    dots: list[Point]
    width: int = SPARK_WIDTH
    height: int = SPARK_HEIGHT
    dash: str = ""


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


def tick_label(value: float, step: float) -> str:
    """`value` with as many decimals as the tick `step` needs, thousands grouped."""
    decimals = next(d for d in range(10) if abs(round(step, d) - step) < 1e-9 * step)
    return f"{value:,.{decimals}f}"


def dates_to_label(
    dates: Sequence[str], x_of: Callable[[str], float], gap: float = 84
) -> list[str]:
    """Dates to label, at least `gap` px apart: the latest one always, then back in time."""
    chosen: list[str] = []
    for day in reversed(dates):
        if not chosen or x_of(chosen[-1]) - x_of(day) >= gap:
            chosen.append(day)
    return chosen[::-1]


def runs(mask: Sequence[bool]) -> list[list[int]]:
    """Indices of the maximal runs of True in `mask`."""
    found: list[list[int]] = []
    for i, ok in enumerate(mask):
        if ok and found and found[-1][-1] == i - 1:
            found[-1].append(i)
        elif ok:
            found.append([i])
    return found


def line_chart(
    title: str, series: Sequence[Series], *, width: int = 640, plot_height: int = 210
) -> LineChart:
    """`series` over dates laid out: value ticks and grid, date ticks, CI bands, lines, marks,
    legend. The left margin fits the longest value label (never clipped at the SVG's edge)."""
    finite = [
        v
        for s in series
        for v in (*s.values, *s.ci_low, *s.ci_high)
        if v is not None and math.isfinite(v)
    ]
    ticks = nice_ticks(min(finite), max(finite)) if finite else [0.0, 0.5, 1.0]
    labels = [tick_label(tick, ticks[1] - ticks[0]) for tick in ticks]
    left = max(MIN_LEFT, math.ceil(TICK_LABEL_GAP + TICK_CHAR_PX * max(map(len, labels))))
    right, bottom = width - RIGHT, TOP + plot_height
    all_dates = sorted({d for s in series for d in s.dates})
    x_of = _date_scale(all_dates, left, right)
    low, high = ticks[0], ticks[-1]

    def y_of(value: float) -> float:
        return TOP + INNER / 2 + (high - value) / (high - low) * (plot_height - INNER)

    legend_top = bottom + LEGEND_DROP
    legend = _legend(_legend_items(series), left, legend_top, right)
    legend_height = int(legend[-1].y - legend_top if legend else 0) + LEGEND_ROW
    markers = len(all_dates) <= MAX_POINT_MARKERS
    return LineChart(
        title=title,
        width=width,
        height=legend_top + legend_height + BOTTOM_MARGIN,
        left=left,
        right=right,
        top=TOP,
        bottom=bottom,
        value_ticks=[
            Tick(y_of(t), label, left - VALUE_LABEL_GAP, y_of(t) + VALUE_LABEL_DROP)
            for t, label in zip(ticks, labels, strict=True)
        ],
        date_ticks=[
            Tick(x_of(day), day, x_of(day), bottom + DATE_LABEL_DROP)
            for day in dates_to_label(all_dates, x_of)
        ],
        series=[_drawing(s, x_of, y_of, markers=markers) for s in series],
        legend=legend,
    )


def _date_scale(dates: Sequence[str], left: int, right: int) -> Callable[[str], float]:
    """x of each ISO date in `dates` (sorted), by calendar distance; one date: the middle."""
    ordinals = {d: Day.fromisoformat(d).toordinal() for d in dates}
    first, last = (ordinals[dates[0]], ordinals[dates[-1]]) if dates else (0, 0)

    def x_of(day: str) -> float:
        if last == first:
            return left + (right - left) / 2
        return left + INNER + (ordinals[day] - first) / (last - first) * (right - left - 2 * INNER)

    return x_of


def _drawing(
    s: Series, x_of: Callable[[str], float], y_of: Callable[[float], float], *, markers: bool
) -> SeriesDrawing:
    """The CI shapes, line(s) and marks of one series (plain markers only with `markers`)."""
    has_ci = [
        math.isfinite(lo) and math.isfinite(hi) for lo, hi in zip(s.ci_low, s.ci_high, strict=True)
    ]
    ci = []
    for run in runs(has_ci):
        upper = [(x_of(s.dates[i]), y_of(s.ci_high[i])) for i in run]
        lower = [(x_of(s.dates[i]), y_of(s.ci_low[i])) for i in run]
        ci.append(
            CiShape(True, [*lower, *upper])
            if len(run) == 1
            else CiShape(False, [*upper, *lower[::-1]])
        )
    known = [math.isfinite(v) for v in s.values]
    lines = [[(x_of(s.dates[i]), y_of(s.values[i])) for i in run] for run in runs(known)]
    marks = []
    for i, day in enumerate(s.dates):
        if not known[i] or not (day in s.regressions or markers):
            continue
        ci_text = f" (95% CI {format_value(s.ci_low[i])}–{format_value(s.ci_high[i])})"
        tip = f"{s.label} · {day}: {format_value(s.values[i])}{ci_text if has_ci[i] else ''}"
        regression = day in s.regressions
        tooltip = s.regressions[day] if regression else tip
        marks.append(Mark(day, x_of(day), y_of(s.values[i]), tooltip, regression))
    return SeriesDrawing(s.label, s.color, ci, lines, marks, s.dash)


def _legend_items(series: Sequence[Series]) -> list[tuple[str, str, str, str]]:
    """(label, colour, swatch kind, dash): each series, then the CI band and the regression
    mark when the chart has them."""
    items = [(s.label, s.color, "line", s.dash) for s in series]
    if any(math.isfinite(v) for s in series for v in s.ci_low):
        items.append(("95% CI", CI_LEGEND_COLOR, "band", ""))
    if any(s.regressions for s in series):
        items.append(("regression", REGRESSION_COLOR, "dot", ""))
    return items


def _legend(
    items: Sequence[tuple[str, str, str, str]], left: int, top: int, right: int
) -> list[LegendEntry]:
    """Legend entries laid out in rows from (`left`, `top`), wrapping before `right`."""
    entries, x, y = [], float(left), float(top)
    for label, color, kind, dash in items:
        item_width = LEGEND_SWATCH + LEGEND_CHAR_PX * len(label) + LEGEND_GAP
        if x > left and x + item_width > right:
            x, y = float(left), y + LEGEND_ROW
        entries.append(LegendEntry(label, color, kind, x, y, dash))
        x += item_width
    return entries


def sparkline(
    values: Sequence[float],
    marked: Sequence[bool],
    label: str,
    color: str = PALETTE[0],
    series: str = "",
    dash: str = "",
) -> Sparkline:
    """A sparkline of `values` (oldest first) in `color` and `dash`, red dots where `marked`;
    no points with fewer than two known values."""
    finite = [v for v in values if math.isfinite(v)]
    if len(finite) < 2:
        return Sparkline(label, color, series, [], [], dash=dash)
    low, high = min(finite), max(finite)
    span = (high - low) or 1.0
    step = (SPARK_WIDTH - 2 * SPARK_PAD) / (len(values) - 1)
    points = [
        (
            SPARK_PAD + i * step,
            SPARK_HEIGHT - SPARK_PAD - (v - low) / span * (SPARK_HEIGHT - 2 * SPARK_PAD),
        )
        for i, v in enumerate(values)
    ]
    known = [math.isfinite(v) for v in values]
    return Sparkline(
        label,
        color,
        series,
        [p for p, ok in zip(points, known, strict=True) if ok],
        [p for p, ok, m in zip(points, known, marked, strict=True) if ok and m],
        dash=dash,
    )
