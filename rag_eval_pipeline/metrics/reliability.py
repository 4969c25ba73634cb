"""Judge reliability: agreement of a judge with itself over repeated judgments of the same item."""

from __future__ import annotations

import numpy as np


def repeat_consistency(scores: np.ndarray, delta: float = 0.5) -> dict[str, float]:
    """Consistency of repeated scores (`items × repetitions`, NaN = a failed judgment).

    - `consistency_score`: share of items whose repeated scores all lie within `delta` of each
      other (max − min ≤ δ), over items with at least two successful repetitions;
    - `mean_abs_diff`: mean over those items of the mean absolute difference over all pairs of
      repetitions (for two repetitions: |s1 − s2|);
    - `n_items`: items with at least two successful repetitions.
    Items with fewer than two scores cannot show (in)consistency and are left out; the judge's
    failures are reported by its error rate instead. No item → NaN statistics.
    """
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 2:
        raise ValueError(f"scores must be items × repetitions, got shape {scores.shape}")
    usable = (~np.isnan(scores)).sum(axis=1) >= 2
    kept = scores[usable]
    if kept.shape[0] == 0:
        return {"consistency_score": float("nan"), "mean_abs_diff": float("nan"), "n_items": 0.0}
    spread = np.nanmax(kept, axis=1) - np.nanmin(kept, axis=1)
    pairwise = np.abs(kept[:, :, None] - kept[:, None, :])
    upper = np.triu(np.ones(kept.shape[1], dtype=bool), k=1)
    pair_values = pairwise[:, upper]
    return {
        "consistency_score": float(np.mean(spread <= delta + 1e-12)),
        "mean_abs_diff": float(np.mean(np.nanmean(pair_values, axis=1))),
        "n_items": float(kept.shape[0]),
    }
