"""`metric_regressions`: paired verdicts on two real dates of a pipeline, and their alerts.

The `flips` version (`flips.py`: 60 questions, logged TREC runs) is materialized on two dates by
the session fixture `two_dates` (conftest). Between the dates `drop` loses the relevant document
of 6 questions it answered (6 of 60 pairs flip 1 → 0, none back: exact one-sided p = 0.0156),
`same` is unchanged, and `swap` loses 6 and gains 6.
"""

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from dagster import (
    DagsterInstance,
    build_sensor_context,
)
from scipy import stats

from rag_eval_pipeline.defs.scorecard.sensors import regression_alert_sensor
from rag_eval_pipeline.defs.shared.resources import AlertsResource, WarehouseResource
from rag_eval_pipeline.evaluation.item_scores import (
    SAMPLE_SOURCES,
    e2e_latency_samples,
    empty_items,
    item_scores,
)
from rag_eval_pipeline.evaluation.scorecard import Thresholds, build_scorecard
from rag_eval_pipeline.evaluation.summaries import summarize_judgments
from rag_eval_pipeline.evaluation.traffic import traffic_items, traffic_quality_rows
from rag_eval_pipeline.evaluation.verdicts.compare import compare_partitions
from rag_eval_pipeline.evaluation.verdicts.partition import PartitionScores, RegressionRule
from rag_eval_pipeline.evaluation.verdicts.significance import (
    EFFECT_ONLY,
    FISHER_TEST,
    PERMUTATION_TEST,
    QUANTILE_TEST,
)
from rag_eval_pipeline.metrics.stats import permutation_tails
from rag_eval_pipeline.metrics.traffic import positive_feedback
from rag_eval_pipeline.reporting.alerting import alert_lines, sample_size
from rag_eval_pipeline_tests.conftest import TwoDates, rag_eval, rag_eval_process
from rag_eval_pipeline_tests.flips import (
    DAY1,
    DAY1_MISSES,
    DAY2,
    DAY2_MISSES,
    VERSION,
    N,
    write_version,
)
from rag_eval_pipeline_tests.test_regression import Receiver, card, quality

pytestmark = [pytest.mark.integration]


def row(verdicts: pd.DataFrame, system: str, metric: str) -> pd.Series:
    found = verdicts[(verdicts["system"] == system) & (verdicts["metric"] == metric)]
    assert len(found) == 1, (system, metric)
    return found.iloc[0]


def test_six_flips_one_way_regress_with_an_exact_test(two_dates: TwoDates) -> None:
    """60 queries, 6 lose their relevant document: every Tier 1 metric has p = 1/64 exactly
    (the sign-flip metrics are enumerated, not sampled), and the primary metrics are alerted."""
    verdicts = two_dates.verdicts
    drop = verdicts[(verdicts["system"] == "drop") & (verdicts["tier"] == "tier1_retrieval")]
    drop = drop[drop["role"] != "monitor"]  # judged@10, a coverage figure
    assert len(drop) == 20
    np.testing.assert_allclose(drop["p_value"], 1 / 64, rtol=1e-12)
    assert set(drop["test"]) == {"exact sign test (McNemar)", "paired sign-flip test"}
    hit = row(verdicts, "drop", "hit_rate@1")
    assert (hit["baseline_value"], hit["value"]) == (pytest.approx(0.8), pytest.approx(0.7))
    assert (hit["n_paired"], hit["n_worse"], hit["n_better"]) == (60, 6, 0)
    assert hit["role"] == "secondary"
    for metric in ("ndcg@10", "hit_rate@5"):
        primary = row(verdicts, "drop", metric)
        assert primary["role"] == "primary" and primary["n_items"] == 60
        assert primary["q_value"] < 0.05 and primary["verdict"] == "regressed"
        assert primary["alert"]
    assert row(verdicts, "drop", "precision@5")["test"] == "paired sign-flip test"


