"""The day's headline: one partition's `metric_regressions` rows read once, as counts and words.

Every surface reads a partition through `headline` (and its rows through `change_kinds`): the
`rag-eval run` summary line and its `--fail-on-regression` gate, the report's tiles, "What
changed" and week table, `rag-eval alerts`, the `scorecard_regressions` check and the alert
sensor's message. They say the same thing with the same numbers.

Each row has at most one kind (`change_kinds`):

- `regression`: alerted, and the metric moved the bad way (verdict `regressed`, or an untestable
  primary metric alerted on its effect);
- `outage`: alerted otherwise (`missing today`, `judge outage`, `coverage dropped`,
  `no traffic`);
- `untestable`: not alerted, verdict `untestable`, moved beyond its tolerance either way;
- `improvement`: verdict `improved`, not monitored;
- `monitored`: a `monitor` metric that regressed or improved (shown and counted apart, never
  alerted).

The day's `state`, the rule `--fail-on-regression` applies (`GATE_EXIT`):

- `first evaluation`: no baseline yet (exit 0);
- `alert`: a regression or an outage (exit 3);
- `undecided`: no alert, but a primary metric moved the bad way beyond its tolerance on too few
  items to test: nothing says it did not regress, so the gate does not pass (exit 4; add
  questions, or pin the baseline to accept the change);
- `quiet`: anything else (exit 0).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rag_eval_pipeline.evaluation.scorecard import MONITOR, PRIMARY
from rag_eval_pipeline.evaluation.verdicts.wording import IMPROVED, REGRESSED, UNTESTABLE

REGRESSION, OUTAGE, UNTESTED, IMPROVEMENT, MONITORED = (
    "regression",
    "outage",
    "untestable",
    "improvement",
    "monitored",
)
KINDS = (REGRESSION, OUTAGE, UNTESTED, IMPROVEMENT, MONITORED)
FIRST, ALERT, UNDECIDED, QUIET = "first evaluation", "alert", "undecided", "quiet"
# The exit code of `rag-eval run --fail-on-regression` for a partition in each state.
GATE_EXIT = {FIRST: 0, QUIET: 0, ALERT: 3, UNDECIDED: 4}


def _column(rows: pd.DataFrame, name: str, default: object) -> pd.Series:
    if name in rows.columns:
        return rows[name]
    return pd.Series(default, index=rows.index)


def worse_beyond_tolerance(rows: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per row: moved beyond its tolerance (|relative change| > `threshold`; any change from a
    zero baseline), and moved the bad way."""
    base = _column(rows, "baseline_value", np.nan).to_numpy(dtype=float)
    delta = _column(rows, "value", np.nan).to_numpy(dtype=float) - base
    relative = _column(rows, "relative_change", np.nan).to_numpy(dtype=float)
    delta = np.where(np.isfinite(delta), delta, np.nan_to_num(relative, posinf=1.0, neginf=-1.0))
    higher = _column(rows, "higher_is_better", True).fillna(True).to_numpy(dtype=bool)
    tolerance = _column(rows, "threshold", 0.0).fillna(0.0).to_numpy(dtype=float)
    beyond = np.where(np.isfinite(relative), np.abs(relative) > tolerance, delta != 0)
    return beyond, np.where(higher, delta < 0, delta > 0)


def change_kinds(rows: pd.DataFrame) -> pd.Series:
    """Each row's kind (module doc), None for a row that is not a change."""
    verdict = _column(rows, "verdict", "").astype(str).to_numpy()
    alert = _column(rows, "alert", False).fillna(False).to_numpy(dtype=bool)
    monitor = _column(rows, "role", "").eq(MONITOR).to_numpy()
    beyond, _ = worse_beyond_tolerance(rows)
    moved_badly = (verdict == REGRESSED) | (verdict == UNTESTABLE)
    kinds = np.select(
        [
            alert & moved_badly,
            alert,
            monitor & np.isin(verdict, (REGRESSED, IMPROVED)),
            (verdict == UNTESTABLE) & beyond,
            verdict == IMPROVED,
        ],
        [REGRESSION, OUTAGE, MONITORED, UNTESTED, IMPROVEMENT],
        "",
    )
    return pd.Series(kinds, index=rows.index, dtype=object).replace("", None)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


