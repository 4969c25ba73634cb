"""Model changes keep the trend: the baseline rebuilt with today's judge, generator or embedder
from its stored inputs (real loopback judges and generators with known, different behaviour)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.datasets.golden import GoldenDataset
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.answer_scores import score_answers
from rag_eval_pipeline.evaluation.composite import load_weights
from rag_eval_pipeline.evaluation.corpus_embedding import embed_corpus, embedding_quality_rows
from rag_eval_pipeline.evaluation.generation import generate, judge_answers
from rag_eval_pipeline.evaluation.item_scores import SAMPLE_SOURCES, item_scores
from rag_eval_pipeline.evaluation.model_bridge import (
    ANSWERS_GONE,
    CORPUS_GONE,
    REEMBEDDED,
    REGENERATED,
    RESCORED,
    RETRIEVAL_NOT_RERUN,
    TIER2,
    TIER3,
    TRAFFIC_GONE,
    TodayModels,
    bridge_baseline,
    bridge_reasons,
    judge_change,
    model_changes,
)
from rag_eval_pipeline.evaluation.scorecard import Thresholds, build_scorecard
from rag_eval_pipeline.evaluation.summaries import summarize_judgments
from rag_eval_pipeline.evaluation.traffic_sample import judge_sample, logged_sample
from rag_eval_pipeline.evaluation.verdicts.compare import compare_partitions
from rag_eval_pipeline.evaluation.verdicts.partition import PartitionScores, RegressionRule
from rag_eval_pipeline.evaluation.verdicts.wording import NO_CHANGE, NOT_COMPARABLE, REGRESSED
from rag_eval_pipeline.judges.judge import LLMJudge
from rag_eval_pipeline.judges.offline import OfflineJudge
from rag_eval_pipeline.reporting.html_report import model_bridge_html
from rag_eval_pipeline.systems import REFERENCE_RAG
from rag_eval_pipeline.systems.generators import LLMGenerator, OfflineGenerator
from rag_eval_pipeline_tests.conftest import loopback_llm
from rag_eval_pipeline_tests.openai_server import run_openai_server

pytestmark = [pytest.mark.integration]

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


def generator_adding(shift: float):
    """A generator answering with the quality written in its first context passage, plus
    `shift`."""

    def respond(request: dict[str, Any]) -> str:
        context = request["messages"][-1]["content"].split("<context>")[-1]
        return f"An answer of quality {float(QUALITY.search(context).group(1)) + shift:.4f}."

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


def dataset(n: int) -> GoldenDataset:
    """The golden dataset the answers were scored against: questions and one relevant document
    each (no expected patterns, no ground truth)."""
    ids = [f"q{i}" for i in range(n)]
    return GoldenDataset(
        version="v1",
        queries=pd.DataFrame({"query_id": ids, "question": [f"Question {i}?" for i in range(n)]}),
        qrels=pd.DataFrame(
            {"query_id": ids, "doc_id": [f"d{i}" for i in range(n)], "relevance": 1}
        ),
    )


def partition(
    date: str, judged: dict[str, pd.DataFrame], identities: dict[str, str], extra=()
) -> PartitionScores:
    tiers = {"e2e_judgments": TIER, "generation_judgments": "tier2_generation"}
    summaries = [summarize_judgments(table, tiers[name]) for name, table in judged.items()]
    scorecard = build_scorecard([*summaries, *extra], "v1", date, Thresholds())
    return PartitionScores("v1", date, scorecard, item_scores(judged), identities)


def models(judge, embedder: Embedder, generator=None) -> TodayModels:
    return TodayModels(judge, generator or OfflineGenerator(embedder), embedder, load_weights())


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
        baseline = partition(
            "2026-11-20", {"e2e_judgments": stored}, {"judge": resource_a.identity}
        )
        tables = {"e2e_judgments": stored, "e2e_generations": baseline_answers}

        # no change in the system: the same answers, judged today by B
        today_judged = judge_answers(baseline_answers, judge_b, ["answer_relevance"])
        today = partition(
            "2026-11-21", {"e2e_judgments": today_judged}, {"judge": resource_b.identity}
        )
        unbridged = compare_partitions(today, baseline, RULE).set_index("metric")
        assert unbridged.loc[METRIC, "verdict"] == NOT_COMPARABLE
        assert "judge changed" in unbridged.loc[METRIC, "reason"]

        changes = model_changes(
            baseline, tables, {"e2e_judgments": today_judged}, {"judge": resource_b.identity}
        )
        assert changes == {"judge": (resource_a.identity, resource_b.identity)}
        calls = len(server_b.requests)
        bridged, bridge = bridge_baseline(
            baseline, tables, dataset(60), models(judge_b, embedder), changes
        )
        assert len(server_b.requests) == calls  # B already judged these answers: cache hits
        row = bridge.set_index("metric").loc[METRIC]
        assert (row["change"], row["step"]) == ("judge", RESCORED)
        assert row["shift"] == pytest.approx(SHIFT, abs=1e-3)
        assert row["n_items"] == 60 and row["spearman"] == pytest.approx(1.0)
        verdicts = compare_partitions(today, bridged, RULE)
        assert not verdicts["alert"].any()
        verdict = verdicts.set_index("metric").loc[METRIC]
        assert verdict["verdict"] != NOT_COMPARABLE and verdict["n_paired"] == 60
        reasons = bridge_reasons(verdicts, bridge, changes)
        assert "+0.1000 on 60 items" in reasons[verdicts["metric"] == METRIC].item()
        html = model_bridge_html(verdicts.assign(reason=reasons))
        assert "Model changed: baseline rebuilt" in html and "+0.1000 on 60 items" in html
        assert model_bridge_html(unbridged.reset_index()) == ""

        # a real 10% drop of the system, as judge B sees it
        dropped = answers(0.9 * (qualities + SHIFT) - SHIFT)
        today = partition(
            "2026-11-21",
            {"e2e_judgments": judge_answers(dropped, judge_b, ["answer_relevance"])},
            {"judge": resource_b.identity},
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
        baseline = partition(
            "2026-11-20", {"e2e_judgments": stored}, {"judge": resource_a.identity}
        )
        today = partition(
            "2026-11-21",
            {"e2e_judgments": judge_answers(answers(qualities), judge_b, ["answer_relevance"])},
            {"judge": resource_b.identity},
        )
        changes = {"judge": (resource_a.identity, resource_b.identity)}
        today_models = models(judge_b, embedder)
        for tables, snapshot in (
            ({"e2e_judgments": stored, "e2e_generations": None}, dataset(12)),
            ({"e2e_judgments": stored, "e2e_generations": answers(qualities)}, None),
        ):
            kept, bridge = bridge_baseline(baseline, tables, snapshot, today_models, changes)
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


def rag_answers(questions: pd.DataFrame, qualities: np.ndarray, generator) -> pd.DataFrame:
    """Tier 3: the reference RAG's answers by `generator` from contexts stating `qualities`,
    and a callable system's own answers (the pipeline's generator plays no part in them)."""
    frame = questions.assign(
        contexts=[[f"Passage of quality {q:.4f}.", "Another passage."] for q in qualities],
        retrieved_doc_ids=[[f"d{i}", "d999"] for i in range(len(qualities))],
    )
    reference = generate(frame, generator, REFERENCE_RAG)
    callable_ = frame.assign(
        system="my-rag",
        answer=[f"My answer of quality {q:.4f}." for q in qualities],
        generator_model="my-model",
        error=None,
    )
    return pd.concat([reference, callable_], ignore_index=True)


def test_generator_change_regenerates_the_baseline_and_alerts_a_real_drop(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Generator A on the baseline, B today (B writes +0.1 into every answer), one judge: the
    baseline's Tier 2 and reference-RAG answers re-generated by B keep the comparison paired;
    no alert when only the generator changed, the bridge reports B − A = +0.1; a real 10% drop
    of the contexts under B is alerted."""
    n = 40
    qualities = np.random.default_rng(1).uniform(0.3, 0.8, n)
    questions = answers(qualities)[["query_id", "question", "ground_truth_answer"]]
    ideal = questions.assign(
        contexts=[[f"Passage of quality {q:.4f}."] for q in qualities],
        context_doc_ids=[[f"d{i}"] for i in range(n)],
    )
    with (
        run_openai_server(responder=judge_adding(0.0)) as judge_server,
        run_openai_server(responder=generator_adding(0.0)) as server_a,
        run_openai_server(responder=generator_adding(SHIFT)) as server_b,
        run_openai_server(responder=judge_adding(SHIFT)) as judge_server_b,
    ):
        judge = LLMJudge(
            loopback_llm(judge_server.base_url, "openai/j", tmp_path).client(), embedder
        )
        gen_a, gen_b = (
            loopback_llm(server.base_url, f"openai/gen-{name}", tmp_path / name)
            for name, server in (("a", server_a), ("b", server_b))
        )
        generator_a, generator_b = LLMGenerator(gen_a.client()), LLMGenerator(gen_b.client())

        def day(
            date: str,
            generator,
            identity: str,
            stated: np.ndarray = qualities,
            by: LLMJudge = judge,
            judge_identity: str = "j",
        ):
            """The day's answers from contexts stating the `stated` qualities, judged `by`."""
            contexts = [[f"Passage of quality {q:.4f}."] for q in stated]
            tier2 = generate(ideal.assign(contexts=contexts), generator, generator.generator_model)
            tier3 = rag_answers(questions, stated, generator)
            judged = {
                "generation_judgments": judge_answers(tier2, by, ["answer_relevance"]),
                "e2e_judgments": judge_answers(tier3, by, ["answer_relevance"]),
            }
            tables = {**judged, "ideal_context_generations": tier2, "e2e_generations": tier3}
            identities = {"generator": identity, "judge": judge_identity}
            return partition(date, judged, identities), tables

        baseline, tables = day("2026-11-20", generator_a, gen_a.identity)
        today, today_tables = day("2026-11-21", generator_b, gen_b.identity)
        unbridged = compare_partitions(today, baseline, RULE)
        assert not unbridged["alert"].any()  # Tier 2's system is named after the generator
        old_tier2 = unbridged[unbridged["system"] == "openai/gen-a"]
        assert set(old_tier2["verdict"]) == {NOT_COMPARABLE}
        assert set(old_tier2["reason"]) == {
            f"generator changed ({gen_a.identity} → {gen_b.identity})"
        }

        changes = model_changes(
            baseline, tables, today_tables, {"judge": "j", "generator": gen_b.identity}
        )
        assert set(changes) == {"generator"}
        calls = len(server_b.requests)
        bridged, bridge = bridge_baseline(
            baseline, tables, dataset(n), models(judge, embedder, generator_b), changes
        )
        assert len(server_b.requests) == calls  # B already answered these prompts today
        shifts = bridge.set_index(["tier", "system", "metric"])
        assert set(bridge["change"]) == {"generator"} and set(bridge["step"]) == {REGENERATED}
        for key in (("tier2_generation", "openai/gen-b", METRIC), (TIER, REFERENCE_RAG, METRIC)):
            assert shifts.loc[key, "shift"] == pytest.approx(SHIFT, abs=1e-3)
            assert shifts.loc[key, "n_items"] == n
        assert (TIER, "my-rag", METRIC) not in shifts.index  # its answers are its own
        verdicts = compare_partitions(today, bridged, RULE)
        assert not verdicts["alert"].any()
        rows = verdicts.set_index(["tier", "system", "metric"])
        for key in (
            ("tier2_generation", "openai/gen-b", METRIC),
            (TIER, REFERENCE_RAG, METRIC),
            (TIER, "my-rag", METRIC),
        ):
            assert rows.loc[key, "verdict"] != NOT_COMPARABLE and rows.loc[key, "n_paired"] == n
        reasons = bridge_reasons(verdicts, bridge, changes).set_axis(rows.index)
        assert "generator (" in reasons.loc[(TIER, REFERENCE_RAG, METRIC)]
        assert "+0.1000 on 40 items" in reasons.loc[(TIER, REFERENCE_RAG, METRIC)]

        gone, _ = bridge_baseline(
            baseline,
            {**tables, "e2e_generations": None},
            dataset(n),
            models(judge, embedder, generator_b),
            changes,
        )
        reference = compare_partitions(today, gone, RULE).set_index(["tier", "system", "metric"])
        assert reference.loc[(TIER, REFERENCE_RAG, METRIC), "verdict"] == NOT_COMPARABLE
        assert ANSWERS_GONE in reference.loc[(TIER, REFERENCE_RAG, METRIC), "reason"]

        # a real 10% drop of what the system retrieves, under generator B
        dropped, _ = day(
            "2026-11-21",
            generator_b,
            gen_b.identity,
            0.9 * (qualities + SHIFT) - SHIFT,
        )
        verdicts = compare_partitions(dropped, bridged, RULE).set_index(
            ["tier", "system", "metric"]
        )
        for key in (("tier2_generation", "openai/gen-b", METRIC), (TIER, REFERENCE_RAG, METRIC)):
            assert verdicts.loc[key, "verdict"] == REGRESSED and verdicts.loc[key, "alert"]
            assert verdicts.loc[key, "relative_change"] == pytest.approx(-0.10, abs=2e-3)

        # the judge changed too (B scores +0.1 above the baseline's judge): the stored answers
        # are re-scored first (the judge's +0.1), then re-generated (the generator's +0.1)
        judge_b = LLMJudge(
            loopback_llm(judge_server_b.base_url, "openai/j-b", tmp_path / "jb").client(), embedder
        )
        today, today_tables = day(
            "2026-11-21", generator_b, gen_b.identity, by=judge_b, judge_identity="j-b"
        )
        changes = model_changes(
            baseline, tables, today_tables, {"judge": "j-b", "generator": gen_b.identity}
        )
        assert changes == {"judge": ("j", "j-b"), "generator": (gen_a.identity, gen_b.identity)}
        bridged, bridge = bridge_baseline(
            baseline, tables, dataset(n), models(judge_b, embedder, generator_b), changes
        )
        steps = bridge[(bridge["system"] == REFERENCE_RAG) & (bridge["metric"] == METRIC)]
        assert steps.set_index("change")["step"].to_dict() == {
            "judge": RESCORED,
            "generator": REGENERATED,
        }
        np.testing.assert_allclose(steps["shift"], [SHIFT, SHIFT], atol=1e-3)
        verdicts = compare_partitions(today, bridged, RULE)
        assert not verdicts["alert"].any()
        row = verdicts.set_index(["tier", "system", "metric"]).loc[(TIER, REFERENCE_RAG, METRIC)]
        assert row["verdict"] != NOT_COMPARABLE and row["n_paired"] == n