def test_unchanged_and_balanced_systems_are_not_alerted(two_dates: TwoDates) -> None:
    verdicts = two_dates.verdicts
    for system in ("same", "swap"):
        rows = verdicts[(verdicts["system"] == system) & (verdicts["tier"] == "tier1_retrieval")]
        assert len(rows) > 10
        assert set(rows["verdict"]) <= {"no significant change", "untestable"}, system
        assert not rows["alert"].any()
    same = verdicts[(verdicts["system"] == "same") & (verdicts["tier"] == "tier1_retrieval")]
    assert set(same["reason"].str.removesuffix(" (monitored: never alerted)")) == {
        "no item changed: nothing to test"
    }
    swap = row(verdicts, "swap", "hit_rate@1")
    assert (swap["n_worse"], swap["n_better"]) == (6, 6)
    assert swap["p_value"] == pytest.approx(0.6128, abs=1e-4)
    alerted = verdicts[verdicts["alert"]]
    assert set(alerted["system"]) == {"drop"}


def test_detectable_change_says_what_the_partition_could_flag(two_dates: TwoDates) -> None:
    """HitRate@1 at 0.80 on 60 questions: a lone drop is flagged only when enough questions
    flip 1 → 0 for the exact sign test to clear BH's bar α / m (m tests in the partition)."""
    verdicts = two_dates.verdicts
    bar = row(verdicts, "same", "hit_rate@1")["bar"]
    assert bar == row(verdicts, "swap", "hit_rate@1")["bar"] < 0.05 / 40  # a secondary's share

    def fewest(back: int) -> int:
        return next(
            k
            for k in range(1, N + 1)
            if stats.binomtest(k, k + back, 0.5, alternative="greater").pvalue < bar
        )

    same, swap = row(verdicts, "same", "hit_rate@1"), row(verdicts, "swap", "hit_rate@1")
    assert same["detectable_change"] == pytest.approx(fewest(0) / N / 0.8)
    assert swap["detectable_change"] == pytest.approx((fewest(6) - 6) / N / 0.8)
    assert swap["detectable_change"] > same["detectable_change"] > 0.05  # noise costs power
    tested = verdicts[verdicts["test"] != ""]
    assert tested["detectable_change"].notna().all()
    assert (tested["detectable_change"] >= tested["threshold"] - 1e-12).all()
    report = pd.read_parquet(
        two_dates.tmp / "warehouse" / "evaluation_report" / VERSION / f"{DAY2}.parquet"
    )
    page = Path(report["path"].iloc[0]).read_text()
    assert "Detectable" in page
    assert f"≥ {same['detectable_change'] * 100:.1f}%" in page


def test_first_date_has_no_baseline(two_dates: TwoDates) -> None:
    day1 = pd.read_parquet(
        two_dates.tmp / "warehouse" / "metric_regressions" / VERSION / f"{DAY1}.parquet"
    )
    assert set(day1["verdict"]) == {"not comparable"}
    assert not day1["alert"].any()
    assert set(day1["judge"]) == {"offline|local|t=0.0|max_tokens=512"}


def test_check_and_report_read_the_asset(two_dates: TwoDates) -> None:
    n_alerted = int(two_dates.verdicts["alert"].sum())
    checks = {
        e.check_name: e
        for e in two_dates.day2.get_asset_check_evaluations()
        if e.check_name == "scorecard_regressions"
    }
    check = checks["scorecard_regressions"]
    assert not check.passed and check.metadata["n_alerts"].value == n_alerted
    report = pd.read_parquet(
        two_dates.tmp / "warehouse" / "evaluation_report" / VERSION / f"{DAY2}.parquet"
    )
    assert report["n_alerts"].tolist() == [n_alerted]
    page = Path(report["path"].iloc[0]).read_text()
    assert "6 metric(s) regressed" not in page
    assert "Benjamini" in page
    regressions = page.split('id="regressions"')[1].split("</table>")[0]
    assert "ndcg@10" in regressions and "hit_rate@5" in regressions


