"""Every per-question score of one tier's answers, in the judgments layout.

Tiers 2 (ideal context) and 3 (end to end) score their answers the same way: the judge's
metrics, the reference scores (ROUGE, BLEU, exact match, semantic similarity), the answer checks
(regex match, citations against the tier's source documents), the refusal rate, then the
composite of those per question (`config/composite.yaml`). Tier 3 adds context relevance. A
declined answer scores 0 in the E2E score and the composite (`evaluation.declined`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from rag_eval_pipeline.datasets.golden import GoldenDataset
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.composite import composite_rows
from rag_eval_pipeline.evaluation.declined import zero_declined
from rag_eval_pipeline.evaluation.generation import (
    answer_checks,
    context_relevance_rows,
    judge_answers,
    reference_scores,
    refusal_scores,
)
from rag_eval_pipeline.judges.judge import Judge


def score_answers(
    answers: pd.DataFrame,
    dataset: GoldenDataset,
    judge: Judge,
    embedder: Embedder,
    judge_metrics: Sequence[str],
    weights: Mapping[str, float],
    *,
    sources: str = "retrieved_doc_ids",
    with_context_relevance: bool = False,
) -> pd.DataFrame:
    """All scores of `answers` (`system, query_id, question, answer, ...`): long judgment rows.

    `sources` is the column of document ids the `[n]` citation markers point into;
    `with_context_relevance` adds the question–context cosine of the retrieved contexts.
    """
    judged = judge_answers(answers, judge, judge_metrics)
    parts = [judged, reference_scores(answers, embedder)]
    if with_context_relevance:
        parts.append(context_relevance_rows(answers, embedder))
    parts += [answer_checks(answers, dataset, sources=sources), refusal_scores(answers, judged)]
    judgments = pd.concat(parts, ignore_index=True)
    zero_declined(judgments)
    return pd.concat([judgments, composite_rows(judgments, dict(weights))], ignore_index=True)
