"""The traffic tier: a logs file spanning three days yields three daily partitions whose
volume, latency percentiles, error rate, cost and satisfaction equal numpy on that day's rows;
`metric_regressions` compares two days' interactions unpaired."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from dagster import AssetSelection, DagsterInstance, materialize

from rag_eval_pipeline.datasets.errors import DatasetError
from rag_eval_pipeline.datasets.golden import load_dataset
from rag_eval_pipeline.definitions import ALL_ASSETS, ALL_CHECKS
from rag_eval_pipeline.defs.dataset.assets import golden_dataset
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.defs.shared.resources import DatasetsResource
from rag_eval_pipeline.defs.traffic.assets import (
    traffic_judgments,
    traffic_metrics,
    traffic_quality,
)
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.traffic import (
    day_interactions,
    judged_sample,
    traffic_item_values,
    traffic_items,
)
from rag_eval_pipeline.evaluation.verdicts.significance import (
    EFFECT_ONLY,
    FISHER_TEST,
    PERMUTATION_TEST,
    QUANTILE_TEST,
)
from rag_eval_pipeline.metrics.stats import (
    fisher_exact_tails,
    permutation_tails,
    quantile_exceedance_tails,
)
from rag_eval_pipeline.metrics.traffic import (
    local_dates,
    positive_feedback,
    satisfaction_scores,
    token_costs,
)
from rag_eval_pipeline_tests.conftest import evaluation_resources

pytestmark = [pytest.mark.integration]

VERSION = "traffic-v1"
TIMEZONE = "America/New_York"
DAYS = ["2026-11-02", "2026-11-03", "2026-11-04"]
SAMPLE = 2
FEEDBACK = ["up", "down", "5", "1", "3", None, "👍", "4"]


def write_dataset(root: Path, logs: list[dict]) -> Path:
    folder = root / VERSION
    folder.mkdir(parents=True)
    queries = [{"query_id": "q1", "question": "How do I reset my password?"}]
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n")
    (folder / "qrels.csv").write_text("query_id,doc_id,relevance\nq1,d1,1\n")
    (folder / "logs.jsonl").write_text("\n".join(json.dumps(row) for row in logs) + "\n")
    return folder


def three_days_of_logs() -> list[dict]:
    """Logs from 2026-11-02 to 2026-11-04 New York time; some fall on another UTC date, some
    are outside the three days; costs logged, priced from tokens, or unknown."""
    rng = np.random.default_rng(7)
    start = pd.Timestamp("2026-11-01T22:00:00-05:00")
    rows = []
    for i in range(40):
        stamp = start + pd.Timedelta(minutes=int(rng.integers(0, 4 * 24 * 60)))
        row: dict = {
            "log_id": f"log-{i:03d}",
            "timestamp": stamp.isoformat(),
            "question": f"question {i}",
            "retrieved_doc_ids": ["d1"],
            "latency_ms": float(np.round(rng.gamma(2.0, 400.0), 1)),
            "retrieval_latency_ms": float(np.round(rng.gamma(2.0, 40.0), 1)),
            "feedback": FEEDBACK[i % len(FEEDBACK)],
        }
        if i % 6 == 0:
            row["error"] = "timeout"
        else:
            row["answer"] = "Open Account > Security and choose Reset password."
        if i % 2 == 0:
            row["contexts"] = ["To reset your password, open Account > Security."]
        if i % 3 == 0:
            row["cost_usd"] = round(float(rng.uniform(0.0001, 0.01)), 6)
        elif i % 3 == 1:
            row.update(model="gpt-4o-mini", prompt_tokens=1000 + i, completion_tokens=200 + i)
        rows.append(row)
    return rows


def expected_day(logs: list[dict], day: str) -> dict[str, float]:
    """numpy on the rows whose New York date is `day`, from the raw file values."""
    rows = [
        r
        for r in logs
        if pd.Timestamp(r["timestamp"]).tz_convert(TIMEZONE).date().isoformat() == day
    ]
    latency = np.array([r["latency_ms"] for r in rows])
    retrieval = np.array([r["retrieval_latency_ms"] for r in rows])
    # gpt-4o-mini: $0.15 per million input tokens, $0.60 per million output tokens
    costs = [
        r["cost_usd"]
        if "cost_usd" in r
        else r["prompt_tokens"] * 0.15e-6 + r["completion_tokens"] * 0.6e-6
        for r in rows
        if "cost_usd" in r or "prompt_tokens" in r
    ]
    ratings = {"up": 1.0, "👍": 1.0, "down": 0.0, "5": 1.0, "4": 0.75, "3": 0.5, "1": 0.0}
    satisfaction = [ratings[r["feedback"]] for r in rows if r["feedback"] is not None]
    return {
        "volume": float(len(rows)),
        **{f"latency_p{q}_ms": float(np.percentile(latency, q)) for q in (50, 95, 99)},
        **{f"retrieval_latency_p{q}_ms": float(np.percentile(retrieval, q)) for q in (50, 95, 99)},
        "error_rate": float(np.mean(["error" in r for r in rows])),
        "avg_cost_usd": float(np.mean(costs)),
        "total_cost_usd": float(np.sum(costs)),
        "avg_satisfaction": float(np.mean(satisfaction)),
        "positive_feedback_rate": float(np.mean(np.array(satisfaction) >= 0.75)),
    }


def traffic_deployment(
    instance: DagsterInstance, embedder: Embedder, tmp_path: Path, logs: list[dict]
) -> tuple[dict, dict]:
    """Write the version with `logs`, register it, and return the resources and the run config
    (the timezone and judged sample size) that materialize its traffic tier."""
    write_dataset(tmp_path / "datasets", logs)
    instance.add_dynamic_partitions(DATASET_VERSION, [VERSION])
    resources = evaluation_resources(
        tmp_path, embedder, datasets=DatasetsResource(root=str(tmp_path / "datasets"))
    )
    run_config = {
        "ops": {
            "traffic_metrics": {"config": {"timezone": TIMEZONE}},
            "traffic_judgments": {"config": {"timezone": TIMEZONE, "sample_size": SAMPLE}},
        }
    }
    return resources, run_config


def test_three_days_of_logs_make_three_daily_partitions(
    dagster_instance: DagsterInstance, embedder: Embedder, tmp_path: Path
) -> None:
    logs = three_days_of_logs()
    resources, run_config = traffic_deployment(dagster_instance, embedder, tmp_path, logs)
    seen = set()
    for day in DAYS:
        result = materialize(
            [golden_dataset, traffic_metrics, traffic_judgments, traffic_quality],
            partition_key=evaluation_partition_key(VERSION, day),
            instance=dagster_instance,
            resources=resources,
            run_config=run_config,
        )
        assert result.success
        folder = tmp_path / "warehouse"
        items = pd.read_parquet(folder / "traffic_metrics" / VERSION / f"{day}.parquet")
        quality = pd.read_parquet(folder / "traffic_quality" / VERSION / f"{day}.parquet")
        got = quality.set_index("metric")["mean"].to_dict()
        expected = expected_day(logs, day)
        assert {k: got[k] for k in expected} == pytest.approx(expected, rel=1e-9, abs=1e-12)
        assert set(quality["tier"]) == {"traffic"}
        assert "generation_latency_p50_ms" not in got  # not logged: no row
        days = local_dates(items["timestamp"], TIMEZONE)
        assert {d.isoformat() for d in days} == {day}
        assert set(items["log_id"]).isdisjoint(seen)
        seen |= set(items["log_id"])
        judgments = pd.read_parquet(folder / "traffic_judgments" / VERSION / f"{day}.parquet")
        eligible = items.loc[items["metric"] == "volume", "log_id"]
        eligible = [i for i in eligible if int(i[-3:]) % 6 and int(i[-3:]) % 2 == 0]
        assert eligible
        for metric in ("faithfulness", "answer_relevance", "context_relevance"):
            judged = judgments.loc[judgments["metric"] == metric, "query_id"]
            assert len(judged) == min(SAMPLE, len(eligible)) and set(judged) <= set(eligible)
            assert got[f"avg_{metric}"] == pytest.approx(
                judgments.loc[judgments["metric"] == metric, "score"].mean()
            )
        metadata = result.asset_materializations_for_node("traffic_quality")[0].metadata
        assert metadata[f"{VERSION}/production/volume"].value == expected["volume"]
    in_window = [
        r
        for r in logs
        if pd.Timestamp(r["timestamp"]).tz_convert(TIMEZONE).date().isoformat() in DAYS
    ]
    assert len(seen) == len(in_window) < len(logs)


def test_replayed_logs_are_the_day_of_any_date(
    dagster_instance: DagsterInstance, embedder: Embedder, tmp_path: Path
) -> None:
    """A `traffic_replay` version: every logged interaction falls on the partition's date at
    its time of day; the assets give the figures of the library on the logs held whole."""
    logs = three_days_of_logs()
    resources, run_config = traffic_deployment(dagster_instance, embedder, tmp_path, logs)
    folder = tmp_path / "datasets" / VERSION
    (folder / "dataset.yaml").write_text("traffic_replay: true\n")
    day = "2026-11-20"  # no interaction was logged on it
    result = materialize(
        [golden_dataset, traffic_metrics],
        partition_key=evaluation_partition_key(VERSION, day),
        instance=dagster_instance,
        resources=resources,
        run_config={"ops": {"traffic_metrics": run_config["ops"]["traffic_metrics"]}},
    )
    assert result.success
    assert result.asset_materializations_for_node("traffic_metrics")[0].metadata[
        "volume"
    ].value == len(logs)
    items = pd.read_parquet(tmp_path / "warehouse" / "traffic_metrics" / VERSION / f"{day}.parquet")
    expected = traffic_items(
        traffic_item_values(
            day_interactions(load_dataset(folder).logs, date(2026, 11, 20), TIMEZONE, replay=True)
        )
    )
    pd.testing.assert_frame_equal(items, expected, check_dtype=False)


def test_two_days_of_traffic_are_tested_unpaired_against_each_other(
    dagster_instance: DagsterInstance, embedder: Embedder, tmp_path: Path
) -> None:
    resources, run_config = traffic_deployment(
        dagster_instance, embedder, tmp_path, three_days_of_logs()
    )
    for day in DAYS[:2]:
        result = materialize(
            ALL_ASSETS,
            selection=AssetSelection.assets("metric_regressions").upstream(),
            partition_key=evaluation_partition_key(VERSION, day),
            instance=dagster_instance,
            resources=resources,
            run_config=run_config,
        )
        assert result.success

    def stored(asset: str, day: str) -> pd.DataFrame:
        return pd.read_parquet(tmp_path / "warehouse" / asset / VERSION / f"{day}.parquet")

    def values(day: str, source: str) -> np.ndarray:
        """The day's per-interaction values of `source`, or its judge scores without errors."""
        items = stored("traffic_metrics", day)
        if source in set(items["metric"]):
            return items.loc[items["metric"] == source, "value"].to_numpy()
        judged = stored("traffic_judgments", day)
        return judged.loc[judged["metric"] == source, "score"].dropna().to_numpy()

    verdicts = stored("metric_regressions", DAYS[1])
    traffic = verdicts[verdicts["tier"] == "traffic"].set_index("metric")
    compared = {
        "error_rate": "error",
        "positive_feedback_rate": "positive_feedback",
        "avg_satisfaction": "satisfaction",
        "avg_cost_usd": "cost_usd",
        "avg_faithfulness": "faithfulness",  # judge failures are left out, never zeros
    }
    for metric, source in compared.items():
        base, cur = values(DAYS[0], source), values(DAYS[1], source)
        verdict = traffic.loc[metric]
        binary = np.isin(np.concatenate([base, cur]), (0.0, 1.0)).all()
        test = FISHER_TEST if binary else PERMUTATION_TEST
        assert verdict["test"] == test, metric
        counts = (verdict["n_paired"], verdict["n_only_baseline"], verdict["n_only_current"])
        assert counts == (0, base.size, cur.size) and base.size > 0 and cur.size > 0, metric
        assert verdict["baseline_value"] == pytest.approx(base.mean())
        assert verdict["value"] == pytest.approx(cur.mean())
        p_less, p_greater = (
            fisher_exact_tails(base, cur) if test == FISHER_TEST else permutation_tails(base, cur)
        )
        higher = verdict["higher_is_better"]
        bad = cur.mean() < base.mean() if higher else cur.mean() > base.mean()
        worse, better = (p_less, p_greater) if higher else (p_greater, p_less)
        assert verdict["p_value"] == pytest.approx(worse if bad else better, rel=1e-12), metric
        pooled = np.concatenate([base, cur])
        if np.ptp(pooled) == 0:  # a test that cannot move leaves the BH family
            assert verdict["reason"].startswith("every value equal on both dates"), metric
            assert np.isnan(verdict["q_value"]), metric
        else:
            assert np.isfinite(verdict["q_value"]), metric
    assert traffic.loc["error_rate", "test"] == FISHER_TEST
    assert traffic.loc["avg_cost_usd", "test"] == PERMUTATION_TEST
    effect_only = traffic.loc[["volume", "total_cost_usd"], "test"]
    assert (effect_only == EFFECT_ONLY).all()
    base, cur = values(DAYS[0], "latency_ms"), values(DAYS[1], "latency_ms")
    for metric, quantile in (("latency_p50_ms", 0.5), ("latency_p95_ms", 0.95)):
        verdict = traffic.loc[metric]
        assert verdict["test"] == QUANTILE_TEST and not verdict["higher_is_better"]
        assert (verdict["n_only_baseline"], verdict["n_only_current"]) == (base.size, cur.size)
        assert verdict["baseline_value"] == pytest.approx(np.percentile(base, quantile * 100))
        p_less, p_greater = quantile_exceedance_tails(base, cur, quantile)
        bad = verdict["value"] > verdict["baseline_value"]
        assert verdict["p_value"] == pytest.approx(p_greater if bad else p_less, rel=1e-12)