def test_sensor_sends_one_grouped_message_once(two_dates: TwoDates) -> None:
    receiver = Receiver([])
    try:
        resources = {
            "warehouse": WarehouseResource(base_path=str(two_dates.tmp / "warehouse")),
            "alerts": AlertsResource(
                webhook_url=receiver.url, backoff_s=0.01, style="slack", ui_url="http://ui:3000"
            ),
        }
        context = build_sensor_context(instance=two_dates.instance, resources=resources)
        regression_alert_sensor(context)
        assert len(receiver.bodies) == 1
        text = receiver.bodies[0]["text"]
        assert f"{VERSION} {DAY2}: 2 regressions, " in text.splitlines()[0]
        assert f"(baseline {VERSION} {DAY1})" in text.splitlines()[0]
        assert "*drop*" in text and "same" not in text and "swap" not in text
        assert "hit_rate@5 [primary]: 0.8000 → 0.7000 (-12.5%; q = " in text
        assert ", n = 60)" in text and "nan" not in text
        assert "http://ui:3000/assets/metric_regressions?partition=flips%7C2026-11-21" in text
        assert f"report: {two_dates.tmp / 'reports' / VERSION / DAY2}.html" in text
        again = build_sensor_context(
            instance=two_dates.instance, resources=resources, cursor=context.cursor
        )
        regression_alert_sensor(again)
        fresh = build_sensor_context(instance=two_dates.instance, resources=resources)
        regression_alert_sensor(fresh)  # the alert record de-duplicates a replay
        assert len(receiver.bodies) == 1
    finally:
        receiver.server.shutdown()


def test_missing_today_is_an_alert_and_model_change_is_not() -> None:
    def faithfulness(value: float) -> pd.DataFrame:
        return quality("avg_faithfulness", value, tier="tier2_generation", system="s")

    baseline = card(faithfulness(0.9), quality("mrr", 0.9, system="s"))
    outage = card(faithfulness(float("nan")), quality("mrr", 0.9, system="s"))
    verdicts = compare_partitions(
        PartitionScores("v1", "d2", outage, empty_items()),
        PartitionScores("v1", "d1", baseline, empty_items()),
        RegressionRule(),
    )
    faith = row(verdicts, "s", "avg_faithfulness")
    assert (faith["verdict"], faith["reason"], faith["alert"]) == (
        "not comparable",
        "missing today",
        True,
    )
    failing = faithfulness(0.85).assign(error_rate=0.8)
    partial = compare_partitions(
        PartitionScores("v1", "d2", card(failing, quality("mrr", 0.9, system="s")), empty_items()),
        PartitionScores("v1", "d1", baseline, empty_items()),
        RegressionRule(),
    )
    outage = row(partial, "s", "avg_faithfulness")
    assert outage["alert"] and outage["verdict"] == "not comparable"
    assert outage["reason"] == "judge outage: 80% of its judgments failed today"
    assert "— judge outage: 80%" in alert_lines(partial[partial["alert"]])[0]
    worse = card(faithfulness(0.5), quality("mrr", 0.5, system="s"))
    changed = compare_partitions(
        PartitionScores("v1", "d2", worse, empty_items(), {"judge": "offline"}),
        PartitionScores("v1", "d1", baseline, empty_items(), {"judge": "gpt-4o-mini"}),
        RegressionRule(),
    )
    assert row(changed, "s", "mrr")["verdict"] == "regressed"
    moved = row(changed, "s", "avg_faithfulness")
    assert moved["verdict"] == "not comparable" and not moved["alert"]
    assert moved["reason"] == "judge changed (gpt-4o-mini → offline)"


