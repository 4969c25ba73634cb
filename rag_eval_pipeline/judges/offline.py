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

import functools
import hashlib
import json
import math
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import numpy as np
import pandas as pd

from rag_eval_pipeline.datasets.values import (
    aligned,
    as_chunks,
    as_text,
    missing_answer,
    missing_input,
)
from rag_eval_pipeline.embedding.sentences import (
    Sentences,
    chunk_sentences,
    context_sentences,
    embed_sentences,
    exceeds_bounds,
    split_sentences,
)
from rag_eval_pipeline.judges.heuristics import is_noncommittal
from rag_eval_pipeline.judges.judge import judgment_frame
from rag_eval_pipeline.judges.metrics import (
    answer_correctness,
    answer_relevance,
    answer_relevance_ragas,
    coherence,
    context_precision,
    context_recall,
    e2e_score,
    faithfulness,
)
from rag_eval_pipeline.metrics.ragas import DEFAULT_CORRECTNESS_WEIGHTS, validate_weights
from rag_eval_pipeline.storage.code_version import code_digest

if TYPE_CHECKING:
    from rag_eval_pipeline.embedding.embedder import Embedder
    from rag_eval_pipeline.storage.result_cache import ResultCache

JudgeMethod = TypeVar("JudgeMethod", bound=Callable[..., pd.DataFrame])

OFFLINE_JUDGE_MODEL = "offline-heuristic-judge"
OFFLINE_JUDGE_VERSION = "offline-heuristics-v1"
NO_TRUTH_CLAIMS = "no ground-truth claims"


def _cosine(left: Sentences, right: Sentences) -> float:
    """Cosine of the first text of each side (used for whole-text comparisons)."""
    return float(left.vectors[0] @ right.vectors[0])


def _plain(value: Any) -> Any:
    """`value` with arrays and tuples as lists, for a stable JSON digest of judge inputs."""
    if isinstance(value, np.ndarray | list | tuple):
        return [_plain(item) for item in value]
    return value


