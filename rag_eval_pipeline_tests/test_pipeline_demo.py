"""The whole pipeline on demo-v1, materialized on a real temporary instance, on two dates.

Day 1 is the healthy reference system; day 2 is the same data with the documented demo switch
(`rag_system.skip_top = 2`, the retriever loses its two best documents). The embedding cache,
the regression check, the alert sensor (with a real webhook on 127.0.0.1) and the metadata the
UI plots are all checked against these two real runs.
"""

import io
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    ExecuteInProcessResult,
    FloatMetadataValue,
    build_sensor_context,
    instance_for_test,
    materialize,
)

from rag_eval_pipeline.definitions import ALL_ASSETS, ALL_CHECKS
from rag_eval_pipeline.defs.scorecard.sensors import regression_alert_sensor
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.defs.shared.resources import (
    AlertsResource,
    BaselineResource,
    RagSystemResource,
    WarehouseResource,
)
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.verdicts.significance import QUANTILE_TEST
from rag_eval_pipeline.metrics.correlation import RAGAS_METRICS
from rag_eval_pipeline.metrics.stats import quantile_exceedance_tails
from rag_eval_pipeline.reporting.html_report import format_value
from rag_eval_pipeline.storage.warehouse import WarehouseStore
from rag_eval_pipeline_tests.conftest import (
    DATASETS_DIR,
    SHIPPED_STORAGE,
    evaluation_resources,
    report_config,
)
from rag_eval_pipeline_tests.test_regression import Receiver

pytestmark = [pytest.mark.integration, pytest.mark.slow]

VERSION, DAY1, DAY2 = "demo-v1", "2026-11-20", "2026-11-21"
PIPELINE = [a for a in ALL_ASSETS if a.key != AssetKey("system_comparison")]
QUALITY_ASSETS = [
    "embedding_quality",
    "retrieval_quality",
    "generation_quality",
    "e2e_quality",
    "judge_reliability",
    "show_judge_quality",
    "ux_metrics",
]


@dataclass
class DemoRuns:
    warehouse: Path
    instance: DagsterInstance
    day1: ExecuteInProcessResult
    day2: ExecuteInProcessResult


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[DemoRuns]:
    tmp = tmp_path_factory.mktemp("demo")
    with instance_for_test(overrides=SHIPPED_STORAGE) as instance:
        instance.add_dynamic_partitions(DATASET_VERSION, [VERSION])
        runs = [
            materialize(
                [*PIPELINE, *ALL_CHECKS],
                partition_key=evaluation_partition_key(VERSION, day),
                instance=instance,
                resources=evaluation_resources(
                    tmp, embedder, rag_system=RagSystemResource(skip_top=skip)
                ),
                run_config=report_config(tmp),
            )
            for day, skip in ((DAY1, 0), (DAY2, 2))
        ]
        yield DemoRuns(tmp / "warehouse", instance, *runs)


def read(demo: DemoRuns, asset: str, day: str = DAY1) -> pd.DataFrame:
    return pd.read_parquet(demo.warehouse / asset / VERSION / f"{day}.parquet")


def latest_metadata(demo: DemoRuns, asset: str) -> dict:
    event = demo.instance.get_latest_materialization_event(AssetKey(asset))
    return event.asset_materialization.metadata


def test_both_days_succeed_and_write_every_asset(demo: DemoRuns) -> None:
    assert demo.day1.success and demo.day2.success
    for asset in PIPELINE:
        name = asset.key.to_user_string()
        path = demo.warehouse / name / VERSION / DAY1
        assert path.with_suffix(".parquet").exists() or path.is_dir(), name


