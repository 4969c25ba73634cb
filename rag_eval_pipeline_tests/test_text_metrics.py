"""Deterministic answer metrics against rouge-score, sacrebleu, SQuAD and hand-computed values."""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest
import sacrebleu
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score.rouge_scorer import RougeScorer
from rouge_score.tokenizers import DefaultTokenizer

from rag_eval_pipeline.metrics.text import (
    BLEU_SIGNATURE,
    UnicodeTokenizer,
    bleu_scores,
    citation_scores,
    exact_match,
    normalize_answer,
    regex_match,
    rouge_scores,
)

pytestmark = [pytest.mark.unit]

ENGLISH_PAIRS = [
    ("The cat sat on the mat.", "A cat was sitting on the mat."),
    ("Paris is the capital of France", "The capital of France is Paris."),
    ("It's 3.14 -- roughly pi; don't_round!", "It is about 3.14, don't round it."),
    ("Vitamin D deficiency raises fracture risk", "Low vitamin-D levels increase the risk"),
    ("", "An empty prediction."),
    ("Nothing in common", "xyz"),
    ("repeated repeated repeated words", "repeated words"),
]

ASCII_TEXT = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127), max_size=80)


def _squad_normalize(text: str) -> str:
    """SQuAD v1.1's official normalize_answer, verbatim in behaviour."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


@settings(max_examples=300, deadline=None)
@given(ASCII_TEXT)
def test_unicode_tokenizer_equals_default_on_ascii(text: str) -> None:
    assert UnicodeTokenizer().tokenize(text) == DefaultTokenizer().tokenize(text)


def test_rouge_equals_default_scorer_on_english() -> None:
    default = RougeScorer(["rouge1", "rouge2", "rougeL"])
    predictions, references = zip(*ENGLISH_PAIRS, strict=True)
    result = rouge_scores(predictions, references)
    assert list(result.columns) == ["rouge1_f", "rouge2_f", "rougeL_f"]
    for row, (prediction, reference) in zip(result.itertuples(), ENGLISH_PAIRS, strict=True):
        expected = default.score(reference, prediction)
        assert row.rouge1_f == expected["rouge1"].fmeasure
        assert row.rouge2_f == expected["rouge2"].fmeasure
        assert row.rougeL_f == expected["rougeL"].fmeasure


SMALL_VOCABULARY_TEXT = st.lists(
    st.sampled_from(["the", "cat", "sat", "mat", "Não", "há", "информация", "3.14", "", "!"]),
    max_size=25,
).map(" ".join)


@settings(max_examples=400, deadline=None)
@given(SMALL_VOCABULARY_TEXT, SMALL_VOCABULARY_TEXT)
def test_rouge_equals_rouge_score_with_the_same_tokenizer(prediction: str, reference: str) -> None:
    """Our ROUGE (no rouge-score import at run time) equals rouge-score's, bit for bit, on
    texts with many repeated tokens, so clipping and LCS ties are exercised."""
    scorer = RougeScorer(["rouge1", "rouge2", "rougeL"], tokenizer=UnicodeTokenizer())
    expected = scorer.score(reference, prediction)
    row = rouge_scores([prediction], [reference]).iloc[0]
    assert row.rouge1_f == expected["rouge1"].fmeasure
    assert row.rouge2_f == expected["rouge2"].fmeasure
    assert row.rougeL_f == expected["rougeL"].fmeasure


def test_rouge_hand_computed() -> None:
    result = rouge_scores(["the cat"], ["the cat sat"])
    # rouge1: P = 2/2, R = 2/3; rouge2: P = 1/1, R = 1/2; rougeL: LCS = 2 as rouge1.
    assert result.loc[0, "rouge1_f"] == pytest.approx(0.8)
    assert result.loc[0, "rouge2_f"] == pytest.approx(2 / 3)
    assert result.loc[0, "rougeL_f"] == pytest.approx(0.8)


def test_identical_russian_answer_scores_one() -> None:
    answer = "Москва — столица России, крупнейший город страны."
    assert RougeScorer(["rouge1"]).score(answer, answer)["rouge1"].fmeasure == 0.0
    result = rouge_scores([answer], [answer])
    assert result.iloc[0].tolist() == [1.0, 1.0, 1.0]


def test_portuguese_accented_words_stay_whole() -> None:
    tokens = UnicodeTokenizer().tokenize("Não há informação sobre a ação.")
    assert tokens == ["não", "há", "informação", "sobre", "a", "ação"]
    decomposed = unicodedata.normalize("NFD", "Não há informação")
    assert UnicodeTokenizer().tokenize(decomposed) == ["não", "há", "informação"]
    result = rouge_scores(["não há informação"], ["Não há nenhuma informação"])
    assert result.loc[0, "rouge1_f"] == pytest.approx(2 * 1.0 * 0.75 / 1.75)


def test_combining_marks_stay_inside_tokens() -> None:
    assert UnicodeTokenizer().tokenize("हिन्दी भाषा, foo_bar") == ["हिन्दी", "भाषा", "foo", "bar"]


def test_empty_predictions_score_zero() -> None:
    rouge = rouge_scores(["", ""], ["a reference", ""])
    assert (rouge.to_numpy() == 0.0).all()
    np.testing.assert_array_equal(bleu_scores(["", ""], ["a reference", ""]), [0.0, 0.0])
    assert rouge_scores([], []).shape == (0, 3)
    assert bleu_scores([], []).shape == (0,)


def test_bleu_equals_sacrebleu_sentence_bleu() -> None:
    predictions = [p for p, _ in ENGLISH_PAIRS] + ["Москва — столица России.", "Não há dados."]
    references = [r for _, r in ENGLISH_PAIRS] + ["Москва — столица России.", "Não há dados!"]
    expected = [
        sacrebleu.sentence_bleu(p, [r]).score for p, r in zip(predictions, references, strict=True)
    ]
    np.testing.assert_array_equal(bleu_scores(predictions, references), expected)


def test_bleu_hand_computed() -> None:
    # Precisions 2/3, 1/2, 0/1 -> exp smoothing 1/(2·1); effective order 3.
    # Brevity penalty: hypothesis 2 tokens, reference 6: exp(1 - 6/2); 1/1, 1/1 over order 2.
    scores = bleu_scores(["a b c", "the cat"], ["a b d", "the cat sat on the mat"])
    assert scores[0] == pytest.approx(100 * (2 / 3 * 1 / 2 * 1 / 2) ** (1 / 3))
    assert scores[1] == pytest.approx(100 * math.exp(-2))


def test_bleu_signature() -> None:
    expected = f"nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp|version:{sacrebleu.__version__}"
    assert expected == BLEU_SIGNATURE


@settings(max_examples=300, deadline=None)
@given(ASCII_TEXT)
def test_normalize_answer_equals_squad_on_ascii(text: str) -> None:
    assert normalize_answer(text) == _squad_normalize(text)


def test_exact_match() -> None:
    predictions = ["The Eiffel Tower!", "an  apple", "«Não»", "Paris, France", "", "The."]
    references = ["eiffel tower", "Apple.", "não", "Paris", "", ""]
    np.testing.assert_array_equal(
        exact_match(predictions, references), [1.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    )


def test_regex_match() -> None:
    predictions = ["It was in 1969.", "PARIS", "line one\nParis", "Parisian"]
    patterns = [r"19[56]9", r"paris", r"^paris$", r"\bparis\b"]
    # whole-output semantics: ^/$ never anchor at an inner line break (issue 16)
    np.testing.assert_array_equal(regex_match(predictions, patterns), [1.0, 1.0, 0.0, 0.0])


def test_regex_match_anchors_the_whole_output() -> None:
    pattern = r"^\d{3}-\d{3}-\d{4}$"
    predictions = [
        "555-123-4567",
        "call me\n555-123-4567",
        "555-123-4567\nthanks",
        "555-123-4567\n",
    ]
    np.testing.assert_array_equal(regex_match(predictions, [pattern] * 4), [1.0, 0.0, 0.0, 1.0])


def test_citation_scores_hand_cases() -> None:
    answers = [
        "Aspirin helps [1] but see [2, 5] and again [1].",  # d1 relevant; d2 not; [5] invalid
        "No citations at all.",  # relevant retrieved, nothing cited
        "Cites [2].",  # nothing relevant retrieved
        "Nothing to cite.",  # nothing cited, nothing relevant retrieved
        "All good [1][2].",
    ]
    retrieved = [["d1", "d2", "d3"], ["d1"], ["d1", "d2"], ["d1"], ["d1", "d2", "d3"]]
    relevant = [{"d1", "d3"}, {"d1"}, {"d9"}, set(), {"d1", "d2", "d9"}]
    result = citation_scores(answers, retrieved, relevant)
    expected = pd.DataFrame(
        {
            "citation_precision": [1 / 3, math.nan, 0.0, math.nan, 1.0],
            "citation_recall": [1 / 2, 0.0, math.nan, math.nan, 1.0],
            "citation_f1": [2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2), 0.0, 0.0, math.nan, 1.0],
            "n_citations": [3, 0, 1, 0, 2],
            "n_invalid_citations": [1, 0, 0, 0, 0],
        }
    )
    pd.testing.assert_frame_equal(result, expected)


@pytest.mark.parametrize(
    "call",
    [
        lambda: rouge_scores(["a"], []),
        lambda: bleu_scores(["a", "b"], ["a"]),
        lambda: exact_match([], ["a"]),
        lambda: regex_match(["a"], []),
        lambda: citation_scores(["a"], [["d1"]], []),
    ],
)
def test_misaligned_inputs_raise(call: Callable[[], object]) -> None:
    with pytest.raises(ValueError, match="same length"):
        call()
