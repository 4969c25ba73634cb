"""Deterministic judge and generators that need no network: the default `offline` LLM setting.

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
The metrics:

- faithfulness: the answer's sentences are its claims (a noncommittal answer has none, so it
  gets the error `no claims`); score = share of answer sentences supported by some context
  sentence (RAGAS formula on those verdicts).
- answer relevance: 0 for an empty or noncommittal answer, else clip(cos(q, a), 0, 1) with q, a
  the embeddings of the question and the whole answer.
- coherence: mean over consecutive answer sentences of clip(cos(s_i, s_i+1), 0, 1); 1 for a
  single sentence, 0 for an answer without sentences (the LLM judge rates logical flow 1–5).
- answer relevance (RAGAS variant): the first `n` answer sentences stand in for the questions an
  LLM would generate back from the answer; score = clip(mean_i cos(q, sentence_i), 0, 1), 0 for
  a noncommittal answer.
- e2e usefulness: w · clip(cos(a, g), 0, 1) + (1 − w) · token F1(a, g), g the ground truth,
  w = `e2e_semantic_weight` (0.5); token F1 is SQuAD's F1 over case-folded `\\w+` tokens
  (any script, no stop-word removal); 0 for an empty answer.
- context precision: chunk k is relevant (v_k = 1) when one of its sentences supports one of the
  ground-truth sentences; score = RAGAS average precision of the verdicts.
- context recall: share of ground-truth sentences supported by some context sentence.
- answer correctness: TP = answer sentences supported by a ground-truth sentence, FP = the other
  answer sentences, FN = ground-truth sentences supported by no answer sentence; RAGAS
  answer correctness with semantic similarity clip(cos(a, g), 0, 1).

Bounded cost on any input: the judge reads the sentences of each text's first `MAX_JUDGED_CHARS`
(20,000) characters, at most `MAX_SENTENCES` (256) per text or per row's context, so a support
matrix is at most 256 × 256 whatever the input; a row whose texts exceed these bounds has
`truncated` set (conservatively: also where a metric happened to need only the part it read).

A noncommittal answer is an empty answer, or a one-sentence answer with a refusal phrase ("I
don't know", "not enough information", "не знаю", "não sei", ...). `raw_reply` holds the
heuristic's decisions as JSON in the schema the LLM judge's prompt asks for (plus supports),
so failures are inspected the same way. Embeddings are computed in one batch per call, so
`latency_ms` is the call's wall-clock time divided evenly over its rows.

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
import re
import time
from collections import Counter
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
    context_sentences,
    embed_sentences,
    exceeds_bounds,
    split_sentences,
    word_tokens,
)
from rag_eval_pipeline.judges.judge import attempt, judgment_frame
from rag_eval_pipeline.metrics.ragas import (
    DEFAULT_CORRECTNESS_WEIGHTS,
    answer_correctness,
    context_precision,
    context_recall,
    factual_f1,
    faithfulness_score,
    ragas_answer_relevance,
    validate_weights,
)
from rag_eval_pipeline.storage.code_version import code_digest

if TYPE_CHECKING:
    from rag_eval_pipeline.embedding.embedder import Embedder
    from rag_eval_pipeline.storage.result_cache import ResultCache

JudgeMethod = TypeVar("JudgeMethod", bound=Callable[..., pd.DataFrame])

OFFLINE_JUDGE_MODEL = "offline-heuristic-judge"
OFFLINE_JUDGE_VERSION = "offline-heuristics-v1"
_REFUSAL = re.compile(
    r"\b(?:i\s+(?:do\s+not|don[’']?t)\s+know|i[’']?m\s+not\s+sure|i\s+am\s+not\s+sure"
    r"|(?:cannot|can[’']?t|unable\s+to)\s+(?:answer|find|determine|say|tell)"
    r"|no\s+(?:relevant\s+)?information|not\s+(?:enough|sufficient)\s+(?:information|context)"
    r"|не\s+знаю|нет\s+информации|não\s+sei|não\s+há\s+informaç)",
    re.IGNORECASE,
)


def token_f1(prediction: str, reference: str) -> float:
    """SQuAD token F1: harmonic mean of token precision and recall (multiset overlap)."""
    predicted, expected = word_tokens(prediction), word_tokens(reference)
    overlap = sum((Counter(predicted) & Counter(expected)).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(predicted), overlap / len(expected)
    return 2 * precision * recall / (precision + recall)


def is_noncommittal(answer: str) -> bool:
    """An empty answer, or a single sentence containing a refusal phrase."""
    sentences = split_sentences(answer)
    return not sentences or (len(sentences) == 1 and _REFUSAL.search(sentences[0]) is not None)


def _cosine(left: Sentences, right: Sentences) -> float:
    """Cosine of the first text of each side (used for whole-text comparisons)."""
    return float(left.vectors[0] @ right.vectors[0])


def _rounded(value: float) -> float | None:
    return round(float(value), 4) if math.isfinite(value) else None


def _dumps(payload: dict[str, Any]) -> str:
    return json.dumps(payload, ensure_ascii=False)


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
                (
                    [] if is_noncommittal(a or "") else split_sentences(a or "")
                    for a in answer_texts
                ),
            ),
        )
        evidence = embed_sentences(
            self.embedder, _unless(problems, map(context_sentences, contexts))
        )
        rows = self._claim_rows(problems, claims, evidence, "supported", faithfulness_score)
        return self._frame("faithfulness", rows, start, contexts, answer_texts)

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
            if skipped[i]:
                score, reason = 0.0, "empty or noncommittal answer"
            else:
                cosine = _cosine(question_vectors[i], answer_vectors[i])
                score, reason = min(max(cosine, 0.0), 1.0), f"cosine={cosine:.4f}"
            rows.append(_rubric_row(score, reason))
        return self._frame("answer_relevance", rows, start, answers)

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
            rows.append(_rubric_row(*consecutive_coherence(embedded.vectors)))
        return self._frame("coherence", rows, start, answers)

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
            noncommittal = is_noncommittal(answer)
            question_vector = question_vectors[i].vectors[0]
            if noncommittal:
                score, error = 0.0, None
            else:
                score, error = attempt(ragas_answer_relevance, question_vector, probes[i].vectors)
                score = max(score, 0.0)
            reply = {
                "questions": probes[i].texts,
                "noncommittal": noncommittal,
                "similarities": [_rounded(c) for c in probes[i].vectors @ question_vector],
            }
            rows.append(
                {
                    "score": score,
                    "error": error,
                    "raw_reply": _dumps(reply),
                    "n_questions": len(probes[i]),
                    "noncommittal": noncommittal,
                }
            )
        return self._frame("answer_relevance_ragas", rows, start, answers)

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
        weight = self.e2e_semantic_weight
        rows = []
        for i, (problem, (_, answer, truth)) in enumerate(zip(problems, triples, strict=True)):
            if problem:
                rows.append({"score": math.nan, "error": problem})
                continue
            if skipped[i]:
                score, reason = 0.0, "empty answer"
            else:
                cosine = _cosine(answer_vectors[i], truth_vectors[i])
                overlap = token_f1(answer, truth)
                score = weight * min(max(cosine, 0.0), 1.0) + (1 - weight) * overlap
                reason = f"cosine={cosine:.4f}, token_f1={overlap:.4f}"
            rows.append(
                {
                    "score": score,
                    "error": None,
                    "raw_reply": _dumps({"score": score, "reason": reason}),
                    "reason": reason,
                }
            )
        return self._frame("e2e_score", rows, start, answers, ground_truths)

    @remembered
    def context_precision(
        self,
        questions: Sequence[str],
        contexts: Sequence[Sequence[str]],
        ground_truths: Sequence[str],
        *,
        use_cache: bool = True,
    ) -> pd.DataFrame:
        """Average precision of the chunks holding a sentence that supports the ground truth."""
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
        chunk_sentences = iter(
            embed_sentences(
                self.embedder,
                [
                    split_sentences(chunk)
                    for p, chunks in zip(problems, chunk_lists, strict=True)
                    if not p
                    for chunk in chunks
                ],
            )
        )
        rows = []
        for i, problem in enumerate(problems):
            if problem:
                rows.append({"score": math.nan, "error": problem})
                continue
            best = [
                float(np.max(self.support(truth_sentences[i], next(chunk_sentences))))
                for _ in chunk_lists[i]
            ]
            verdicts = [int(b >= self.threshold) for b in best]
            reply = {"verdicts": verdicts, "support": [_rounded(b) for b in best]}
            rows.append(
                {
                    "score": context_precision(verdicts),
                    "error": None,
                    "raw_reply": _dumps(reply),
                    "n_contexts": len(verdicts),
                    "n_relevant": sum(verdicts),
                }
            )
        return self._frame("context_precision", rows, start, chunk_lists, truths)

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
        rows = self._claim_rows(problems, claims, evidence, "attributed", context_recall)
        return self._frame("context_recall", rows, start, contexts, truths)

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
            answer_supported = self.support(answer, truth) >= self.threshold
            truth_covered = self.support(truth, answer) >= self.threshold
            reply = {
                "TP": [s for s, ok in zip(answer.texts, answer_supported, strict=True) if ok],
                "FP": [s for s, ok in zip(answer.texts, answer_supported, strict=True) if not ok],
                "FN": [s for s, ok in zip(truth.texts, truth_covered, strict=True) if not ok],
            }
            counts = [len(reply[key]) for key in ("TP", "FP", "FN")]
            similarity = (
                min(max(float(whole[i].vectors[0] @ whole[i].vectors[1]), 0.0), 1.0)
                if len(whole[i])
                else 0.0
            )
            f1, _ = attempt(factual_f1, *counts)
            score, error = attempt(answer_correctness, *counts, similarity, weights)
            rows.append(
                {
                    "score": score,
                    "error": error,
                    "raw_reply": _dumps(reply),
                    "n_tp": counts[0],
                    "n_fp": counts[1],
                    "n_fn": counts[2],
                    "factual_f1": f1,
                    "semantic_similarity": similarity,
                }
            )
        return self._frame("answer_correctness", rows, start, answers, ground_truths)

    def _claim_rows(
        self,
        problems: Sequence[str | None],
        claims: Sequence[Any],
        evidence: Sequence[Any],
        flag: str,
        metric: Callable[[Sequence[bool]], float],
    ) -> list[dict[str, Any]]:
        """Rows for a claims-vs-evidence metric: each claim is `flag`-ged when some evidence
        sentence supports it, and the score is `metric` of those flags."""
        rows: list[dict[str, Any]] = []
        for problem, claim, context in zip(problems, claims, evidence, strict=True):
            if problem:
                rows.append({"score": math.nan, "error": problem})
                continue
            best = self.support(claim, context)
            flags = [bool(b >= self.threshold) for b in best]
            score, error = attempt(metric, flags)
            reply = {
                "claims": [
                    {"claim": text, flag: value, "support": _rounded(b)}
                    for text, value, b in zip(claim.texts, flags, best, strict=True)
                ]
            }
            rows.append(
                {
                    "score": score,
                    "error": error,
                    "raw_reply": _dumps(reply),
                    "n_claims": len(flags),
                    f"n_{flag}": sum(flags),
                }
            )
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


def _rubric_row(score: float, reason: str) -> dict[str, Any]:
    """A scored row with its reason, and the JSON an LLM judge's rubric reply would be."""
    return {
        "score": score,
        "error": None,
        "raw_reply": _dumps({"score": score, "reason": reason}),
        "reason": reason,
    }


def consecutive_coherence(vectors: np.ndarray) -> tuple[float, str]:
    """Mean over consecutive sentence pairs of clip(cos, 0, 1) (rows are unit vectors); 1 for
    one sentence (nothing to connect), 0 for none."""
    if len(vectors) == 0:
        return 0.0, "no sentences"
    if len(vectors) == 1:
        return 1.0, "single sentence"
    cosines = np.clip(np.einsum("ij,ij->i", vectors[:-1], vectors[1:]), 0.0, 1.0)
    return float(cosines.mean()), f"mean consecutive-sentence cosine over {len(cosines)} pairs"


def _unless(skipped: Sequence[Any], groups: Iterable[list[str]]) -> list[list[str]]:
    """`groups`, emptied for the rows marked in `skipped` (nothing to embed for them)."""
    return [[] if skip else group for skip, group in zip(skipped, groups, strict=True)]


def _over_bounds(*columns: Sequence[Any]) -> list[bool]:
    """Per row, whether the judge reads only part of one of its texts (see `exceeds_bounds`)."""
    return [
        any(exceeds_bounds(as_chunks(value)) for value in row) for row in zip(*columns, strict=True)
    ]