def test_scorecard_has_every_tier_and_the_named_metrics(demo: DemoRuns) -> None:
    scorecard = read(demo, "evaluation_scorecard")
    metrics = set(scorecard["metric"])
    assert {
        "tier0_embedding",
        "tier1_retrieval",
        "tier2_generation",
        "tier3_e2e",
        "judge_reliability",
        "show_judge",
        "ux",
        "traffic",
        "dataset",
    } == set(scorecard["tier"])
    assert {
        "total_pairs",
        "n_clusters",
        "avg_intra_cluster_sim",
        "avg_inter_cluster_dist",
        "silhouette_score",
        "hit_rate@1",
        "mrr",
        "recall@10",
        "precision@5",
        "ndcg@10",
        "ndcg_exp@10",
        "map",
        "r_precision",
        "avg_faithfulness",
        "avg_answer_relevance",
        "avg_rouge1_f",
        "avg_rouge2_f",
        "avg_rougeL_f",
        "avg_bleu",
        "avg_e2e_score",
        "avg_semantic_similarity",
        "avg_answer_correctness",
        "avg_context_precision",
        "avg_context_recall",
        "latency_p50_ms",
        "latency_p95_ms",
        "latency_p99_ms",
        "consistency_score",
        "error_rate",
        "avg_latency_ms",
        "kappa_judge_vs_rater_a",
        "weighted_kappa_rater_a_vs_rater_b",
        "accuracy",
        "precision",
        "recall",
        "f1_score",
        "cache_hit_rate",
        "context_preservation",
        "multi_turn_consistency",
    } <= metrics
    systems = set(scorecard.loc[scorecard["tier"] == "tier1_retrieval", "system"])
    assert systems == {
        "dense",
        "bm25",
        "hybrid-rrf",
        "production-bm25",
        "real-users",
        "reference-rag",  # the system under test's own retrieval (issue 16)
    }
    assert scorecard["value"].notna().all()
    banded = scorecard.dropna(subset=["band"])
    assert set(banded["band"]) <= {"excellent", "good", "needs attention"}


def test_every_row_names_the_offline_models(demo: DemoRuns) -> None:
    generations = read(demo, "ideal_context_generations")
    assert set(generations["generator_model"]) == {"offline-extractive-generator"}
    judgments = read(demo, "e2e_judgments")
    judge_rows = judgments[judgments["metric"].isin(["faithfulness", "e2e_score"])]
    assert set(judge_rows["judge_model"]) == {"offline-heuristic-judge"}
    assert judgments["score"].isna().eq(judgments["error"].notna()).all()
    assert set(read(demo, "e2e_generations")["generator_model"]) == {"offline-extractive-generator"}


def test_quality_assets_record_float_metadata_and_a_table(demo: DemoRuns) -> None:
    for asset in QUALITY_ASSETS:
        metadata = latest_metadata(demo, asset)
        floats = [k for k, v in metadata.items() if isinstance(v, FloatMetadataValue)]
        assert floats, asset
        # one series per version in the Plots tab: every metric's key starts with the version
        # (the others are settings, such as the judge check's delta)
        metrics = [k for k in floats if "/" in k]
        assert metrics and all(k.startswith(f"{VERSION}/") for k in metrics), asset
        assert "summary" in metadata, asset
    scorecard_metadata = latest_metadata(demo, "evaluation_scorecard")
    plotted = scorecard_metadata[f"{VERSION}/tier1_retrieval/dense/hit_rate@1"]
    assert isinstance(plotted, FloatMetadataValue)


def test_second_date_reuses_every_embedding(demo: DemoRuns) -> None:
    metadata = latest_metadata(demo, "corpus_embeddings")
    assert metadata["embedded"].value == 0
    assert metadata["from_cache"].value == 90


def test_regression_check_flags_only_the_degraded_day(demo: DemoRuns) -> None:
    def check_outcome(day: str) -> tuple[bool, int]:
        key = evaluation_partition_key(VERSION, day)
        for result in (demo.day1, demo.day2):
            for evaluation in result.get_asset_check_evaluations():
                if evaluation.check_name == "scorecard_regressions" and evaluation.partition == str(
                    key
                ):
                    return evaluation.passed, evaluation.metadata["n_regressions"].value
        raise AssertionError(f"no regression check for {day}")

    assert check_outcome(DAY1) == (True, 0)
    passed, count = check_outcome(DAY2)
    assert not passed and count > 0


