"""Delivering regression alerts: a JSON webhook (generic or Slack incoming-webhook format).

One message per partition (see `alert_payload`).

Delivery retries with exponential backoff on connection errors and 5xx replies and never raises:
it returns what happened, so a broken webhook is logged and the sensor goes on.
"""

from __future__ import annotations

import json
import math
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rag_eval_pipeline.evaluation.verdicts.planner import ITEMS_NEEDED_DROP
from rag_eval_pipeline.evaluation.verdicts.significance import EFFECT_ONLY, UNPAIRED_TESTS
from rag_eval_pipeline.evaluation.verdicts.wording import MISSING_TODAY, OUTAGE, TOO_FEW_ITEMS
from rag_eval_pipeline.text.escaping import slack_text, visible_text


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
    # The partition's headline (`evaluation.headline`), the words every surface leads with.
    headline: str = ""

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


def number(value: Any, template: str = "{:.4f}") -> str:
    """`value` formatted, or an em dash for a missing or NaN value (never `nan`)."""
    if value is None or pd.isna(value):
        return "—"
    return template.format(value)


def change_text(relative: Any, base: Any = None, value: Any = None) -> str:
    """A relative change as a signed percentage (`-12.5%`); from a zero baseline, where no
    relative change exists, the change in points (`+50.0 points` for a value within 0–1,
    else `+3.2 from 0`): never infinite; `—` when unknown."""
    if relative is not None and not pd.isna(relative) and math.isfinite(relative):
        return f"{relative:+.1%}"
    if base is None or pd.isna(base) or base != 0 or value is None or pd.isna(value):
        return "—"
    if 0.0 <= float(value) <= 1.0:
        return f"{float(value) * 100:+.1f} points"
    return f"{float(value):+.4g} from 0"


def row_change(row: Any) -> str:
    """`change_text` of a verdict row (its relative change, baseline and value)."""
    return change_text(
        getattr(row, "relative_change", None),
        getattr(row, "baseline_value", None),
        getattr(row, "value", None),
    )


def sample_size(row: Any) -> str:
    """`<pairs>`, `<baseline> vs <today>` for an unpaired test's two samples, `effect only` for
    a row without a test; "" if unknown."""
    test = getattr(row, "test", None)
    if test in UNPAIRED_TESTS:
        return f"{row.n_only_baseline} vs {row.n_only_current}"
    if test == EFFECT_ONLY or str(getattr(row, "reason", "")).startswith(TOO_FEW_ITEMS):
        return "effect only"
    paired = getattr(row, "n_paired", None)
    if paired is not None and not pd.isna(paired) and paired > 0:
        return str(int(paired))
    return _optional(row, "n_items", "{:.0f}")


def _sample_size_suffix(row: Any) -> str:
    """`, n = <sample_size>` (or `, effect only, <count> values`) when there is one."""
    size = sample_size(row)
    if size == "effect only":
        return ", effect only" + _optional(row, "n_items", ", n = {:.0f}")
    return f", n = {size}" if size else ""


def alert_line(row: Any, escape: Callable[[object], str] = str) -> str:
    """`metric [role]: baseline → current (change; q, n) — reason` for one alerted row, values
    escaped; a missing value reads as `—`, never `nan`."""
    reason = str(getattr(row, "reason", ""))
    role = _optional(row, "role", " [{}]")
    name = f"{escape(row.metric)}{role}"
    if reason == MISSING_TODAY:
        return f"{name}: {number(row.baseline_value)} → missing today"
    details = _optional(row, "q_value", "; q = {:.3g}") + _sample_size_suffix(row)
    change = row_change(row)
    labelled = reason.startswith((OUTAGE, TOO_FEW_ITEMS))
    label = f" — {escape(reason.split(';')[0])}" if labelled else ""
    return f"{name}: {number(row.baseline_value)} → {number(row.value)} ({change}{details}){label}"


def items_needed_lines(verdicts: pd.DataFrame) -> list[str]:
    """ "To catch a 10% drop of <metric> (<system>): ≈ N questions, assuming <the pooled noise>;
    you have n" for every primary metric with an estimate."""
    if "items_needed" not in verdicts.columns:
        return []
    rows = verdicts[verdicts["items_needed"].notna() & (verdicts["role"] == "primary")]
    drop = f"{ITEMS_NEEDED_DROP:.0%}"
    return [
        f"to catch a {drop} drop of {r.metric} ({r.system}): "
        + (
            f"≈ {int(r.items_needed)} questions"
            if np.isfinite(r.items_needed)
            else "no number of questions (too noisy)"
        )
        + (f", {r.items_needed_basis}" if getattr(r, "items_needed_basis", "") else "")
        + f"; you have {int(r.n_paired)}"
        for r in rows.itertuples()
    ]


def alert_lines(regressions: pd.DataFrame) -> list[str]:
    """One human-readable line per alerted row (Dagster log and `rag-eval run`)."""
    return [
        f"{r.dataset_version} {r.date} · {r.tier} · {r.system} · {alert_line(r)} "
        f"(baseline {r.baseline_version} {r.baseline_date})"
        for r in regressions.itertuples()
    ]


def ordered_alerts(regressions: pd.DataFrame, headline_metrics: Sequence[str]) -> pd.DataFrame:
    """Alerted rows by system: missing-today and outages first, then primary and headline
    metrics, then the largest relative change."""
    reasons = regressions.get("reason", pd.Series("", index=regressions.index)).astype(str)
    primary = regressions.get("role", pd.Series("", index=regressions.index)).eq("primary")
    return (
        regressions.assign(
            _missing=(reasons != MISSING_TODAY) & ~reasons.str.startswith(OUTAGE),
            _other=~(regressions["metric"].isin(list(headline_metrics)) | primary),
            _size=-regressions["relative_change"].abs().fillna(np.inf),
        )
        .sort_values(["system", "_missing", "_other", "_size"], kind="stable")
        .drop(columns=["_missing", "_other", "_size"])
    )


def alert_payload(
    regressions: pd.DataFrame, style: str, context: AlertContext | None = None
) -> dict[str, Any]:
    """One partition's alert: Slack `{"text": ...}` or a generic JSON document.

    Title with the version, the date and the partition's headline; grouped by system, at most
    `MAX_LISTED_PER_SYSTEM` metrics each (the rest counted); each with baseline → current,
    relative change, q and n; then where to look (the report file, the asset partition). Every
    dataset-derived value in Slack text is escaped (`slack_text`); the JSON document's texts
    show invisible characters as escapes (`visible_text`).
    """
    first = regressions.iloc[0]
    where = context or AlertContext(str(first["dataset_version"]), str(first["date"]))
    ordered = ordered_alerts(regressions, where.headline_metrics)
    told = where.headline or f"{len(regressions)} alert(s)"
    title = (
        f"rag_eval_pipeline: {where.dataset_version} {where.date}: {told} "
        f"(baseline {first['baseline_version']} {first['baseline_date']})"
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
    records = json.loads(shown.to_json(orient="records"))
    return {
        "title": visible_text(title),
        "dataset_version": where.dataset_version,
        "date": where.date,
        "n_alerts": len(regressions),
        "n_not_listed": len(regressions) - len(shown),
        "report": where.report_path,
        "asset": where.asset_link,
        "regressions": [
            {k: visible_text(v) if isinstance(v, str) else v for k, v in record.items()}
            for record in records
        ],
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
