"""The judge's means corrected by the human labels: prediction-powered estimates per criterion.

For each human criterion of the version's `judge_labels` with a judge metric
(`CRITERION_METRICS`), the judge scores the labeled items themselves (through the reply cache,
so the agreement asset and this one pay once), the raters' 1–5 scores are averaged per item
and mapped to the judge's 0–1 scale as the judge's own 1–5 rubric is, (h − 1) / 4, and the
partition's judge scores of that metric (every scored item of each system, Tier 3) are the
unlabeled sample. `metrics.ppi.ppi_mean` gives the PPI++ estimate of the human mean, its 95%
interval and the classical interval of the labels alone.

The one assumption: the labeled items are drawn like the partition's items (the same kind of
questions and answers, e.g. a random sample of them, as `rater_export` produces). Labels of a
different population correct the judge toward a different mean.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rag_eval_pipeline.evaluation.generation import judge_answers
from rag_eval_pipeline.evaluation.judging import CRITERION_METRICS, HUMAN_CRITERIA_PREFIXES
from rag_eval_pipeline.evaluation.summaries import QUALITY_COLUMNS, empty_quality
from rag_eval_pipeline.judges.judge import Judge
from rag_eval_pipeline.judges.metrics import METRICS
from rag_eval_pipeline.metrics.ppi import CLASSICAL_PREFIX, PPI_PREFIX, PPIEstimate, ppi_mean

LABELED_SYSTEM = "judge_labels"


def human_means(labels: pd.DataFrame, criterion: str) -> pd.Series:
    """Per label, the mean of the raters' 1–5 scores of `criterion` on the judge's 0–1 scale,
    (h − 1) / 4 (NaN where no rater scored it)."""
    prefix = HUMAN_CRITERIA_PREFIXES[criterion]
    raters = [c for c in labels.columns if c.startswith(prefix)]
    if not raters:
        return pd.Series(np.nan, index=labels.index)
    return (labels[raters].astype(float).mean(axis=1) - 1.0) / 4.0


def label_ids(labels: pd.DataFrame) -> np.ndarray:
    """The labels' `label_id` as strings, or their row numbers when the file has none."""
    if "label_id" in labels.columns:
        return labels["label_id"].astype(str).to_numpy()
    return np.arange(len(labels)).astype(str)


def labeled_items(labels: pd.DataFrame) -> pd.DataFrame:
    """The labeled items in the layout the judge scores (`system, query_id, question,
    contexts, answer, ground_truth_answer`); the label's context is its one chunk."""
    truths = labels["ground_truth_answer"] if "ground_truth_answer" in labels.columns else None
    return pd.DataFrame(
        {
            "system": LABELED_SYSTEM,
            "query_id": label_ids(labels),
            "question": labels["question"].to_numpy(),
            "contexts": [[c] for c in labels["context"]],
            "answer": labels["answer"].to_numpy(),
            "ground_truth_answer": truths.to_numpy(dtype=object) if truths is not None else None,
        }
    )


def judged_criteria(labels: pd.DataFrame) -> list[str]:
    """The criteria of `labels` with at least one human score and a judge metric that can run
    on them (correctness and overall need the labels' `ground_truth_answer`)."""
    has_truth = "ground_truth_answer" in labels.columns
    return [
        criterion
        for criterion, metric in CRITERION_METRICS.items()
        if human_means(labels, criterion).notna().any()
        and (not METRICS[metric].needs_ground_truth or has_truth)
    ]


def judge_labeled_items(labels: pd.DataFrame, judge: Judge) -> pd.DataFrame:
    """The judge's long judgments of the labeled items, for every criterion it can score."""
    metrics = [CRITERION_METRICS[c] for c in judged_criteria(labels)]
    return judge_answers(labeled_items(labels), judge, metrics)


