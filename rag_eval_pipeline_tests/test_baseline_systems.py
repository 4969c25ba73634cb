"""Baseline systems (`roles.baseline_systems`): comparison retrievers' metrics are never
primary, so the primaries' share of the alert budget is the systems under test's."""

from dataclasses import replace

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.evaluation.scorecard import REAL_USERS_SYSTEM, Thresholds
from rag_eval_pipeline.evaluation.traffic import TRAFFIC_SYSTEM
from rag_eval_pipeline.evaluation.verdicts.compare import compare_partitions
from rag_eval_pipeline.evaluation.verdicts.partition import PartitionScores, RegressionRule
from rag_eval_pipeline.settings import THRESHOLDS_FILE
from rag_eval_pipeline.systems import REFERENCE_RAG
from rag_eval_pipeline.systems.retrievers import RETRIEVERS
from rag_eval_pipeline_tests.test_regression import card, quality

pytestmark = [pytest.mark.unit]

SHIPPED = Thresholds.load(THRESHOLDS_FILE)
TIER1 = "tier1_retrieval"
RULES = """
roles:
  tiers:
    tier1_retrieval: {primary: [ndcg@10, hit_rate@5], monitor: ["judged@*"]}
  baseline_systems: [dense, "ref-*"]
metrics:
  mrr: {role: primary}
"""


@pytest.mark.parametrize(
    ("system", "metric", "role"),
    [
        ("dense", "ndcg@10", "secondary"),  # a baseline's primary metric
        ("ref-bm25", "hit_rate@5", "secondary"),  # prefix pattern
        ("dense", "mrr", "secondary"),  # an explicit `role: primary` too: the rule comes last
        ("dense", "judged@10", "monitor"),  # monitor stays monitor
        ("dense", "map", "secondary"),
        ("reference-rag", "ndcg@10", "primary"),  # systems under test keep their primaries
        ("reference-rag", "mrr", "primary"),
        ("dense-v2", "hit_rate@5", "primary"),  # `dense` is exact, not a prefix
        ("production-ref-1", "ndcg@10", "primary"),  # a prefix matches at the start only
        ("reference-rag", "judged@10", "monitor"),
    ],
)
def test_baseline_systems_demote_primary_to_secondary_only(
    tmp_path, system: str, metric: str, role: str
) -> None:
    path = tmp_path / "thresholds.yaml"
    path.write_text(RULES)
    assert Thresholds.load(path).role(TIER1, system, metric, "v") == role


def test_shipped_baselines_are_the_reference_retrievers_and_no_other_system() -> None:
    assert sorted(SHIPPED.baseline_systems) == sorted(RETRIEVERS)
    systems = [*RETRIEVERS, REFERENCE_RAG, "production-bm25", REAL_USERS_SYSTEM]
    rows = [quality(m, 0.5, system=s) for s in systems for m in ("ndcg@10", "hit_rate@5")]
    scorecard = card(*rows, thresholds=SHIPPED)
    roles = scorecard.groupby("system")["role"].unique().map(list).to_dict()
    assert roles == {s: ["secondary" if s in RETRIEVERS else "primary"] for s in systems}
    judge = card(
        quality("kappa_judge_vs_rater_a", 0.7, tier="judge_reliability", system="judge-model"),
        thresholds=SHIPPED,
    )
    traffic = card(
        quality("error_rate", 0.1, tier="traffic", system=TRAFFIC_SYSTEM), thresholds=SHIPPED
    )
    assert judge["role"].tolist() == ["monitor"] and traffic["role"].tolist() == ["primary"]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "dense",
            r"thresholds.yaml: roles.baseline_systems: 'dense' is not a list of system names",
        ),
        ("[dense, 3]", r"thresholds.yaml: roles.baseline_systems\[1\]: 3 is not a system name"),
        ("[dense, '']", r"thresholds.yaml: roles.baseline_systems\[1\]: '' is not a system name"),
    ],
)
def test_bad_baseline_systems_name_file_key_and_value(tmp_path, value: str, message: str) -> None:
    path = tmp_path / "thresholds.yaml"
    path.write_text(f"roles:\n  baseline_systems: {value}\n")
    with pytest.raises(ValueError, match=message):
        Thresholds.load(path)


def day(
    values: dict[tuple[str, str], np.ndarray], date: str, thresholds: Thresholds
) -> PartitionScores:
    """A Tier 1 partition from 0/1 per-query values per (system, metric)."""
    rows, items = [], []
    for (system, metric), hits in values.items():
        rows.append(quality(metric, float(hits.mean()), system=system))
        items.append(
            pd.DataFrame(
                {
                    "tier": TIER1,
                    "system": system,
                    "metric": metric,
                    "item_id": [f"q{i}" for i in range(hits.size)],
                    "value": hits,
                }
            )
        )
    scorecard = card(*rows, date=date, thresholds=thresholds)
    return PartitionScores("v", date, scorecard, pd.concat(items, ignore_index=True))


def flip(values: np.ndarray, worse: int, better: int) -> np.ndarray:
    """`values` with its first `worse` hits turned into misses and `better` misses into hits."""
    flipped = values.copy()
    flipped[np.flatnonzero(values == 1)[:worse]] = 0.0
    flipped[np.flatnonzero(values == 0)[:better]] = 1.0
    return flipped


def test_demoting_baselines_gives_the_system_under_test_the_primary_budget() -> None:
    """200 queries; the system under test's `hit_rate@5` loses a hit on 14 and gains one on 3
    (−5.5 points, −7.9%; sign test p = 834 / 2¹⁷ = 0.0064); every other row (its `ndcg@10`,
    five baselines' both primaries) flips 3 queries each way. With every system primary, the
    drop's lone bar is 0.05 / 12 (no secondary in the family) and it is missed; with the
    baselines demoted, it is 0.05 · 0.8 / 2 = 0.02 and the drop is alerted."""
    rng = np.random.default_rng(0)
    baselines = ["dense", "bm25", "hybrid-rrf", "base-1", "base-2"]
    keys = [(s, m) for s in [REFERENCE_RAG, *baselines] for m in ("hit_rate@5", "ndcg@10")]
    before = {key: (rng.uniform(size=200) < 0.7).astype(float) for key in keys}
    drop = (REFERENCE_RAG, "hit_rate@5")
    after = {key: flip(v, *((14, 3) if key == drop else (3, 3))) for key, v in before.items()}
    demoted = replace(SHIPPED, baseline_systems=[*SHIPPED.baseline_systems, "base-*"])
    flat = replace(SHIPPED, baseline_systems=())

    def verdicts(thresholds: Thresholds) -> pd.DataFrame:
        found = compare_partitions(
            day(after, "d2", thresholds), day(before, "d1", thresholds), RegressionRule()
        )
        return found.set_index(["system", "metric"]).sort_index()

    with_baselines, all_primary = verdicts(demoted), verdicts(flat)
    row, old = with_baselines.loc[drop], all_primary.loc[drop]
    assert row["p_value"] == pytest.approx(834 / 2**17) == old["p_value"]
    assert old["role"] == "primary" and old["bar"] == pytest.approx(0.05 / 12)
    assert old["verdict"] == "no significant change" and not old["alert"]
    assert row["role"] == "primary" and row["bar"] == pytest.approx(0.05 * 0.8 / 2)
    assert row["verdict"] == "regressed" and row["alert"]
    assert with_baselines["alert"].sum() == 1 and not all_primary["alert"].any()
    others = with_baselines.drop(index=REFERENCE_RAG, level="system")
    assert (others["role"] == "secondary").all()
