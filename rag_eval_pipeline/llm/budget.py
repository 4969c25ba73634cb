"""A spending cap shared by every LLM client of one run: it never lets the run spend more.

Before a prompt is sent, a client reserves its worst-case cost (`reserve`: the prompt's input tokens
and `max_tokens` output tokens at the model's price, `llm.estimate.worst_case_cost`, the rule
``rag-eval estimate`` prices prompts by). When what was spent plus what calls in flight hold plus
this reservation would exceed the limit, the prompt waits for calls in flight to land
(`could_cover`: it may fit once they are charged their actual cost; waiting prompts are served first
come, first served, so a large one is not overtaken forever by smaller ones), and is refused, the
error row ``budget exhausted: ...``, once what was spent leaves no room for its worst case. When a
reply lands, its reservation is released (`release`) and the cost litellm prices for it is charged
(`charge`). Calls in flight therefore cannot overshoot the limit together; a prompt whose worst case
does not fit what is left is not sent, even if its reply would have been shorter. The guarantee
assumes the provider bills at most `max_tokens` output tokens and about the input tokens litellm's
counter finds (a provider whose tokenizer counts more can exceed it by that difference).

A price litellm does not know (a model missing from its cost map) cannot be reserved nor charged:
such a prompt is sent while the limit is not reached, and its reply is counted in `unpriced`. A
cap cannot hold against a cost that is unknown; the run summary and the scorecard say the cost is
unknown.

`run_budget(run_id, limit_usd)` gives every client of a run (its judge and generator, all steps of
an in-process run) the same `CostBudget`. The limit comes from ``RAG_EVAL_MAX_COST_USD``
(`max_cost_from_env`); unset means no cap.
"""

from __future__ import annotations

import math
import os
import threading
from collections import deque
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
    """Dollars spent and held by calls in flight against an optional `limit_usd`; thread-safe."""

    limit_usd: float | None
    spent_usd: float = 0.0
    reserved_usd: float = 0.0  # the worst-case cost of the calls in flight
    unpriced: int = 0  # replies without a known price
    refused: int = 0  # prompts not sent because the budget could not cover them
    _holders: int = field(default=0, repr=False, compare=False)  # calls holding a reservation
    _waiting: deque[object] = field(default_factory=deque, repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def capped(self) -> bool:
        """Whether there is a limit (the reservations are worth computing)."""
        return self.limit_usd is not None

    def reserve(self, worst_case_usd: float | None, ticket: object) -> float | None:
        """Hold `worst_case_usd` for a call about to be sent; the amount held (0.0 for a cost
        that is unknown or without a limit), or None, holding nothing, when spent + held + this
        amount would exceed the limit (an unknown cost: when the limit is reached) or an earlier
        caller is still waiting. Callers that must wait queue by `ticket`, first come, first
        served: a large prompt is not overtaken forever by smaller ones (`leave` when done)."""
        with self._lock:
            if self.limit_usd is None:
                self._holders += 1
                return 0.0
            if self._waiting and self._waiting[0] is not ticket:
                if ticket not in self._waiting:
                    self._waiting.append(ticket)
                return None
            committed = self.spent_usd + self.reserved_usd
            held = 0.0 if worst_case_usd is None else worst_case_usd
            fits = (
                committed < self.limit_usd
                if worst_case_usd is None
                else (committed + held <= self.limit_usd)
            )
            if not fits:
                if not self._waiting:
                    self._waiting.append(ticket)
                return None
            if self._waiting:
                self._waiting.popleft()
            self.reserved_usd += held
            self._holders += 1
            return held

    def leave(self, ticket: object) -> None:
        """Take `ticket` out of the queue of waiting callers (a no-op once it reserved)."""
        with self._lock:
            if ticket in self._waiting:
                self._waiting.remove(ticket)

    def could_cover(self, worst_case_usd: float | None) -> bool:
        """Whether a call of this worst-case cost fits once the calls in flight are over (an
        unknown cost: while the limit is not reached)."""
        with self._lock:
            if self.limit_usd is None:
                return True
            if worst_case_usd is None:
                return self.spent_usd < self.limit_usd
            return self.spent_usd + worst_case_usd <= self.limit_usd

    def release(self, held_usd: float) -> None:
        """Give back what `reserve` held for a call that is over (answered or not)."""
        with self._lock:
            self._holders -= 1
            # Nothing held is exactly zero: sums and differences of floats leave residues.
            self.reserved_usd = self.reserved_usd - held_usd if self._holders else 0.0

    def charge(self, cost_usd: float | None) -> None:
        """Count one reply's cost (None: litellm could not price it)."""
        with self._lock:
            if cost_usd is None:
                self.unpriced += 1
            else:
                self.spent_usd += cost_usd

    def refuse(self, worst_case_usd: float | None) -> str:
        """Count one prompt not sent; the error text of its row."""
        with self._lock:
            self.refused += 1
            may_cost = "" if worst_case_usd is None else f"; it may cost ${worst_case_usd:.4f}"
            return (
                f"budget exhausted: ${self.spent_usd:.4f} spent and ${self.reserved_usd:.4f} "
                f"held by calls in flight of the run's {MAX_COST_ENV}=${self.limit_usd:g}"
                f"{may_cost}; not called"
            )


_RUN_BUDGETS: dict[str, CostBudget] = {}
_RUN_BUDGETS_LOCK = threading.Lock()


def run_budget(run_id: str, limit_usd: float | None) -> CostBudget:
    """The one `CostBudget` of run `run_id` in this process (created with `limit_usd`)."""
    with _RUN_BUDGETS_LOCK:
        return _RUN_BUDGETS.setdefault(run_id, CostBudget(limit_usd))
