"""Measuring the judges: self-consistency, latency, errors, agreement with humans, show/hide.

Library functions behind the `judge_reliability` and `show_judge_quality` assets.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rag_eval_pipeline.evaluation.generation import judge_answers
from rag_eval_pipeline.judges.judge import Judge
from rag_eval_pipeline.judges.metrics import METRICS
from rag_eval_pipeline.judges.show_judge import ShowJudge
from rag_eval_pipeline.metrics.agreement import agreement_table, bin_scores
from rag_eval_pipeline.metrics.classification import binary_classification_metrics
from rag_eval_pipeline.metrics.reliability import repeat_consistency
from rag_eval_pipeline.metrics.stats import percentiles

HUMAN_SCORE_PREFIX = "human_score_"
HUMAN_CRITERIA = ("faithfulness", "relevance", "correctness", "overall")
HUMAN_CRITERIA_PREFIXES = {c: f"human_{c}_" for c in HUMAN_CRITERIA}
LIKERT_LABELS = range(1, 6)


def repeated_judgments(
    frame: pd.DataFrame, judge: Judge, metrics: Sequence[str], repetitions: int
) -> pd.DataFrame:
    """Judge every row `repetitions` times with the cache bypassed (`repetition` column)."""
    return pd.concat(
        [
            judge_answers(frame, judge, metrics, use_cache=False).assign(repetition=r)
            for r in range(repetitions)
        ],
        ignore_index=True,
    )


def reliability_values(repeats: pd.DataFrame, delta: float) -> dict[str, float]:
    """Consistency per metric and overall, error rate, and latency of the repeated judgments.

    `consistency_score` pools the items of every metric; `error_rate` = error rows / all
    judgments; latencies are over judgments that reached the judge (not cache hits).
    """
    values: dict[str, float] = {}
    matrices = []
    for metric, rows in repeats.groupby("metric", sort=True):
        matrix = rows.pivot_table(
            index=["system", "query_id"],
            columns="repetition",
            values="score",
            aggfunc="first",
            dropna=False,
        ).to_numpy(dtype=float)
        matrices.append(matrix)
        values[f"consistency_{metric}"] = repeat_consistency(matrix, delta)["consistency_score"]
    pooled = repeat_consistency(np.vstack(matrices), delta) if matrices else {}
    live = repeats[~repeats["cached"].astype(bool)]["latency_ms"].to_numpy(dtype=float)
    latency = percentiles(live, (50, 95))
    values.update(
        {
            "consistency_score": pooled.get("consistency_score", float("nan")),
            "mean_abs_diff": pooled.get("mean_abs_diff", float("nan")),
            "error_rate": float(repeats["error"].notna().mean()) if len(repeats) else np.nan,
            "avg_latency_ms": float(np.mean(live)) if live.size else float("nan"),
            "latency_p50_ms": latency["p50"],
            "latency_p95_ms": latency["p95"],
        }
    )
    return values


def _judge_bins(scored: pd.DataFrame) -> np.ndarray:
    """Judge scores in [0, 1] binned to the raters' 1–5 scale; NaN where the judge failed."""
    bins = np.full(len(scored), np.nan)
    ok = scored["score"].notna().to_numpy()
    bins[ok] = bin_scores(scored["score"].to_numpy(dtype=float)[ok])
    return bins


# The judge metric whose scores each human criterion rates (one rule for agreement and PPI).
CRITERION_METRICS = {
    "faithfulness": "faithfulness",
    "relevance": "answer_relevance",
    "correctness": "answer_correctness",
    "overall": "e2e_score",
}
# The criteria whose raters are compared with the judge (the others: rater with rater only).
AGREEMENT_CRITERIA = ("faithfulness", "relevance")


def _judge_scores(judge: Judge, criterion: str, labels: pd.DataFrame) -> pd.DataFrame:
    """The judge's scores of the labeled items for `criterion` (the label's context: one chunk)."""
    items = pd.DataFrame(
        {
            "question": labels["question"].to_numpy(),
            "contexts": [[c] for c in labels["context"]],
            "answer": labels["answer"].to_numpy(),
        }
    )
    return judge.score(METRICS[CRITERION_METRICS[criterion]], items)


def human_agreement(labels: pd.DataFrame, judge: Judge) -> pd.DataFrame:
    """Agreement of the judge with each human rater and of the raters with each other:
    Cohen's kappa, quadratic-weighted kappa, Spearman (pairwise), one row per pair with the
    number of labels both scored (`n`) and the `criterion`.

    `human_score_<rater>` columns (criterion `score`) are compared with the judge's
    faithfulness; `human_<criterion>_<rater>` columns (`HUMAN_CRITERIA`) with the judge's
    metric for that criterion (faithfulness, answer relevance), and rater with rater for
    every criterion. Judge scores are binned to 1–5 (1 + round(4s)).
    """
    tables = []
    for criterion, prefix in (("score", HUMAN_SCORE_PREFIX), *HUMAN_CRITERIA_PREFIXES.items()):
        raters = [c for c in labels.columns if c.startswith(prefix)]
        judged = "faithfulness" if criterion == "score" else criterion
        table = labels[raters].astype(float)
        table = table.rename(columns={c: c.removeprefix(prefix) for c in raters})
        columns = list(table.columns)
        if judged in AGREEMENT_CRITERIA and raters:
            table = table.assign(judge=_judge_bins(_judge_scores(judge, judged, labels)))
            columns = ["judge", *columns]
        if len(columns) >= 2:
            pairs = agreement_table(table, columns, labels=LIKERT_LABELS)
            tables.append(pairs.assign(criterion=criterion))
    if not tables:
        return pd.DataFrame()
    return pd.concat(tables, ignore_index=True)


def agreement_values(table: pd.DataFrame) -> list[tuple[int, dict[str, float]]]:
    """Per pair of raters, the number of labels both scored (`n`) and its values
    `<statistic>_[<criterion>_]<rater_a>_vs_<rater_b>` (kappa, weighted kappa, Spearman); the
    single-score columns (`human_score_*`) keep the name without a criterion."""
    pairs = []
    for row in table.itertuples():
        criterion = "" if row.criterion == "score" else f"{row.criterion}_"
        pair = f"{criterion}{row.rater_a}_vs_{row.rater_b}"
        values = {
            f"kappa_{pair}": float(row.kappa),
            f"weighted_kappa_{pair}": float(row.weighted_kappa),
            f"spearman_{pair}": float(row.spearman),
        }
        pairs.append((int(row.n), values))
    return pairs


def show_decisions(labels: pd.DataFrame, show_judge: ShowJudge) -> pd.DataFrame:
    """The judge's show/hide decision for every labeled item, beside the human label."""
    labeled = labels[labels["ground_truth_show"].notna()].reset_index(drop=True)
    decisions = show_judge.decide(
        labeled["question"].tolist(), labeled["context"].tolist(), labeled["answer"].tolist()
    )
    keep = [c for c in ("label_id", "question", "ground_truth_show") if c in labeled.columns]
    return pd.concat([labeled[keep], decisions], axis=1)


def show_judge_values(decisions: pd.DataFrame) -> dict[str, float]:
    """Accuracy, precision, recall, F1 ("Yes" class), confusion counts, errors, latency."""
    metrics = binary_classification_metrics(
        decisions["ground_truth_show"].astype(bool).tolist(), decisions["decision"].tolist()
    )
    latency = decisions["latency_ms"].to_numpy(dtype=float)
    return {
        **{name: float(value) for name, value in metrics.items()},
        "avg_latency_ms": float(np.mean(latency)) if latency.size else float("nan"),
    }
