"""Production-traffic metrics: user satisfaction from feedback, per-query cost, the log's day,
and the names of the latency percentiles.

Pure, vectorized functions over columns of a `logs.*` table; no Dagster here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import numpy as np
import pandas as pd

POSITIVE_FEEDBACK = frozenset({"up", "thumbs_up", "thumbsup", "+1", "positive", "👍", "like"})
NEGATIVE_FEEDBACK = frozenset(
    {"down", "thumbs_down", "thumbsdown", "-1", "negative", "👎", "dislike"}
)
LATENCY_COLUMNS = {
    "latency_ms": "latency",
    "retrieval_latency_ms": "retrieval_latency",
    "generation_latency_ms": "generation_latency",
}
LATENCY_PERCENTILES = (50, 95, 99)


def latency_metric(prefix: str, percentile: int) -> str:
    """The scorecard name of a latency percentile: `<prefix>_p<percentile>_ms`."""
    return f"{prefix}_p{percentile}_ms"


# Every latency percentile's scorecard name → its quantile: the traffic tier's (one prefix per
# `LATENCY_COLUMNS` entry) and Tier 3's total latency (prefix `latency`, among them).
LATENCY_QUANTILES: dict[str, float] = {
    latency_metric(prefix, q): q / 100
    for prefix in LATENCY_COLUMNS.values()
    for q in LATENCY_PERCENTILES
}
RATING_LOW, RATING_HIGH = 1, 5
POSITIVE_RATING = 4


def satisfaction_scores(feedback: Sequence[object]) -> np.ndarray:
    """User satisfaction in [0, 1] per interaction from its `feedback` value.

    Thumbs: `up` (also `thumbs_up`, `+1`, `positive`, `like`, 👍) = 1.0 and `down` (also
    `thumbs_down`, `-1`, `negative`, `dislike`, 👎) = 0.0, case-insensitive. Ratings: an
    integer r on the 1–5 scale = (r - 1) / 4, so 1 → 0.0, 3 → 0.5, 5 → 1.0. Missing values
    (None, NaN, empty text) and anything else (0, 6, 4.5, "meh") are NaN; the caller tells
    them apart (validation reports the latter as invalid).
    """
    scores = np.full(len(feedback), np.nan)
    for position, value in enumerate(feedback):
        if value is None or (isinstance(value, float) and np.isnan(value)):
            continue
        text = str(value).strip().lower()
        if text in POSITIVE_FEEDBACK:
            scores[position] = 1.0
        elif text in NEGATIVE_FEEDBACK:
            scores[position] = 0.0
        else:
            try:
                rating = float(text)
            except ValueError:
                continue
            if rating.is_integer() and RATING_LOW <= rating <= RATING_HIGH:
                scores[position] = (rating - RATING_LOW) / (RATING_HIGH - RATING_LOW)
    return scores


def positive_feedback(satisfaction: np.ndarray) -> np.ndarray:
    """1.0 when feedback is positive (thumbs up, or a rating of 4 or 5), 0.0 when it is not
    (thumbs down, ratings 1–3), NaN without feedback. With the scale of
    :func:`satisfaction_scores`, positive means satisfaction ≥ 0.75."""
    threshold = (POSITIVE_RATING - RATING_LOW) / (RATING_HIGH - RATING_LOW)
    values = np.asarray(satisfaction, dtype=float)
    return np.where(np.isnan(values), np.nan, (values >= threshold).astype(float))


def token_costs(
    models: Sequence[object], prompt_tokens: Sequence[float], completion_tokens: Sequence[float]
) -> np.ndarray:
    """Cost in USD per interaction from its token counts, priced with litellm's cost map.

    cost = prompt_tokens × input price + completion_tokens × output price of the row's
    `model` (litellm `cost_per_token`, the local map when `LITELLM_LOCAL_MODEL_COST_MAP` is
    set), linear in the counts: litellm's base per-token prices, without long-context tiers.
    Rows with a missing model or count, or a model litellm has no price for, are NaN (unknown,
    never 0). Each distinct model is priced once.
    """
    import litellm  # deferred: litellm takes a second to import

    prompt = np.asarray(prompt_tokens, dtype=float)
    completion = np.asarray(completion_tokens, dtype=float)
    frame = pd.DataFrame({"model": list(models)})
    prices: dict[str, tuple[float, float]] = {}
    for model in frame["model"].dropna().astype(str).unique():
        try:
            per_prompt, per_completion = litellm.cost_per_token(
                model=model, prompt_tokens=1, completion_tokens=1
            )
        except Exception:  # litellm raises several types for an unknown model
            continue
        prices[model] = (float(per_prompt), float(per_completion))
    per_token = frame["model"].map(lambda m: prices.get(str(m), (np.nan, np.nan)))
    input_price = np.array([price[0] for price in per_token], dtype=float)
    output_price = np.array([price[1] for price in per_token], dtype=float)
    return prompt * input_price + completion * output_price


def time_ordered(logs: pd.DataFrame) -> pd.DataFrame:
    """Log rows with a `log_id` (the row number as text when the file has none), in
    (`timestamp`, `log_id`) order: the order of a day's interactions (missing timestamps last)."""
    logs = logs.reset_index(drop=True)
    if "log_id" not in logs.columns:
        logs = logs.assign(log_id=logs.index.astype(str))
    return logs.sort_values(["timestamp", "log_id"], kind="stable").reset_index(drop=True)


def local_dates(timestamps: pd.Series, timezone: str) -> np.ndarray:
    """The calendar date of each timestamp in `timezone` (an IANA name such as `UTC`,
    `Europe/Paris`). Timestamps are tz-aware (validation reads naive ones as UTC); a missing
    timestamp has no date (None)."""
    converted = pd.to_datetime(timestamps, utc=True).dt.tz_convert(timezone)
    return np.array([None if pd.isna(stamp) else stamp.date() for stamp in converted], dtype=object)


def on_date(timestamps: pd.Series, day: date, timezone: str) -> np.ndarray:
    """Boolean mask: the timestamp falls on `day` in `timezone` (midnight belongs to the day
    it starts)."""
    return local_dates(timestamps, timezone) == day
