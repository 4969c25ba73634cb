"""Binary classification metrics for the production show/hide judge.

The judge answers "should this answer be shown to the user?". Its free-text reply is parsed by
:func:`parse_yes_no` into ``True`` ("Yes", show), ``False`` ("No", hide) or ``None``
(unparseable). :func:`binary_classification_metrics` then scores the parsed decisions against
human labels, treating unparseable replies as errors rather than as "No".
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["binary_classification_metrics", "parse_yes_no"]

_YES_WORDS = frozenset({"yes", "true", "да", "sim", "sí", "si"})
_NO_WORDS = frozenset({"no", "false", "нет", "não", "nao"})
_JSON_KEYS = ("show", "decision", "answer", "verdict", "label", "result")

_FENCE = re.compile(r"```(?:[\w-]*[^\S\n]*\n)?(.*?)```", re.DOTALL)
_LEADING_WORD = re.compile(
    r"^[\W_]*(?:(?:answer|decision|verdict)\s*:\s*[\W_]*)?(\w+)(?!\w)", re.IGNORECASE
)


def _parse_word(text: str) -> bool | None:
    match = _LEADING_WORD.match(text.strip())
    if match is None:
        return None
    word = match.group(1).casefold()
    if word in _YES_WORDS:
        return True
    if word in _NO_WORDS:
        return False
    return None


def _decision_from_json(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _parse_word(value)
    if isinstance(value, dict):
        lowered = {str(key).casefold(): item for key, item in value.items()}
        for key in _JSON_KEYS:
            if key in lowered:
                return _decision_from_json(lowered[key])
    return None


def _load_json(text: str) -> Any:
    """Parse ``text`` as JSON, or else its outermost ``{...}`` span; ``None`` on failure."""
    candidates = [text]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    return None


def parse_yes_no(reply: str) -> bool | None:
    """Parse a judge reply into ``True`` (yes / show), ``False`` (no / hide) or ``None``.

    Rules, in order:

    1. The reply is NFC-normalized. If it contains a fenced code block (```` ``` ````,
       optionally followed by a language tag such as ``json`` and a newline), only the first
       block's content is considered.
    2. JSON: if the text (or its outermost ``{...}`` span) parses as JSON, a boolean is taken
       as is, a string is parsed with rule 3, and an object is looked up by the first present
       key among ``show``, ``decision``, ``answer``, ``verdict``, ``label``, ``result``
       (case-insensitive), whose value is interpreted the same way (other types → no
       decision; then rule 3 applies to the raw text). E.g.
       ``{"show": "yes"}``, ``{"decision": true}``, ``{"answer": "no"}``.
    3. Leading word: the first word, after leading punctuation/markup (``**``, quotes) and an
       optional ``Answer:``/``Decision:``/``Verdict:`` label, case-insensitive. Yes words:
       yes, true, да, sim, sí, si. No words: no, false, нет, não, nao. Only whole words
       count: "Not sure", "Nobody" and "N/A" are not "No".

    Examples: "Yes", "yes.", "YES!", "Да", "Sim" → ``True``; "No", "no, because…", "Нет",
    "Não" → ``False``. Anything else (empty reply, "Maybe", "I think yes", JSON without a
    recognized key) → ``None``.
    """
    if not isinstance(reply, str):
        return None
    reply = unicodedata.normalize("NFC", reply)
    fence = _FENCE.search(reply)
    text = (fence.group(1) if fence else reply).strip()
    if not text:
        return None
    parsed = _load_json(text)
    if parsed is not None:
        decision = _decision_from_json(parsed)
        if decision is not None:
            return decision
    return _parse_word(text)


def _is_bool_like(value: object) -> bool:
    if isinstance(value, bool | np.bool_):
        return True
    return isinstance(value, int | np.integer) and value in (0, 1)


def _bool_array(values: Sequence[Any], name: str) -> np.ndarray:
    """``values`` as a bool array; only booleans and the integers 0/1 are accepted."""
    array = np.asarray(list(values), dtype=object)
    for value in array:
        if not _is_bool_like(value):
            raise ValueError(f"{name} must contain booleans, got {value!r}")
    return array.astype(bool)


def binary_classification_metrics(
    y_true: Sequence[bool], y_pred: Sequence[bool | None]
) -> dict[str, float | int]:
    """Accuracy, precision, recall and F1 of the positive ("Yes" = show) class.

    Args:
        y_true: Human labels, booleans (``0``/``1`` accepted); no missing values.
        y_pred: Parsed judge decisions; ``None`` (or NaN / ``pd.NA``) marks an unparseable
            reply.

    Unparseable predictions are counted in ``n_errors`` and excluded from the confusion
    matrix and from every rate; they are *not* counted as "No". All rates are computed over
    the ``n_scored = n - n_errors`` parsed items:

    * ``accuracy = (tp + tn) / n_scored``
    * ``precision = tp / (tp + fp)``
    * ``recall = tp / (tp + fn)``
    * ``f1_score = 2 tp / (2 tp + fp + fn)``
    * ``error_rate = n_errors / n``

    Zero-division rule: a rate whose denominator is 0 is 0.0 (like scikit-learn's
    ``zero_division=0``).

    Returns:
        Dict with ``accuracy``, ``precision``, ``recall``, ``f1_score``, ``tp``, ``fp``,
        ``tn``, ``fn``, ``n``, ``n_scored``, ``n_errors``, ``error_rate``.
    """
    if len(y_true) != len(y_pred):
        raise ValueError(
            f"y_true and y_pred must have the same length, got {len(y_true)} and {len(y_pred)}"
        )
    pred_objects = np.asarray(list(y_pred), dtype=object)
    is_error = pd.isna(pred_objects).astype(bool)
    truth = _bool_array(y_true, "y_true")[~is_error]
    pred = _bool_array(pred_objects[~is_error], "y_pred")

    tp = int(np.count_nonzero(truth & pred))
    fp = int(np.count_nonzero(~truth & pred))
    tn = int(np.count_nonzero(~truth & ~pred))
    fn = int(np.count_nonzero(truth & ~pred))
    n = len(y_true)
    n_errors = int(is_error.sum())

    def ratio(numerator: int, denominator: int) -> float:
        return numerator / denominator if denominator else 0.0

    return {
        "accuracy": ratio(tp + tn, tp + tn + fp + fn),
        "precision": ratio(tp, tp + fp),
        "recall": ratio(tp, tp + fn),
        "f1_score": ratio(2 * tp, 2 * tp + fp + fn),
        "tp": tp,
        "fp": fp,
        "tn": tn,
        "fn": fn,
        "n": n,
        "n_scored": n - n_errors,
        "n_errors": n_errors,
        "error_rate": ratio(n_errors, n),
    }
