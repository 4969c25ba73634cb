"""UX-tier metrics computed from pre-computed, L2-normalized text embeddings.

All functions take an ``(n, d)`` float array whose rows are unit vectors (row ``i`` belongs to
row ``i`` of the accompanying frame, by position), so cosine similarity is a dot product.
Rows whose norm differs from 1 by more than ``1e-3`` raise ``ValueError``. Computation stays
in the input float dtype (float32 embeddings are not up-cast).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

__all__ = [
    "SessionScores",
    "cache_hit_rate",
    "context_preservation",
    "multi_turn_consistency",
    "semantic_cache_hits",
]

_NORM_TOLERANCE = 1e-3
_BLOCK_ELEMENTS = 1 << 24


class SessionScores(NamedTuple):
    """Per-session scores plus their overall (macro) mean.

    ``per_session`` has one row per scored session; ``overall`` is the unweighted mean of the
    non-NaN session scores (each session counts once), NaN when there is none.
    """

    per_session: pd.DataFrame
    overall: float


def _unit_rows(embeddings: ArrayLike, n_rows: int | None = None) -> np.ndarray:
    array = np.asarray(embeddings)
    if not np.issubdtype(array.dtype, np.floating):
        array = array.astype(np.float32)
    if array.ndim != 2:
        raise ValueError(f"embeddings must be 2-D (n, d), got shape {array.shape}")
    if n_rows is not None and array.shape[0] != n_rows:
        raise ValueError(f"expected {n_rows} embedding rows (one per frame row), got {len(array)}")
    norms = np.linalg.norm(array, axis=1)
    if not (np.abs(norms - 1.0) <= _NORM_TOLERANCE).all():
        raise ValueError("embeddings must be L2-normalized (every row of norm 1)")
    return array


def semantic_cache_hits(
    embeddings: ArrayLike,
    threshold: float = 0.85,
    *,
    block_elements: int = _BLOCK_ELEMENTS,
) -> np.ndarray:
    """Which questions a semantic cache would have answered.

    Questions arrive in row order and every question is put in the cache. Question ``i`` is a
    hit iff ``cos(e_i, e_j) > threshold`` (strictly) for at least one earlier question
    ``j < i``, whether or not ``j`` was itself a hit. The first question is never a hit.
    The comparison is made in the embeddings' dtype (a float32 similarity equal to
    ``float32(threshold)`` is not a hit).

    Similarities are computed in blocks of rows, each block against all earlier rows, with at
    most ``block_elements`` similarities per block (64 MiB for float32 at the default), so
    memory stays bounded for 100k questions; time is O(n² d).

    Returns:
        Boolean array of length ``n``.
    """
    vectors = _unit_rows(embeddings)
    n = vectors.shape[0]
    limit = vectors.dtype.type(threshold)
    hits = np.zeros(n, dtype=bool)
    block = max(1, block_elements // max(n, 1))
    for start in range(1, n, block):
        stop = min(start + block, n)
        similarities = vectors[start:stop] @ vectors[:stop].T
        # within the diagonal square, keep only j < i (strictly lower triangle)
        square = similarities[:, start:]
        square[~np.tri(stop - start, k=-1, dtype=bool)] = -np.inf
        hits[start:stop] = similarities.max(axis=1) > limit
    return hits


def cache_hit_rate(
    embeddings: ArrayLike,
    threshold: float = 0.85,
    *,
    block_elements: int = _BLOCK_ELEMENTS,
) -> float:
    """Fraction of questions that are :func:`semantic_cache_hits`; NaN for no questions."""
    hits = semantic_cache_hits(embeddings, threshold, block_elements=block_elements)
    return float(hits.mean()) if hits.size else float("nan")


def _consecutive_pairs(
    frame: pd.DataFrame, session_col: str, turn_col: str
) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``(earlier, later)`` of consecutive turns within each session."""
    missing = [c for c in (session_col, turn_col) if c not in frame.columns]
    if missing:
        raise KeyError(f"columns not in frame: {missing}")
    keys = frame[[session_col, turn_col]].reset_index(drop=True)
    if keys.isna().any().any():
        raise ValueError(f"{session_col!r} and {turn_col!r} must not contain missing values")
    if keys.duplicated().any():
        raise ValueError(f"duplicate ({session_col}, {turn_col}) pairs: turn order is ambiguous")
    order = keys.sort_values([session_col, turn_col], kind="stable").index.to_numpy()
    sessions = keys[session_col].to_numpy()[order]
    same_session = sessions[1:] == sessions[:-1]
    return order[:-1][same_session], order[1:][same_session]


