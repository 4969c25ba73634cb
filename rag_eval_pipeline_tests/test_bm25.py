"""BM25 against its peer: the same formula over scikit-learn's `CountVectorizer` and SciPy."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction.text import CountVectorizer

from rag_eval_pipeline.datasets.golden import load_dataset
from rag_eval_pipeline.settings import PROJECT_ROOT
from rag_eval_pipeline.systems.retrievers import bm25_scores, document_texts, tokenize

pytestmark = [pytest.mark.unit]


def peer_bm25(questions: list[str], documents: list[str], k1: float, b: float) -> np.ndarray:
    """BM25 as the pipeline computed it before it dropped scikit-learn from the hot path."""
    vectorizer = CountVectorizer(token_pattern=r"(?u)\b\w+\b", lowercase=True)
    term_freq = vectorizer.fit_transform(documents).tocsr().astype(np.float64)
    n_docs = term_freq.shape[0]
    doc_freq = np.bincount(term_freq.indices, minlength=term_freq.shape[1])
    idf = np.log1p((n_docs - doc_freq + 0.5) / (doc_freq + 0.5))
    lengths = np.asarray(term_freq.sum(axis=1)).ravel()
    norm = k1 * (1 - b + b * lengths / max(lengths.mean(), 1e-9))
    weights = term_freq.copy()
    rows = np.repeat(np.arange(n_docs), np.diff(term_freq.indptr))
    tf = term_freq.data
    weights.data = idf[term_freq.indices] * tf * (k1 + 1) / (tf + norm[rows])
    return np.asarray((vectorizer.transform(questions) @ weights.T).todense())


@pytest.mark.parametrize("version", ["demo-v1", "demo-v2"])
def test_equals_the_sklearn_scipy_formula_bit_for_bit_on_the_demo_corpora(version: str) -> None:
    dataset = load_dataset(PROJECT_ROOT / "data" / "datasets" / version)
    questions = dataset.queries["question"].tolist()
    documents = document_texts(dataset.corpus)
    ours = bm25_scores(questions, documents)
    assert ours.shape == (len(questions), len(documents))
    assert (ours > 0).any()
    np.testing.assert_array_equal(ours, peer_bm25(questions, documents, 1.2, 0.75))


WORDS = st.sampled_from(["Alpha", "beta", "gamma", "délta", "x1", "ß", "the", "of", "42", "_a"])
TEXT = st.lists(WORDS, max_size=12).map(" ".join).map(lambda t: t.replace(" x1", ", x1!"))


@settings(max_examples=200, deadline=None)
@given(
    documents=st.lists(TEXT, min_size=1, max_size=8).filter(lambda d: any(map(tokenize, d))),
    questions=st.lists(TEXT, min_size=1, max_size=5),
    k1=st.sampled_from([0.9, 1.2, 2.0]),
    b=st.sampled_from([0.0, 0.4, 0.75, 1.0]),
)
def test_equals_the_peer_on_random_texts(
    documents: list[str], questions: list[str], k1: float, b: float
) -> None:
    ours = bm25_scores(questions, documents, k1=k1, b=b)
    np.testing.assert_array_equal(ours, peer_bm25(questions, documents, k1, b))


def test_tokens_are_lowercased_unicode_words() -> None:
    assert tokenize("Error E-42: Überlauf_x, naïve!") == ["error", "e", "42", "überlauf_x", "naïve"]


def test_a_term_found_in_no_document_scores_zero_and_empty_inputs_give_empty_scores() -> None:
    scores = bm25_scores(["unseen words", "cat"], ["the cat sat", "a dog"])
    assert scores[0].tolist() == [0.0, 0.0]
    assert scores[1, 0] > 0 and scores[1, 1] == 0
    assert bm25_scores([], ["a b"]).shape == (0, 1)
    assert bm25_scores(["a"], []).shape == (1, 0)
