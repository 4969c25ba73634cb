"""Alerts and the dataset sensor across ticks: one alert key on both paths, undelivered alerts
retried, invalid folders logged once and escaped."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import AssetMaterialization, SkipReason, build_sensor_context, instance_for_test

from rag_eval_pipeline.defs.dataset.sensors import dataset_version_sensor
from rag_eval_pipeline.defs.scorecard.sensors import regression_alert_sensor
from rag_eval_pipeline.defs.shared.partitions import DATASET_VERSION, evaluation_partition_key
from rag_eval_pipeline.defs.shared.resources import (
    AlertsResource,
    DatasetsResource,
    WarehouseResource,
)
from rag_eval_pipeline.evaluation.item_scores import empty_items
from rag_eval_pipeline.evaluation.verdicts.columns import alert_keys
from rag_eval_pipeline.evaluation.verdicts.compare import compare_partitions
from rag_eval_pipeline.evaluation.verdicts.effect_rule import detect_regressions
from rag_eval_pipeline.evaluation.verdicts.partition import PartitionScores, RegressionRule
from rag_eval_pipeline.storage.parquet import write_parquet_atomically
from rag_eval_pipeline.storage.warehouse import REGRESSIONS_ASSET
from rag_eval_pipeline_tests.test_regression import Receiver, card, quality

pytestmark = [pytest.mark.integration]


def test_both_regression_paths_key_alerts_alike() -> None:
    baseline = card(quality("mrr", 0.9, system="s"), date="2026-11-20")
    current = card(quality("mrr", 0.5, system="s"))
    found = detect_regressions(current, baseline, "v1", "2026-11-20")
    verdicts = compare_partitions(
        PartitionScores("v1", "2026-11-21", current, empty_items()),
        PartitionScores("v1", "2026-11-20", baseline, empty_items()),
        RegressionRule(),
    )
    mrr = verdicts[verdicts["metric"] == "mrr"]
    assert found["alert_key"].tolist() == mrr["alert_key"].tolist() == alert_keys(found).tolist()
    assert found["alert_key"].tolist() == ["v1|2026-11-21|tier1_retrieval|s|mrr"]


def test_an_undelivered_alert_is_retried_on_a_later_tick_until_delivered(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    system = "s\x1b[2J\u202e"  # a hostile system name reaches the daemon's terminal escaped
    baseline = card(quality("mrr", 0.9, system=system), date="2026-11-20")
    current = card(quality("mrr", 0.5, system=system))
    verdicts = compare_partitions(
        PartitionScores("v1", "2026-11-21", current, empty_items()),
        PartitionScores("v1", "2026-11-20", baseline, empty_items()),
        RegressionRule(),
    )
    assert verdicts["alert"].any()
    warehouse = WarehouseResource(base_path=str(tmp_path / "warehouse"))
    store = warehouse.store()
    write_parquet_atomically(verdicts, store.partition_path(REGRESSIONS_ASSET, "v1", "2026-11-21"))
    receiver = Receiver([500, 500])  # the first tick's two attempts fail, the next succeeds
    try:
        resources = {
            "warehouse": warehouse,
            "alerts": AlertsResource(webhook_url=receiver.url, backoff_s=0.01, max_retries=1),
        }
        with instance_for_test() as instance:
            instance.add_dynamic_partitions(DATASET_VERSION, ["v1"])
            instance.report_runless_asset_event(
                AssetMaterialization(
                    REGRESSIONS_ASSET, partition=evaluation_partition_key("v1", "2026-11-21")
                )
            )
            first = build_sensor_context(instance=instance, resources=resources)
            regression_alert_sensor(first)
            assert len(receiver.bodies) == 2
            assert store.read_alerts("v1")["delivered"].tolist() == [False]
            for _ in range(2):  # no new materialization: the retry comes from the record
                tick = build_sensor_context(
                    instance=instance, resources=resources, cursor=first.cursor
                )
                regression_alert_sensor(tick)
        assert len(receiver.bodies) == 3
        assert receiver.bodies[2] == receiver.bodies[0]
        assert store.read_alerts("v1")["delivered"].tolist() == [False, True]
        err = capfd.readouterr().err
        assert err.count("Regression: ") == 2 and "s\\x1b[2J\\u202e" in err
        assert "\x1b" not in err and "\u202e" not in err
    finally:
        receiver.server.shutdown()


def test_dataset_sensor_logs_an_invalid_folder_once_per_state_and_escaped(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "datasets"
    (root / "v\x1b[31m").mkdir(parents=True)
    broken = root / "broken"
    broken.mkdir()
    (broken / "queries.jsonl").write_text('{"query_id": "q1", "question": "?"}\n')
    (broken / "qrels.csv").write_text("query_id,doc_id,relevance\nq1,d1,nope\n")
    resources = {"datasets": DatasetsResource(root=str(root))}

    def logged() -> list[str]:
        return [line for line in capfd.readouterr().err.splitlines() if "not registered" in line]

    with instance_for_test() as instance:
        context = build_sensor_context(instance=instance, resources=resources)
        for _ in range(3):
            assert isinstance(dataset_version_sensor(context), SkipReason)
        first = logged()
        (broken / "qrels.csv").write_text("query_id,doc_id,relevance\nq1,d1,x\n")
        dataset_version_sensor(context)
        after_edit = logged()
    assert len(first) == 2 and not any("\x1b" in line for line in first)
    assert any("'v\\x1b[31m'" in line for line in first)
    assert len(after_edit) == 1 and "'broken'" in after_edit[0]
