"""F1, the harmonic mean of precision and recall: the one definition the answer metrics use.

`f1` is the definition; `overlap_f1` forms precision and recall from overlap counts (tokens,
n-grams, LCS length) and calls it. Token F1 (SQuAD), ROUGE-n/L F and citation F1 all use them.
"""

from __future__ import annotations

import math

__all__ = ["f1", "overlap_f1"]


def f1(precision: float, recall: float, *, if_undefined: float = math.nan) -> float:
    """F1 = ``2PR / (P + R)`` of precision P and recall R, each in [0, 1] or NaN (undefined).

    A side is undefined (NaN) when its denominator is 0: an empty prediction has no precision,
    an empty reference no recall. The edge rules:

    - P = 0 or R = 0 (so also P + R = 0): 0.0, even when the other side is undefined; nothing
      right is 0, as in SQuAD's official ``f1_score`` (``if num_same == 0: return 0``),
      rouge-score's ``fmeasure`` (``P + R = 0`` gives 0) and ragas (``tp = 0`` gives 0).
    - otherwise, P or R undefined: ``if_undefined``. Callers differ here on purpose: text
      overlap (`overlap_f1`) passes 0.0, so two empty texts score 0 as in SQuAD v1.1's script
      and rouge-score (SQuAD v2.0 would give 1); citation F1 keeps NaN, because an answer that
      cites nothing where nothing relevant was retrieved has no citation quality to score
      (the row is left out of averages rather than counted as a failure).
    - otherwise the harmonic mean, computed as ``2 * P * R / (P + R)`` exactly as the SQuAD
      script and rouge-score do, so the values equal theirs to the last bit.
    """
    if precision == 0 or recall == 0:
        return 0.0
    if math.isnan(precision) or math.isnan(recall):
        return if_undefined
    return 2 * precision * recall / (precision + recall)


def overlap_f1(overlap: int, n_predicted: int, n_reference: int) -> float:
    """`f1` of P = overlap / n_predicted and R = overlap / n_reference (counts, ≥ 0).

    No overlap scores 0.0: an empty prediction, an empty reference or both (``if_undefined``
    is 0.0), as SQuAD v1.1's official ``f1_score`` and rouge-score define it.
    """
    precision = overlap / n_predicted if n_predicted else math.nan
    recall = overlap / n_reference if n_reference else math.nan
    return f1(precision, recall, if_undefined=0.0)