def test_detectable_change_of_a_lower_is_better_continuous_metric() -> None:
    """Latency-like metric (lower is better) on 100 paired items: the sign-flip test's normal
    approximation on today's centred changes; unpaired and zero-baseline rows have none."""
    rng = np.random.default_rng(4)
    base = rng.uniform(0.2, 0.6, 100)
    today = base + rng.normal(0.002, 0.02, 100)
    items = [
        pd.DataFrame(
            {
                "tier": "tier3_e2e",
                "system": "s",
                "metric": "avg_latency",
                "item_id": [f"q{i}" for i in range(100)],
                "value": values,
            }
        )
        for values in (base, today)
    ]

    def scorecard(values: np.ndarray, zero: float) -> pd.DataFrame:
        return card(
            quality("avg_latency", float(values.mean()), tier="tier3_e2e", system="s"),
            quality("avg_error", zero, tier="tier3_e2e", system="s"),
        )

    verdicts = compare_partitions(
        PartitionScores("v1", "d2", scorecard(today, 0.1), items[1]),
        PartitionScores("v1", "d1", scorecard(base, 0.0), items[0]),
        RegressionRule(),
    )
    metric = row(verdicts, "s", "avg_latency")
    assert metric["test"] == "paired sign-flip test" and not metric["higher_is_better"]
    changes = today - base  # worse = higher
    centred = changes - changes.mean()
    z = stats.norm.ppf(1 - 0.05)  # one tested metric: the bar is α
    shift = z * np.sqrt(np.mean(centred**2)) / np.sqrt(100 - z * z)
    expected = max(shift, 0.05 * base.mean()) / base.mean()
    assert metric["detectable_change"] == pytest.approx(expected)
    assert np.isnan(row(verdicts, "s", "avg_error")["detectable_change"])  # baseline 0


def test_a_judge_change_moves_only_the_traffic_tiers_judged_metrics() -> None:
    def traffic(faithfulness: float, latency: float) -> pd.DataFrame:
        return card(
            quality("avg_faithfulness", faithfulness, tier="traffic", system="production"),
            quality("latency_p95", latency, tier="traffic", system="production"),
        )

    verdicts = compare_partitions(
        PartitionScores("v1", "d2", traffic(0.4, 900.0), empty_items(), {"judge": "offline"}),
        PartitionScores("v1", "d1", traffic(0.9, 400.0), empty_items(), {"judge": "gpt-4o"}),
        RegressionRule(),
    )
    judged = row(verdicts, "production", "avg_faithfulness")
    assert judged["verdict"] == "not comparable" and not judged["alert"]
    assert judged["reason"] == "judge changed (gpt-4o → offline)"
    latency = row(verdicts, "production", "latency_p95")
    assert latency["verdict"] == "regressed" and latency["alert"]
    embedder = compare_partitions(
        PartitionScores("v1", "d2", traffic(0.4, 900.0), empty_items(), {"embedder": "e5"}),
        PartitionScores("v1", "d1", traffic(0.9, 400.0), empty_items(), {"embedder": "minilm"}),
        RegressionRule(),
    )
    assert row(embedder, "production", "avg_faithfulness")["reason"] == (
        "embedder changed (minilm → e5)"
    )
    assert row(embedder, "production", "latency_p95")["verdict"] == "regressed"


SATISFACTION = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
USUAL = [0.05, 0.1, 0.15, 0.3, 0.4]  # satisfaction's distribution on an ordinary day
UNHAPPY = [0.15, 0.2, 0.25, 0.25, 0.15]


@dataclass
class TrafficDay:
    scores: PartitionScores
    satisfaction: np.ndarray
    error: np.ndarray
    faithfulness: np.ndarray  # the judged sample's scores, NaN where the judge failed


