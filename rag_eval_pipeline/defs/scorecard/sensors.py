"""The regression-alert sensor: delivers each partition's new `metric_regressions` alerts once,
and retries, on later ticks, the alerts whose webhook delivery failed."""

from datetime import UTC, datetime

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    DefaultSensorStatus,
    SensorEvaluationContext,
    SkipReason,
    sensor,
)

from rag_eval_pipeline.defs.scorecard.assets import HEADLINE_METRICS
from rag_eval_pipeline.defs.shared.partitions import (
    DATASET_VERSION,
    DATE,
    evaluation_partition_key,
    evaluation_partitions,
)
from rag_eval_pipeline.defs.shared.resources import AlertsResource, WarehouseResource
from rag_eval_pipeline.evaluation.alerts import new_alerts, undelivered_partitions
from rag_eval_pipeline.evaluation.headline import headline
from rag_eval_pipeline.reporting.alerting import AlertContext, alert_lines
from rag_eval_pipeline.storage.warehouse import REGRESSIONS_ASSET, REPORT_ASSET
from rag_eval_pipeline.text.escaping import terminal_text


def _alert_partition(
    context: SensorEvaluationContext,
    version: str,
    day: str,
    warehouse: WarehouseResource,
    alerts: AlertsResource,
) -> int:
    """Alert, once, the new (or undelivered) alerted rows of one `metric_regressions` partition."""
    store = warehouse.store()
    verdicts = store.read_partition(REGRESSIONS_ASSET, version, day)
    if verdicts is None:
        partition = evaluation_partition_key(version, day)
        context.log.warning(
            f"metric_regressions {terminal_text(partition)} is recorded but not stored; skipped."
        )
        return 0
    regressions = new_alerts(store, version, verdicts[verdicts["alert"].astype(bool)])
    if regressions.empty:
        return 0
    for line in alert_lines(regressions):
        context.log.warning(f"Regression: {terminal_text(line)}")
    report = store.read_partition(REPORT_ASSET, version, day)
    where = AlertContext(
        version,
        day,
        report_path=str(report["path"].iloc[0]) if report is not None and len(report) else None,
        ui_url=alerts.ui_url,
        headline_metrics=HEADLINE_METRICS,
        headline=headline(verdicts).text,
    )
    delivery = alerts.deliver(regressions, where)
    if delivery is not None and not delivery.ok:
        context.log.error(
            f"Alert webhook failed after {delivery.attempts} attempt(s): "
            f"{terminal_text(delivery.error)}"
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
    raised, done = 0, set()
    for record in records:
        if record.partition_key:
            keys = evaluation_partitions.get_partition_key_from_str(record.partition_key)
            partition = (keys.keys_by_dimension[DATASET_VERSION], keys.keys_by_dimension[DATE])
            raised += _alert_partition(context, *partition, warehouse, alerts)
            done.add(partition)
        context.update_cursor(str(record.storage_id))
    retried = [p for p in undelivered_partitions(warehouse.store()) if p not in done]
    for partition in retried:
        raised += _alert_partition(context, *partition, warehouse, alerts)
    return SkipReason(
        f"Evaluated {len(records)} new metric_regressions materialization(s) and retried "
        f"{len(retried)} partition(s) with undelivered alerts; raised {raised} alert(s)."
    )
