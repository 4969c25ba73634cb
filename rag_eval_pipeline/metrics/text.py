"""Deterministic answer metrics: ROUGE, sentence BLEU, exact/regex match and citation accuracy.

Every function scores aligned sequences element-wise (prediction ``i`` against reference ``i``)
and raises ``ValueError`` when their lengths differ. ROUGE uses :class:`UnicodeTokenizer`, so
Russian or Portuguese answers are scored on their own words; for pure-ASCII text it tokenizes
exactly like rouge-score's default tokenizer. An empty prediction scores 0.0 on ROUGE and
BLEU, never NaN.
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Collection, Sequence

import numpy as np
import pandas as pd
from sacrebleu.metrics import BLEU

from rag_eval_pipeline.metrics.bounds import MAX_JUDGED_CHARS
from rag_eval_pipeline.metrics.f1 import f1, overlap_f1

__all__ = [
    "BLEU_SIGNATURE",
    "UnicodeTokenizer",
    "bleu_scores",
    "citation_scores",
    "exact_match",
    "nested_quantifier",
    "normalize_answer",
    "regex_match",
    "rouge_l_truncated",
    "rouge_scores",
]

_WORD_PIECE = re.compile(r"[^\W_]+|[^\w\s]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_CITATION = re.compile(r"\[\s*(\d{1,9}(?:\s*,\s*\d{1,9})*)\s*\]")
_ASCII_PUNCTUATION = frozenset(string.punctuation)


class UnicodeTokenizer:
    """rouge-score's default tokenization, extended from ``[a-z0-9]`` to all Unicode letters.

    It has the ``tokenize`` method of rouge-score's ``Tokenizer`` interface, so it can be
    passed to ``RougeScorer``; it does not subclass it, because importing rouge-score imports
    nltk, which takes seconds.

    The text is lowercased (``str.lower``) and NFC-normalized, so composed and decomposed
    accents give the same token. A token is a maximal run of letters and digits (``[^\\W_]``,
    i.e. ``\\w`` without the underscore) that may carry combining marks (Unicode category M,
    e.g. Devanagari vowel signs); everything else separates tokens, as ``[^a-z0-9]+`` does in
    the default tokenizer, so "não" and "информация" stay single tokens. Every token is
    non-empty and made of letters, digits and marks, the analogue of the default tokenizer's
    final ``^[a-z0-9]+$`` filter. There is no stemming (Porter stemming is English-only), as in
    ``RougeScorer(..., use_stemmer=False)``. For pure-ASCII text the tokens equal the default
    tokenizer's exactly. Scripts written without spaces (Chinese, Japanese, Thai) come out as
    one token per run and are not meaningfully scored.
    """

    def tokenize(self, text: str) -> list[str]:
        """The tokens of ``text``, in order."""
        tokens: list[str] = []
        token_end = -1
        for match in _WORD_PIECE.finditer(unicodedata.normalize("NFC", text.lower())):
            piece = match.group()
            if piece.isalnum():
                if match.start() == token_end:
                    tokens[-1] += piece
                else:
                    tokens.append(piece)
            elif match.start() == token_end and unicodedata.category(piece).startswith("M"):
                tokens[-1] += piece
            else:
                continue
            token_end = match.end()
        return tokens


_ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
_TOKENIZER = UnicodeTokenizer()
_BLEU = BLEU(
    lowercase=False,
    tokenize=BLEU.TOKENIZER_DEFAULT,
    smooth_method="exp",
    smooth_value=None,
    effective_order=True,
)
_BLEU.sentence_score("", [""])  # the signature records the reference count, known after a call

BLEU_SIGNATURE: str = str(_BLEU.get_signature())
"""The sacrebleu signature of :func:`bleu_scores`, e.g.
``nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp|version:2.6.0``."""


ROUGE_L_MAX_TOKENS = 20_000
"""ROUGE-L reads the first 20,000 tokens of each side (about 100 kB of text): at most 0.4 s
and 10 MB per pair (see `rouge_l_truncated`)."""
_LCS_BLOCK = 4096


def _check_aligned(left_name: str, left: Sequence, right_name: str, right: Sequence) -> None:
    if len(left) != len(right):
        raise ValueError(
            f"{left_name} and {right_name} must have the same length, "
            f"got {len(left)} and {len(right)}"
        )


def _ngram_f(prediction: list[str], reference: list[str], n: int) -> float:
    predicted = Counter(zip(*(prediction[i:] for i in range(n)), strict=False))
    expected = Counter(zip(*(reference[i:] for i in range(n)), strict=False))
    overlap = sum(min(count, predicted[gram]) for gram, count in expected.items())
    return overlap_f1(overlap, predicted.total(), expected.total())


def _lcs_length(first: Sequence[str], second: Sequence[str], block: int = _LCS_BLOCK) -> int:
    """Length of the longest common subsequence, computed bit-parallel (Hyyrö 2004).

    `second` is cut into blocks of `block` tokens, each a bit vector V (1 = not yet matched);
    every token of `first` updates it as V' = (V + (V & M)) | (V & ~M), M the block's positions
    of that token, the addition's carry going on to the same row of the next block. The LCS
    length is the number of zero bits left. Time O(|first| · |second| / 64) machine-word
    operations, memory O(|first| + block²) bits, whatever the texts.
    """
    carries = bytearray(len(first))
    length = 0
    for start in range(0, len(second), block):
        part = second[start : start + block]
        width, full = len(part), (1 << len(part)) - 1
        masks: dict[str, int] = {}
        for position, token in enumerate(part):
            masks[token] = masks.get(token, 0) | (1 << position)
        vector = full
        for row, token in enumerate(first):
            mask = masks.get(token, 0)
            total = vector + (vector & mask) + carries[row]
            carries[row] = total >> width
            vector = (total & full) | (vector & ~mask)
        length += width - vector.bit_count()
    return length


def _rouge_l_f(prediction: list[str], reference: list[str]) -> float:
    prediction, reference = prediction[:ROUGE_L_MAX_TOKENS], reference[:ROUGE_L_MAX_TOKENS]
    if not prediction or not reference:
        return 0.0
    return overlap_f1(_lcs_length(reference, prediction), len(prediction), len(reference))


def rouge_scores(predictions: Sequence[str], references: Sequence[str]) -> pd.DataFrame:
    """ROUGE-1, ROUGE-2 and ROUGE-L F-measures of each prediction against its reference.

    Columns ``rouge1_f``, ``rouge2_f``, ``rougeL_f`` (floats in [0, 1]), equal to
    ``RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=False,
    tokenizer=UnicodeTokenizer())`` (computed here without importing rouge-score and nltk):
    ROUGE-n F = harmonic mean of precision and recall, the clipped n-gram overlap divided by
    the prediction's and by the reference's n-gram counts (each at least 1); ROUGE-L uses the
    length of the longest common subsequence of tokens instead (sentence-level, not
    ``rougeLsum``), over the first ``ROUGE_L_MAX_TOKENS`` tokens of each side
    (``rouge_l_truncated`` says which pairs were cut). A side without tokens (e.g. an empty
    prediction, or both empty) scores 0.0.
    """
    _check_aligned("predictions", predictions, "references", references)
    rows = []
    for prediction, reference in zip(predictions, references, strict=True):
        predicted = _TOKENIZER.tokenize(prediction)
        expected = _TOKENIZER.tokenize(reference)
        rows.append(
            [
                _ngram_f(predicted, expected, 1),
                _ngram_f(predicted, expected, 2),
                _rouge_l_f(predicted, expected),
            ]
        )
    return pd.DataFrame(
        np.array(rows, dtype=np.float64).reshape(-1, len(_ROUGE_TYPES)),
        columns=[f"{rouge_type}_f" for rouge_type in _ROUGE_TYPES],
    )


def rouge_l_truncated(predictions: Sequence[str], references: Sequence[str]) -> np.ndarray:
    """True where ROUGE-L read only part of the pair: a side longer than ``ROUGE_L_MAX_TOKENS``."""
    _check_aligned("predictions", predictions, "references", references)
    return np.array(
        [
            max(len(_TOKENIZER.tokenize(prediction)), len(_TOKENIZER.tokenize(reference)))
            > ROUGE_L_MAX_TOKENS
            for prediction, reference in zip(predictions, references, strict=True)
        ],
        dtype=bool,
    )


def bleu_scores(predictions: Sequence[str], references: Sequence[str]) -> np.ndarray:
    """Sentence BLEU (0–100) of each prediction against its single reference, as float64.

    Identical to ``sacrebleu.sentence_bleu(prediction, [reference]).score`` with its defaults:
    13a tokenization, case-sensitive, up to 4-grams, "exp" smoothing (an n-gram order with no
    match gets precision ``100 / (2^m · total)`` for its m-th such order) and effective order
    (orders with no n-grams in the prediction are left out of the geometric mean). Brevity
    penalty ``exp(1 - ref_len / pred_len)`` when the prediction is shorter. No matching
    unigram, including an empty prediction or reference, scores 0.0. See ``BLEU_SIGNATURE``.
    """
    _check_aligned("predictions", predictions, "references", references)
    return np.array(
        [
            _BLEU.sentence_score(prediction, [reference]).score
            for prediction, reference in zip(predictions, references, strict=True)
        ],
        dtype=np.float64,
    )


def normalize_answer(text: str) -> str:
    """SQuAD answer normalization, made safe for non-English text.

    In order: lowercase; NFC-normalize; delete ASCII punctuation (``string.punctuation``) and
    every Unicode punctuation character (category P, e.g. «», —, ¿); replace the English
    articles "a", "an", "the" (whole words) by spaces; collapse whitespace runs to one space
    and strip. On ASCII text this is exactly the SQuAD v1.1 ``normalize_answer``.
    """
    text = unicodedata.normalize("NFC", text.lower())
    text = "".join(
        char
        for char in text
        if char not in _ASCII_PUNCTUATION and not unicodedata.category(char).startswith("P")
    )
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(predictions: Sequence[str], references: Sequence[str]) -> np.ndarray:
    """1.0 where ``normalize_answer(prediction) == normalize_answer(reference)``, else 0.0.

    Two answers that both normalize to the empty string (e.g. "" and "The.") match.
    """
    _check_aligned("predictions", predictions, "references", references)
    return np.array(
        [
            float(normalize_answer(prediction) == normalize_answer(reference))
            for prediction, reference in zip(predictions, references, strict=True)
        ],
        dtype=np.float64,
    )


def regex_match(predictions: Sequence[str], patterns: Sequence[str]) -> np.ndarray:
    """1.0 where ``patterns[i]`` matches in ``predictions[i]``, else 0.0.

    Uses ``re.search`` with ``re.IGNORECASE`` (Unicode-aware, as DPR's regex evaluation of
    TREC/CuratedTREC answers): an unanchored pattern matches anywhere. Whole-output
    semantics: ``^`` and ``$`` anchor at the start and end of the whole prediction, never at
    line breaks inside it (no ``re.MULTILINE``), so ``^\\d{3}-\\d{4}$`` rejects
    "call me\\n555-1234"; as in Python, ``$`` also matches before one final newline. An invalid
    pattern raises ``re.error``. Only the first ``MAX_JUDGED_CHARS`` (20,000) characters of a
    prediction are searched, and ``$`` anchors at the end of that prefix; datasets reject
    patterns with nested quantifiers (`nested_quantifier`), which backtrack exponentially.
    """
    _check_aligned("predictions", predictions, "patterns", patterns)
    return np.array(
        [
            float(
                re.search(pattern, prediction[:MAX_JUDGED_CHARS], flags=re.IGNORECASE) is not None
            )
            for prediction, pattern in zip(predictions, patterns, strict=True)
        ],
        dtype=np.float64,
    )


_QUANTIFIER = re.compile(r"[*+?]|\{\d*,?\d*\}")
_REPEAT = re.compile(r"[*+]|\{\d*,\d*\}|\{\d*[2-9]\d*\}|\{\d{2,}\}")


def nested_quantifier(pattern: str) -> bool:
    """Whether ``pattern`` repeats (``*``, ``+``, ``{n,}``, ``{n,m}``, ``{n>1}``) a group that
    itself contains a quantifier, as ``(a+)+$`` or ``(?:x*y?)*``: the shape that backtracks
    exponentially. Escapes and character classes are skipped; a conservative syntactic check."""
    inner: list[bool] = []  # per open group: whether a quantifier occurs inside it
    closed_quantified = False  # the atom just closed is a group holding a quantifier
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            i += 2
            closed_quantified = False
            continue
        if char == "[":
            i = _class_end(pattern, i)
            closed_quantified = False
            continue
        if char == "(":
            inner.append(False)
            i += 2 if pattern.startswith("(?", i) else 1
            closed_quantified = False
            continue
        if char == ")" and inner:
            closed_quantified = inner.pop()
            if inner:
                inner[-1] = inner[-1] or closed_quantified
            i += 1
            continue
        quantifier = _QUANTIFIER.match(pattern, i)
        if quantifier:
            if closed_quantified and _REPEAT.fullmatch(quantifier.group()):
                return True
            if inner:
                inner[-1] = True
            i = quantifier.end()
        else:
            i += 1
        closed_quantified = False
    return False


def _class_end(pattern: str, start: int) -> int:
    """The index after the character class opening at ``pattern[start]`` (``[``)."""
    i = start + 1
    if pattern.startswith("^", i):
        i += 1
    if pattern.startswith("]", i):
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i + 1


def _cited_indices(answer: str) -> set[int]:
    """Distinct 1-based indices cited as ``[n]`` or ``[n, m, ...]`` in ``answer``."""
    return {int(number) for group in _CITATION.findall(answer) for number in group.split(",")}


def citation_scores(
    answers: Sequence[str],
    retrieved_ids: Sequence[Sequence[str]],
    relevant_ids: Sequence[Collection[str]],
) -> pd.DataFrame:
    """Citation precision, recall and F1 of answers that cite sources as ``[n]``.

    ``[n]`` (or ``[n, m]``) cites ``retrieved_ids[i][n-1]``, the n-th retrieved source of answer
    ``i``; each distinct index counts once, and an index outside ``1..len(retrieved_ids[i])``
    is an invalid citation that never counts as relevant. A bracket holding a number of more
    than 9 digits is not a citation (a hostile ``[999...9]`` cannot overflow ``int``).
    Columns, per answer:

    - ``citation_precision`` = cited indices whose source is relevant / distinct cited indices
      (valid and invalid); NaN when the answer cites nothing.
    - ``citation_recall`` = distinct relevant sources among the retrieved ones that are cited /
      distinct relevant sources among the retrieved ones; NaN when no relevant source was
      retrieved (nothing could have been cited), 0.0 when some were but none is cited.
    - ``citation_f1`` = :func:`~rag_eval_pipeline.metrics.f1.f1` of P and R: ``2PR / (P + R)``;
      0.0 when either P or R is 0 (so an uncited answer with relevant sources retrieved scores
      0.0); NaN when either is NaN and neither is 0.
    - ``n_citations``: distinct cited indices; ``n_invalid_citations``: those out of range.
    """
    _check_aligned("answers", answers, "retrieved_ids", retrieved_ids)
    _check_aligned("answers", answers, "relevant_ids", relevant_ids)
    rows = [
        _citation_row(answer, retrieved, relevant)
        for answer, retrieved, relevant in zip(answers, retrieved_ids, relevant_ids, strict=True)
    ]
    return pd.DataFrame(rows, columns=list(CITATION_COLUMNS)).astype(CITATION_COLUMNS)


CITATION_COLUMNS = {
    "citation_precision": np.float64,
    "citation_recall": np.float64,
    "citation_f1": np.float64,
    "n_citations": np.int64,
    "n_invalid_citations": np.int64,
}


def _citation_row(
    answer: str, retrieved: Sequence[str], relevant: Collection[str]
) -> tuple[float, float, float, int, int]:
    """One answer's row of :func:`citation_scores` (its columns, in order)."""
    relevant = set(relevant)
    cited = _cited_indices(answer)
    valid = {index for index in cited if 1 <= index <= len(retrieved)}
    cited_sources = [retrieved[index - 1] for index in valid]
    relevant_retrieved = relevant.intersection(retrieved)
    precision = (
        sum(source in relevant for source in cited_sources) / len(cited) if cited else math.nan
    )
    recall = (
        len(relevant_retrieved.intersection(cited_sources)) / len(relevant_retrieved)
        if relevant_retrieved
        else math.nan
    )
    return (
        precision,
        recall,
        f1(precision, recall, if_undefined=math.nan),
        len(cited),
        len(cited) - len(valid),
    )
