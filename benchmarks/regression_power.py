"""False alerts and detection power of the regression rules, old and new, side by side.

Simulates many pairs of days (baseline, today) of one partition with realistic day-to-day
noise and `--metrics` metrics (half 0/1, half continuous), then applies, to the same simulated
data, both rules through the project's own code:

* old: `evaluation.regression.detect_regressions` — relative drop beyond 5% and the baseline
  outside today's 95% bootstrap CI (the scorecard's `summarize`, 2,000 resamples);
* new: `evaluation.regression.compare_partitions` — paired one-sided tests (exact sign test for
  0/1 metrics, 10,000 sign flips otherwise), Benjamini–Hochberg at α = 0.05 over the metrics,
  and the 5% effect rule.

Noise model. 0/1 metric: each item has a latent outcome x_i ~ Bernoulli(0.8) (HitRate ≈ 0.8);
each day observes x_i flipped with probability `--flip` (symmetric per-item flips). Continuous
metric: each item has a latent quality m_i ~ U(0.4, 1); each day observes clip(m_i + N(0, σ),
0, 1), σ = `--sigma` (judge noise). A true relative drop r in one metric: for 0/1, each latent
1 becomes 0 with probability r; for continuous, m_i → (1 − r)·m_i. With `--linked K`, the
dropped metric has K − 1 companions scored on the same items with the same outcomes, as
hit_rate@1, mrr@10 and ndcg@1 are when the relevant document is either first or missing: a
real retrieval regression moves a family of metrics, not one.

Printed: the share of no-change partitions with any alert (false alerts) and, for drops of 5%,
10% and 20% in one 0/1 and in one continuous metric, the share of partitions where that metric
is alerted (detection), for n = 56 and n = 200 items.
Usage: ``python benchmarks/regression_power.py [--sims N --metrics M --flip F --sigma S]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runs from a checkout, too

from rag_eval_pipeline.evaluation.item_scores import wide_items
from rag_eval_pipeline.evaluation.regression import (
    REGRESSED,
    PartitionScores,
    RegressionRule,
    compare_partitions,
    detect_regressions,
)
from rag_eval_pipeline.evaluation.scorecard import Thresholds, build_scorecard
from rag_eval_pipeline.evaluation.summaries import summarize_wide

TIER = "tier1_retrieval"
DROPS = (0.05, 0.10, 0.20)


def linked_copies(columns: dict[str, np.ndarray], name: str, linked: int) -> None:
    """Make the first `linked - 1` other metrics of `name`'s kind copies of it (same items)."""
    kind = name.rsplit("_", 1)[0]
    others = [m for m in columns if m.startswith(kind) and m != name][: linked - 1]
    for other in others:
        columns[other] = columns[name].copy()


def metric_names(n_metrics: int) -> tuple[list[str], list[str]]:
    """The 0/1 and the continuous metric names of a simulated partition."""
    half = n_metrics // 2
    return [f"binary_{i}" for i in range(half)], [f"score_{i}" for i in range(n_metrics - half)]


def simulate_pair(
    rng: np.random.Generator,
    n: int,
    n_metrics: int,
    flip: float,
    sigma: float,
    dropped: str | None,
    drop: float,
    linked: int = 1,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-item scores (`system, query_id, <metric>...`) of the baseline day and today."""
    binary, continuous = metric_names(n_metrics)
    days: list[dict[str, np.ndarray]] = [{}, {}]
    for name in binary:
        latent = rng.random(n) < 0.8
        for day, columns in enumerate(days):
            current = latent & ~(rng.random(n) < drop) if (day == 1 and name == dropped) else latent
            columns[name] = (current ^ (rng.random(n) < flip)).astype(float)
    for name in continuous:
        quality = rng.uniform(0.4, 1.0, n)
        for day, columns in enumerate(days):
            level = quality * (1 - drop) if (day == 1 and name == dropped) else quality
            columns[name] = np.clip(level + rng.normal(0, sigma, n), 0, 1)
    if dropped is not None and linked > 1:
        for columns in days:
            linked_copies(columns, dropped, linked)
    ids = [f"q{i}" for i in range(n)]
    return tuple(  # type: ignore[return-value]
        pd.DataFrame({"system": "sut", "query_id": ids, **columns}) for columns in days
    )


def verdicts(
    frames: tuple[pd.DataFrame, pd.DataFrame], metrics: list[str], rule: RegressionRule
) -> tuple[set[str], set[str]]:
    """(old rule's regressed metrics, new rule's alerted metrics) for one simulated pair."""
    cards = [
        build_scorecard([summarize_wide(frame, metrics, TIER)], "sim", day, Thresholds())
        for frame, day in zip(frames, ("d1", "d2"), strict=True)
    ]
    old = set(detect_regressions(cards[1], cards[0], "sim", "d1")["metric"])
    items = [wide_items(frame, TIER, metrics) for frame in frames]
    table = compare_partitions(
        PartitionScores("sim", "d2", cards[1], items[1]),
        PartitionScores("sim", "d1", cards[0], items[0]),
        rule,
    )
    new = set(table.loc[table["alert"] & (table["verdict"] == REGRESSED), "metric"])
    return old, new


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=200, help="simulated pairs per scenario")
    parser.add_argument("--metrics", type=int, default=20)
    parser.add_argument("--flip", type=float, default=0.03)
    parser.add_argument("--sigma", type=float, default=0.1)
    parser.add_argument("--sizes", type=int, nargs="+", default=[56, 200])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--linked", type=int, default=1, help="metrics moved by the drop")
    args = parser.parse_args()
    binary, continuous = metric_names(args.metrics)
    metrics = binary + continuous
    rule = RegressionRule()
    scenarios: list[tuple[str, str | None, float]] = [("no change (any alert)", None, 0.0)]
    for kind, name in (("0/1", binary[0]), ("continuous", continuous[0])):
        scenarios += [(f"{drop:.0%} drop, {kind} metric", name, drop) for drop in DROPS]
    rows = []
    started = time.perf_counter()
    for n in args.sizes:
        for label, dropped, drop in scenarios:
            rng = np.random.default_rng([args.seed, n, int(drop * 100), len(label)])
            hits = np.zeros(2)
            for _ in range(args.sims):
                frames = simulate_pair(
                    rng, n, args.metrics, args.flip, args.sigma, dropped, drop, args.linked
                )
                old, new = verdicts(frames, metrics, rule)
                if dropped is None:
                    hits += [bool(old), bool(new)]
                else:
                    hits += [dropped in old, dropped in new]
            rows.append(
                {
                    "n": n,
                    "scenario": label,
                    "old rule": hits[0] / args.sims,
                    "new rule": hits[1] / args.sims,
                }
            )
            print(
                f"  n={n:>3}  {label:<28} old {hits[0] / args.sims:6.1%}  "
                f"new {hits[1] / args.sims:6.1%}",
                flush=True,
            )
    print(
        f"\n{args.sims} simulated days per row, {args.metrics} metrics per partition, flip "
        f"{args.flip}, sigma {args.sigma}, {args.linked} metric(s) moved by a drop; "
        f"{time.perf_counter() - started:.0f} s"
    )
    print(pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.1%}"))


if __name__ == "__main__":
    main()
