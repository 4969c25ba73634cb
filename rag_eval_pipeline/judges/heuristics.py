"""What the offline judge's heuristics share: refusal detection and rows in the reply schema.

The offline judge writes, as each row's `raw_reply`, the JSON an LLM judge's reply would hold for
the same decisions (plus the supports behind them), so failures are inspected the same way. The
heuristic of each metric lives in its module of `rag_eval_pipeline.judges.metrics`; the helpers
here batch what several of them do alike.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rag_eval_pipeline.embedding.sentences import (
    Sentences,
    context_sentences,
    embed_sentences,
    split_sentences,
)
from rag_eval_pipeline.judges.replies import attempt

if TYPE_CHECKING:
    from rag_eval_pipeline.judges.offline import OfflineJudge

_REFUSAL = re.compile(
    r"\b(?:i\s+(?:do\s+not|don[’']?t)\s+know|i[’']?m\s+not\s+sure|i\s+am\s+not\s+sure"
    r"|(?:cannot|can[’']?t|unable\s+to)\s+(?:answer|find|determine|say|tell)"
    r"|no\s+(?:relevant\s+)?information|not\s+(?:enough|sufficient)\s+(?:information|context)"
    r"|не\s+знаю|нет\s+информации|não\s+sei|não\s+há\s+informaç)",
    re.IGNORECASE,
)


def is_noncommittal(answer: str) -> bool:
    """An empty answer, or a single sentence containing a refusal phrase."""
    sentences = split_sentences(answer)
    return not sentences or (len(sentences) == 1 and _REFUSAL.search(sentences[0]) is not None)


def rounded(value: float) -> float | None:
    """`value` to 4 decimals for a reply's JSON, None when it is not finite."""
    return round(float(value), 4) if math.isfinite(value) else None


def dumps(payload: dict[str, Any]) -> str:
    """The reply JSON, non-ASCII text kept as is."""
    return json.dumps(payload, ensure_ascii=False)


def rubric_row(score: float, reason: str) -> dict[str, Any]:
    """A scored row with its reason, and the JSON an LLM judge's rubric reply would be."""
    return {
        "score": score,
        "error": None,
        "raw_reply": dumps({"score": score, "reason": reason}),
        "reason": reason,
    }


def claim_row(
    claims: Sentences,
    best: np.ndarray,
    threshold: float,
    flag: str,
    formula: Callable[[Sequence[bool]], float],
) -> dict[str, Any]:
    """A claims-vs-evidence row: each claim sentence is `flag`-ged when its best support by an
    evidence sentence (`best`) reaches `threshold`; the score is `formula` of those flags."""
    flags = [bool(b >= threshold) for b in best]
    score, error = attempt(formula, flags)
    reply = {
        "claims": [
            {"claim": text, flag: value, "support": rounded(b)}
            for text, value, b in zip(claims.texts, flags, best, strict=True)
        ]
    }
    return {
        "score": score,
        "error": error,
        "raw_reply": dumps(reply),
        "n_claims": len(flags),
        f"n_{flag}": sum(flags),
    }


def unless(problems: Sequence[Any], groups: Iterable[list[str]]) -> list[list[str]]:
    """`groups`, emptied for the rows marked in `problems` (nothing to embed for them)."""
    return [[] if skip else group for skip, group in zip(problems, groups, strict=True)]


def first_cosine(left: Sentences, right: Sentences) -> float:
    """Cosine of the first text of each side (used for whole-text comparisons)."""
    return float(left.vectors[0] @ right.vectors[0])


def error_row(problem: str) -> dict[str, Any]:
    """The row of an item that is not scored."""
    return {"score": math.nan, "error": problem}


def claim_rows(
    judge: OfflineJudge,
    problems: Sequence[str | None],
    claims: Iterable[list[str]],
    contexts: Iterable[Any],
    heuristic: Callable[[Sentences, np.ndarray, float], dict[str, Any]],
) -> list[dict[str, Any]]:
    """Rows of a claims-vs-context metric: per row, the `heuristic` of its claim sentences and
    of their best support by a sentence of its context (`OfflineJudge.support`)."""
    claimed = embed_sentences(judge.embedder, unless(problems, claims))
    evidence = embed_sentences(judge.embedder, unless(problems, map(context_sentences, contexts)))
    return [
        error_row(problem)
        if problem
        else heuristic(claim, judge.support(claim, context), judge.threshold)
        for problem, claim, context in zip(problems, claimed, evidence, strict=True)
    ]