def remembered(method: JudgeMethod) -> JudgeMethod:
    """Serve an `OfflineJudge` method from the judge's result cache (see module docstring)."""

    @functools.wraps(method)
    def wrapper(self: OfflineJudge, *args: Any, use_cache: bool = True, **kwargs: Any) -> Any:
        if self.cache is None or not use_cache:
            return method(self, *args, use_cache=use_cache, **kwargs)
        identity = [method.__name__, self.judge_version, self.embedder.identity, code_digest()]
        payload = json.dumps([identity, _plain(args), sorted(kwargs.items())], default=str)
        key = hashlib.blake2b(payload.encode(), digest_size=20).hexdigest()
        hit = self.cache.get(key)
        if hit is not None:
            return hit.assign(cached=True)
        frame = method(self, *args, use_cache=use_cache, **kwargs)
        self.cache.put(key, frame)
        return frame

    return cast(JudgeMethod, wrapper)


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

    @remembered
    def faithfulness(
        self,
        questions: Sequence[str],
        contexts: Sequence[Sequence[str]],
        answers: Sequence[str],
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame:
        """Share of answer sentences supported by a context sentence."""
        start = time.perf_counter()
        aligned(questions=questions, contexts=contexts, answers=answers)
        answer_texts = [as_text(a) for a in answers]
        problems = [
            missing_input(question=as_text(q)) or missing_answer(a)
            for q, a in zip(questions, answer_texts, strict=True)
        ]
        claims = embed_sentences(
            self.embedder,
            _unless(
                problems,
                (faithfulness.offline_claims(a or "") for a in answer_texts),
            ),
        )
        evidence = embed_sentences(
            self.embedder, _unless(problems, map(context_sentences, contexts))
        )
        rows = self._claim_rows(problems, claims, evidence, faithfulness.heuristic_row)
        return self._frame(faithfulness.NAME, rows, start, contexts, answer_texts)

    @remembered
    def answer_relevance(
        self, questions: Sequence[str], answers: Sequence[str], *, use_cache: bool = True
    ) -> pd.DataFrame:
        """clip(cos(question, answer), 0, 1); 0 for an empty or noncommittal answer."""
        start = time.perf_counter()
        aligned(questions=questions, answers=answers)
        pairs = [(as_text(q), as_text(a)) for q, a in zip(questions, answers, strict=True)]
        problems = [missing_input(question=q) or missing_answer(a) for q, a in pairs]
        skipped = [p or is_noncommittal(a or "") for p, (_, a) in zip(problems, pairs, strict=True)]
        question_vectors = embed_sentences(self.embedder, _unless(skipped, ([q] for q, _ in pairs)))
        answer_vectors = embed_sentences(
            self.embedder,
            _unless(skipped, ([" ".join(split_sentences(a or ""))] for _, a in pairs)),
        )
        rows = []
        for i, problem in enumerate(problems):
            if problem:
                rows.append({"score": math.nan, "error": problem})
                continue
            cosine = None if skipped[i] else _cosine(question_vectors[i], answer_vectors[i])
            rows.append(answer_relevance.heuristic_row(cosine))
        return self._frame(answer_relevance.NAME, rows, start, questions, answers)

    @remembered
    def coherence(
        self, questions: Sequence[str], answers: Sequence[str], *, use_cache: bool = True
    ) -> pd.DataFrame:
        """Heuristic coherence: mean clip(cos, 0, 1) of consecutive answer sentences; 1 for a
        single sentence, 0 for an answer without sentences."""
        start = time.perf_counter()
        aligned(questions=questions, answers=answers)
        texts = [as_text(a) for a in answers]
        problems = [
            missing_input(question=as_text(q)) or missing_answer(a)
            for q, a in zip(questions, texts, strict=True)
        ]
        sentences = embed_sentences(
            self.embedder, _unless(problems, (split_sentences(a or "") for a in texts))
        )
        rows = []
        for problem, embedded in zip(problems, sentences, strict=True):
            if problem:
                rows.append({"score": math.nan, "error": problem})
                continue
            rows.append(coherence.heuristic_row(embedded.vectors))
        return self._frame(coherence.NAME, rows, start, answers)

    @remembered
    def answer_relevance_ragas(
        self,
        questions: Sequence[str],
        answers: Sequence[str],
        n: int = 3,
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame:
        """clip(mean cos(question, first n answer sentences), 0, 1); 0 when noncommittal."""
        if n < 1:
            raise ValueError(f"n must be at least 1, got {n}")
        start = time.perf_counter()
        aligned(questions=questions, answers=answers)
        pairs = [(as_text(q), as_text(a)) for q, a in zip(questions, answers, strict=True)]
        problems = [missing_input(question=q) or missing_answer(a) for q, a in pairs]
        question_vectors = embed_sentences(
            self.embedder, _unless(problems, ([q] for q, _ in pairs))
        )
        probes = embed_sentences(
            self.embedder, _unless(problems, (split_sentences(a or "")[:n] for _, a in pairs))
        )
        rows = []
        for i, (problem, (_, answer)) in enumerate(zip(problems, pairs, strict=True)):
            if problem:
                rows.append({"score": math.nan, "error": problem})
                continue
            rows.append(
                answer_relevance_ragas.heuristic_row(
                    question_vectors[i].vectors[0], probes[i], is_noncommittal(answer)
                )
            )
        return self._frame(answer_relevance_ragas.NAME, rows, start, questions, answers)

    @remembered
    def e2e_score(
        self,
        questions: Sequence[str],
        answers: Sequence[str],
        ground_truths: Sequence[str],
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame:
        """w · clip(cos(answer, ground truth), 0, 1) + (1 − w) · token F1; 0 for an empty answer."""
        start = time.perf_counter()
        aligned(questions=questions, answers=answers, ground_truths=ground_truths)
        triples = [
            (as_text(q), as_text(a), as_text(g))
            for q, a, g in zip(questions, answers, ground_truths, strict=True)
        ]
        problems = [
            missing_input(question=q, ground_truth=g) or missing_answer(a) for q, a, g in triples
        ]
        answer_texts = [" ".join(split_sentences(a or "")) for _, a, _ in triples]
        skipped = [p or not a for p, a in zip(problems, answer_texts, strict=True)]
        answer_vectors = embed_sentences(
            self.embedder, _unless(skipped, ([a] for a in answer_texts))
        )
        truth_vectors = embed_sentences(
            self.embedder, _unless(skipped, ([g] for _, _, g in triples))
        )
        rows = []
        for i, (problem, (_, answer, truth)) in enumerate(zip(problems, triples, strict=True)):
            if problem:
                rows.append({"score": math.nan, "error": problem})
                continue
            cosine = None if skipped[i] else _cosine(answer_vectors[i], truth_vectors[i])
            rows.append(
                e2e_score.heuristic_row(cosine, answer or "", truth or "", self.e2e_semantic_weight)
            )
        return self._frame(e2e_score.NAME, rows, start, answers, ground_truths)

    @remembered
    def context_precision(
        self,
        questions: Sequence[str],
        contexts: Sequence[Sequence[str]],
        ground_truths: Sequence[str],
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame:
        """Average precision of the chunks holding a sentence that supports the ground truth; a
        ground truth without a sentence (no word) has no score, only the error
        `no ground-truth claims`."""
        start = time.perf_counter()
        aligned(questions=questions, contexts=contexts, ground_truths=ground_truths)
        chunk_lists = [as_chunks(chunks) for chunks in contexts]
        truths = [as_text(g) for g in ground_truths]
        problems = [
            missing_input(question=as_text(q), ground_truth=g) or (None if c else "no contexts")
            for q, c, g in zip(questions, chunk_lists, truths, strict=True)
        ]
        truth_sentences = embed_sentences(
            self.embedder, _unless(problems, (split_sentences(g or "") for g in truths))
        )
        chunk_evidence = iter(
            embed_sentences(
                self.embedder,
                [
                    sentences
                    for p, chunks in zip(problems, chunk_lists, strict=True)
                    if not p
                    for sentences in chunk_sentences(chunks)
                ],
            )
        )
        rows = []
        for i, problem in enumerate(problems):
            if problem:
                rows.append({"score": math.nan, "error": problem})
                continue
            supports = [
                self.support(truth_sentences[i], next(chunk_evidence)) for _ in chunk_lists[i]
            ]
            if len(truth_sentences[i]) == 0:
                rows.append({"score": math.nan, "error": NO_TRUTH_CLAIMS})
                continue
            best = [float(np.max(support)) for support in supports]
            rows.append(context_precision.heuristic_row(best, self.threshold))
        return self._frame(context_precision.NAME, rows, start, chunk_lists, truths)

    @remembered
    def context_recall(
        self,
        contexts: Sequence[Sequence[str]],
        ground_truths: Sequence[str],
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame:
        """Share of ground-truth sentences supported by a context sentence."""
        start = time.perf_counter()
        aligned(contexts=contexts, ground_truths=ground_truths)
        truths = [as_text(g) for g in ground_truths]
        problems = [missing_input(ground_truth=g) for g in truths]
        claims = embed_sentences(
            self.embedder, _unless(problems, (split_sentences(g or "") for g in truths))
        )
        evidence = embed_sentences(
            self.embedder, _unless(problems, map(context_sentences, contexts))
        )
        rows = self._claim_rows(problems, claims, evidence, context_recall.heuristic_row)
        return self._frame(context_recall.NAME, rows, start, contexts, truths)

    @remembered
    def answer_correctness(
        self,
        answers: Sequence[str],
        ground_truths: Sequence[str],
        weights: tuple[float, float] = DEFAULT_CORRECTNESS_WEIGHTS,
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame:
        """RAGAS answer correctness over sentence support (TP/FP/FN) and embedding similarity."""
        validate_weights(weights)
        start = time.perf_counter()
        aligned(answers=answers, ground_truths=ground_truths)
        pairs = [(as_text(a), as_text(g)) for a, g in zip(answers, ground_truths, strict=True)]
        problems = [missing_input(ground_truth=g) or missing_answer(a) for a, g in pairs]
        answer_sentences = _unless(problems, (split_sentences(a or "") for a, _ in pairs))
        truth_sentences = _unless(problems, (split_sentences(g or "") for _, g in pairs))
        statements = embed_sentences(self.embedder, answer_sentences + truth_sentences)
        whole = embed_sentences(
            self.embedder,
            [
                [" ".join(a), " ".join(g)] if a else []
                for a, g in zip(answer_sentences, truth_sentences, strict=True)
            ],
        )
        rows = []
        for i, problem in enumerate(problems):
            if problem:
                rows.append({"score": math.nan, "error": problem})
                continue
            answer, truth = statements[i], statements[len(problems) + i]
            similarity = (
                min(max(float(whole[i].vectors[0] @ whole[i].vectors[1]), 0.0), 1.0)
                if len(whole[i])
                else 0.0
            )
            rows.append(
                answer_correctness.heuristic_row(
                    answer,
                    truth,
                    self.support(answer, truth),
                    self.support(truth, answer),
                    self.threshold,
                    similarity,
                    weights,
                )
            )
        return self._frame(answer_correctness.NAME, rows, start, answers, ground_truths)

    def _claim_rows(
        self,
        problems: Sequence[str | None],
        claims: Sequence[Sentences],
        evidence: Sequence[Sentences],
        heuristic: Callable[[Sentences, np.ndarray, float], dict[str, Any]],
    ) -> list[dict[str, Any]]:
        """Rows for a claims-vs-evidence metric: the metric's `heuristic` of each row's claims
        and of their best support by an evidence sentence (`support`)."""
        rows: list[dict[str, Any]] = []
        for problem, claim, context in zip(problems, claims, evidence, strict=True):
            if problem:
                rows.append({"score": math.nan, "error": problem})
                continue
            rows.append(heuristic(claim, self.support(claim, context), self.threshold))
        return rows

    def _frame(
        self, metric: str, rows: list[dict[str, Any]], start: float, *inputs: Sequence[Any]
    ) -> pd.DataFrame:
        """The metric's frame; `inputs` (the text columns it read) set each row's `truncated`."""
        latency_ms = (time.perf_counter() - start) * 1000 / max(len(rows), 1)
        rows = [
            row | {"truncated": truncated}
            for row, truncated in zip(rows, _over_bounds(*inputs), strict=True)
        ]
        common = {
            "latency_ms": latency_ms,
            "judge_model": self.judge_model,
            "judge_version": self.judge_version,
            "cached": False,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost_usd": 0.0,
        }
        return judgment_frame(metric, [row | common for row in rows])


def _unless(skipped: Sequence[Any], groups: Iterable[list[str]]) -> list[list[str]]:
    """`groups`, emptied for the rows marked in `skipped` (nothing to embed for them)."""
    return [[] if skip else group for skip, group in zip(skipped, groups, strict=True)]


def _over_bounds(*columns: Sequence[Any]) -> list[bool]:
    """Per row, whether the judge reads only part of one of its texts (see `exceeds_bounds`)."""
    return [
        any(exceeds_bounds(as_chunks(value)) for value in row) for row in zip(*columns, strict=True)
    ]
