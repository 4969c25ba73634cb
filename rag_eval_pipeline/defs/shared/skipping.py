"""How a tier that does not apply to a dataset version says so: an empty, labeled output."""

import pandas as pd
from dagster import AssetExecutionContext

from rag_eval_pipeline.defs.shared.metadata import text_metadata


def skipped(context: AssetExecutionContext, reason: str, empty: pd.DataFrame) -> pd.DataFrame:
    """Log why the tier does not apply, record it as metadata, and return `empty`.

    The partition is still materialized (downstream tiers and the scorecard run), with
    `status: skipped` and the reason visible on the asset page.
    """
    context.log.info(f"{context.asset_key.to_user_string()} skipped: {reason}")
    context.add_output_metadata(
        {"status": text_metadata("skipped"), "skip_reason": text_metadata(reason)}
    )
    return empty
