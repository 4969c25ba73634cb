"""RAGAS formulas against hand-computed values and the examples of the RAGAS documentation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rag_eval_pipeline.metrics.ragas import (
    UndefinedScoreError,
    answer_correctness,
    context_precision,
    context_recall,
    cosine_to_rows,
    factual_f1,
    faithfulness_score,
    ragas_answer_relevance,
    rowwise_cosine,
    validate_weights,
)

pytestmark = [pytest.mark.unit]


def test_faithfulness_is_the_share_of_supported_claims() -> None:
    assert faithfulness_score([True, False, True]) == pytest.approx(2 / 3)
    assert faithfulness_score([False]) == 0.0
    with pytest.raises(UndefinedScoreError, match="no claims"):
        faithfulness_score([])


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        ([0, 0, 1, 1, 0], (1 / 3 + 2 / 4) / 2),  # relevant at ranks 3 and 4: 0.4167
        ([1, 0], 1.0),  # RAGAS docs, high-precision ordering
        ([0, 1], 0.5),  # RAGAS docs, the same chunks in the low-precision ordering
        ([1, 0, 1], (1 + 2 / 3) / 2),
        ([1, 1, 1], 1.0),
        ([0, 0, 0], 0.0),
    ],
)
def test_context_precision_is_ragas_average_precision(verdicts: list[int], expected: float) -> None:
    assert context_precision(verdicts) == pytest.approx(expected)


def test_context_precision_rejects_empty_and_non_binary_verdicts() -> None:
    with pytest.raises(UndefinedScoreError, match="no contexts"):
        context_precision([])
    with pytest.raises(ValueError, match="0 or 1"):
        context_precision([1, 2])


@given(st.lists(st.integers(0, 1), min_size=1, max_size=30))
def test_context_precision_matches_the_formula_term_by_term(verdicts: list[int]) -> None:
    relevant = sum(verdicts)
    terms = [sum(verdicts[:k]) / k * verdicts[k - 1] for k in range(1, len(verdicts) + 1)]
    expected = sum(terms) / relevant if relevant else 0.0
    assert context_precision(verdicts) == pytest.approx(expected)
    assert 0.0 <= context_precision(verdicts) <= 1.0


def test_context_recall_is_the_share_of_attributed_claims() -> None:
    assert context_recall([True, True, False, False]) == 0.5
    with pytest.raises(UndefinedScoreError, match="no ground-truth claims"):
        context_recall([])


def test_factual_f1_follows_tp_over_tp_plus_half_errors() -> None:
    assert factual_f1(2, 1, 1) == pytest.approx(2 / 3)
    assert factual_f1(0, 3, 0) == 0.0
    assert factual_f1(4, 0, 0) == 1.0
    with pytest.raises(UndefinedScoreError, match="no statements"):
        factual_f1(0, 0, 0)
    with pytest.raises(ValueError, match="non-negative"):
        factual_f1(-1, 0, 0)


def test_answer_correctness_ragas_docs_example() -> None:
    # Ground truth "Einstein was born in 1879 in Germany", answer "In 1879, Einstein was born in
    # Spain": TP = born in 1879, FP = born in Spain, FN = born in Germany → F1 = 0.5.
    assert answer_correctness(1, 1, 1, semantic_similarity=0.8) == pytest.approx(
        0.75 * 0.5 + 0.25 * 0.8
    )


def test_answer_correctness_weights_are_normalized_and_validated() -> None:
    assert answer_correctness(2, 1, 1, 0.9, weights=(1.0, 1.0)) == pytest.approx((2 / 3 + 0.9) / 2)
    assert answer_correctness(2, 1, 1, math.nan, weights=(1.0, 0.0)) == pytest.approx(2 / 3)
    with pytest.raises(UndefinedScoreError, match="similarity"):
        answer_correctness(2, 1, 1, math.nan)
    for weights in [(-0.1, 1.0), (0.0, 0.0), (1.0,)]:
        with pytest.raises(ValueError, match="weights"):
            validate_weights(weights)  # type: ignore[arg-type]


def test_ragas_answer_relevance_is_the_mean_cosine_of_generated_questions() -> None:
    question = np.array([1.0, 0.0])
    generated = np.array([[2.0, 0.0], [0.0, 1.0], [3.0, 4.0]])  # cosines 1, 0, 0.6
    assert ragas_answer_relevance(question, generated) == pytest.approx(1.6 / 3)
    assert ragas_answer_relevance(question, generated, noncommittal=True) == 0.0
    with pytest.raises(UndefinedScoreError, match="no generated questions"):
        ragas_answer_relevance(question, np.zeros((0, 2)))
    with pytest.raises(UndefinedScoreError, match="zero embedding"):
        ragas_answer_relevance(np.zeros(2), generated)


def test_cosine_helpers_handle_unnormalized_and_zero_vectors() -> None:
    np.testing.assert_allclose(
        cosine_to_rows(np.array([0.0, 2.0]), np.array([[0.0, 5.0], [1.0, 1.0]])),
        [1.0, math.sqrt(0.5)],
    )
    left = np.array([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0]])
    right = np.array([[3.0, 0.0], [1.0, 0.0], [-1.0, -1.0]])
    np.testing.assert_allclose(rowwise_cosine(left, right), [1.0, np.nan, -1.0])
    with pytest.raises(ValueError, match="shapes differ"):
        rowwise_cosine(left, right[:2])
