"""Delivering regression alerts: a JSON webhook (generic or Slack incoming-webhook format).

One message per partition (see `alert_payload`).

Delivery retries with exponential backoff on connection errors and 5xx replies and never raises:
it returns what happened, so a broken webhook is logged and the sensor goes on.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rag_eval_pipeline.evaluation.regression import MISSING_TODAY, OUTAGE, UNPAIRED_TESTS
from rag_eval_pipeline.reporting.escaping import slack_text


@dataclass(frozen=True)
class Delivery:
    """The outcome of one webhook delivery."""

    ok: bool
    attempts: int
    status: int | None
    error: str | None


# Per system, at most this many alerted metrics are listed (headline metrics first); the rest
# is summarised as a count, so one bad day is one readable message, not 70 flat rows.
MAX_LISTED_PER_SYSTEM = 5


@dataclass(frozen=True)
class AlertContext:
    """Where a reader of one partition's alert looks next."""

    dataset_version: str
    date: str
    report_path: str | None = None
    ui_url: str | None = None
    headline_metrics: Sequence[str] = ()

    @property
    def asset_link(self) -> str:
        """The `metric_regressions` partition in the Dagster UI (`ui_url`), else its name."""
        partition = f"{self.dataset_version}|{self.date}"
        if not self.ui_url:
            return f"asset metric_regressions, partition {partition}"
        query = urllib.parse.urlencode({"partition": partition})
        return f"{self.ui_url.rstrip('/')}/assets/metric_regressions?{query}"


def _optional(row: Any, name: str, template: str) -> str:
    value = getattr(row, name, None)
    return "" if value is None or pd.isna(value) else template.format(value)


def sample_size(row: Any) -> str:
    """`<pairs>`, or `<baseline> vs <today>` for an unpaired test's two samples; "" if unknown."""
    if getattr(row, "test", None) in UNPAIRED_TESTS:
        return f"{row.n_only_baseline} vs {row.n_only_current}"
    return _optional(row, "n_paired", "{}")


def _sample_size_suffix(row: Any) -> str:
    """`, n = <sample_size>` when there is one."""
    size = sample_size(row)
    return f", n = {size}" if size else ""


def alert_line(row: Any, escape: Callable[[object], str] = str) -> str:
    """`metric: baseline → current (change; q, n)` for one alerted row, values escaped."""
    reason = getattr(row, "reason", "")
    details = _optional(row, "q_value", "; q = {:.3g}") + _sample_size_suffix(row)
    if reason == MISSING_TODAY:
        return f"{escape(row.metric)}: {row.baseline_value:.4f} → missing today"
    outage = f" — {escape(reason)}" if str(reason).startswith(OUTAGE) else ""
    return (
        f"{escape(row.metric)}: {row.baseline_value:.4f} → {row.value:.4f} "
        f"({row.relative_change:+.1%}{details}){outage}"
    )


def alert_lines(regressions: pd.DataFrame) -> list[str]:
    """One human-readable line per alerted row (Dagster log and `rag-eval run`)."""
    return [
        f"{r.dataset_version} {r.date} · {r.tier} · {r.system} · {alert_line(r)} "
        f"(baseline {r.baseline_version} {r.baseline_date})"
        for r in regressions.itertuples()
    ]


def ordered_alerts(regressions: pd.DataFrame, headline_metrics: Sequence[str]) -> pd.DataFrame:
    """Alerted rows by system: missing-today and outages first, then headline metrics, then the
    largest relative change."""
    reasons = regressions.get("reason", pd.Series("", index=regressions.index)).astype(str)
    return (
        regressions.assign(
            _missing=(reasons != MISSING_TODAY) & ~reasons.str.startswith(OUTAGE),
            _other=~regressions["metric"].isin(list(headline_metrics)),
            _size=-regressions["relative_change"].abs().fillna(np.inf),
        )
        .sort_values(["system", "_missing", "_other", "_size"], kind="stable")
        .drop(columns=["_missing", "_other", "_size"])
    )


def alert_payload(
    regressions: pd.DataFrame, style: str, context: AlertContext | None = None
) -> dict[str, Any]:
    """One partition's alert: Slack `{"text": ...}` or a generic JSON document.

    Title with the version and date; grouped by system, at most `MAX_LISTED_PER_SYSTEM`
    metrics each (the rest counted); each with baseline → current, relative change, q and n;
    then where to look (the report file, the asset partition). Every dataset-derived value in
    Slack text is escaped (`slack_text`).
    """
    first = regressions.iloc[0]
    where = context or AlertContext(str(first["dataset_version"]), str(first["date"]))
    ordered = ordered_alerts(regressions, where.headline_metrics)
    title = (
        f"rag_eval_pipeline: {len(regressions)} regression alert(s) on "
        f"{where.dataset_version} {where.date} (baseline {first['baseline_version']} "
        f"{first['baseline_date']})"
    )
    groups = [(str(system), rows) for system, rows in ordered.groupby("system", sort=False)]
    look = [f"report: {where.report_path}"] if where.report_path else []
    look.append(where.asset_link)
    if style == "slack":
        lines = [f"*{slack_text(title)}*"]
        for system, rows in groups:
            lines.append(f"*{slack_text(system)}*")
            lines += [
                f"• {alert_line(r, slack_text)}"
                for r in rows.head(MAX_LISTED_PER_SYSTEM).itertuples()
            ]
            if len(rows) > MAX_LISTED_PER_SYSTEM:
                lines.append(f"• … and {len(rows) - MAX_LISTED_PER_SYSTEM} more")
        lines += [f"_{slack_text(item)}_" for item in look]
        return {"text": "\n".join(lines)}
    shown = pd.concat([rows.head(MAX_LISTED_PER_SYSTEM) for _, rows in groups])
    return {
        "title": title,
        "dataset_version": where.dataset_version,
        "date": where.date,
        "n_alerts": len(regressions),
        "n_not_listed": len(regressions) - len(shown),
        "report": where.report_path,
        "asset": where.asset_link,
        "regressions": json.loads(shown.to_json(orient="records")),
    }


def post_json(
    url: str,
    payload: dict[str, Any],
    *,
    timeout_s: float = 10.0,
    max_retries: int = 3,
    backoff_s: float = 1.0,
) -> Delivery:
    """POST `payload` as JSON, retrying connection errors and 5xx with exponential backoff."""
    body = json.dumps(payload).encode()
    error: str | None = None
    status: int | None = None
    for attempt in range(1, max_retries + 2):
        request = urllib.request.Request(
            url, data=body, headers={"Content-Type": "application/json"}, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return Delivery(True, attempt, response.status, None)
        except urllib.error.HTTPError as exc:
            status, error = exc.code, f"HTTP {exc.code}"
            if exc.code < 500:
                return Delivery(False, attempt, status, error)
        except (urllib.error.URLError, TimeoutError, OSError) as exc:
            status, error = None, f"{type(exc).__name__}: {exc}"
        if attempt <= max_retries:
            time.sleep(backoff_s * 2 ** (attempt - 1))
    return Delivery(False, max_retries + 1, status, error)
