"""Delivering regression alerts: a JSON webhook (generic or Slack incoming-webhook format).

Delivery retries with exponential backoff on connection errors and 5xx replies and never raises:
it returns what happened, so a broken webhook is logged and the sensor goes on.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from rag_eval_pipeline.escaping import slack_text


@dataclass(frozen=True)
class Delivery:
    """The outcome of one webhook delivery."""

    ok: bool
    attempts: int
    status: int | None
    error: str | None


def alert_lines(regressions: pd.DataFrame, escape: Callable[[object], str] = str) -> list[str]:
    """One human-readable line per regression, every dataset-derived value passed through `escape`
    (`slack_text` for Slack, so a system named `<!channel>` is shown, never a ping)."""
    return [
        f"{escape(r.dataset_version)} {escape(r.date)} · {escape(r.tier)} · {escape(r.system)} · "
        f"{escape(r.metric)}: {r.baseline_value:.4f} → {r.value:.4f} ({r.relative_change:+.1%}; "
        f"baseline {escape(r.baseline_version)} {escape(r.baseline_date)})"
        for r in regressions.itertuples()
    ]


def alert_payload(regressions: pd.DataFrame, style: str) -> dict[str, Any]:
    """The webhook body: Slack `{"text": ...}` or a generic JSON document with every field."""
    title = f"rag_eval_pipeline: {len(regressions)} metric regression(s)"
    if style == "slack":
        return {
            "text": "\n".join(
                [f"*{title}*", *(f"• {line}" for line in alert_lines(regressions, slack_text))]
            )
        }
    records = json.loads(regressions.to_json(orient="records"))
    return {"title": title, "regressions": records}


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
