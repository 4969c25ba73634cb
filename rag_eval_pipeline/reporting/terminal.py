"""The scorecard as text for a terminal: grouped by version and tier, at most 100 columns.

Long system names end in an ellipsis, long metric names lose their middle; every value from the
data is escaped with `escaping.terminal_text` before it is shortened (a cut never re-opens a
control sequence).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from rag_eval_pipeline.text.escaping import terminal_text

WIDTH = 100
SYSTEM_WIDTH = 22
VALUE_WIDTH = 9
CI_WIDTH = 15
COUNT_WIDTH = 5
BAND_WIDTH = 15
INDENT = "  "


def shorten_end(text: str, width: int) -> str:
    """`text` cut to `width` characters, ending in `…` when cut."""
    return text if len(text) <= width else text[: width - 1] + "…"


def shorten_middle(text: str, width: int) -> str:
    """`text` cut to `width` characters by replacing its middle with `…` (keeps both ends)."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


def number(value: object) -> str:
    """A value in at most `VALUE_WIDTH` characters: 4 decimals below 1,000, grouped above."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    number = float(value)  # type: ignore[arg-type]
    return f"{number:.4f}" if abs(number) < 1000 else f"{number:,.0f}"


def _ci(low: object, high: object) -> str:
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in (low, high)):
        return "—"
    return f"{number(low)}–{number(high)}"


def scorecard_lines(frame: pd.DataFrame, width: int = WIDTH) -> list[str]:
    """One block per (version, date), one sub-block per tier in the frame's order, one line per
    metric: system, metric, value, 95% CI, n, band; no line is wider than `width`."""
    fixed = len(INDENT) + SYSTEM_WIDTH + VALUE_WIDTH + CI_WIDTH + COUNT_WIDTH + BAND_WIDTH + 5
    metric_width = max(12, width - fixed)
    lines: list[str] = []
    header = (
        f"{INDENT}{'system':<{SYSTEM_WIDTH}} {'metric':<{metric_width}} "
        f"{'value':>{VALUE_WIDTH}} {'95% CI':>{CI_WIDTH}} {'n':>{COUNT_WIDTH}} band"
    )
    for (version, day), block in frame.groupby(["dataset_version", "date"], sort=False):
        lines += [shorten_end(terminal_text(f"{version} · {day}"), width), header]
        for tier, rows in block.groupby("tier", sort=False):
            lines.append(shorten_end(terminal_text(f"── {tier} "), width).ljust(width, "─"))
            for r in rows.itertuples(index=False):
                band = r.band if isinstance(r.band, str) else "-"
                lines.append(
                    f"{INDENT}"
                    f"{shorten_end(terminal_text(r.system), SYSTEM_WIDTH):<{SYSTEM_WIDTH}} "
                    f"{shorten_middle(terminal_text(r.metric), metric_width):<{metric_width}} "
                    f"{number(r.value):>{VALUE_WIDTH}} "
                    f"{shorten_end(_ci(r.ci_low, r.ci_high), CI_WIDTH):>{CI_WIDTH}} "
                    f"{number_count(r.count):>{COUNT_WIDTH}} "
                    f"{shorten_end(band, BAND_WIDTH)}"
                )
        lines.append("")
    return lines


def number_count(value: object) -> str:
    """A count (`—` when missing; `12k`, `3M` above 5 digits)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    count = int(value)  # type: ignore[call-overload]
    if count < 100_000:
        return str(count)
    return f"{count // 1000}k" if count < 10_000_000 else f"{count // 1_000_000}M"


def filtered(
    frame: pd.DataFrame, tiers: Sequence[str] = (), systems: Sequence[str] = ()
) -> pd.DataFrame:
    """Rows whose tier starts with one of `tiers` (`tier1` matches `tier1_retrieval`) and whose
    system contains one of `systems` (case-insensitive); an empty filter keeps every row."""
    keep = pd.Series(True, index=frame.index)
    if tiers:
        tier = frame["tier"].astype(str).str.lower()
        keep &= tier.map(lambda t: any(t.startswith(x.lower()) for x in tiers))
    if systems:
        system = frame["system"].astype(str).str.lower()
        keep &= system.map(lambda s: any(x.lower() in s for x in systems))
    return frame[keep]
