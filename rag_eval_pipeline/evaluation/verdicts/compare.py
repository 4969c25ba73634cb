"""`compare_partitions`: today's partition against its baseline, one verdict row per metric.

Evidence (`evidence.gather_evidence`) → the family's correction (`family.correct_family`) →
the planner's figures (`planner.plan`) → each row's decision (`decide.decide`) → the table.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rag_eval_pipeline.evaluation.verdicts.columns import (
    KEY,
    METRIC_REGRESSION_COLUMNS,
    alert_keys,
)
from rag_eval_pipeline.evaluation.verdicts.decide import Verdict, decide
from rag_eval_pipeline.evaluation.verdicts.evidence import Evidence, gather_evidence
from rag_eval_pipeline.evaluation.verdicts.family import correct_family
from rag_eval_pipeline.evaluation.verdicts.model_roles import IDENTITY_ROLES
from rag_eval_pipeline.evaluation.verdicts.partition import PartitionScores, RegressionRule
from rag_eval_pipeline.evaluation.verdicts.planner import plan
from rag_eval_pipeline.evaluation.verdicts.significance import EFFECT_ONLY


def compare_partitions(
    current: PartitionScores,
    baseline: PartitionScores | None,
    rule: RegressionRule,
    history: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """One verdict row per quality metric of `current` or `baseline` (see
    `evaluation.verdicts`); `history`: earlier verdict rows of the version (`tier`, `system`,
    `metric`, `n_paired`, `noise`) whose noise the planner pools with today's. Alerted rows
    first, then by tier, system and metric."""
    evidence = gather_evidence(current, baseline, rule)
    if not evidence:
        return pd.DataFrame(columns=METRIC_REGRESSION_COLUMNS)
    evidence = plan(correct_family(evidence, rule), history)
    verdicts = [decide(row, rule) for row in evidence]
    result = verdict_frame(current, baseline, evidence, verdicts)
    order = result.assign(_rank=~result["alert"]).sort_values(["_rank", *KEY], kind="stable")
    return order[METRIC_REGRESSION_COLUMNS].reset_index(drop=True)


def verdict_frame(
    current: PartitionScores,
    baseline: PartitionScores | None,
    evidence: list[Evidence],
    verdicts: list[Verdict],
) -> pd.DataFrame:
    """The rows of `evidence` and their `verdicts` as a table (`METRIC_REGRESSION_COLUMNS`)."""
    base = np.array([e.baseline_value for e in evidence], dtype=float)
    cur = np.array([e.value for e in evidence], dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.where(base != 0, (cur - base) / np.abs(base), np.nan)
    n_paired = np.array([e.counts.n_paired for e in evidence], dtype=np.int64)
    tested = np.array([e.comparable and e.test is not None for e in evidence], dtype=bool)
    result = pd.DataFrame(
        {
            "dataset_version": current.version,
            "date": current.date,
            "baseline_version": baseline.version if baseline is not None else None,
            "baseline_date": baseline.date if baseline is not None else None,
            **{column: [e.key[i] for e in evidence] for i, column in enumerate(KEY)},
            "baseline_value": base,
            "value": cur,
            "relative_change": relative,
            "role": np.array([e.role for e in evidence], dtype=object),
            "threshold": np.array([e.tolerance for e in evidence], dtype=float),
            "higher_is_better": np.array([e.higher_is_better for e in evidence], dtype=bool),
            "n_items": np.where(n_paired > 0, n_paired, [e.count for e in evidence]),
            "n_paired": n_paired,
            **_counts(evidence),
            "test": [_test_name(e) for e in evidence],
            "p_value": np.array([v.p_value for v in verdicts], dtype=float),
            "q_value": np.array([v.q_value for v in verdicts], dtype=float),
            "bar": np.where(
                tested, [e.family.bar if e.family else np.nan for e in evidence], np.nan
            ),
            **_plan_columns(evidence, verdicts),
            "verdict": np.array([v.verdict for v in verdicts], dtype=object),
            "reason": np.array([v.reason for v in verdicts], dtype=object),
            "alert": np.array([v.alert for v in verdicts], dtype=bool),
            **{role: current.identities.get(role) for role in IDENTITY_ROLES},
        }
    )
    result["alert_key"] = alert_keys(result)
    return result


def _counts(evidence: list[Evidence]) -> dict[str, np.ndarray]:
    def column(values: list[int]) -> np.ndarray:
        return np.array(values, dtype=np.int64)

    return {
        "n_only_baseline": column([e.counts.n_only_baseline for e in evidence]),
        "n_only_current": column([e.counts.n_only_current for e in evidence]),
        "n_worse": column([e.test.n_worse if e.test else 0 for e in evidence]),
        "n_better": column([e.test.n_better if e.test else 0 for e in evidence]),
    }


def _plan_columns(evidence: list[Evidence], verdicts: list[Verdict]) -> dict[str, np.ndarray]:
    def column(values: list[float]) -> np.ndarray:
        return np.array(values, dtype=float)

    return {
        "detectable_change": column([e.plan.detectable_change for e in evidence]),
        "noise": column([e.plan.noise for e in evidence]),
        "items_needed": column([e.plan.items_needed for e in evidence]),
        "items_needed_basis": np.array([e.plan.items_needed_basis for e in evidence], dtype=object),
        "items_to_detect": column([v.items_to_detect for v in verdicts]),
    }


def _test_name(row: Evidence) -> str:
    """The row's test; `EFFECT_ONLY` for a comparable row without one, "" for the others."""
    if row.test is not None:
        return row.test.name
    return EFFECT_ONLY if row.comparable else ""
