"""Dagster metadata for assets: headline floats the UI plots, markdown tables and plain text.

Every text that reaches the UI goes through one escaping rule per kind: markdown through
`markdown_cell`, plain text and the names of plotted floats through `visible_text` (a file name,
system or variant name with a bidi control or zero-width character is shown as `\\uNNNN`), a
displayed file path through `one_line_text`, a link to a file percent-encoded (`path_url`)."""

import math
import os
from collections.abc import Collection, Mapping
from pathlib import Path
from urllib.parse import quote

import pandas as pd
from dagster import MetadataValue
from upath import UPath

from rag_eval_pipeline.storage.objects import is_local
from rag_eval_pipeline.text.escaping import markdown_cell, one_line_text, visible_text


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


def path_metadata(path: os.PathLike[str] | str) -> MetadataValue:
    """A written file's path (`MetadataValue.path`, shown with a copy button): the real path,
    unless it holds a control, line break, bidi or zero-width character (from a data folder or
    a version name), which is displayed as an escape (`one_line_text`) instead: the UI never
    shows a reordered, multi-line or look-alike path. `path_url` always reaches the real file."""
    return MetadataValue.path(one_line_text(str(path)))


def path_url(path: UPath | Path) -> str:
    """The URL of a written file, percent-encoded as UTF-8: a local file's `file://` URL
    (`Path.as_uri`), an object's `<protocol>://<bucket>/<key>` with every character of the
    bucket and key but `/` and `A-Za-z0-9_.-~` quoted (`urllib.parse.quote`). No control, bidi,
    invisible character, space or parenthesis stays raw, so it is one token in a link and in a
    markdown link target, and it decodes back to the real path."""
    if not isinstance(path, UPath) or is_local(path):
        return Path(path).as_uri()
    return f"{path.protocol}://{quote(path.path, safe='/')}"


def url_metadata(path: UPath | Path) -> MetadataValue:
    """A link to a written file (`MetadataValue.url` of `path_url`)."""
    return MetadataValue.url(path_url(path))


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
