"""Dagster metadata for assets: headline floats the UI plots, markdown tables and plain text.

Every text that reaches the UI goes through one escaping rule per kind: markdown through
`markdown_cell`, plain text and the names of plotted floats through `visible_text` (a file name,
system or variant name with a bidi control or zero-width character is shown as `\\uNNNN`)."""

import math
from collections.abc import Collection, Mapping

import pandas as pd
from dagster import MetadataValue

from rag_eval_pipeline.text.escaping import markdown_cell, visible_text


def _format(value: object) -> str:
    if isinstance(value, float):
        return "—" if math.isnan(value) else f"{value:.4f}"
    return markdown_cell(value)


def markdown_table(frame: pd.DataFrame, max_rows: int = 60) -> str:
    """A GitHub-style markdown table of the first `max_rows` rows.

    Every header and cell goes through `markdown_cell`: a `|`, line break or HTML tag in an id or
    a system name is shown as text and cannot split, add or shift rows and columns.
    """
    if frame.empty:
        return "_no rows_"
    shown = frame.head(max_rows)
    header = "| " + " | ".join(map(markdown_cell, shown.columns)) + " |"
    rule = "|" + "---|" * len(shown.columns)
    rows = ["| " + " | ".join(_format(v) for v in row) + " |" for row in shown.itertuples(False)]
    more = [f"\n_{len(frame) - max_rows} more rows_"] if len(frame) > max_rows else []
    return "\n".join([header, rule, *rows, *more])


def text_metadata(value: object) -> MetadataValue:
    """Plain-text metadata (`MetadataValue.text`) with invisible characters shown as escapes."""
    return MetadataValue.text(visible_text(value))


def headline_metadata(values: Mapping[str, float]) -> dict[str, MetadataValue]:
    """Float metadata per headline metric (NaN kept as NaN so plots show a gap, not a zero)."""
    return {name: MetadataValue.float(float(value)) for name, value in values.items()}


def plotted_key(version: str, *parts: object) -> str:
    """The name of a plotted float: `<version>/<part>/...`. The version comes first so each
    series of the UI's Plots tab is one dataset version's (a key shared by every version
    zigzags between them and squeezes each version's dates into a dash); invisible characters
    in a version or system name are shown as escapes."""
    return "/".join(map(visible_text, (version, *parts)))


def summary_metadata(
    summary: pd.DataFrame, version: str, plotted: Collection[str] | None = None
) -> dict[str, object]:
    """Metadata for a long summary table (`system`, `metric`, `mean`, ...): floats + table.

    Floats are named `<version>/<system>/<metric>` (`plotted_key`; always with the system, so
    a plot's history survives a second system appearing); `plotted` limits them to the
    headline metrics, the table keeps every row.
    """
    if summary.empty:
        return {"summary": MetadataValue.md("_no rows_")}
    rows = summary if plotted is None else summary[summary["metric"].isin(plotted)]
    headlines = {
        plotted_key(version, row.system, row.metric): float(row.mean) for row in rows.itertuples()
    }
    return {**headline_metadata(headlines), "summary": MetadataValue.md(markdown_table(summary))}
