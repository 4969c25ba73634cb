"""False alerts and detection power of the regression rules, old and new, side by side.

Two simulations of many pairs of days (baseline, today) of one partition; to the same data
both rules are applied through the project's own code:

* old: `evaluation.regression.detect_regressions` — relative drop beyond 5% and the baseline
  outside today's 95% bootstrap CI (the scorecard's `summarize`, 2,000 resamples);
* new: `evaluation.regression.compare_partitions` — paired one-sided tests (exact sign test for
  0/1 metrics, 10,000 sign flips otherwise), Benjamini–Hochberg at α = 0.05 over every metric
  of the partition, and the 5% effect rule.

**Lone metric** (the worst case for any multiplicity correction): `--metrics` independent
metrics, half 0/1, half continuous, and a drop in exactly one of them. 0/1 metric: each item
has a latent outcome x_i ~ Bernoulli(0.8) (HitRate ≈ 0.8); each day observes x_i flipped with
probability f, for each f of `--flips` (symmetric per-item flips). Continuous metric: each
item has a latent quality m_i ~ U(0.4, 1); each day observes clip(m_i + N(0, σ), 0, 1),
σ = `--sigma` (judge noise). A true relative drop r: for 0/1, each latent 1 becomes 0 with
probability r; for continuous, m_i → (1 − r)·m_i. With `--linked K`, the dropped metric has
K − 1 companions scored on the same items with the same outcomes.

**Retrieval regression on real rankings** (what a partition of this pipeline holds): the real
SciFact test run shipped in `data/datasets/scifact-test` (300 queries, top 100 documents of a
reranker, HitRate@5 = 0.67) scored with Tier 1's 20 default metrics for two systems, plus 20
continuous judge scores as above: 60 tests per partition, as in the pipeline. Day-to-day noise:
each day adds N(0, j) to every retrieval score, for each j of `--jitters` (index rebuilds,
nondeterministic inference), which reorders near-tied documents: 0 is a deterministic system;
0.01 makes 5.7% of queries differ on HitRate@5 between two days, as 3% flips a day do (the
share is measured and printed). A true relative drop r of
HitRate@5 in the system under test: each query with a relevant document in its top 5 is
affected with probability r, and its relevant documents in the top 5 move to random ranks 6–20
(the retriever demotes them; HitRate@10, MRR, NDCG and the rest move with them, or not, as the
ranks dictate). The other system and the judge scores are unchanged.

Printed: the share of no-change partitions with any alert (false alerts) and, for drops of 5%,
10% and 20%, the share of partitions where the dropped metric is alerted (detection), for
n = 56 and n = 200 items.
Usage: ``python benchmarks/regression_power.py [--sims N --metrics M --flips F... --sigma S
--jitters J... --sizes N... --linked K --only lone|real]``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runs from a checkout, too

from rag_eval_pipeline.datasets.readers import read_qrels, read_trec_run
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
from rag_eval_pipeline.metrics.retrieval import DEFAULT_RETRIEVAL_METRICS, evaluate_run

RETRIEVAL, JUDGED = "tier1_retrieval", "tier2_generation"
SUT, REFERENCE = "sut", "reference"
DROPS = (0.05, 0.10, 0.20)
SCIFACT = Path(__file__).resolve().parents[1] / "data" / "datasets" / "scifact-test"
HEADLINE = "hit_rate@5"
DEMOTED_TO = (6, 20)

# One day of a partition: (tier, wide per-item frame `system, query_id, <metric>...`, metrics).
Day = list[tuple[str, pd.DataFrame, list[str]]]
Alerted = set[tuple[str, str]]  # (system, metric)


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


def judge_scores(
    rng: np.random.Generator,
    n: int,
    names: list[str],
    sigma: float,
    dropped: str | None,
    drop: float,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Continuous per-item scores of both days: clip(m_i + N(0, σ)), m_i ~ U(0.4, 1)."""
    days: tuple[dict[str, np.ndarray], dict[str, np.ndarray]] = ({}, {})
    for name in names:
        quality = rng.uniform(0.4, 1.0, n)
        for day, columns in enumerate(days):
            level = quality * (1 - drop) if (day == 1 and name == dropped) else quality
            columns[name] = np.clip(level + rng.normal(0, sigma, n), 0, 1)
    return days


