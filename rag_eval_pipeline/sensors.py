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

from rag_eval_pipeline.alerting import alert_lines
from rag_eval_pipeline.datasets.versions import folder_signature
from rag_eval_pipeline.evaluation.alerts import new_alerts, regressions_for
from rag_eval_pipeline.evaluation.store import SCORECARD_ASSET
from rag_eval_pipeline.jobs import evaluation_job
from rag_eval_pipeline.partitions import (
    DATASET_VERSION,
    dataset_version_partitions,
    evaluation_partition_key,
)
from rag_eval_pipeline.resources import (
    AlertsResource,
    BaselineResource,
    DatasetsResource,
    WarehouseResource,
)


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
    baseline: BaselineResource,
) -> int:
    """Evaluate one materialized scorecard partition; alert and record new regressions."""
    version, day = partition.split("|")
    store = warehouse.store()
    current = store.read_scorecard(version, day)
    if current is None:
        context.log.warning(f"Scorecard {partition} is recorded but not stored; skipped.")
        return 0
    regressions = new_alerts(
        store, version, regressions_for(current, baseline.select(store, version, day))
    )
    if regressions.empty:
        return 0
    for line in alert_lines(regressions):
        context.log.warning(f"Regression: {line}")
    delivery = alerts.deliver(regressions)
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
        "After each scorecard materialization, compares it with its baseline and alerts once "
        "per regression: Dagster log, the regression_alerts record, and the configured webhook."
    ),
)
def regression_alert_sensor(
    context: SensorEvaluationContext,
    warehouse: WarehouseResource,
    alerts: AlertsResource,
    baseline: BaselineResource,
) -> SkipReason:
    after = int(context.cursor) if context.cursor else None
    records = context.instance.fetch_materializations(
        AssetRecordsFilter(asset_key=AssetKey(SCORECARD_ASSET), after_storage_id=after),
        limit=100,
        ascending=True,
    ).records
    raised = 0
    for record in records:
        if record.partition_key:
            raised += _alert_partition(context, record.partition_key, warehouse, alerts, baseline)
        context.update_cursor(str(record.storage_id))
    return SkipReason(
        f"Evaluated {len(records)} new scorecard materialization(s); raised {raised} alert(s)."
    )