class ProjectedEmbedder(Embedder):
    """Another embedder: MiniLM's vectors through a fixed random rank-4 linear map, so cosines,
    distances and which sentences are nearest all move."""

    @property
    def model_name(self) -> str:
        return "projected-minilm"

    def encode(self, texts) -> np.ndarray:
        vectors = super().encode(texts)
        rng = np.random.default_rng(0)
        low_rank = rng.normal(size=(vectors.shape[1], 4)) @ rng.normal(size=(4, vectors.shape[1]))
        return (vectors @ low_rank).astype(np.float32)


def test_embedder_change_re_embeds_tier0_and_says_what_is_not_bridged(
    tmp_path: Path, embedder: Embedder
) -> None:
    """MiniLM on the baseline, another embedder today: Tier 0 is re-embedded from the
    baseline's corpus (the bridge is exactly today's values minus the baseline's on the same
    corpus, and nothing is alerted), the reference RAG's own retrieval is not re-run (not
    comparable, with why), a run of the dataset is not fed by the embedder, and a corpus gone
    keeps Tier 0 not comparable."""
    other = ProjectedEmbedder(cache_dir=embedder.cache_dir)
    corpus = pd.DataFrame(
        {
            "doc_id": [f"d{i}" for i in range(12)],
            "title": "",
            "text": [
                f"{topic} note {i}" for topic in ("billing", "storage", "network") for i in range(4)
            ],
            "cluster": [topic for topic in ("billing", "storage", "network") for _ in range(4)],
        }
    )
    snapshot = replace(dataset(12), corpus=corpus)
    retrieval = pd.DataFrame(
        {
            "tier": "tier1_retrieval",
            "system": [REFERENCE_RAG, "bm25-run"],
            "metric": "ndcg@10",
            "mean": 0.5,
            "std": np.nan,
            "count": 12,
            "ci_low": np.nan,
            "ci_high": np.nan,
            "n_errors": 0,
            "error_rate": 0.0,
        }
    )

    def day(date: str, model: Embedder) -> PartitionScores:
        quality = embedding_quality_rows(embed_corpus(corpus, model))
        scorecard = build_scorecard([quality, retrieval], "v1", date, Thresholds())
        return PartitionScores(
            "v1",
            date,
            scorecard,
            item_scores({}),
            {"embedder": model.model_name},
        )

    baseline, today = day("2026-11-20", embedder), day("2026-11-21", other)
    changes = model_changes(
        baseline, {}, {}, {"judge": "j", "embedder": today.identities["embedder"]}
    )
    assert set(changes) == {"embedder"}
    bridged, bridge = bridge_baseline(baseline, {}, snapshot, models(None, other), changes)
    moved = bridge.set_index("metric")["shift"]
    assert set(bridge["step"]) == {REEMBEDDED} and set(bridge["system"]) == {other.model_name}
    values = {d.date: d.scorecard.set_index("metric")["value"] for d in (baseline, today)}
    for metric in ("avg_intra_cluster_sim", "avg_inter_cluster_dist", "silhouette_score"):
        change = values["2026-11-21"][metric] - values["2026-11-20"][metric]
        assert abs(change) > 1e-3 and moved[metric] == pytest.approx(change, abs=1e-9)
    assert "n_clusters" not in moved  # descriptive counts are not compared
    verdicts = compare_partitions(today, bridged, RULE).set_index(["tier", "system", "metric"])
    tier0 = verdicts.xs("tier0_embedding", level="tier")
    assert set(tier0["verdict"]) == {NO_CHANGE} and not tier0["alert"].any()
    assert verdicts.loc[("tier1_retrieval", "bm25-run", "ndcg@10"), "verdict"] == NO_CHANGE
    reference = verdicts.loc[("tier1_retrieval", REFERENCE_RAG, "ndcg@10")]
    assert reference["verdict"] == NOT_COMPARABLE and RETRIEVAL_NOT_RERUN in reference["reason"]

    gone, bridge = bridge_baseline(baseline, {}, None, models(None, other), changes)
    assert bridge.empty
    tier0 = compare_partitions(today, gone, RULE).set_index("tier").loc["tier0_embedding"]
    assert set(tier0["verdict"]) == {NOT_COMPARABLE}
    assert all(CORPUS_GONE in reason for reason in tier0["reason"])