def lone_metric_pair(
    rng: np.random.Generator,
    n: int,
    n_metrics: int,
    flip: float,
    sigma: float,
    dropped: str | None,
    drop: float,
    linked: int = 1,
) -> tuple[Day, Day]:
    """Both days of the lone-metric simulation (one system, `n_metrics` metrics)."""
    binary, continuous = metric_names(n_metrics)
    days = judge_scores(rng, n, continuous, sigma, dropped, drop)
    for name in binary:
        latent = rng.random(n) < 0.8
        for day, columns in enumerate(days):
            current = latent & ~(rng.random(n) < drop) if (day == 1 and name == dropped) else latent
            columns[name] = (current ^ (rng.random(n) < flip)).astype(float)
    if dropped is not None and linked > 1:
        for columns in days:
            linked_copies(columns, dropped, linked)
    ids = [f"q{i}" for i in range(n)]
    metrics = binary + continuous
    return tuple(  # type: ignore[return-value]
        [(RETRIEVAL, pd.DataFrame({"system": SUT, "query_id": ids, **columns}), metrics)]
        for columns in days
    )


@dataclass(frozen=True)
class RealRun:
    """The shipped SciFact run, sorted by query and rank, with what a regression needs."""

    run: pd.DataFrame  # query_id, doc_id, score, rank (1-based), relevant
    qrels: pd.DataFrame
    queries: np.ndarray  # scored query ids
    score_at_rank: pd.DataFrame  # query_id → scores by rank (columns 1..100)

    @classmethod
    def load(cls, folder: Path = SCIFACT) -> RealRun:
        run = read_trec_run(folder / "runs" / "reranked.trec")[["query_id", "doc_id", "score"]]
        qrels = read_qrels(folder / "qrels.trec")[["query_id", "doc_id", "relevance"]]
        run.attrs.clear()  # the readers' line numbers, not needed here
        qrels.attrs.clear()
        qrels = qrels.astype({"relevance": int})
        run = run.astype({"score": float}).sort_values(
            ["query_id", "score"], ascending=[True, False], kind="stable"
        )
        run["rank"] = run.groupby("query_id").cumcount() + 1
        relevant = qrels.loc[qrels["relevance"] >= 1, ["query_id", "doc_id"]].assign(relevant=True)
        run = run.merge(relevant, on=["query_id", "doc_id"], how="left")
        run["relevant"] = run["relevant"].astype("boolean").fillna(False).astype(bool)
        queries = np.intersect1d(relevant["query_id"].unique(), run["query_id"].unique())
        score_at_rank = run.pivot(index="query_id", columns="rank", values="score").ffill(axis=1)
        return cls(run.reset_index(drop=True), qrels, queries, score_at_rank)

    def regressed_scores(
        self, rows: pd.DataFrame, rng: np.random.Generator, drop: float
    ) -> np.ndarray:
        """Scores after demoting, in a share `drop` of the queries with a top-5 hit, every
        relevant document of the top 5 to a random rank in `DEMOTED_TO`."""
        scores = rows["score"].to_numpy(copy=True)
        in_top5 = (rows["relevant"] & (rows["rank"] <= 5)).to_numpy()
        hit_queries = rows.loc[in_top5, "query_id"].unique()
        affected = hit_queries[rng.random(hit_queries.size) < drop]
        moved = in_top5 & rows["query_id"].isin(affected).to_numpy()
        ranks = rng.integers(DEMOTED_TO[0], DEMOTED_TO[1] + 1, int(moved.sum()))
        table = self.score_at_rank.loc[rows.loc[moved, "query_id"]].to_numpy()
        scores[moved] = table[np.arange(ranks.size), ranks - 1] - 1e-6
        return scores


