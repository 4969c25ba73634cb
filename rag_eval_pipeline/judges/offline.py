"""The deterministic judge that needs no network: the default `offline` LLM setting.

`OfflineJudge` implements the `Judge` protocol with sentence embeddings and lexical overlap, so
every tier runs (and tests run) without an LLM. Its scores are heuristics, labeled
`judge_model = "offline-heuristic-judge"` in every row; compare them with each other, not with
LLM-judge scores.

Sentences come from a Unicode-aware regex (`split_sentences`), tokens are case-folded `\\w+`
runs of any script. An evidence sentence e *supports* a claim sentence s when

    support(s, e) = (1 − λ) · cos(E(s), E(e)) + λ · |T(s) ∩ T(e)| / |T(s)|  ≥  `threshold`

with E the embedder, T the token set, λ = `lexical_weight` (0.5) and `threshold` 0.6. The lexical
half keeps the judge meaningful where the embedder is weak: the default all-MiniLM-L6-v2 is
English-centric and gives unrelated Cyrillic sentences cosines near 0.6; λ = 0 is pure cosine.
Each metric's heuristic is defined, and scored, in its module of `rag_eval_pipeline.judges.metrics`
(`heuristic_row`): faithfulness and context recall count claim sentences supported by the
context, context precision marks chunks that support the ground truth, answer correctness sorts
sentences into TP / FP / FN, answer relevance (both variants), e2e usefulness and coherence use
cosines of whole texts or sentences (e2e adds token F1). The methods here batch the embeddings,
compute the supports and build the frames.

Bounded cost on any input: the judge reads the sentences of each text's first `MAX_JUDGED_CHARS`
(20,000) characters, at most `MAX_SENTENCES` (256) per text or per row's context, so a support
matrix is at most 256 × 256 whatever the input; a row whose texts exceed these bounds has
`truncated` set (conservatively: also where a metric happened to need only the part it read).

A noncommittal answer is an empty answer, or a one-sentence answer with a refusal phrase ("I
don't know", "not enough information", "не знаю", "não sei", ...; `heuristics.is_noncommittal`).
`raw_reply` holds the heuristic's decisions as JSON in the schema the LLM judge's prompt asks
for (plus supports), so failures are inspected the same way. Embeddings are computed in one
batch per call, so `latency_ms` is the call's wall-clock time divided evenly over its rows.

Given a `ResultCache`, the judge keeps each call's result under a digest of the metric, its
inputs, the judge version, the embedder and the package code, like the LLM judge's reply cache:
a new date or a backfill over unchanged answers reads it back (rows marked `cached`, with the
latency measured when it was computed). `use_cache=False` (the consistency repeats) recomputes.

The generators of the systems under test live in `rag_eval_pipeline.systems.generators`; the
sentence splitting, tokens and bounds in `rag_eval_pipeline.embedding.sentences`.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from rag_eval_pipeline.datasets.values import as_chunks
from rag_eval_pipeline.embedding.sentences import Sentences, exceeds_bounds
from rag_eval_pipeline.judges.judge import Frame, judgment_frame, uncalled_columns
from rag_eval_pipeline.judges.spec import JudgedMetric
from rag_eval_pipeline.storage.code_version import code_digest

if TYPE_CHECKING:
    from rag_eval_pipeline.embedding.embedder import Embedder
    from rag_eval_pipeline.storage.result_cache import ResultCache

OFFLINE_JUDGE_MODEL = "offline-heuristic-judge"
OFFLINE_JUDGE_VERSION = "offline-heuristics-v1"


def _plain(value: Any) -> Any:
    """`value` with arrays and tuples as lists, for a stable JSON digest of judge inputs."""
    if isinstance(value, np.ndarray | list | tuple):
        return [_plain(item) for item in value]
    return value


class OfflineJudge:
    """The deterministic heuristic judge; formulas in the module docstring.

    `threshold`: the support at which one sentence backs a claim; `lexical_weight`: λ, the
    weight of token recall in the support; `e2e_semantic_weight`: the weight of the embedding
    cosine in the e2e score. `cache`: where results are kept by content (None: nowhere).
    """

    def __init__(
        self,
        embedder: Embedder,
        threshold: float = 0.6,
        lexical_weight: float = 0.5,
        e2e_semantic_weight: float = 0.5,
        cache: ResultCache | None = None,
    ) -> None:
        if not -1.0 <= threshold <= 1.0:
            raise ValueError(f"threshold must be in [-1, 1], got {threshold}")
        for name, weight in (
            ("lexical_weight", lexical_weight),
            ("e2e_semantic_weight", e2e_semantic_weight),
        ):
            if not 0.0 <= weight <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {weight}")
        self.embedder = embedder
        self.threshold = threshold
        self.lexical_weight = lexical_weight
        self.e2e_semantic_weight = e2e_semantic_weight
        self.cache = cache

    @property
    def judge_model(self) -> str:
        """Always `OFFLINE_JUDGE_MODEL`."""
        return OFFLINE_JUDGE_MODEL

    @property
    def judge_version(self) -> str:
        """The heuristics version and its parameters."""
        return (
            f"{OFFLINE_JUDGE_VERSION}(threshold={self.threshold}, "
            f"lexical_weight={self.lexical_weight}, "
            f"e2e_semantic_weight={self.e2e_semantic_weight})"
        )

    def support(self, claims: Sentences, evidence: Sentences) -> np.ndarray:
        """Per claim sentence, its best support by an evidence sentence (NaN without evidence).

        support(s, e) = (1 − λ) · cos(E(s), E(e)) + λ · |T(s) ∩ T(e)| / |T(s)|.
        """
        if len(evidence) == 0:
            return np.full(len(claims), np.nan)
        cosine = claims.vectors @ evidence.vectors.T
        lexical = np.array(
            [[len(c & e) / max(len(c), 1) for e in evidence.tokens] for c in claims.tokens],
            dtype=np.float64,
        ).reshape(cosine.shape)
        combined = (1 - self.lexical_weight) * cosine + self.lexical_weight * lexical
        return combined.max(axis=1)

    def score(self, metric: JudgedMetric, frame: Frame, *, use_cache: bool = True) -> pd.DataFrame:
        """`metric`'s heuristic on every row of `frame`, read back from the result cache when
        the same inputs were judged before (module docstring)."""
        texts = metric.texts(frame)
        if self.cache is None or not use_cache:
            return self._score(metric, texts)
        identity = [metric.name, _plain(metric.parameters), self.judge_version]
        identity += [self.embedder.identity, code_digest()]
        payload = json.dumps([identity, _plain(texts)], default=str)
        key = hashlib.blake2b(payload.encode(), digest_size=20).hexdigest()
        hit = self.cache.get(key)
        if hit is not None:
            return hit.assign(cached=True)
        frame = self._score(metric, texts)
        self.cache.put(key, frame)
        return frame

    def _score(self, metric: JudgedMetric, texts: list[dict[str, Any]]) -> pd.DataFrame:
        """The metric's frame; the texts it reads (`reads`) set each row's `truncated`, and the
        call's wall-clock time is spread evenly over its rows (`latency_ms`)."""
        if metric.heuristic is None:
            raise ValueError(f"{metric.name} needs an LLM judge: it has no offline heuristic")
        start = time.perf_counter()
        rows = metric.heuristic(self, texts, [metric.problem(row) for row in texts])
        latency_ms = (time.perf_counter() - start) * 1000 / max(len(rows), 1)
        truncated = _over_bounds(*metric.read_columns(texts))
        common = uncalled_columns(self.judge_model, self.judge_version, latency_ms)
        rows = [
            row | {"truncated": flag} | common for row, flag in zip(rows, truncated, strict=True)
        ]
        return judgment_frame(metric.detail_columns, rows)


def _over_bounds(*columns: Sequence[Any]) -> list[bool]:
    """Per row, whether the judge reads only part of one of its texts (see `exceeds_bounds`)."""
    return [
        any(exceeds_bounds(as_chunks(value)) for value in row) for row in zip(*columns, strict=True)
    ]
