"""Baselines, the direction-aware regression rule with CI gating, de-duplication, webhooks."""

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.defs.shared.resources import AlertsResource
from rag_eval_pipeline.evaluation.alerts import new_alerts
from rag_eval_pipeline.evaluation.scorecard import Thresholds, band, build_scorecard
from rag_eval_pipeline.evaluation.verdicts.effect_rule import detect_regressions
from rag_eval_pipeline.reporting.alerting import alert_payload, post_json
from rag_eval_pipeline.storage.parquet import write_parquet_atomically
from rag_eval_pipeline.storage.warehouse import WarehouseStore

pytestmark = [pytest.mark.unit]


def quality(
    metric: str,
    mean: float,
    ci: tuple[float, float] | None = None,
    tier: str = "tier1_retrieval",
    system: str = "dense",
) -> pd.DataFrame:
    low, high = ci if ci else (np.nan, np.nan)
    return pd.DataFrame(
        [
            {
                "tier": tier,
                "system": system,
                "metric": metric,
                "mean": mean,
                "std": np.nan,
                "count": 50,
                "ci_low": low,
                "ci_high": high,
                "n_errors": 0,
                "error_rate": 0.0,
            }
        ]
    )


def card(
    *rows: pd.DataFrame,
    version: str = "v1",
    date: str = "2026-11-21",
    thresholds: Thresholds | None = None,
) -> pd.DataFrame:
    return build_scorecard(list(rows), version, date, thresholds or Thresholds())


def test_drop_beyond_tolerance_and_outside_ci_is_a_regression() -> None:
    baseline = card(quality("hit_rate@1", 0.80, (0.7, 0.9)), date="2026-11-20")
    current = card(quality("hit_rate@1", 0.70, (0.6, 0.78)))
    found = detect_regressions(current, baseline, "v1", "2026-11-20")
    assert found["metric"].tolist() == ["hit_rate@1"]
    assert found["relative_change"].iloc[0] == pytest.approx(-0.125)
    assert found["alert_key"].iloc[0] == "v1|2026-11-21|tier1_retrieval|dense|hit_rate@1"


def test_drop_inside_the_ci_is_noise() -> None:
    baseline = card(quality("hit_rate@1", 0.80, (0.7, 0.9)))
    current = card(quality("hit_rate@1", 0.70, (0.55, 0.85)))
    assert detect_regressions(current, baseline, "v1", "2026-11-20").empty


def test_drop_within_tolerance_is_not_a_regression() -> None:
    baseline = card(quality("mrr", 0.80, (0.79, 0.81)))
    current = card(quality("mrr", 0.77, (0.76, 0.78)))
    assert detect_regressions(current, baseline, "v1", "2026-11-20").empty


def test_direction_is_respected() -> None:
    better = card(quality("hit_rate@1", 0.95), quality("error_rate", 0.0, tier="judge"))
    worse = card(quality("hit_rate@1", 0.50), quality("error_rate", 0.2, tier="judge"))
    assert detect_regressions(better, worse, "v1", "d")["metric"].tolist() == []
    found = detect_regressions(worse, better, "v1", "d")
    assert sorted(found["metric"]) == ["error_rate", "hit_rate@1"]


def test_latency_needs_the_absolute_floor_too() -> None:
    thresholds = Thresholds(metrics={"latency_p95_ms": {"min_change": 100}})
    baseline = card(quality("latency_p95_ms", 1.0, tier="e2e"), thresholds=thresholds)
    noisy = card(quality("latency_p95_ms", 3.0, tier="e2e"), thresholds=thresholds)
    slow = card(quality("latency_p95_ms", 250.0, tier="e2e"), thresholds=thresholds)
    assert detect_regressions(noisy, baseline, "v1", "d").empty
    assert detect_regressions(slow, baseline, "v1", "d")["metric"].tolist() == ["latency_p95_ms"]


def test_dataset_statistics_never_regress() -> None:
    baseline = card(quality("n_queries", 100, tier="dataset"))
    current = card(quality("n_queries", 10, tier="dataset"))
    assert detect_regressions(current, baseline, "v1", "d").empty


def test_bands_and_version_overrides() -> None:
    thresholds = Thresholds(
        metrics={"hit_rate@1": {"excellent": 0.8, "good": 0.5}},
        versions={"hard": {"hit_rate@1": {"excellent": 0.6, "good": 0.4}}},
    )
    assert band(0.81, thresholds.rule("hit_rate@1", "v1")) == "excellent"
    assert band(0.8, thresholds.rule("hit_rate@1", "v1")) == "good"
    assert band(0.49, thresholds.rule("hit_rate@1", "v1")) == "needs attention"
    assert band(0.65, thresholds.rule("hit_rate@1", "hard")) == "excellent"
    assert (
        band(
            0.01,
            Thresholds(metrics={"error_rate": {"excellent": 0.02, "good": 0.05}}).rule(
                "error_rate", "v1"
            ),
        )
        == "excellent"
    )
    assert band(0.3, thresholds.rule("unbanded", "v1")) is None


