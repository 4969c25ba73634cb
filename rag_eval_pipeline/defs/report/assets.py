"""The `evaluation_report` asset: the partition's scorecard as a self-contained HTML page.

The page (see `rag_eval_pipeline.reporting.html_report`) is written atomically to
`<reports_dir>/<dataset_version>/<date>.html` (a local folder or any fsspec URL, such as
`s3://bucket/reports`); the asset's own output is a one-row table pointing at it, and its
metadata links to the file.
"""

from datetime import UTC, datetime

import pandas as pd
from dagster import AssetExecutionContext, Config, MetadataValue

from rag_eval_pipeline.defs.report import asset
from rag_eval_pipeline.defs.runs.partition_lock import versions_in_progress
from rag_eval_pipeline.defs.scorecard.assets import HEADLINE_METRICS
from rag_eval_pipeline.defs.shared.metadata import (
    path_metadata,
    path_url,
    text_metadata,
    url_metadata,
)
from rag_eval_pipeline.defs.shared.partitions import partition_parts
from rag_eval_pipeline.defs.shared.resources import BaselineResource, WarehouseResource
from rag_eval_pipeline.evaluation.headline import REGRESSION
from rag_eval_pipeline.evaluation.scorecard import NEEDS_ATTENTION
from rag_eval_pipeline.reporting.html_report import (
    DATASET_TIER,
    SYSTEM_TIERS,
    collect_report_data,
    day_headline,
    render_report,
)
from rag_eval_pipeline.reporting.paths import report_path
from rag_eval_pipeline.settings import REPORTS_URL
from rag_eval_pipeline.storage.objects import write_text_atomically
from rag_eval_pipeline.text.escaping import markdown_cell


class ReportConfig(Config):
    """Where the HTML reports are written (one folder per dataset version): a local folder or
    any fsspec URL."""

    reports_dir: str = REPORTS_URL


@asset(
    description=(
        "A self-contained HTML report of the partition: scorecard with bands, regressions "
        "against the baseline, trend charts of the headline metrics with regressions marked, "
        "and a comparison across dataset versions. Written to <reports_dir>/<version>/<date>.html."
    ),
)
def evaluation_report(
    context: AssetExecutionContext,
    config: ReportConfig,
    evaluation_scorecard: pd.DataFrame,
    metric_regressions: pd.DataFrame,
    warehouse: WarehouseResource,
    baseline: BaselineResource,
) -> pd.DataFrame:
    version, day = partition_parts(context)
    store = warehouse.store()
    data = collect_report_data(
        store,
        version,
        day,
        evaluation_scorecard,
        baseline.select(store, version, day),
        HEADLINE_METRICS,
        datetime.now(UTC),
        metric_regressions,
        versions_in_progress(context.instance, exclude_run=context.run_id),
    )
    path = report_path(config.reports_dir, version, day)
    write_text_atomically(render_report(data), path)
    metrics = evaluation_scorecard[evaluation_scorecard["tier"] != DATASET_TIER]
    levels = metrics[metrics["tier"].isin(SYSTEM_TIERS)]
    n_attention = int((levels["band"] == NEEDS_ATTENTION).sum())
    told = day_headline(data)
    against = (
        f"{markdown_cell(data.baseline.version)} {markdown_cell(data.baseline.date)}"
        if data.baseline
        else "no baseline"
    )
    context.add_output_metadata(
        {
            "report_path": path_metadata(path),
            "report_url": url_metadata(path),
            "summary": MetadataValue.md(
                f"**{markdown_cell(version)} · {day}**: {len(metrics)} metrics, "
                f"{n_attention} of the system's below their band, "
                f"against {against}: {markdown_cell(told.text)}. "
                f"[Open the report]({path_url(path)})"
            ),
            "headline": text_metadata(told.text),
            "n_alerts": MetadataValue.int(told.n_alerts),
            "n_regressions": MetadataValue.int(told.counts[REGRESSION]),
        }
    )
    return pd.DataFrame(
        [
            {
                "version": version,
                "date": day,
                "path": str(path),
                "n_alerts": told.n_alerts,
                "n_regressions": told.counts[REGRESSION],
                "n_metrics": len(metrics),
            }
        ]
    )
