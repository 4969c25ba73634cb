"""A judge upgrade keeps the trend: the baseline's answers re-judged by today's judge (two real
loopback judges with known, different scoring)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.generation import judge_answers
from rag_eval_pipeline.evaluation.item_scores import item_scores
from rag_eval_pipeline.evaluation.judge_bridge import (
    ANSWERS_GONE,
    bridge_baseline,
    bridge_reasons,
    judge_change,
)
from rag_eval_pipeline.evaluation.regression import (
    NOT_COMPARABLE,
    REGRESSED,
    PartitionScores,
    RegressionRule,
    compare_partitions,
)
from rag_eval_pipeline.evaluation.scorecard import Thresholds, build_scorecard
from rag_eval_pipeline.evaluation.summaries import summarize_judgments
from rag_eval_pipeline.judges.judge import LLMJudge
from rag_eval_pipeline.reporting.html_report import judge_bridge_html
from rag_eval_pipeline_tests.conftest import loopback_llm
from rag_eval_pipeline_tests.openai_server import run_openai_server

TIER, METRIC, SHIFT = "tier3_e2e", "avg_answer_relevance", 0.1
RULE = RegressionRule(n_resamples=2000)
QUALITY = re.compile(r"quality (\d\.\d+)")


def judge_adding(shift: float):
    """A rubric judge scoring the quality written in the answer, plus `shift`."""

    def respond(request: dict[str, Any]) -> str:
        answer = request["messages"][-1]["content"].split("<answer>")[-1]
        quality = float(QUALITY.search(answer).group(1))
        return json.dumps({"score": round(quality + shift, 4), "reason": "known"})

    return respond


def answers(qualities: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "system": "sut",
            "query_id": [f"q{i}" for i in range(len(qualities))],
            "question": [f"Question {i}?" for i in range(len(qualities))],
            "answer": [f"An answer of quality {q:.4f}." for q in qualities],
            "contexts": [["a context"]] * len(qualities),
            "ground_truth_answer": None,
        }
    )


def partition(date: str, judged: pd.DataFrame, identity: str) -> PartitionScores:
    scorecard = build_scorecard([summarize_judgments(judged, TIER)], "v1", date, Thresholds())
    return PartitionScores(
        "v1", date, scorecard, item_scores({"e2e_judgments": judged}), {"judge": identity}
    )


@contextmanager
def two_judges(tmp_path: Path, embedder: Embedder) -> Iterator[tuple[Any, ...]]:
    with (
        run_openai_server(responder=judge_adding(0.0)) as server_a,
        run_openai_server(responder=judge_adding(SHIFT)) as server_b,
    ):
        resources = [
            loopback_llm(server.base_url, f"openai/judge-{name}", tmp_path / name)
            for name, server in (("a", server_a), ("b", server_b))
        ]
        judges = [LLMJudge(r.client(), embedder) for r in resources]
        yield resources, judges, server_b


def test_bridge_keeps_the_trend_and_alerts_a_real_drop(tmp_path: Path, embedder: Embedder) -> None:
    qualities = np.random.default_rng(0).uniform(0.3, 0.8, 60)
    baseline_answers = answers(qualities)
    with two_judges(tmp_path, embedder) as ((resource_a, resource_b), (judge_a, judge_b), server_b):
        stored = judge_answers(baseline_answers, judge_a, ["answer_relevance"])
        baseline = partition("2026-11-20", stored, resource_a.identity)
        tables = {"e2e_judgments": stored, "e2e_generations": baseline_answers}

        # no change in the system: the same answers, judged today by B
        today = partition(
            "2026-11-21",
            judge_answers(baseline_answers, judge_b, ["answer_relevance"]),
            resource_b.identity,
        )
        unbridged = compare_partitions(today, baseline, RULE).set_index("metric")
        assert unbridged.loc[METRIC, "verdict"] == NOT_COMPARABLE
        assert "judge changed" in unbridged.loc[METRIC, "reason"]

        calls = len(server_b.requests)
        bridged, bridge = bridge_baseline(baseline, tables, judge_b, {})
        assert len(server_b.requests) == calls  # B already judged these answers: cache hits
        row = bridge.set_index("metric").loc[METRIC]
        assert row["shift"] == pytest.approx(SHIFT, abs=1e-3)
        assert row["n_items"] == 60 and row["spearman"] == pytest.approx(1.0)
        verdicts = compare_partitions(today, bridged, RULE)
        assert not verdicts["alert"].any()
        verdict = verdicts.set_index("metric").loc[METRIC]
        assert verdict["verdict"] != NOT_COMPARABLE and verdict["n_paired"] == 60
        reasons = bridge_reasons(verdicts, bridge, "judge-a", "judge-b")
        assert "+0.1000 on 60 items" in reasons[verdicts["metric"] == METRIC].item()
        html = judge_bridge_html(verdicts.assign(reason=reasons))
        assert "Judge changed: baseline re-judged" in html and "+0.1000 on 60 items" in html
        assert judge_bridge_html(unbridged.reset_index()) == ""

        # a real 10% drop of the system, as judge B sees it
        dropped = answers(0.9 * (qualities + SHIFT) - SHIFT)
        today = partition(
            "2026-11-21",
            judge_answers(dropped, judge_b, ["answer_relevance"]),
            resource_b.identity,
        )
        verdict = compare_partitions(today, bridged, RULE).set_index("metric").loc[METRIC]
        assert verdict["verdict"] == REGRESSED and verdict["alert"]
        assert verdict["relative_change"] == pytest.approx(-0.10, abs=2e-3)


def test_baseline_answers_gone_stay_not_comparable_with_the_reason(
    tmp_path: Path, embedder: Embedder
) -> None:
    qualities = np.linspace(0.3, 0.8, 12)
    with two_judges(tmp_path, embedder) as ((resource_a, resource_b), (judge_a, judge_b), _):
        stored = judge_answers(answers(qualities), judge_a, ["answer_relevance"])
        baseline = partition("2026-11-20", stored, resource_a.identity)
        today = partition(
            "2026-11-21",
            judge_answers(answers(qualities), judge_b, ["answer_relevance"]),
            resource_b.identity,
        )
        kept, bridge = bridge_baseline(
            baseline, {"e2e_judgments": stored, "e2e_generations": None}, judge_b, {}
        )
    assert bridge.empty
    verdict = compare_partitions(today, kept, RULE).set_index("metric").loc[METRIC]
    assert verdict["verdict"] == NOT_COMPARABLE and ANSWERS_GONE in verdict["reason"]


def test_a_prompt_change_with_the_same_model_is_a_judge_change() -> None:
    def judged(version: str) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "metric": ["faithfulness", "rouge1_f"],
                "judge_version": [version, "rouge-score"],
            }
        )

    baseline = PartitionScores("v1", "d", pd.DataFrame(), pd.DataFrame(), {"judge": "m|x"})
    old, new = {"e2e_judgments": judged("prompts-v1")}, {"e2e_judgments": judged("prompts-v2")}
    assert judge_change(baseline, old, old, "m|x") is None
    assert judge_change(baseline, old, new, "m|x") == ("prompts-v1", "prompts-v2")
    assert judge_change(baseline, old, old, "m|y") == ("m|x", "m|y")
    assert judge_change(baseline, {}, new, "m|x") is None  # nothing judged on the baseline