def test_shipped_thresholds_file_bands() -> None:
    thresholds = Thresholds.load(Path(__file__).resolve().parents[1] / "config" / "thresholds.yaml")
    assert band(0.85, thresholds.rule("avg_faithfulness", "demo-v1")) == "good"
    assert band(0.55, thresholds.rule("avg_e2e_score", "demo-v1")) == "needs attention"
    assert thresholds.rule("latency_p95_ms", "demo-v1")["higher_is_better"] is False


def store_with(tmp_path: Path, cards: dict[tuple[str, str], pd.DataFrame]) -> WarehouseStore:
    store = WarehouseStore(str(tmp_path))
    for (version, date), frame in cards.items():
        write_parquet_atomically(frame, store.scorecard_path(version, date))
    return store


def test_baseline_selection(tmp_path: Path) -> None:
    store = store_with(
        tmp_path,
        {
            ("v1", "2026-11-18"): card(quality("mrr", 0.7)),
            ("v1", "2026-11-20"): card(quality("mrr", 0.8)),
            ("v1", "2026-11-21"): card(quality("mrr", 0.6)),
            ("v0", "2026-11-01"): card(quality("mrr", 0.9), version="v0"),
        },
    )
    assert store.baseline("v1", "2026-11-21").date == "2026-11-20"
    assert store.baseline("v1", "2026-11-20").date == "2026-11-18"
    assert store.baseline("v1", "2026-11-18") is None
    assert store.baseline("v1", "2026-11-21", pinned_date="2026-11-18").date == "2026-11-18"
    pinned = store.baseline("v1", "2026-11-21", pinned_version="v0")
    assert (pinned.version, pinned.date) == ("v0", "2026-11-01")
    assert store.baseline("v1", "2026-11-21", pinned_date="2030-01-01") is None


def test_alerts_are_deduplicated_against_the_record(tmp_path: Path) -> None:
    store = store_with(tmp_path, {("v1", "2026-11-20"): card(quality("mrr", 0.9))})
    current = card(quality("mrr", 0.5))
    chosen = store.baseline("v1", "2026-11-21")
    assert chosen is not None
    regressions = detect_regressions(current, chosen.scorecard, chosen.version, chosen.date)
    assert len(new_alerts(store, "v1", regressions)) == 1
    store.record_alerts("v1", "2026-11-21", regressions)
    assert new_alerts(store, "v1", regressions).empty
    assert len(store.read_alerts("v1")) == 1


class Receiver:
    """A real HTTP endpoint on 127.0.0.1 answering a scripted sequence of status codes."""

    def __init__(self, statuses: list[int]) -> None:
        self.statuses = statuses
        self.bodies: list[dict] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                receiver.bodies.append(json.loads(self.rfile.read(length)))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = Receiver([])
    yield server
    server.server.shutdown()


def sample_regressions() -> pd.DataFrame:
    return detect_regressions(
        card(quality("mrr", 0.5)), card(quality("mrr", 0.9)), "v1", "2026-11-20"
    )


def test_webhook_delivers_json(receiver: Receiver) -> None:
    alerts = AlertsResource(webhook_url=receiver.url, backoff_s=0.01)
    delivery = alerts.deliver(sample_regressions())
    assert delivery is not None and delivery.ok and delivery.attempts == 1
    body = receiver.bodies[0]
    assert body["regressions"][0]["metric"] == "mrr"
    assert body["regressions"][0]["baseline_value"] == 0.9


def test_webhook_retries_5xx_then_succeeds(receiver: Receiver) -> None:
    receiver.statuses[:] = [500, 503]
    delivery = AlertsResource(webhook_url=receiver.url, backoff_s=0.01).deliver(
        sample_regressions()
    )
    assert delivery.ok and delivery.attempts == 3 and len(receiver.bodies) == 3


def test_webhook_failure_is_reported_not_raised(receiver: Receiver) -> None:
    receiver.statuses[:] = [500] * 10
    delivery = post_json(receiver.url, {"x": 1}, max_retries=2, backoff_s=0.01)
    assert (delivery.ok, delivery.attempts, delivery.status) == (False, 3, 500)
    unreachable = post_json(
        "http://127.0.0.1:9/nothing", {"x": 1}, max_retries=1, backoff_s=0.01, timeout_s=0.5
    )
    assert not unreachable.ok and unreachable.attempts == 2 and unreachable.error


def test_slack_payload_is_text() -> None:
    payload = alert_payload(sample_regressions(), "slack")
    assert set(payload) == {"text"}
    assert "mrr: 0.9000 → 0.5000 (-44.4%" in payload["text"]