def test_embedder_change_rebuilds_the_answer_tiers_it_can(
    tmp_path: Path, embedder: Embedder
) -> None:
    """Offline generator and judge (both read embeddings), then another embedder: Tier 2 is
    re-generated and re-scored, a callable system's Tier 3 answers re-scored, so both compare as
    usual and nothing moved (same data); the reference RAG's Tier 3 stays not comparable (its
    contexts came from the old embedder's retrieval)."""
    other = ProjectedEmbedder(cache_dir=embedder.cache_dir)
    n = 12
    qualities = np.linspace(0.3, 0.8, n)
    questions = answers(qualities)[["query_id", "question", "ground_truth_answer"]].assign(
        ground_truth_answer=[f"The answer has quality {q:.4f}." for q in qualities]
    )
    ideal = questions.assign(
        contexts=[
            [
                f"Passage {i} states quality {q:.4f}. The sky is blue. Billing is monthly. "
                f"Storage is replicated. Question {i} is about this passage."
            ]
            for i, q in enumerate(qualities)
        ],
        context_doc_ids=[[f"d{i}"] for i in range(n)],
    )
    snapshot = dataset(n)

    def day(date: str, model: Embedder) -> tuple[PartitionScores, dict[str, pd.DataFrame]]:
        generator, judge = OfflineGenerator(model), OfflineJudge(model)
        tier2 = generate(ideal, generator, generator.generator_model)
        tier3 = rag_answers(questions, qualities, generator)
        judged = {
            name: score_answers(
                frame,
                snapshot,
                judge,
                model,
                ["faithfulness", "answer_relevance"],
                load_weights(),
                sources=sources,
                with_context_relevance=spec is TIER3,
            )
            for name, frame, sources, spec in (
                ("generation_judgments", tier2, "context_doc_ids", TIER2),
                ("e2e_judgments", tier3, "retrieved_doc_ids", TIER3),
            )
        }
        tables = {**judged, "ideal_context_generations": tier2, "e2e_generations": tier3}
        return partition(date, judged, {"embedder": model.model_name}), tables

    (baseline, tables), (today, _) = day("2026-11-20", embedder), day("2026-11-21", other)
    changes = {"embedder": (embedder.model_name, other.model_name)}
    today_models = TodayModels(OfflineJudge(other), OfflineGenerator(other), other, load_weights())
    bridged, bridge = bridge_baseline(baseline, tables, snapshot, today_models, changes)
    assert set(bridge["change"]) == {"embedder"}
    assert set(bridge["step"]) == {RESCORED, REGENERATED}
    verdicts = compare_partitions(today, bridged, RULE).set_index(["tier", "system", "metric"])
    assert not verdicts["alert"].any()
    rebuilt = verdicts[verdicts.index.get_level_values("system") != REFERENCE_RAG]
    rebuilt = rebuilt[rebuilt["n_paired"] > 0]
    assert {t for t, _, _ in rebuilt.index} == {"tier2_generation", TIER}
    assert set(rebuilt["verdict"]) == {NO_CHANGE}
    assert (rebuilt["n_paired"] == n).all()
    reference = verdicts.xs(REFERENCE_RAG, level="system")
    assert set(reference["verdict"]) == {NOT_COMPARABLE}
    assert all(RETRIEVAL_NOT_RERUN in reason for reason in reference["reason"])


