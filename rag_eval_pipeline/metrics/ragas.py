"""RAGAS metric formulas as pure math over judge verdicts and embeddings (no LLM calls here).

The judges (`rag_eval_pipeline.judges`) turn replies or heuristics into verdicts; these functions
turn verdicts into scores, exactly as the RAGAS documentation defines them
(https://docs.ragas.io/en/stable/concepts/metrics/available_metrics/):

- faithfulness: claims of the answer supported by the context / claims of the answer;
- context precision: Σ_k (precision@k × v_k) / (relevant chunks among the K retrieved);
- context recall: ground-truth claims attributable to the context / ground-truth claims;
- answer correctness: weighted mean of the factual F1 (TP/FP/FN statements) and the semantic
  similarity of answer and ground truth, weights (0.75, 0.25) by default;
- answer relevancy: mean cosine between the question and questions generated back from the
  answer, 0 when the answer is noncommittal.

A score that the definition leaves undefined (no claims, no retrieved chunk, ...) raises
`UndefinedScoreError`, which the judges record as an error row instead of a silent NaN.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

DEFAULT_CORRECTNESS_WEIGHTS: tuple[float, float] = (0.75, 0.25)


class UndefinedScoreError(ValueError):
    """The metric has no value for this input (for example an answer without any claim)."""


def faithfulness_score(supported: Sequence[bool]) -> float:
    """RAGAS faithfulness: |claims supported by the context| / |claims in the answer|.

    An answer without claims (a refusal, an empty string) has no faithfulness: raises
    `UndefinedScoreError("no claims")`, as RAGAS returns NaN there.
    """
    flags = np.asarray(supported, dtype=bool)
    if flags.size == 0:
        raise UndefinedScoreError("no claims")
    return float(flags.mean())


def context_precision(verdicts: Sequence[int]) -> float:
    """RAGAS context precision@K, the average precision of the ranked chunks.

    `verdicts[k-1]` is v_k ∈ {0, 1}, whether the chunk at rank k is relevant (useful for the
    ground-truth answer). Score = Σ_k (precision@k × v_k) / Σ_k v_k, with precision@k the share
    of relevant chunks in the top k; 0 when no chunk is relevant. Example from the RAGAS
    literature: verdicts [0, 0, 1, 1, 0] → (1/3 + 2/4) / 2 = 0.4167. No chunk at all raises
    `UndefinedScoreError("no contexts")`.
    """
    relevant = np.asarray(verdicts, dtype=np.int64)
    if relevant.size == 0:
        raise UndefinedScoreError("no contexts")
    if np.any((relevant != 0) & (relevant != 1)):
        raise ValueError(f"verdicts must be 0 or 1, got {relevant.tolist()}")
    n_relevant = int(relevant.sum())
    if n_relevant == 0:
        return 0.0
    precision_at_k = np.cumsum(relevant) / np.arange(1, relevant.size + 1)
    return float((precision_at_k * relevant).sum() / n_relevant)


def context_recall(attributed: Sequence[bool]) -> float:
    """RAGAS context recall: |ground-truth claims attributable to the context| / |GT claims|.

    A ground truth without claims raises `UndefinedScoreError("no ground-truth claims")`.
    """
    flags = np.asarray(attributed, dtype=bool)
    if flags.size == 0:
        raise UndefinedScoreError("no ground-truth claims")
    return float(flags.mean())


def factual_f1(tp: int, fp: int, fn: int) -> float:
    """RAGAS factual F1 of answer statements: TP / (TP + ½ (FP + FN)).

    TP: answer statements supported by the ground truth; FP: answer statements not in the
    ground truth; FN: ground-truth statements missing from the answer. With no statement on
    either side the F1 is undefined (`UndefinedScoreError("no statements")`).
    """
    if min(tp, fp, fn) < 0:
        raise ValueError(f"statement counts must be non-negative, got {(tp, fp, fn)}")
    if tp + fp + fn == 0:
        raise UndefinedScoreError("no statements")
    return tp / (tp + 0.5 * (fp + fn))


def validate_weights(weights: tuple[float, float]) -> None:
    """Answer-correctness weights (factual, semantic): two non-negative numbers, positive sum."""
    if len(weights) != 2 or min(weights) < 0 or sum(weights) <= 0:
        raise ValueError(f"weights must be two non-negative numbers with a positive sum: {weights}")


def answer_correctness(
    tp: int,
    fp: int,
    fn: int,
    semantic_similarity: float,
    weights: tuple[float, float] = DEFAULT_CORRECTNESS_WEIGHTS,
) -> float:
    """RAGAS answer correctness: (w_f · factual F1 + w_s · semantic similarity) / (w_f + w_s).

    `semantic_similarity` is the cosine of the answer and ground-truth embeddings (the judges
    clip it to [0, 1] so the score stays in [0, 1]); `weights` = (w_f, w_s), non-negative with a
    positive sum, (0.75, 0.25) by default as in RAGAS. With w_s = 0 the similarity is ignored.
    """
    validate_weights(weights)
    factual_weight, semantic_weight = weights
    f1 = factual_f1(tp, fp, fn)
    if semantic_weight == 0:
        return f1
    if not np.isfinite(semantic_similarity):
        raise UndefinedScoreError("semantic similarity is undefined")
    return (factual_weight * f1 + semantic_weight * semantic_similarity) / (
        factual_weight + semantic_weight
    )


def cosine_to_rows(vector: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Cosine similarity of one vector with each row of `matrix` (works on unnormalized input)."""
    vector = np.asarray(vector, dtype=np.float64).reshape(-1)
    matrix = np.asarray(matrix, dtype=np.float64).reshape(-1, vector.size)
    norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(vector)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(norms > 0, matrix @ vector / norms, np.nan)


def rowwise_cosine(left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """Cosine similarity of `left[i]` and `right[i]` for every row i (NaN for a zero vector)."""
    left = np.asarray(left, dtype=np.float64)
    right = np.asarray(right, dtype=np.float64)
    if left.shape != right.shape:
        raise ValueError(f"shapes differ: {left.shape} vs {right.shape}")
    norms = np.linalg.norm(left, axis=1) * np.linalg.norm(right, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(norms > 0, np.einsum("ij,ij->i", left, right) / norms, np.nan)


def ragas_answer_relevance(
    question_embedding: np.ndarray,
    generated_embeddings: np.ndarray,
    noncommittal: bool = False,
) -> float:
    """RAGAS answer relevancy: mean_i cos(E(question), E(generated_i)) × (1 − noncommittal),
    clipped to [0, 1] (a negative mean cosine means unrelated questions and scores 0, so every
    judge score stays in the unit interval).

    `generated_embeddings` holds one row per question generated back from the answer. A
    noncommittal answer ("I don't know") scores 0, as in RAGAS. No generated question raises
    `UndefinedScoreError("no generated questions")`.
    """
    generated = np.asarray(generated_embeddings)
    if generated.size == 0:
        raise UndefinedScoreError("no generated questions")
    similarities = cosine_to_rows(question_embedding, generated)
    if not np.all(np.isfinite(similarities)):
        raise UndefinedScoreError("zero embedding vector")
    if noncommittal:
        return 0.0
    return float(np.clip(similarities.mean(), 0.0, 1.0))
