"""What a run would send to its LLMs and pay, counted without calling them.

An `LLMClient` whose config has ``estimate_only`` answers every prompt its reply cache cannot with
a stand-in reply (`STAND_IN_TEXT`, never cached) and records the prompt in a `PromptEstimate`:
distinct uncached prompts, their input tokens (``litellm.token_counter`` for the model), the
output tokens they may take (at most `max_tokens` each, the bound the estimate uses) and the price
of both from litellm's cost map (``litellm.cost_per_token``; a model it cannot price has cost
None, "unknown", never 0). The same rule prices a prompt's worst case (`worst_case_cost`), which
the run's spending cap (`llm.budget`) reserves before the prompt is sent. Cached prompts are
counted apart: they cost nothing.

A generator's stand-in answer is `max_tokens` words long, so the judge prompts that quote it are
counted at their longest too: for prompts downstream of an uncached generation, the token and
cost figures are upper bounds.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

STAND_IN_WORD = "estimate"


def stand_in_text(max_tokens: int | None) -> str:
    """The reply an estimating client gives: `max_tokens` words (64 without a bound)."""
    return " ".join([STAND_IN_WORD] * (max_tokens or 64))


def token_count(model: str, messages: Sequence[Mapping[str, str]]) -> int:
    """Input tokens of a chat prompt for `model` (litellm's counter: the model's tokenizer when
    litellm knows it, else tiktoken's cl100k)."""
    import litellm

    return int(litellm.token_counter(model=model, messages=[dict(m) for m in messages]))


def price(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    """USD for these tokens by litellm's cost map; None when litellm has no price for `model`."""
    import litellm

    try:
        prompt_cost, completion_cost = litellm.cost_per_token(
            model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens
        )
    except Exception:  # litellm raises its own, varying errors for a model it cannot map
        return None
    return float(prompt_cost) + float(completion_cost)


def worst_case_cost(
    model: str, messages: Sequence[Mapping[str, str]], max_tokens: int | None
) -> float | None:
    """The most one prompt can cost: its input tokens (`token_count`) and `max_tokens` output
    tokens, priced (`price`); None when the price is unknown or the output unbounded."""
    if max_tokens is None:
        return None
    return price(model, token_count(model, messages), max_tokens)


def _add(total: float | None, cost: float | None) -> float | None:
    return None if total is None or cost is None else total + cost


def _dollars(cost: float | None) -> str:
    return "unknown" if cost is None else f"${cost:.4f}"


@dataclass
class ModelEstimate:
    """The prompts of one role (judge, generator) and model in a run."""

    role: str
    model: str
    cached: int = 0
    uncached: int = 0
    prompt_tokens: int = 0
    max_completion_tokens: int = 0
    input_cost_usd: float | None = 0.0  # None: unknown (no price for the model)
    max_output_cost_usd: float | None = 0.0

    def add(self, prompt_tokens: int, max_completion_tokens: int) -> None:
        self.uncached += 1
        self.prompt_tokens += prompt_tokens
        self.max_completion_tokens += max_completion_tokens
        self.input_cost_usd = _add(self.input_cost_usd, price(self.model, prompt_tokens, 0))
        self.max_output_cost_usd = _add(
            self.max_output_cost_usd, price(self.model, 0, max_completion_tokens)
        )

    @property
    def max_cost_usd(self) -> float | None:
        return _add(self.input_cost_usd, self.max_output_cost_usd)


@dataclass
class PromptEstimate:
    """The uncached prompts of one run, by role and model; thread-safe."""

    models: dict[tuple[str, str], ModelEstimate] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def _model(self, model: str, role: str) -> ModelEstimate:
        return self.models.setdefault((role, model), ModelEstimate(role, model))

    def record_uncached(
        self, model: str, role: str, messages: Sequence[Mapping[str, str]], max_tokens: int | None
    ) -> None:
        """Count one prompt the cache cannot answer."""
        tokens = token_count(model, messages)
        with self._lock:
            self._model(model, role).add(tokens, max_tokens or 0)

    def record_cached(self, model: str, role: str, count: int) -> None:
        """Count prompts the cache answers (free)."""
        with self._lock:
            self._model(model, role).cached += count

    @property
    def max_cost_usd(self) -> float | None:
        """The total upper-bound cost; None when any model's price is unknown."""
        total: float | None = 0.0
        for estimate in self.models.values():
            total = _add(total, estimate.max_cost_usd)
        return total

    def lines(self) -> list[str]:
        """One line per role and model, then the total."""
        lines = []
        for (role, model), e in sorted(self.models.items()):
            lines.append(
                f"{role} {model}: {e.uncached} uncached prompt(s) ({e.cached} cached); "
                f"{e.prompt_tokens} input tokens ({_dollars(e.input_cost_usd)}), "
                f"<= {e.max_completion_tokens} output tokens (<= "
                f"{_dollars(e.max_output_cost_usd)})"
            )
        lines.append(f"total: <= {_dollars(self.max_cost_usd)}")
        return lines


_RUN_ESTIMATES: dict[str, PromptEstimate] = {}
_RUN_ESTIMATES_LOCK = threading.Lock()


def run_estimate(run_id: str) -> PromptEstimate:
    """The one `PromptEstimate` of run `run_id` in this process."""
    with _RUN_ESTIMATES_LOCK:
        return _RUN_ESTIMATES.setdefault(run_id, PromptEstimate())