def test_judge_change_rejudges_the_baseline_traffic_sample(
    tmp_path: Path, embedder: Embedder
) -> None:
    """The baseline's judged traffic sample, rebuilt from its logs snapshot by the log ids its
    judgments name, judged again by B: compared (unpaired, as always), not alerted, the bridge
    reports B − A; without the logs it stays not comparable with why."""
    qualities = np.random.default_rng(2).uniform(0.3, 0.8, 30)
    logs = answers(qualities).rename(columns={"query_id": "log_id"})
    logs = logs.assign(
        log_id=[f"log{i}" for i in range(30)],
        timestamp=pd.Timestamp("2026-11-20T12:00:00Z"),
        retrieved_doc_ids=[["d1"]] * 30,
    )
    snapshot = replace(dataset(30), logs=logs)
    with two_judges(tmp_path, embedder) as ((resource_a, resource_b), (judge_a, judge_b), _):

        def day(date: str, judge, identity: str) -> tuple[PartitionScores, pd.DataFrame]:
            judged, _ = judge_sample(logged_sample(logs, None, logs["log_id"]), judge, embedder)
            scorecard = build_scorecard(
                [summarize_judgments(judged, "traffic")], "v1", date, Thresholds()
            )
            samples = item_scores({"traffic_judgments": judged}, SAMPLE_SOURCES)
            scores = PartitionScores(
                "v1", date, scorecard, item_scores({}), {"judge": identity}, samples
            )
            return scores, judged

        (baseline, stored), (today, _) = (
            day("2026-11-20", judge_a, resource_a.identity),
            day("2026-11-21", judge_b, resource_b.identity),
        )
        changes = {"judge": (resource_a.identity, resource_b.identity)}
        tables = {"traffic_judgments": stored}
        bridged, bridge = bridge_baseline(
            baseline, tables, snapshot, models(judge_b, embedder), changes
        )
        gone, _ = bridge_baseline(baseline, tables, dataset(30), models(judge_b, embedder), changes)
    row = bridge.set_index("metric").loc[METRIC]
    assert (row["tier"], row["n_items"]) == ("traffic", 30)
    assert row["shift"] == pytest.approx(SHIFT, abs=1e-3)
    verdicts = compare_partitions(today, bridged, RULE).set_index("metric")
    assert not verdicts["alert"].any()
    assert verdicts.loc[METRIC, "verdict"] == NO_CHANGE
    assert verdicts.loc[METRIC, "test"] == "two-sample permutation (unpaired)"
    kept = compare_partitions(today, gone, RULE).set_index("metric").loc[METRIC]
    assert kept["verdict"] == NOT_COMPARABLE and TRAFFIC_GONE in kept["reason"]
