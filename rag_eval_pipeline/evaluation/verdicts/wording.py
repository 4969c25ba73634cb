"""The words of a verdict: its labels and every reason a verdict row gives, in one place.

`evaluation.verdicts.decide` chooses the verdict; the functions here say why, so the summary,
the report, `rag-eval alerts` and the checks read the same sentence.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

REGRESSED, IMPROVED, NO_CHANGE, UNTESTABLE, NOT_COMPARABLE = (
    "regressed",
    "improved",
    "no significant change",
    "untestable",
    "not comparable",
)
VERDICTS = (REGRESSED, IMPROVED, NO_CHANGE, UNTESTABLE, NOT_COMPARABLE)
MISSING_TODAY = "missing today"
NO_VALUE = "no value on either date"
NO_BASELINE_YET = "no baseline yet (first evaluation)"
NO_BASELINE_VALUE = "no baseline value"
# The reason of a metric compared across a model change (`evaluation.model_bridge`) starts so.
BRIDGED = "baseline rebuilt with today's"
OUTAGE = "judge outage"
COVERAGE_DROPPED = "coverage dropped"
NO_TRAFFIC = "no traffic"
# The label of a primary metric alerted on its effect alone (its items are too few to test).
TOO_FEW_ITEMS = "effect only: too few items to test"
MONITORED = " (monitored: never alerted)"


def model_changed(role: str, ids: str, note: str | None) -> str:
    """`judge changed (old → new)`, with why the baseline could not be rebuilt (`note`)."""
    return f"{role} changed ({ids})" + (f": {note}" if note else "")


def bridged(
    change: str,
    moves: list[tuple[str, str]],
    step: str,
    shift: float,
    n_items: int,
    agreement: Mapping[str, float],
) -> str:
    """How a model `change` alone moved a metric compared across it (`evaluation.model_bridge`):
    the models (old, new), the bridge's step, the shift on the baseline's items and the finite
    agreement figures between the two models' scores."""
    models = ", ".join(f"{old} → {new}" for old, new in moves)
    agreed = ", ".join(
        f"{name} {value:.2f}" for name, value in agreement.items() if math.isfinite(value)
    )
    return (
        f"{BRIDGED} {change} ({models}; {step}): the change alone moved it "
        f"{shift:+.4f} on {n_items} items" + (f" ({agreed})" if agreed else "")
    )


def judge_outage(error_rate: float) -> str:
    """A metric most of whose judgments failed today."""
    return f"{OUTAGE}: {error_rate:.0%} of its judgments failed today"


def no_traffic(lost: bool, baseline_volume: float, every_day: bool) -> str:
    """A traffic tier's row on a day without interactions: the `volume` row (`lost`) says how
    many there were on the baseline date, its other rows that there are none today."""
    if not lost:
        return f"{NO_TRAFFIC} today"
    note = "" if every_day else " (not expected every day: dataset.yaml traffic_every_day)"
    return f"{NO_TRAFFIC}: no interaction today ({baseline_volume:.0f} on the baseline date){note}"


def coverage_dropped(now: int, asked: int, was: int) -> str:
    """`coverage dropped: 10 of 20 items scored (was 20)`."""
    return f"{COVERAGE_DROPPED}: {now} of {asked} items scored (was {was})"


def with_coverage(reason: str, coverage: str, regressed: bool) -> str:
    """A row whose coverage dropped: added after the reason of a regression (on the items left),
    else in front of it (the row is not comparable)."""
    return f"{reason}; {coverage}" if regressed else f"{coverage} ({reason})"


def untestable(
    n_paired: int, floor: float, bar: float, needed: float, alerted_p: float | None
) -> str:
    """Why a row cannot be tested, and about how many items (`needed`) would detect today's
    change; `alerted_p` (the metric's own one-sided p-value) when it is alerted on its effect."""
    bounds = f"smallest reachable p {floor:.3g} > this metric's bar {bar:.3g}"
    if alerted_p is None:
        text = f"n = {n_paired}: too few items to test ({bounds})"
    else:
        own = f"its own test alone: p = {alerted_p:.3g}"
        text = f"{TOO_FEW_ITEMS}: n = {n_paired} ({bounds}; {own})"
    if n_paired and math.isfinite(needed):
        text += f"; about {int(needed)} items would detect this change"
    return text


def nothing_to_test(unpaired: bool) -> str:
    """A degenerate test: nothing moved, so there is nothing to test."""
    if unpaired:
        return "every value equal on both dates: nothing to test"
    return "no item changed: nothing to test"


def tested(verdict: str, effect_only: bool, q: float, alpha: float, tolerance: float) -> str:
    """Why a comparable metric got its verdict from its test (or the effect rule), in words."""
    evidence = "no per-item scores: effect rule alone" if effect_only else f"q = {q:.4g}"
    if verdict in (REGRESSED, IMPROVED):
        bound = "" if effect_only else f" < α = {alpha:g}"
        return f"{evidence}{bound}, change beyond the {tolerance:.0%} tolerance"
    if effect_only or q < alpha:
        return f"{evidence}; change within the {tolerance:.0%} tolerance"
    return f"{evidence} ≥ α = {alpha:g}"


def unpaired_sizes(n_baseline: int, n_current: int) -> str:
    """The sample sizes an unpaired test compared."""
    return f" (unpaired: {n_baseline} values on the baseline date, {n_current} today)"


def discordance_basis(discordance: float, floored: bool, days: int) -> str:
    """The planner's assumption for a 0/1 metric."""
    floor = " (the floor)" if floored else ""
    return f"assuming a discordance of {discordance:.1%}{floor}, pooled {_span(days)}"


def spread_basis(spread: float, floor_share: float | None, days: int) -> str:
    """The planner's assumption for a continuous metric (`floor_share`: the floor's share of
    the baseline, when the floor was used)."""
    floor = "" if floor_share is None else f" (the floor, {floor_share:.0%} of the baseline)"
    return f"assuming a per-item spread of {spread:.3g}{floor}, pooled {_span(days)}"


def _span(days: int) -> str:
    return f"over {days} day{'s' if days != 1 else ''}"