def test_sensor_alerts_exactly_the_degraded_systems_once(demo: DemoRuns) -> None:
    receiver = Receiver([])
    try:
        resources = {
            "warehouse": WarehouseResource(base_path=str(demo.warehouse)),
            "alerts": AlertsResource(webhook_url=receiver.url, backoff_s=0.01),
            "baseline": BaselineResource(),
        }
        context = build_sensor_context(instance=demo.instance, resources=resources)
        first = regression_alert_sensor(context)
        assert "raised" in first.skip_message
        alerts = WarehouseStore(str(demo.warehouse)).read_alerts(VERSION)
        affected = set(zip(alerts["tier"], alerts["system"], strict=True))
        assert affected == {
            ("tier1_retrieval", "dense"),
            ("tier1_retrieval", "bm25"),
            ("tier1_retrieval", "hybrid-rrf"),
            ("tier1_retrieval", "reference-rag"),  # its own retrieval lost its best documents
            ("tier3_e2e", "reference-rag"),
        }
        for system in ("dense", "bm25", "hybrid-rrf"):
            assert {"hit_rate@1", "mrr", "ndcg@10"} <= set(
                alerts.loc[alerts["system"] == system, "metric"]
            )
        assert {"avg_e2e_score", "avg_context_recall"} <= set(
            alerts.loc[alerts["system"] == "reference-rag", "metric"]
        )
        assert set(alerts["date"]) == {DAY2} and set(alerts["baseline_date"]) == {DAY1}
        assert alerts["delivered"].all()
        assert len(receiver.bodies) == 1
        # One message for the partition: every alert is listed or counted (issue 15: the rest
        # beyond the first metrics of each system is summarised as a count, not 70 flat rows).
        body = receiver.bodies[0]
        assert body["n_alerts"] == len(alerts)
        assert len(body["regressions"]) + body["n_not_listed"] == len(alerts)
        replay = build_sensor_context(instance=demo.instance, resources=resources)
        regression_alert_sensor(replay)
        assert len(WarehouseStore(str(demo.warehouse)).read_alerts(VERSION)) == len(alerts)
        assert len(receiver.bodies) == 1
    finally:
        receiver.server.shutdown()


def test_counts_are_honest_and_the_new_metrics_are_scored(demo: DemoRuns) -> None:
    scorecard = read(demo, "evaluation_scorecard").set_index(["tier", "system", "metric"])
    labels = pd.read_json(DATASETS_DIR / VERSION / "judge_labels.jsonl", lines=True)
    logs = pd.read_json(DATASETS_DIR / VERSION / "logs.jsonl", lines=True)
    kappa = scorecard.xs("kappa_judge_vs_rater_a", level="metric")
    assert kappa["count"].tolist() == [labels["human_score_rater_a"].notna().sum()]
    assert scorecard.loc[("ux", "real-users", "cache_hit_rate"), "count"] == len(logs)
    e2e = scorecard.xs("tier3_e2e", level="tier")
    for metric in ("avg_context_relevance", "avg_exact_match", "avg_citation_recall"):
        assert 0 <= e2e.loc[("reference-rag", metric), "value"] <= 1, metric
    # demo-v1 replays its logs (dataset.yaml `traffic_replay`): every date has all of them
    assert scorecard.loc[("traffic", "production", "volume"), "value"] == len(logs)
    reference = scorecard.xs(("tier1_retrieval", "reference-rag"), level=["tier", "system"])
    assert reference.loc["hit_rate@3", "value"] > 0


def test_the_system_under_tests_latency_is_tested_not_just_thresholded(demo: DemoRuns) -> None:
    """Tier 3's latency percentiles are compared with the quantile exceedance test on the two
    dates' per-question total latencies, not by the effect rule alone."""
    verdicts = read(demo, "metric_regressions", DAY2).set_index(["tier", "system", "metric"])
    latencies = [
        read(demo, "e2e_generations", day)["total_latency_ms"].to_numpy(dtype=float)
        for day in (DAY1, DAY2)
    ]
    for metric, quantile in (("latency_p50_ms", 0.5), ("latency_p95_ms", 0.95)):
        row = verdicts.loc[("tier3_e2e", "reference-rag", metric)]
        assert row["test"] == QUANTILE_TEST, metric
        assert (row["n_only_baseline"], row["n_only_current"]) == tuple(x.size for x in latencies)
        p_less, p_greater = quantile_exceedance_tails(*latencies, quantile)
        slower = row["value"] > row["baseline_value"]
        assert row["p_value"] == pytest.approx(p_greater if slower else p_less, rel=1e-12)


