"""context_relevance: mean clipped cosine between a question and each retrieved chunk."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import cosine

from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.generation import context_relevance_rows
from rag_eval_pipeline.metrics.embedding import context_relevance

pytestmark = [pytest.mark.integration]


def test_context_relevance_by_hand() -> None:
    questions = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    chunks = np.array([[1.0, 0.0], [1.0, 1.0], [-1.0, 0.0], [0.0, 5.0], [0.0, 0.0]])
    owners = np.array([0, 0, 0, 1, 1])
    got = context_relevance(questions, chunks, owners)
    # q0: cos 1, cos 45° = √2/2, cos 180° = -1 clipped to 0; q1: 1 and a zero chunk (0); q2: none
    expected = [(1 + np.sqrt(0.5) + 0) / 3, (1 + 0) / 2, np.nan]
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_context_relevance_rows_equal_scipy_on_real_embeddings(embedder: Embedder) -> None:
    frame = pd.DataFrame(
        {
            "system": "sut",
            "query_id": ["q1", "q2", "q3"],
            "question": [
                "How do I reset my password?",
                "When is the invoice generated?",
                "What regions exist?",
            ],
            "contexts": [
                ["Reset your password under Account > Security.", "Invoices are monthly."],
                ["Invoices are generated on the 1st of each month."],
                [],
            ],
        }
    )
    rows = context_relevance_rows(frame, embedder)
    assert rows["metric"].unique().tolist() == ["context_relevance"]
    for row, record in zip(rows.itertuples(), frame.itertuples(), strict=True):
        if not record.contexts:
            assert np.isnan(row.score) and row.error == "no contexts"
            continue
        question = embedder.encode([record.question])[0]
        sims = [1 - cosine(question, vector) for vector in embedder.encode(record.contexts)]
        assert row.score == pytest.approx(np.mean(np.clip(sims, 0, 1)), abs=1e-6)
        assert pd.isna(row.error) and 0 < row.score <= 1