@dataclass(frozen=True)
class Headline:
    """One partition's counts by kind, and the untestable primary metrics that moved the bad
    way: how many, their fewest paired items and the most items any of them needs."""

    baseline_date: str | None
    counts: dict[str, int]
    undecided: int = 0
    undecided_n: int | None = None
    undecided_needed: int | None = None

    @property
    def n_alerts(self) -> int:
        """Regressions and outages: the rows the alert sensor delivers."""
        return self.counts[REGRESSION] + self.counts[OUTAGE]

    @property
    def state(self) -> str:
        """`first evaluation`, `alert`, `undecided` or `quiet` (module doc)."""
        if self.baseline_date is None:
            return FIRST
        if self.n_alerts:
            return ALERT
        return UNDECIDED if self.undecided else QUIET

    def phrases(self, extra: Sequence[str] = ()) -> list[str]:
        """The headline's parts in the order every surface prints them, with a surface's own
        `extra` facts (failed checks, a spent budget) after the undecided ones; `quiet: ...`
        when there is nothing at all to say."""
        if self.state == FIRST:
            return ["first evaluation: no baseline yet", *extra]
        counted = (
            (self.counts[REGRESSION], "regression", ""),
            (self.counts[OUTAGE], "outage", ""),
        )
        parts = [_plural(n, word) + note for n, word, note in counted if n]
        parts += [self.undecided_phrase(), *extra]
        later = (
            (self.counts[IMPROVEMENT], "improvement", ""),
            (self.counts[MONITORED], "monitored change", " (never alerted)"),
        )
        parts += [_plural(n, word) + note for n, word, note in later if n]
        parts = [part for part in parts if part]
        return parts or [f"quiet: no significant change since {self.baseline_date}"]

    def undecided_phrase(self) -> str:
        """`untestable: 2 primary metrics moved the bad way on too few items, n = 20, about 34
        needed`, or "" when none did."""
        if not self.undecided:
            return ""
        metrics = "primary metric" if self.undecided == 1 else "primary metrics"
        text = f"untestable: {self.undecided} {metrics} moved the bad way on too few items"
        if self.undecided_n is not None:
            text += f", n = {self.undecided_n}"
        if self.undecided_needed is not None:
            text += f", about {self.undecided_needed} needed"
        return text

    @property
    def text(self) -> str:
        """The phrases joined: the one line every surface leads with."""
        return ", ".join(self.phrases())


def undecided_rows(rows: pd.DataFrame, kinds: pd.Series | None = None) -> pd.DataFrame:
    """The untestable primary rows that moved the bad way beyond their tolerance, unalerted."""
    kinds = change_kinds(rows) if kinds is None else kinds
    _, worse = worse_beyond_tolerance(rows)
    primary = _column(rows, "role", "").eq(PRIMARY).to_numpy()
    return rows[(kinds == UNTESTED).to_numpy() & worse & primary]


def headline(rows: pd.DataFrame) -> Headline:
    """The headline of one partition's `metric_regressions` rows."""
    kinds = change_kinds(rows)
    counts = {kind: int((kinds == kind).sum()) for kind in KINDS}
    dates = _column(rows, "baseline_date", None).dropna()
    undecided = undecided_rows(rows, kinds)
    paired = _column(undecided, "n_paired", np.nan).astype(float)
    needed = _column(undecided, "items_to_detect", np.nan).astype(float)
    needed = needed[np.isfinite(needed)]
    return Headline(
        baseline_date=str(dates.iloc[0]) if len(dates) else None,
        counts=counts,
        undecided=len(undecided),
        undecided_n=int(paired.min()) if paired.notna().any() else None,
        undecided_needed=int(needed.max()) if len(needed) else None,
    )