def traffic_day(
    day: str, n: int, seed: int, weights: list[float], error_rate: float, *, unpaired: bool = True
) -> TrafficDay:
    """`n` production interactions drawn with `seed`, and a judged sample of 10 of them whose
    last 2 judgments failed, scored as the traffic tier does; `unpaired=False` leaves out the
    per-interaction samples (the traffic tier is then judged by the effect rule alone)."""
    rng = np.random.default_rng(seed)
    satisfaction = rng.choice(SATISFACTION, n, p=weights)
    values = pd.DataFrame(
        {
            "log_id": [f"{day}-{i}" for i in range(n)],
            "timestamp": day,
            "volume": 1.0,
            "latency_ms": rng.gamma(2.0, 400.0, n),
            "error": (rng.random(n) < error_rate).astype(float),
            "cost_usd": rng.gamma(2.0, 0.001, n),
            "satisfaction": satisfaction,
            "positive_feedback": positive_feedback(satisfaction),
        }
    )
    faithfulness = np.append(rng.uniform(0.5, 1.0, 8), [np.nan, np.nan])
    judgments = pd.DataFrame(
        {
            "system": "production",
            "query_id": values["log_id"].iloc[:10],
            "metric": "faithfulness",
            "score": faithfulness,
            "error": [None] * 8 + ["judge timeout"] * 2,
        }
    )
    scorecard = build_scorecard(
        [traffic_quality_rows(values), summarize_judgments(judgments, "traffic")],
        "v1",
        day,
        Thresholds(),
    )
    tables = {"traffic_metrics": traffic_items(values), "traffic_judgments": judgments}
    samples = item_scores(tables, SAMPLE_SOURCES) if unpaired else None
    scores = PartitionScores("v1", day, scorecard, empty_items(), samples=samples)
    return TrafficDay(scores, satisfaction, values["error"].to_numpy(), faithfulness)


def test_one_slow_interaction_is_not_a_latency_regression() -> None:
    """A day with one interaction at 1,200 ms after one at 900 ms: p95 is +33%, but one value
    a day is no evidence (quantile test p = 0.5); the effect rule alone would page."""

    def day(date: str, latency: float, unpaired: bool) -> PartitionScores:
        scorecard = card(quality("latency_p95_ms", latency, tier="traffic", system="production"))
        sample = pd.DataFrame(
            {
                "tier": "traffic",
                "system": "production",
                "metric": "latency_p95_ms",
                "item_id": ["log-1"],
                "value": [latency],
            }
        )
        return PartitionScores(
            "v1", date, scorecard, empty_items(), samples=sample if unpaired else None
        )

    tested = row(
        compare_partitions(day("d2", 1200.0, True), day("d1", 900.0, True), RegressionRule()),
        "production",
        "latency_p95_ms",
    )
    assert tested["test"] == QUANTILE_TEST and tested["p_value"] == pytest.approx(0.5)
    assert tested["verdict"] == "untestable" and not tested["alert"]  # says so, no page
    assert tested["reason"].startswith("n = 0: too few items to test (smallest reachable p 0.5")
    effect_only = row(
        compare_partitions(day("d2", 1200.0, False), day("d1", 900.0, False), RegressionRule()),
        "production",
        "latency_p95_ms",
    )
    assert effect_only["test"] == EFFECT_ONLY and effect_only["verdict"] == "regressed"


def test_a_chance_dip_of_20_interactions_is_not_a_traffic_regression() -> None:
    # Both days draw 20 interactions from one distribution; today's satisfaction dips by 13%.
    baseline = traffic_day("d1", 20, 0, USUAL, 0.05)
    today = traffic_day("d2", 20, 20, USUAL, 0.05)
    verdicts = compare_partitions(today.scores, baseline.scores, RegressionRule())
    dip = row(verdicts, "production", "avg_satisfaction")
    assert (dip["baseline_value"], dip["value"]) == (pytest.approx(0.6875), pytest.approx(0.6))
    assert dip["relative_change"] < -dip["threshold"]
    assert dip["test"] == PERMUTATION_TEST
    p_less, _ = permutation_tails(baseline.satisfaction, today.satisfaction)
    assert dip["p_value"] == p_less and p_less > 0.2
    assert dip["verdict"] == "no significant change" and not dip["alert"]
    assert (dip["n_paired"], dip["n_only_baseline"], dip["n_only_current"]) == (0, 20, 20)
    assert dip["reason"].endswith("(unpaired: 20 values on the baseline date, 20 today)")
    assert row(verdicts, "production", "error_rate")["test"] == FISHER_TEST
    faith = row(verdicts, "production", "avg_faithfulness")  # the 2 failed judgments left out
    assert (faith["test"], faith["n_only_baseline"], faith["n_only_current"]) == (
        PERMUTATION_TEST,
        8,
        8,
    )
    judged_before, judged_today = baseline.faithfulness[:8], today.faithfulness[:8]
    p_less, p_greater = permutation_tails(judged_before, judged_today)
    assert faith["p_value"] == (p_less if judged_today.mean() < judged_before.mean() else p_greater)
    assert row(verdicts, "production", "volume")["test"] == EFFECT_ONLY
    # Without the per-interaction samples, the effect rule alone pages on the same dip.
    effect_only = compare_partitions(
        traffic_day("d2", 20, 20, USUAL, 0.05, unpaired=False).scores,
        traffic_day("d1", 20, 0, USUAL, 0.05, unpaired=False).scores,
        RegressionRule(),
    )
    paged = row(effect_only, "production", "avg_satisfaction")
    assert (paged["test"], paged["verdict"], paged["alert"]) == (EFFECT_ONLY, "regressed", True)