def test_e2e_quality_records_the_ragas_correlation_matrix(demo: DemoRuns) -> None:
    table = latest_metadata(demo, "e2e_quality")["correlations/reference-rag"].value
    header = table.splitlines()[0]
    for metric in ("context_precision", "faithfulness", "answer_relevance", "answer_correctness"):
        assert metric in header


def test_tier2_scores_regex_match_and_citations_against_the_ideal_context(demo: DemoRuns) -> None:
    judgments = read(demo, "generation_judgments")
    generations = read(demo, "ideal_context_generations")
    queries = pd.read_json(DATASETS_DIR / VERSION / "queries.jsonl", lines=True)
    with_pattern = set(queries.loc[queries["expected_pattern"].notna(), "query_id"])
    regex = judgments[judgments["metric"] == "regex_match"]
    assert set(regex["query_id"]) == with_pattern & set(generations["query_id"]) != set()
    # every ideal context holds a relevant document, so recall is defined for every answer
    recall = judgments[judgments["metric"] == "citation_recall"]
    assert len(recall) == generations["answer"].notna().sum()
    # precision is defined for answers that cite (the offline generator writes no markers)
    citing = generations["answer"].fillna("").str.contains(r"\[\s*\d+(?:\s*,\s*\d+)*\s*\]")
    assert (judgments["metric"] == "citation_precision").sum() == citing.sum()
    scorecard = read(demo, "evaluation_scorecard").set_index(["tier", "metric"])
    for metric in ("avg_regex_match", "avg_citation_recall", "avg_citation_f1"):
        assert 0 <= scorecard.loc[("tier2_generation", metric), "value"].item() <= 1, metric


def test_the_report_shows_each_systems_correlation_matrix(demo: DemoRuns) -> None:
    page = (demo.warehouse.parent / "reports" / VERSION / f"{DAY1}.html").read_text()
    section = page[page.index('<section id="correlations">') :]
    section = section[: section.index("</section>")]
    judgments = read(demo, "e2e_judgments")
    systems = sorted(judgments["system"].unique())
    assert re.findall(r"<h3>(.*?)</h3>", section) == systems
    for system in systems:
        table = section[section.index(f"<h3>{system}</h3>") :]
        table = table[: table.index("</table>")]
        wide = judgments[judgments["system"] == system].pivot_table(
            index="query_id", columns="metric", values="score", aggfunc="first"
        )
        present = [m for m in RAGAS_METRICS if m in wide.columns]
        assert len(present) >= 4
        expected = wide[present].corr(min_periods=3)
        for metric in present:
            cells = "".join(
                f'<td class="num">{format_value(expected.loc[metric, other])}</td>'
                for other in present
            )
            assert f"<tr><th><code>{metric}</code></th>{cells}</tr>" in table, (system, metric)


def test_rater_export_writes_the_next_labels_file(demo: DemoRuns) -> None:
    metadata = latest_metadata(demo, "rater_export")
    exported = pd.read_csv(metadata["csv_path"].value)
    assert len(exported) == metadata["n_tasks"].value == 20
    assert {"label_id", "question", "context", "answer", "human_overall_rater_b"} <= set(exported)
    assert Path(metadata["csv_path"].value).is_relative_to(demo.warehouse.parent)


REFERENCE = Path(__file__).with_name("data") / "demo_v1_day2_reference.csv"
SCORECARD_KEPT = ["tier", "system", "metric", "value", "std", "count", "ci_low", "ci_high"]
SCORECARD_KEPT += ["n_errors", "band", "role"]
VERDICT_KEPT = ["tier", "system", "metric", "test", "p_value", "q_value", "verdict", "alert"]


def demo_outputs(demo: DemoRuns) -> pd.DataFrame:
    """Day 2's scorecard and verdicts in one long table of strings and floats; latencies are
    left out (measured wall-clock times differ between runs)."""
    scorecard = read(demo, "evaluation_scorecard", DAY2)[SCORECARD_KEPT]
    verdicts = read(demo, "metric_regressions", DAY2)[VERDICT_KEPT]
    parts = [scorecard.assign(table="scorecard"), verdicts.assign(table="verdicts")]
    both = pd.concat(parts, ignore_index=True)
    both = both[~both["metric"].str.contains("latency")]
    return both.sort_values(["table", "tier", "system", "metric"], ignore_index=True)


