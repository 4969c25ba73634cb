"""How the report writes numbers: values, q-values, counts, changes and detectable changes.

Plain strings, `—` for a missing value; the report's templates show them as they are.
"""

from __future__ import annotations

import math

from rag_eval_pipeline.reporting.alerting import change_text


def format_value(value: object) -> str:
    """A metric value for display: thousands grouped, precision by magnitude, `—` if missing."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    number = float(value)  # type: ignore[arg-type]
    if number.is_integer() and abs(number) >= 10:
        return f"{number:,.0f}"
    if abs(number) >= 100:
        return f"{number:,.1f}"
    return f"{number:.2f}" if abs(number) >= 10 else f"{number:.3f}"


def format_q(value: object) -> str:
    """A q-value with two significant digits (`0.00022`), `—` if missing."""
    number = float(value)  # type: ignore[arg-type]
    return "—" if math.isnan(number) else f"{number:.2g}"


def format_count(value: object) -> str:
    """A count with thousands grouped, `—` if missing."""
    number = float(value)  # type: ignore[arg-type]
    return "—" if math.isnan(number) else f"{number:,.0f}"


def format_change(relative: float, base: object = None, value: object = None) -> str:
    """A relative change as a signed percentage (`+4.2%`, `−12.0%`); from a zero baseline the
    change in points (`alerting.change_text`); `new` without a baseline."""
    text = change_text(relative, base, value)
    return "new" if text == "—" else text.replace("-", "−")


def format_detectable(relative: float) -> str:
    """The smallest flaggable change (`≥ 12.5%`; `≥ 364×` from 10 times the baseline on, e.g.
    a 100 ms floor on a 0.3 ms latency), `none at this n` when no change can be flagged, `—`
    when it is not computed (not compared, an unpaired test, a zero baseline)."""
    if math.isnan(relative):
        return "—"
    if math.isinf(relative):
        return "none at this n"
    return f"≥ {relative:,.0f}×" if relative >= 10 else f"≥ {relative * 100:.1f}%"


def format_ci(low: float, high: float) -> str | None:
    """A 95% CI as `low – high`; None (shown as a muted `—`) when a bound is missing."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return None
    return f"{format_value(low)} – {format_value(high)}"
