"""How a declined answer counts, so that declining can never raise a score.

A declined answer ("I'm not sure, please contact support.", an empty answer, the judge's own
no-claim verdict; `evaluation.generation.refusals`) is scored once, here:

- `refusal_rate`: 1 (it is counted);
- `faithfulness`: no score (it makes no claim to check); the metric's items fall, which the
  verdict's coverage rule (`evaluation.verdicts.decide`, `coverage dropped`) alerts for a primary
  metric;
- `e2e_score` and the composite: **0**. A question declined earns nothing, the least an answer
  can earn, so the mean over the questions can only fall when a system declines more
  (before, a declined question left the composite out and its mean could rise).
"""

from __future__ import annotations

import json

import pandas as pd

from rag_eval_pipeline.evaluation.generation import REFUSAL_METRIC

# The scores a declined answer gets 0 in (the composite is built from the components and then
# set to 0 by `composite_rows`).
ZERO_WHEN_DECLINED = ("e2e_score",)
DECLINED_DETAILS = json.dumps({"declined": True, "note": "a declined answer scores 0"})


def declined_keys(judgments: pd.DataFrame) -> pd.MultiIndex:
    """(system, query_id) of the answers that declined (their `refusal_rate` row is 1)."""
    rows = judgments[(judgments["metric"] == REFUSAL_METRIC) & (judgments["score"] == 1.0)]
    return pd.MultiIndex.from_frame(rows[["system", "query_id"]].astype(str))


def zero_declined(judgments: pd.DataFrame, metrics: tuple[str, ...] = ZERO_WHEN_DECLINED) -> None:
    """Set the `metrics` rows of declined answers to score 0, no error (in place)."""
    declined = declined_keys(judgments)
    if declined.empty:
        return
    keys = pd.MultiIndex.from_frame(judgments[["system", "query_id"]].astype(str))
    hit = judgments["metric"].isin(metrics).to_numpy() & keys.isin(declined)
    judgments.loc[hit, ["score", "error"]] = [0.0, None]
    judgments.loc[hit, "details"] = DECLINED_DETAILS