def ppi_estimates(
    labels: pd.DataFrame,
    labeled_judgments: pd.DataFrame,
    judgments: pd.DataFrame,
    alpha: float = 0.05,
) -> dict[tuple[str, str], PPIEstimate | str]:
    """(system, metric) → the estimate, or why there is none (too few labeled or unlabeled
    scored items). `judgments` are the partition's long judgments (`system, metric, score`);
    error rows and refusals (no score) are left out of both samples."""
    results: dict[tuple[str, str], PPIEstimate | str] = {}
    ids = label_ids(labels)
    for criterion in judged_criteria(labels):
        metric = CRITERION_METRICS[criterion]
        humans = pd.Series(human_means(labels, criterion).to_numpy(), index=ids)
        judged = labeled_judgments[labeled_judgments["metric"] == metric]
        judge_scores = judged.set_index(judged["query_id"].astype(str))["score"].astype(float)
        pairs = pd.DataFrame({"human": humans, "judge": judge_scores}).dropna()
        scored = judgments[(judgments["metric"] == metric) & judgments["score"].notna()]
        for system, rows in scored.groupby("system", sort=True):
            unlabeled = rows["score"].to_numpy(dtype=float)
            if len(pairs) < 2:
                results[(str(system), metric)] = (
                    f"{len(pairs)} labeled item(s) with both a human and a judge score; PPI needs 2"
                )
                continue
            results[(str(system), metric)] = ppi_mean(
                pairs["human"].to_numpy(), pairs["judge"].to_numpy(), unlabeled, alpha
            )
    return results


def ppi_quality(estimates: dict[tuple[str, str], PPIEstimate | str], tier: str) -> pd.DataFrame:
    """Quality rows `ppi_<metric>` (the PPI++ estimate and interval) and `classical_<metric>`
    (the labels' mean and interval) per system; `count` is n, the labeled items."""
    rows = []
    for (system, metric), estimate in estimates.items():
        if isinstance(estimate, str):
            continue
        for prefix, value, low, high in (
            (PPI_PREFIX, estimate.estimate, estimate.ci_low, estimate.ci_high),
            (
                CLASSICAL_PREFIX,
                estimate.classical_mean,
                estimate.classical_low,
                estimate.classical_high,
            ),
        ):
            rows.append(
                {
                    "tier": tier,
                    "system": system,
                    "metric": prefix + metric,
                    "mean": value,
                    "std": np.nan,
                    "count": estimate.n_labeled,
                    "ci_low": low,
                    "ci_high": high,
                    "n_errors": 0,
                    "error_rate": 0.0,
                }
            )
    return pd.DataFrame(rows, columns=QUALITY_COLUMNS) if rows else empty_quality()


def ppi_table(estimates: dict[tuple[str, str], PPIEstimate | str]) -> pd.DataFrame:
    """One row per (system, metric): judge mean, PPI estimate and interval, classical interval,
    λ, n labeled, N unlabeled, or the reason there is no estimate (`note`)."""
    columns: Sequence[str] = (
        "system",
        "metric",
        "judge_mean",
        "ppi_estimate",
        "ppi_ci_low",
        "ppi_ci_high",
        "classical_mean",
        "classical_ci_low",
        "classical_ci_high",
        "lambda",
        "n_labeled",
        "n_unlabeled",
        "note",
    )
    rows = []
    for (system, metric), e in estimates.items():
        if isinstance(e, str):
            rows.append({"system": system, "metric": metric, "note": e})
            continue
        rows.append(
            {
                "system": system,
                "metric": metric,
                "judge_mean": e.judge_mean,
                "ppi_estimate": e.estimate,
                "ppi_ci_low": e.ci_low,
                "ppi_ci_high": e.ci_high,
                "classical_mean": e.classical_mean,
                "classical_ci_low": e.classical_low,
                "classical_ci_high": e.classical_high,
                "lambda": e.lam,
                "n_labeled": e.n_labeled,
                "n_unlabeled": e.n_unlabeled,
                "note": None,
            }
        )
    return pd.DataFrame(rows, columns=list(columns))