def test_satisfaction_from_thumbs_and_ratings_by_hand() -> None:
    scores = satisfaction_scores(["up", "DOWN", "1", "3", 5, "4.0", None, np.nan, "6", "meh"])
    expected = [1.0, 0.0, 0.0, 0.5, 1.0, 0.75, np.nan, np.nan, np.nan, np.nan]
    np.testing.assert_array_equal(scores, expected)
    np.testing.assert_array_equal(
        positive_feedback(scores), [1, 0, 0, 0, 1, 1, np.nan, np.nan, np.nan, np.nan]
    )


def test_token_costs_use_litellm_prices_and_unknown_models_are_nan() -> None:
    costs = token_costs(
        ["gpt-4o-mini", "no-such-model-xyz", None], [1000, 1000, 1000], [500, 500, 500]
    )
    assert costs[0] == pytest.approx(1000 * 0.15e-6 + 500 * 0.6e-6)
    assert np.isnan(costs[1:]).all()


def test_local_dates_follow_the_timezone() -> None:
    stamps = pd.Series(pd.to_datetime(["2026-11-03T03:30:00Z", "2026-11-03T05:30:00Z"], utc=True))
    assert list(local_dates(stamps, "UTC")) == [date(2026, 11, 3)] * 2
    assert list(local_dates(stamps, TIMEZONE)) == [date(2026, 11, 2), date(2026, 11, 3)]


