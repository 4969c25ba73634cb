"""The judge error-rate check, one per judgments asset (each tier's `checks.py` makes its own).

Partitioned like its asset, so it evaluates only the partition just materialized. It has WARN
severity, except a judge outage (most judge calls failed), which is an ERROR; `rag-eval run`
prints every failed check at the end (`--fail-on-regression` exits non-zero).
"""

import pandas as pd
from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetKey,
    MetadataValue,
)

from rag_eval_pipeline.defs.shared.assets import evaluation_check
from rag_eval_pipeline.evaluation.verdicts.evidence import OUTAGE_ERROR_RATE
from rag_eval_pipeline.judges.metrics import METRICS

MAX_JUDGE_ERROR_RATE = 0.05
# Above this share of failed judge calls the check is an ERROR (an outage), not a WARN.
JUDGE_OUTAGE_RATE = OUTAGE_ERROR_RATE


def judge_error_rate_check(asset_name: str) -> AssetChecksDefinition:
    """A check that the judgments of `asset_name` have at most 5% error rows."""

    @evaluation_check(
        asset=AssetKey(asset_name),
        name=f"{asset_name}_error_rate",
        description=(
            f"At most {MAX_JUDGE_ERROR_RATE:.0%} of the judgments are error rows (WARN); more "
            f"than {JUDGE_OUTAGE_RATE:.0%} of the judge calls failing is an outage (ERROR)."
        ),
    )
    def _check(context: AssetCheckExecutionContext, judgments: pd.DataFrame) -> AssetCheckResult:
        rate = float(judgments["error"].notna().mean()) if len(judgments) else 0.0
        calls = judgments[judgments["metric"].isin(list(METRICS))]
        call_rate = float(calls["error"].notna().mean()) if len(calls) else 0.0
        outage = call_rate > JUDGE_OUTAGE_RATE
        return AssetCheckResult(
            passed=rate <= MAX_JUDGE_ERROR_RATE,
            severity=AssetCheckSeverity.ERROR if outage else AssetCheckSeverity.WARN,
            description=(
                f"Judge outage: {call_rate:.0%} of the judge calls failed." if outage else None
            ),
            metadata={
                "error_rate": MetadataValue.float(rate),
                "judge_call_error_rate": MetadataValue.float(call_rate),
                "n_rows": MetadataValue.int(len(judgments)),
                "n_errors": MetadataValue.int(int(judgments["error"].notna().sum())),
                "outage": MetadataValue.bool(outage),
            },
        )

    return _check
