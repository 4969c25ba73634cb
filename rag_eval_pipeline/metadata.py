"""Dagster metadata for metric assets: headline floats the UI plots, and a markdown table."""

import math
from collections.abc import Mapping

import pandas as pd
from dagster import MetadataValue


def _format(value: object) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4f}"
    return str(value)


def markdown_table(frame: pd.DataFrame, max_rows: int = 60) -> str:
    """A GitHub-style markdown table of the first `max_rows` rows."""
    if frame.empty:
        return "_no rows_"
    shown = frame.head(max_rows)
    header = "| " + " | ".join(map(str, shown.columns)) + " |"
    rule = "|" + "---|" * len(shown.columns)
    rows = ["| " + " | ".join(_format(v) for v in row) + " |" for row in shown.itertuples(False)]
    more = [f"\n_{len(frame) - max_rows} more rows_"] if len(frame) > max_rows else []
    return "\n".join([header, rule, *rows, *more])


def headline_metadata(values: Mapping[str, float]) -> dict[str, MetadataValue]:
    """Float metadata per headline metric (NaN kept as NaN so plots show a gap, not a zero)."""
    return {name: MetadataValue.float(float(value)) for name, value in values.items()}


def summary_metadata(summary: pd.DataFrame, *, prefix_system: bool = True) -> dict[str, object]:
    """Metadata for a long summary table (`system`, `metric`, `mean`, ...): floats + table.

    With several systems the float names are `<system>/<metric>` so each system gets its own
    plot in the UI; with one system they are just `<metric>`.
    """
    if summary.empty:
        return {"summary": MetadataValue.md("_no rows_")}
    several = prefix_system and "system" in summary.columns and summary["system"].nunique() > 1
    headlines = {
        (f"{row.system}/{row.metric}" if several else str(row.metric)): float(row.mean)
        for row in summary.itertuples()
    }
    return {**headline_metadata(headlines), "summary": MetadataValue.md(markdown_table(summary))}