def test_bad_timestamp_and_feedback_name_file_row_and_column(tmp_path: Path) -> None:
    logs = three_days_of_logs()[:3]
    logs[1]["timestamp"] = "yesterday-ish"
    logs[2]["feedback"] = "meh"
    folder = write_dataset(tmp_path, logs)
    with pytest.raises(DatasetError) as raised:
        load_dataset(folder)
    message = str(raised.value)
    timestamp = "logs.jsonl, row 2 (line 2), column 'timestamp': not a date and time in 2000-2099"
    assert timestamp in message
    assert "logs.jsonl, row 3 (line 3), column 'feedback': not a valid feedback value" in message


def test_judged_sample_is_seeded_and_takes_all_when_fewer() -> None:
    interactions = pd.DataFrame(
        {
            "log_id": [f"l{i}" for i in range(10)],
            "question": "q",
            "answer": ["a"] * 9 + [None],
            "retrieved_doc_ids": [["d1"], ["nope"], *([["d1"]] * 8)],
        }
    )
    corpus = pd.DataFrame({"doc_id": ["d1"], "text": ["Doc one."]})
    everything = judged_sample(interactions, corpus, 50, seed=0)
    # l1 retrieved only an unknown id (no context), l9 has no answer
    assert everything["query_id"].tolist() == [f"l{i}" for i in (0, 2, 3, 4, 5, 6, 7, 8)]
    assert everything["contexts"].tolist() == [["Doc one."]] * 8
    sample = judged_sample(interactions, corpus, 3, seed=5)
    chosen = np.sort(np.random.default_rng(5).choice(8, 3, replace=False))
    assert sample["query_id"].tolist() == everything["query_id"].iloc[chosen].tolist()
    assert judged_sample(interactions, corpus, 3, seed=5).equals(sample)


def test_traffic_judgments_carry_the_judge_error_rate_check() -> None:
    checked = {key.asset_key.to_user_string() for check in ALL_CHECKS for key in check.check_keys}
    assert "traffic_judgments" in checked