def test_a_real_traffic_shift_regresses_with_a_p_value() -> None:
    baseline = traffic_day("d1", 400, 1, USUAL, 0.02)
    today = traffic_day("d2", 400, 2, UNHAPPY, 0.10)
    verdicts = compare_partitions(today.scores, baseline.scores, RegressionRule())
    satisfaction = row(verdicts, "production", "avg_satisfaction")
    assert satisfaction["test"] == PERMUTATION_TEST
    assert satisfaction["p_value"] == pytest.approx(1 / 10001)  # no shuffle as low
    errors = row(verdicts, "production", "error_rate")
    table = [
        [today.error.sum(), 400 - today.error.sum()],
        [baseline.error.sum(), 400 - baseline.error.sum()],
    ]
    assert errors["test"] == FISHER_TEST
    assert errors["p_value"] == pytest.approx(
        stats.fisher_exact(table, alternative="greater").pvalue, rel=1e-9
    )
    for shifted in (satisfaction, errors, row(verdicts, "production", "positive_feedback_rate")):
        assert shifted["q_value"] < 0.05 and shifted["verdict"] == "regressed" and shifted["alert"]
        assert (shifted["n_paired"], shifted["n_only_baseline"], shifted["n_only_current"]) == (
            0,
            400,
            400,
        )
    line = next(x for x in alert_lines(verdicts[verdicts["alert"]]) if "error_rate" in x)
    assert "(+238.5%; q = " in line and ", n = 400 vs 400)" in line
    alerted = verdicts[verdicts["alert"]]
    assert {sample_size(r) for r in alerted.itertuples()} == {"400 vs 400"}
    assert verdicts.loc[verdicts["test"] == FISHER_TEST, "detectable_change"].isna().all()


def test_cli_run_prints_the_verdicts_and_gates_ci(tmp_path: Path) -> None:
    data = tmp_path / "data"
    write_version(data / "datasets" / VERSION, DAY1_MISSES)
    first = rag_eval(data, tmp_path / "home", "run", "--date", DAY1, "--fail-on-regression")
    assert f"{VERSION}|{DAY1}: first evaluation: no baseline yet" in first
    write_version(data / "datasets" / VERSION, DAY2_MISSES)
    completed = rag_eval_process(
        data, tmp_path / "home", "run", "--date", DAY2, "--fail-on-regression"
    )
    assert completed.returncode == 3, completed.stdout + completed.stderr
    assert f"--fail-on-regression: {VERSION}|{DAY2}" in completed.stderr
    second = completed.stdout
    assert f"{VERSION}|{DAY2}: needs a look" in second
    assert " alert(s) (asset metric_regressions):" in second
    assert "tier1_retrieval · drop · hit_rate@5 [primary]: 0.8000 → 0.7000 (-12.5%; q = " in second
    # the failed scorecard_regressions check is these alerts: counted once, as alerts
    assert re.search(rf"{VERSION}\|{DAY2}: needs a look: \d+ regressions?[,\n]", second)
    assert "check scorecard_regressions" not in second
    assert second.rstrip().endswith("the asset graph and the plots over dates")
    assert " · swap · " not in second and " · same · " not in second
    # `rag-eval alerts` lists the verdicts' alerts before any sensor ran, with the same count
    listed = rag_eval(data, tmp_path / "home", "alerts", "--format", "json")
    alerts = json.loads(listed)
    n_regressions = int(re.search(r"needs a look: (\d+) regressions?", second).group(1))
    assert len(alerts) == n_regressions and {a["kind"] for a in alerts} == {"regression"}
    assert {a["status"] for a in alerts} == {"not sent yet (the alert sensor has not run)"}
    table = rag_eval(data, tmp_path / "home", "alerts")
    assert table.startswith(f"{VERSION}|{DAY2}: {n_regressions} regression")
    report = (data / "reports" / VERSION / f"{DAY2}.html").read_text()
    assert f'kpi-value">{n_regressions}</div><div class="kpi-label">Regressions' in report


