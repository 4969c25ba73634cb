"""Sensors: register new dataset versions (and evaluate them), alert on metric regressions."""

import json
from datetime import UTC, datetime
from pathlib import Path

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from rag_eval_pipeline.alerting import AlertContext, alert_lines
from rag_eval_pipeline.assets.scorecard import HEADLINE_METRICS
from rag_eval_pipeline.datasets.versions import folder_signature
from rag_eval_pipeline.evaluation.alerts import new_alerts
from rag_eval_pipeline.evaluation.store import REGRESSIONS_ASSET, REPORT_ASSET
from rag_eval_pipeline.jobs import evaluation_job
from rag_eval_pipeline.partitions import (
    DATASET_VERSION,
    DATE,
    dataset_version_partitions,
    evaluation_partition_key,
    evaluation_partitions,
)
from rag_eval_pipeline.resources import AlertsResource, DatasetsResource, WarehouseResource


def today() -> str:
    """Today's date partition key (UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%d")


@sensor(
    job=evaluation_job,
    minimum_interval_seconds=60,
    default_status=DefaultSensorStatus.RUNNING,
    description=(
        "Validates every new folder under data/datasets/ (all its tables), registers the valid "
        "ones as dataset_version partitions and requests today's evaluation for them; invalid "
        "folders are reported in the skip reason and log, not registered, and validated again "
        "only once their files change."
    ),
)
def dataset_version_sensor(
    context: SensorEvaluationContext, datasets: DatasetsResource
) -> SensorResult | SkipReason:
    scan = datasets.scan()
    registered = set(context.instance.get_dynamic_partitions(DATASET_VERSION))
    rejected_before: dict[str, list[str]] = json.loads(context.cursor) if context.cursor else {}
    rejected: dict[str, list[str]] = {}
    new_versions = []
    for version in (v for v in scan.valid if v not in registered):
        signature = folder_signature(Path(datasets.root) / version)
        before = rejected_before.get(version)
        problem = before[1] if before and before[0] == signature else datasets.problem(version)
        if problem is None:
            new_versions.append(version)
        else:
            rejected[version] = [signature, problem]
    context.update_cursor(json.dumps(rejected, sort_keys=True))
    invalid = {**scan.invalid, **{name: reason for name, (_, reason) in rejected.items()}}
    for name, reason in invalid.items():
        context.log.warning(f"Dataset folder {name!r} not registered: {reason}")
    if not new_versions:
        reasons = "; ".join(f"{name!r}: {reason}" for name, reason in invalid.items())
        return SkipReason(
            "No new dataset versions." + (f" Rejected folders: {reasons}" if reasons else "")
        )
    day = today()
    return SensorResult(
        run_requests=[
            RunRequest(
                run_key=f"{version}|{day}",
                partition_key=evaluation_partition_key(version, day),
                tags={"rag_eval/trigger": "new_dataset_version"},
            )
            for version in new_versions
        ],
        dynamic_partitions_requests=[dataset_version_partitions.build_add_request(new_versions)],
    )


def _alert_partition(
    context: SensorEvaluationContext,
    partition: str,
    warehouse: WarehouseResource,
    alerts: AlertsResource,
) -> int:
    """Alert, once, the new alerted rows of one materialized `metric_regressions` partition."""
    keys = evaluation_partitions.get_partition_key_from_str(partition).keys_by_dimension
    version, day = keys[DATASET_VERSION], keys[DATE]
    store = warehouse.store()
    verdicts = store.read_partition(REGRESSIONS_ASSET, version, day)
    if verdicts is None:
        context.log.warning(f"metric_regressions {partition} is recorded but not stored; skipped.")
        return 0
    regressions = new_alerts(store, version, verdicts[verdicts["alert"].astype(bool)])
    if regressions.empty:
        return 0
    for line in alert_lines(regressions):
        context.log.warning(f"Regression: {line}")
    report = store.read_partition(REPORT_ASSET, version, day)
    where = AlertContext(
        version,
        day,
        report_path=str(report["path"].iloc[0]) if report is not None and len(report) else None,
        ui_url=alerts.ui_url,
        headline_metrics=HEADLINE_METRICS,
    )
    delivery = alerts.deliver(regressions, where)
    if delivery is not None and not delivery.ok:
        context.log.error(
            f"Alert webhook failed after {delivery.attempts} attempt(s): {delivery.error}"
        )
    recorded = regressions.assign(
        alerted_at=datetime.now(UTC).isoformat(),
        delivered=None if delivery is None else delivery.ok,
        delivery_error=None if delivery is None else delivery.error,
    )
    store.record_alerts(version, day, recorded)
    return len(regressions)


@sensor(
    minimum_interval_seconds=30,
    default_status=DefaultSensorStatus.RUNNING,
    description=(
        "After each metric_regressions materialization, alerts once per partition on its new "
        "regressed (or missing-today) metrics: Dagster log, the regression_alerts record, and "
        "one message to the configured webhook."
    ),
)
def regression_alert_sensor(
    context: SensorEvaluationContext,
    warehouse: WarehouseResource,
    alerts: AlertsResource,
) -> SkipReason:
    after = int(context.cursor) if context.cursor else None
    records = context.instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey(REGRESSIONS_ASSET), after_storage_id=after),
        limit=100,
        ascending=True,
    ).records
    raised = 0
    for record in records:
        if record.partition_key:
            raised += _alert_partition(context, record.partition_key, warehouse, alerts)
        context.update_cursor(str(record.storage_id))
    return SkipReason(
        f"Evaluated {len(records)} new metric_regressions materialization(s); "
        f"raised {raised} alert(s)."
    )