def real_run_pair(
    rng: np.random.Generator, data: RealRun, n: int, jitter: float, sigma: float, drop: float
) -> tuple[Day, Day]:
    """Both days of a partition scoring `n` real queries: two systems' Tier 1 metrics (the
    system under test regressed by `drop` today) and 20 continuous judge scores."""
    picked = np.sort(rng.choice(data.queries, n, replace=False))
    rows = data.run[data.run["query_id"].isin(picked)]
    qrels = data.qrels[data.qrels["query_id"].isin(picked)]
    metrics = list(DEFAULT_RETRIEVAL_METRICS)
    judged = [f"score_{i}" for i in range(20)]
    judge_days = judge_scores(rng, n, judged, sigma, None, 0.0)
    days: tuple[Day, Day] = ([], [])
    for day, judge_columns in enumerate(judge_days):
        frames = []
        for system in (SUT, REFERENCE):
            latent = (
                data.regressed_scores(rows, rng, drop)
                if (day == 1 and system == SUT and drop > 0)
                else rows["score"].to_numpy()
            )
            noisy = rows.assign(score=latent + rng.normal(0, jitter, len(rows)))
            frames.append(evaluate_run(noisy, qrels, metrics).assign(system=system))
        days[day].append((RETRIEVAL, pd.concat(frames, ignore_index=True), metrics))
        judge_frame = pd.DataFrame({"system": SUT, "query_id": picked, **judge_columns})
        days[day].append((JUDGED, judge_frame, judged))
    return days


def verdicts(days: tuple[Day, Day], rule: RegressionRule) -> tuple[Alerted, Alerted]:
    """(old rule's regressed, new rule's alerted) (system, metric) pairs for one pair of days."""
    cards = [
        build_scorecard(
            [summarize_wide(frame, metrics, tier) for tier, frame, metrics in day],
            "sim",
            date,
            Thresholds(),
        )
        for day, date in zip(days, ("d1", "d2"), strict=True)
    ]
    old = detect_regressions(cards[1], cards[0], "sim", "d1")
    items = [
        pd.concat([wide_items(frame, tier, metrics) for tier, frame, metrics in day])
        for day in days
    ]
    table = compare_partitions(
        PartitionScores("sim", "d2", cards[1], items[1]),
        PartitionScores("sim", "d1", cards[0], items[0]),
        rule,
    )
    new = table[table["alert"] & (table["verdict"] == REGRESSED)]
    return (
        set(zip(old["system"], old["metric"], strict=True)),
        set(zip(new["system"], new["metric"], strict=True)),
    )


Scenario = tuple[str, tuple[str, str] | None, float]
Simulator = Callable[[np.random.Generator, int, tuple[str, str] | None, float], tuple[Day, Day]]


def run_scenarios(
    title: str,
    noise: str,
    scenarios: list[Scenario],
    simulate: Simulator,
    args: argparse.Namespace,
) -> pd.DataFrame:
    """Detection (or, without a drop, any-alert) rates of both rules, per size and scenario."""
    rule = RegressionRule()
    rows = []
    print(title, flush=True)
    for n in args.sizes:
        for label, dropped, drop in scenarios:
            rng = np.random.default_rng([args.seed, n, int(drop * 100), len(label)])
            hits = np.zeros(2)
            for _ in range(args.sims):
                old, new = verdicts(simulate(rng, n, dropped, drop), rule)
                hits += (
                    [bool(old), bool(new)] if dropped is None else [dropped in old, dropped in new]
                )
            rates = hits / args.sims
            rows.append(
                {
                    "noise": noise,
                    "n": n,
                    "scenario": label,
                    "old rule": rates[0],
                    "new rule": rates[1],
                }
            )
            print(f"  n={n:>3}  {label:<34} old {rates[0]:6.1%}  new {rates[1]:6.1%}", flush=True)
    return pd.DataFrame(rows)


