"""What a run's LLM calls cost: the usage its assets record, as one table, scorecard rows and tags.

Every asset that calls an LLM records, per role (`judge`, `generator`, and the model bridge's
`bridge_judge` and `bridge_generator`), metadata `<role>_model`, `<role>_calls` (requests sent,
retries included), `_cache_hits`, `_prompt_tokens`, `_completion_tokens`, `_cost_usd` (NaN when
litellm could not price a call) and `_budget_refused` (prompts a spent ``RAG_EVAL_MAX_COST_USD``
kept from being sent). `usage_table` turns those of a run's assets into one row per
(asset, role); the offline models record no usage and give no row.

A run's cost is the sum of its rows' `cost_usd` (`total_cost_usd`), unknown (NaN) when any row's
is: a price that is unknown is never presented as 0. The scorecard's `cost` tier
(`cost_quality`) has one system per role and `all`, with the metrics `cost_usd`, `llm_calls`,
`input_tokens`, `output_tokens` and `budget_refused` (all lower-is-better, monitored: shown and
compared, never alerted); the run's tags (`cost_tags`) carry the total.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from rag_eval_pipeline.evaluation.scorecard import COST_TIER
from rag_eval_pipeline.evaluation.summaries import empty_quality, single_values

USAGE_COLUMNS = [
    "asset",
    "role",
    "model",
    "calls",
    "cache_hits",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "budget_refused",
]
ALL_ROLES = "all"
COST_TAG = "rag_eval/cost_usd"
CALLS_TAG = "rag_eval/llm_calls"
# "false" on a run that did not succeed: a failed step records no usage, so the tags are lower
# bounds of what it spent.
COMPLETE_TAG = "rag_eval/cost_complete"
UNKNOWN = "unknown"


def usage_table(materializations: Iterable[tuple[str, Mapping[str, Any]]]) -> pd.DataFrame:
    """One row per (asset, role) of `(asset name, metadata values)` pairs whose metadata has
    `<role>_model` and `<role>_calls` (`USAGE_COLUMNS`; a missing `_cost_usd` is NaN)."""
    rows = []
    for asset, values in materializations:
        for key, model in values.items():
            role = key.removesuffix("_model")
            if key.endswith("_model") and f"{role}_calls" in values:
                rows.append(
                    [
                        asset,
                        role,
                        str(model),
                        int(values[f"{role}_calls"]),
                        int(values.get(f"{role}_cache_hits", 0)),
                        int(values.get(f"{role}_prompt_tokens", 0)),
                        int(values.get(f"{role}_completion_tokens", 0)),
                        float(values.get(f"{role}_cost_usd", math.nan)),
                        int(values.get(f"{role}_budget_refused", 0)),
                    ]
                )
    return pd.DataFrame(rows, columns=USAGE_COLUMNS)


def total_cost_usd(usage: pd.DataFrame) -> float:
    """The sum of `cost_usd` over `usage`'s rows: NaN (unknown) when any row's is NaN."""
    if usage["cost_usd"].isna().any():
        return math.nan
    return float(usage["cost_usd"].sum())


def cost_quality(usage: pd.DataFrame) -> pd.DataFrame:
    """Scorecard quality rows of tier `cost`: per role and for `all` roles, the cost in USD
    (`total_cost_usd`), the calls sent, the input and output tokens and the prompts refused by
    a spent budget; `count` is the prompts answered (calls sent and cache hits). No usage, no
    rows."""
    if usage.empty:
        return empty_quality()
    groups = list(usage.groupby("role", sort=True))
    frames = [
        single_values(
            {
                "cost_usd": total_cost_usd(rows),
                "llm_calls": float(rows["calls"].sum()),
                "input_tokens": float(rows["prompt_tokens"].sum()),
                "output_tokens": float(rows["completion_tokens"].sum()),
                "budget_refused": float(rows["budget_refused"].sum()),
            },
            COST_TIER,
            str(system),
            int(rows["calls"].sum() + rows["cache_hits"].sum()),
        )
        for system, rows in [*groups, (ALL_ROLES, usage)]
    ]
    return pd.concat(frames, ignore_index=True)


def unpriced_models(usage: pd.DataFrame) -> list[str]:
    """The models whose cost is unknown (litellm had no price for some of their calls)."""
    return sorted(usage.loc[usage["cost_usd"].isna(), "model"].unique())


def cost_tags(usage: pd.DataFrame, complete: bool = True) -> dict[str, str]:
    """The run's tags: `rag_eval/cost_usd` (USD with 6 decimals, or `unknown`) and
    `rag_eval/llm_calls`, with `rag_eval/cost_complete: false` when the run did not succeed
    (`complete`: its failed steps' calls are not counted); none without LLM usage."""
    if usage.empty:
        return {}
    cost = total_cost_usd(usage)
    tags = {
        COST_TAG: f"{cost:.6f}" if math.isfinite(cost) else UNKNOWN,
        CALLS_TAG: str(int(usage["calls"].sum())),
    }
    if not complete:
        tags[COMPLETE_TAG] = "false"
    return tags