def _session_table(
    frame: pd.DataFrame,
    session_col: str,
    earlier: np.ndarray,
    pair_columns: dict[str, np.ndarray],
    score_column: str,
    score_values: np.ndarray,
) -> pd.DataFrame:
    """Aggregate per-pair values by session of the pair (sessions with >= 2 turns only)."""
    sessions = frame[session_col].to_numpy()
    pairs = pd.DataFrame(
        {session_col: sessions[earlier], score_column: score_values, **pair_columns}
    )
    turns = frame.groupby(session_col, sort=True).size().rename("n_turns")
    aggregations = {name: (name, "sum") for name in pair_columns}
    per_session = pairs.groupby(session_col, sort=True).agg(
        n_pairs=(score_column, "size"), **aggregations, **{score_column: (score_column, "mean")}
    )
    per_session = per_session.join(turns, how="left")
    columns = [session_col, "n_turns", "n_pairs", *pair_columns, score_column]
    return per_session.reset_index()[columns]


def _macro_mean(scores: pd.Series) -> float:
    valid = scores.dropna()
    return float(valid.mean()) if len(valid) else float("nan")


def context_preservation(
    frame: pd.DataFrame,
    embeddings: ArrayLike,
    session_col: str = "session_id",
    turn_col: str = "turn",
) -> SessionScores:
    """How much consecutive turns of a conversation stay on the same topic.

    Within each session, turns are sorted by ``turn_col``; the session score is the mean
    cosine similarity between the embeddings of consecutive turns (turn k vs the next turn).
    Sessions with a single turn have no pair and are excluded. ``embeddings[i]`` embeds row
    ``i`` of ``frame`` (typically the user message). ``(session, turn)`` pairs must be unique.

    Returns:
        :class:`SessionScores` whose ``per_session`` has columns ``session_col``,
        ``n_turns``, ``n_pairs``, ``context_preservation`` (sorted by session), and whose
        ``overall`` is the mean of the session scores.
    """
    vectors = _unit_rows(embeddings, n_rows=len(frame))
    earlier, later = _consecutive_pairs(frame, session_col, turn_col)
    cosines = np.einsum("ij,ij->i", vectors[earlier], vectors[later]).astype(np.float64)
    per_session = _session_table(frame, session_col, earlier, {}, "context_preservation", cosines)
    return SessionScores(per_session, _macro_mean(per_session["context_preservation"]))


def _doc_set(value: object) -> set[object]:
    """Retrieved document ids as a set; ``None``/NaN (no retrieval) is the empty set."""
    if value is None or (pd.api.types.is_scalar(value) and pd.isna(value)):
        return set()
    if isinstance(value, str) or not isinstance(value, Iterable):
        raise ValueError(f"retrieved document ids must be a list of ids, got {value!r}")
    return set(value)


def multi_turn_consistency(
    frame: pd.DataFrame,
    answer_embeddings: ArrayLike,
    session_col: str = "session_id",
    turn_col: str = "turn",
    docs_col: str = "retrieved_doc_ids",
) -> SessionScores:
    """Whether answers stay consistent across turns grounded in the same documents.

    Definition: for each session, for each pair of consecutive turns (sorted by
    ``turn_col``) whose retrieved document sets overlap (share >= 1 doc id), the cosine
    similarity of their answers' embeddings; the session score is the mean over such pairs.

    Sessions with a single turn are excluded. Sessions with >= 2 turns but no overlapping
    consecutive pair are listed with a NaN score and ignored by ``overall``.
    ``answer_embeddings[i]`` embeds the answer of row ``i``; ``docs_col`` holds a list (or
    array) of doc ids per row, ``None``/NaN meaning nothing was retrieved.

    Returns:
        :class:`SessionScores` whose ``per_session`` has columns ``session_col``, ``n_turns``,
        ``n_pairs`` (consecutive pairs), ``n_overlapping_pairs``,
        ``multi_turn_consistency`` (sorted by session), and whose ``overall`` is the mean of
        the non-NaN session scores.
    """
    if docs_col not in frame.columns:
        raise KeyError(f"column not in frame: {docs_col!r}")
    vectors = _unit_rows(answer_embeddings, n_rows=len(frame))
    earlier, later = _consecutive_pairs(frame, session_col, turn_col)
    doc_sets = [_doc_set(value) for value in frame[docs_col]]
    overlapping = np.array(
        [not doc_sets[i].isdisjoint(doc_sets[j]) for i, j in zip(earlier, later, strict=True)],
        dtype=bool,
    )
    cosines = np.einsum("ij,ij->i", vectors[earlier], vectors[later]).astype(np.float64)
    per_session = _session_table(
        frame,
        session_col,
        earlier,
        {"n_overlapping_pairs": overlapping.astype(np.int64)},
        "multi_turn_consistency",
        np.where(overlapping, cosines, np.nan),
    )
    return SessionScores(per_session, _macro_mean(per_session["multi_turn_consistency"]))