def test_a_run_without_metric_regressions_never_reports_or_gates_on_a_stored_verdict(
    tmp_path: Path,
) -> None:

    from rag_eval_pipeline.defs.outcome.summary import partition_summary
    from rag_eval_pipeline.storage.parquet import write_parquet_atomically
    from rag_eval_pipeline.storage.warehouse import REGRESSIONS_ASSET, WarehouseStore

    store = WarehouseStore(str(tmp_path / "warehouse"))
    stale = pd.DataFrame({"metric": ["mrr"], "alert": [True]})
    write_parquet_atomically(stale, store.base / REGRESSIONS_ASSET / VERSION / f"{DAY2}.parquet")
    summary = partition_summary(
        DagsterInstance.ephemeral(), store, VERSION, DAY2, None, regressions_selected=False
    )
    assert (summary.n_alerts, summary.gates) == (0, False)
    assert summary.lines == ["  metric_regressions was not in this run's selection: no verdict"]


def test_e2e_latency_samples_give_each_percentile_the_questions_latencies() -> None:
    generations = pd.DataFrame(
        {
            "system": ["a", "a", "b"],
            "query_id": ["q1", "q2", "q1"],
            "total_latency_ms": [120.0, 80.0, 300.0],
            "answer": ["x", "y", "z"],
        }
    )
    samples = e2e_latency_samples(generations)
    assert set(samples["metric"]) == {"latency_p50_ms", "latency_p95_ms", "latency_p99_ms"}
    p95 = samples[samples["metric"] == "latency_p95_ms"]
    assert p95[["tier", "system", "item_id", "value"]].values.tolist() == [
        ["tier3_e2e", "a", "q1", 120.0],
        ["tier3_e2e", "a", "q2", 80.0],
        ["tier3_e2e", "b", "q1", 300.0],
    ]
    assert e2e_latency_samples(generations.iloc[0:0]).empty
    assert e2e_latency_samples(generations.drop(columns="total_latency_ms")).empty


def test_an_embedder_change_moves_only_the_tier1_systems_that_embed() -> None:
    systems = ("reference-rag", "dense", "hybrid-rrf", "bm25", "production-bm25")

    def tier1(value: float) -> pd.DataFrame:
        return card(*(quality("ndcg@10", value, tier="tier1_retrieval", system=s) for s in systems))

    verdicts = compare_partitions(
        PartitionScores("v1", "d2", tier1(0.4), empty_items(), {"embedder": "e5"}),
        PartitionScores("v1", "d1", tier1(0.9), empty_items(), {"embedder": "minilm"}),
        RegressionRule(),
    )
    for system in ("reference-rag", "dense", "hybrid-rrf"):
        embedded = row(verdicts, system, "ndcg@10")
        assert embedded["reason"] == "embedder changed (minilm → e5)" and not embedded["alert"]
    for system in ("bm25", "production-bm25"):
        assert row(verdicts, system, "ndcg@10")["verdict"] == "regressed"
