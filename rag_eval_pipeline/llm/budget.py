"""A spending cap shared by every LLM client of one run: once spent, no more provider calls.

`CostBudget(limit_usd)` adds up the cost litellm prices for each reply (`charge`); once the total
reaches the limit, `exhausted` is True and clients turn each prompt not sent yet into the error row
``budget exhausted: ...`` instead of calling. Calls already in flight still land, so a run may
overshoot by at most its in-flight calls' cost. A reply litellm cannot price (a model missing from
its cost map) is counted in `unpriced`: a cap cannot hold against a cost that is unknown, which
the run summary says.

`run_budget(run_id, limit_usd)` gives every client of a run (its judge and generator, all steps of
an in-process run) the same `CostBudget`. The limit comes from ``RAG_EVAL_MAX_COST_USD``
(`max_cost_from_env`); unset means no cap.
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass, field

MAX_COST_ENV = "RAG_EVAL_MAX_COST_USD"


def max_cost_from_env() -> float | None:
    """``RAG_EVAL_MAX_COST_USD`` as a float (None when unset or empty)."""
    raw = os.environ.get(MAX_COST_ENV, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{MAX_COST_ENV} must be a number of US dollars, got {raw!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{MAX_COST_ENV} must be a finite amount >= 0, got {raw!r}")
    return value


@dataclass
class CostBudget:
    """Dollars spent against an optional `limit_usd`; thread-safe."""

    limit_usd: float | None
    spent_usd: float = 0.0
    unpriced: int = 0  # replies without a known price
    refused: int = 0  # prompts not sent because the budget was spent
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def exhausted(self) -> bool:
        """Whether the limit is reached (never, without a limit)."""
        with self._lock:
            return self.limit_usd is not None and self.spent_usd >= self.limit_usd

    def charge(self, cost_usd: float | None) -> None:
        """Count one reply's cost (None: litellm could not price it)."""
        with self._lock:
            if cost_usd is None:
                self.unpriced += 1
            else:
                self.spent_usd += cost_usd

    def refuse(self) -> str:
        """Count one prompt not sent; the error text of its row."""
        with self._lock:
            self.refused += 1
            return (
                f"budget exhausted: ${self.spent_usd:.4f} spent of the run's "
                f"{MAX_COST_ENV}=${self.limit_usd:g}; not called"
            )


_RUN_BUDGETS: dict[str, CostBudget] = {}
_RUN_BUDGETS_LOCK = threading.Lock()


def run_budget(run_id: str, limit_usd: float | None) -> CostBudget:
    """The one `CostBudget` of run `run_id` in this process (created with `limit_usd`)."""
    with _RUN_BUDGETS_LOCK:
        return _RUN_BUDGETS.setdefault(run_id, CostBudget(limit_usd))