def day_to_day_changes(data: RealRun, jitter: float, seed: int) -> float:
    """Share of the 300 queries whose HitRate@5 differs between two unchanged days."""
    rng = np.random.default_rng(seed)
    days = [
        evaluate_run(
            data.run.assign(score=data.run["score"] + rng.normal(0, jitter, len(data.run))),
            data.qrels,
            [HEADLINE],
        )[HEADLINE].to_numpy()
        for _ in range(2)
    ]
    return float(np.mean(days[0] != days[1]))


def information_limit(alpha: float, tests: int) -> int:
    """Items that must move one way, none back, for the exact one-sided sign test of a lone
    metric to reach Benjamini–Hochberg's bar α / tests (p = 2^-k)."""
    return math.ceil(math.log2(tests / alpha))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sims", type=int, default=100, help="simulated pairs per scenario")
    parser.add_argument("--metrics", type=int, default=20, help="lone-metric simulation's")
    parser.add_argument("--flips", type=float, nargs="+", default=[0.01, 0.03])
    parser.add_argument("--sigma", type=float, default=0.1)
    parser.add_argument(
        "--jitters", type=float, nargs="+", default=[0.0, 0.01], help="real-run score noise"
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[56, 200])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--linked", type=int, default=1, help="metrics moved by a lone drop")
    parser.add_argument("--only", choices=("lone", "real"), help="one simulation (default: both)")
    args = parser.parse_args()
    started = time.perf_counter()
    tables = []
    if args.only in (None, "lone"):
        binary, continuous = metric_names(args.metrics)
        scenarios: list[Scenario] = [("no change (any alert)", None, 0.0)]
        for kind, name in (("0/1", binary[0]), ("continuous", continuous[0])):
            scenarios += [(f"{d:.0%} drop, lone {kind} metric", (SUT, name), d) for d in DROPS]
        for flip in args.flips:
            noise = f"flip {flip:.0%}"
            tables.append(
                run_scenarios(
                    f"Lone metric: {args.metrics} metrics, {noise} a day, sigma {args.sigma}, "
                    f"{args.linked} metric(s) moved by a drop",
                    noise,
                    scenarios,
                    lambda rng, n, dropped, drop, flip=flip: lone_metric_pair(
                        rng,
                        n,
                        args.metrics,
                        flip,
                        args.sigma,
                        dropped[1] if dropped else None,
                        drop,
                        args.linked,
                    ),
                    args,
                )
            )
    if args.only in (None, "real"):
        data = RealRun.load()
        scenarios = [("no change (any alert)", None, 0.0)] + [
            (f"{d:.0%} drop of {HEADLINE}", (SUT, HEADLINE), d) for d in DROPS
        ]
        for jitter in args.jitters:
            changes = day_to_day_changes(data, jitter, args.seed)
            noise = f"jitter {jitter:g} ({changes:.1%} change)"
            tables.append(
                run_scenarios(
                    f"Retrieval regression on the real SciFact run, 60 tests, score {noise} of "
                    f"{HEADLINE} from one day to the next",
                    noise,
                    scenarios,
                    lambda rng, n, dropped, drop, jitter=jitter: real_run_pair(
                        rng, data, n, jitter, args.sigma, drop
                    ),
                    args,
                )
            )
    rule = RegressionRule()
    for tests in (args.metrics, 60):
        print(
            f"Information limit: with {tests} tests, a lone 0/1 metric is flagged only when at "
            f"least {information_limit(rule.alpha, tests)} items move one way and none back; "
            f"one test at α = {rule.alpha:g}: {information_limit(rule.alpha, 1)} items."
        )
    print(f"\n{args.sims} simulated days per row; {time.perf_counter() - started:.0f} s")
    table = pd.concat(tables, ignore_index=True)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.1%}"))


if __name__ == "__main__":
    main()