def test_demo_scorecard_and_verdicts_equal_the_stored_reference(demo: DemoRuns) -> None:
    """A refactoring changes no number: day 2's scorecard and verdicts equal the stored ones
    (floats to 1e-6 relative: embeddings are float32, and how the session's embedding cache
    splits texts into batches moves their last digits; regenerate with
    RAG_EVAL_UPDATE_REFERENCE=1 only for a change meant to move a number). q-values are left
    out: a q depends on the whole family, which holds the wall-clock latency rows."""
    text = demo_outputs(demo).to_csv(index=False, float_format="%.17g")
    if os.environ.get("RAG_EVAL_UPDATE_REFERENCE") == "1":
        REFERENCE.write_text(text)
    current = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    stored = pd.read_csv(REFERENCE, dtype=str, keep_default_na=False)
    assert stored[["table", "tier", "system", "metric"]].equals(
        current[["table", "tier", "system", "metric"]]
    )
    for column in current.columns.drop("q_value"):
        numbers = pd.to_numeric(stored[column], errors="coerce")
        if numbers.notna().any() and column not in ("tier", "system", "metric"):
            now = pd.to_numeric(current[column], errors="coerce")
            close = np.isclose(now, numbers, rtol=1e-6, atol=0.0, equal_nan=True)
            assert close.all(), (column, current.loc[~close, ["metric", column]].head())
        else:
            assert stored[column].equals(current[column]), column


def test_every_where_to_look_of_the_report_leads_to_the_rows(demo: DemoRuns) -> None:
    """Each "Where to look" of the regression day's report names an asset and its group in the
    UI; that asset's partition holds the row's system and metric."""
    from rag_eval_pipeline.definitions import defs
    from rag_eval_pipeline.evaluation.item_scores import ITEM_SOURCES, SAMPLE_SOURCES

    page = (demo.warehouse.parent / "reports" / VERSION / f"{DAY2}.html").read_text()
    rows = re.findall(
        r'<tr><td><span class="role[^"]*">[^<]*</span></td><td>([^<]*)</td><td>([^<]*)</td>'
        r"<td><code>([^<]*)</code>.*?</td>.*?<td>([^<]*)<div class=\"hint\">",
        page,
    )
    assert len(rows) > 10
    graph = defs.resolve_asset_graph()
    sources = {**ITEM_SOURCES, **SAMPLE_SOURCES}
    followed = set()
    for tier, system, metric, where in rows:
        asset, group = re.fullmatch(r"(\w+) in group (\w+)", where).groups()
        assert graph.get(AssetKey(asset)).group_name == group, where
        table = read(demo, asset, DAY2)
        if asset in sources:
            items = sources[asset](table)
            held = items[(items["system"] == system) & (items["metric"] == metric)]
            assert len(held) and set(held["tier"]) == {tier}, (system, metric, where)
        else:
            assert system in set(table["system"]), (system, metric, where)
        followed.add(asset)
    assert {"retrieval_metrics", "system_retrieval_metrics", "e2e_judgments"} <= followed


def test_the_report_charts_every_primary_metric_and_names_the_models(demo: DemoRuns) -> None:
    page = (demo.warehouse.parent / "reports" / VERSION / f"{DAY2}.html").read_text()
    scorecard = read(demo, "evaluation_scorecard", DAY2)
    primary = set(scorecard.loc[scorecard["role"] == "primary", "metric"])
    assert {"hit_rate@5", "ndcg@10", "avg_faithfulness"} <= primary
    charted = set(re.findall(r'<figure class="card chart-card" data-metric="([^"]+)"', page))
    assert primary <= charted, primary - charted
    assert 'aria-label="hit_rate@5 of ' in page  # its sparkline
    header = page.split("</header>")[0]
    assert "<code>offline-heuristic-judge</code>" in header
    assert "<code>offline-extractive-generator</code>" in header
