"""Tiers 2 and 3 in library form: ideal contexts, and long judgment tables for answers.

A judgment table has one row per (system, query, metric): `score` in [0, 1] (BLEU in 0–100),
or NaN together with an `error`; the judge or scorer that produced it (`judge_model`), its
latency, tokens and cost. Reference-based metrics (ROUGE, BLEU, semantic similarity, E2E,
context precision/recall, answer correctness) only apply to questions with a ground-truth
answer; other questions get no row for them (not an error).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pandas as pd

from rag_eval_pipeline.datasets.golden import GoldenDataset
from rag_eval_pipeline.datasets.validation import is_missing
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.judges.criteria import NEEDS_LLM, Criterion
from rag_eval_pipeline.judges.heuristics import is_noncommittal
from rag_eval_pipeline.judges.judge import COMMON_COLUMNS, Judge, LLMJudge
from rag_eval_pipeline.judges.metrics import METRICS
from rag_eval_pipeline.judges.metrics.faithfulness import NO_CLAIMS
from rag_eval_pipeline.judges.spec import FRAME_COLUMNS, frame_inputs
from rag_eval_pipeline.metrics.embedding import context_relevance
from rag_eval_pipeline.metrics.ragas import rowwise_cosine
from rag_eval_pipeline.metrics.text import (
    BLEU_SIGNATURE,
    bleu_scores,
    citation_scores,
    exact_match,
    regex_match,
    rouge_l_truncated,
    rouge_scores,
)
from rag_eval_pipeline.systems.generators import Generator
from rag_eval_pipeline.systems.retrievers import document_texts

JUDGMENT_COLUMNS = ["system", "query_id", "metric", *COMMON_COLUMNS, "details"]
REFUSAL_METRIC = "refusal_rate"
REFUSAL_DETAILS = json.dumps({"refusal": True})
REFUSAL_DETECTOR = "refusal phrases (judges.heuristics.is_noncommittal)"
TEXT_SCORERS = {
    "rouge1_f": "rouge-score",
    "rouge2_f": "rouge-score",
    "rougeL_f": "rouge-score",
    "bleu": f"sacrebleu {BLEU_SIGNATURE}",
    "exact_match": "exact-match (SQuAD normalization)",
    "regex_match": "regex (whole output, case-insensitive)",
    "citation": "citations [n] vs qrels",
}
CITATION_METRICS = ("citation_precision", "citation_recall", "citation_f1")


def ideal_contexts(dataset: GoldenDataset) -> pd.DataFrame:
    """Questions with their qrels-relevant documents (grade ≥ the version's relevance level,
    `dataset.yaml` `relevance_level`, default 1) as context.

    Documents are ordered by grade descending, then doc id; questions without any relevant
    document are left out (they have no ideal context).
    """
    corpus = dataset.corpus
    if corpus is None:
        raise ValueError(f"dataset version {dataset.version!r} has no corpus texts")
    texts = dict(zip(corpus["doc_id"], document_texts(corpus), strict=True))
    relevant = dataset.relevant_qrels.sort_values(
        ["query_id", "relevance", "doc_id"], ascending=[True, False, True]
    )
    grouped = relevant.groupby("query_id", sort=False)["doc_id"].agg(list)
    queries = dataset.queries[dataset.queries["query_id"].isin(grouped.index)]
    doc_ids = grouped.reindex(queries["query_id"]).tolist()
    return pd.DataFrame(
        {
            "query_id": queries["query_id"].to_numpy(),
            "question": queries["question"].to_numpy(),
            "ground_truth_answer": _ground_truths(queries),
            "context_doc_ids": doc_ids,
            "contexts": [[texts[d] for d in ids] for ids in doc_ids],
        }
    )


def _ground_truths(queries: pd.DataFrame) -> np.ndarray:
    if "ground_truth_answer" in queries.columns:
        return queries["ground_truth_answer"].to_numpy(dtype=object)
    return np.full(len(queries), None, dtype=object)


def generate(frame: pd.DataFrame, generator: Generator, system: str) -> pd.DataFrame:
    """`frame` (question, contexts, ...) with the generator's answer columns added."""
    generations = generator.generate(frame["question"].tolist(), frame["contexts"].tolist())
    return pd.concat(
        [frame.reset_index(drop=True).assign(system=system), generations.reset_index(drop=True)],
        axis=1,
    )


def _with_ground_truth(frame: pd.DataFrame) -> pd.DataFrame:
    truth = frame["ground_truth_answer"]
    return frame[truth.notna() & truth.astype(str).str.strip().ne("")]


def _details_json(details: pd.DataFrame) -> list[str | None]:
    """Per row, a JSON object of its non-missing detail columns (None without detail columns)."""
    if details.columns.empty:
        return [None] * len(details)
    return [
        json.dumps({k: v for k, v in record.items() if not is_missing(v)}, default=str)
        for record in details.to_dict("records")
    ]


def _long(frame: pd.DataFrame, metric: str, scored: pd.DataFrame) -> pd.DataFrame:
    details = scored[[c for c in scored.columns if c not in COMMON_COLUMNS]]
    return pd.concat(
        [
            frame[["system", "query_id"]].reset_index(drop=True).assign(metric=metric),
            scored[list(COMMON_COLUMNS)].reset_index(drop=True),
            pd.Series(_details_json(details), name="details", dtype=object),
        ],
        axis=1,
    )


def refusals(answers: pd.Series) -> np.ndarray:
    """Per answer, whether it declines: an empty answer or a single sentence with a refusal
    phrase ("I don't know.", the generator's own no-context answer, "I cannot answer ...");
    see `judges.heuristics.is_noncommittal`. A missing answer (a failed generation) is not one."""
    return np.array([a is not None and is_noncommittal(str(a)) for a in answers], dtype=bool)


def judge_answers(
    frame: pd.DataFrame, judge: Judge, metrics: Sequence[str], *, use_cache: bool = True
) -> pd.DataFrame:
    """Long judgments of `metrics` (names in `judges.metrics.METRICS`) for every answered row;
    a metric with a ground-truth input only for the rows that have one.

    A refusal (`refusals`, or an answer in which the judge itself found no claim: the LLM
    judge's refusal verdict) has no claims to check, so its faithfulness row has no score and
    no error (marked `{"refusal": true}` in `details`): it is left out of the faithfulness mean
    and counted in `refusal_rate` (`refusal_scores`), never in the judge's error rate.
    """
    parts = []
    for name in metrics:
        metric = METRICS[name]
        rows = _with_ground_truth(frame) if metric.needs_ground_truth else frame
        if rows.empty:
            continue
        judged = _long(rows, name, judge.score(metric, frame_inputs(rows), use_cache=use_cache))
        if name == "faithfulness":
            declined = refusals(rows["answer"]) | (judged["error"] == NO_CLAIMS).to_numpy()
            judged.loc[declined, ["score", "error"]] = [np.nan, None]
            judged.loc[declined, "details"] = REFUSAL_DETAILS
        parts.append(judged)
    return _concat(parts)


def judge_criteria(
    frame: pd.DataFrame, judge: Judge, criteria: Sequence[Criterion], *, use_cache: bool = True
) -> tuple[pd.DataFrame, dict[str, str]]:
    """Long judgments of the declared `criteria` (`judges.criteria`) for every row of `frame`,
    and the criteria not computed with why: every one under the offline judge (`NEEDS_LLM`),
    one whose input `frame` lacks (e.g. `contexts` of a traffic log without them)."""
    parts, not_computed = [], {}
    for criterion in criteria:
        absent = [FRAME_COLUMNS[i] for i in criterion.inputs if FRAME_COLUMNS[i] not in frame]
        if not isinstance(judge, LLMJudge):
            not_computed[criterion.name] = NEEDS_LLM
        elif absent:
            not_computed[criterion.name] = f"no {', '.join(absent)} to show the judge"
        elif not frame.empty:
            scored = judge.score(criterion.metric, frame_inputs(frame), use_cache=use_cache)
            parts.append(_long(frame, criterion.name, scored))
    return _concat(parts), not_computed


def refusal_scores(frame: pd.DataFrame, judgments: pd.DataFrame) -> pd.DataFrame:
    """One `refusal_rate` judgment row per answer: 1 when it declines (`refusals`, or its
    faithfulness row in `judgments` is a refusal), 0 when it answers; a failed generation (no
    answer) is an error row."""
    if frame.empty:
        return pd.DataFrame(columns=JUDGMENT_COLUMNS)
    no_answer = frame["answer"].isna().to_numpy()
    marked = judgments[
        (judgments["metric"] == "faithfulness") & (judgments["details"] == REFUSAL_DETAILS)
    ]
    judged = pd.MultiIndex.from_frame(marked[["system", "query_id"]].astype(str))
    keys = pd.MultiIndex.from_frame(frame[["system", "query_id"]].astype(str))
    scores = (refusals(frame["answer"]) | keys.isin(judged)).astype(float)
    return scorer_rows(frame, REFUSAL_METRIC, scores, REFUSAL_DETECTOR, no_answer)


def n_refusals(judgments: pd.DataFrame) -> int:
    """How many answers of a judgment table declined (its `refusal_rate` rows scoring 1)."""
    return int((judgments.loc[judgments["metric"] == REFUSAL_METRIC, "score"] == 1.0).sum())


def _concat(parts: list[pd.DataFrame]) -> pd.DataFrame:
    parts = [p for p in parts if not p.empty]
    if not parts:
        return pd.DataFrame(columns=JUDGMENT_COLUMNS)
    return pd.concat(parts, ignore_index=True)[JUDGMENT_COLUMNS]


def scorer_rows(
    rows: pd.DataFrame,
    metric: str,
    scores: np.ndarray,
    scorer: str,
    no_answer: np.ndarray,
    truncated: np.ndarray | None = None,
) -> pd.DataFrame:
    errors = np.where(no_answer, "no answer to score", None)
    scores = np.where(no_answer, np.nan, scores)
    return pd.DataFrame(
        {
            "system": rows["system"].to_numpy(),
            "query_id": rows["query_id"].to_numpy(),
            "metric": metric,
            "score": scores.astype(float),
            "error": errors,
            "raw_reply": None,
            "latency_ms": 0.0,
            "judge_model": scorer,
            "judge_version": scorer,
            "cached": False,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost_usd": 0.0,
            "truncated": np.zeros(len(rows), dtype=bool) if truncated is None else truncated,
            "details": None,
        }
    )[JUDGMENT_COLUMNS]


def reference_scores(frame: pd.DataFrame, embedder: Embedder) -> pd.DataFrame:
    """ROUGE-1/2/L F1, sentence BLEU (0–100) and exact match (SQuAD-normalized, 0/1) against
    the ground truth, and the semantic similarity (cosine of answer and ground-truth
    embeddings), as long judgment rows.

    Rows whose generation failed (no answer) become error rows, counted in the error rate.
    """
    rows = _with_ground_truth(frame)
    if rows.empty:
        return pd.DataFrame(columns=JUDGMENT_COLUMNS)
    no_answer = rows["answer"].isna().to_numpy()
    answers = rows["answer"].fillna("").astype(str).tolist()
    truths = rows["ground_truth_answer"].astype(str).tolist()
    rouge = rouge_scores(answers, truths)
    parts = [
        scorer_rows(rows, metric, rouge[metric].to_numpy(), TEXT_SCORERS[metric], no_answer)
        for metric in ("rouge1_f", "rouge2_f")
    ]
    parts.append(
        scorer_rows(
            rows,
            "rougeL_f",
            rouge["rougeL_f"].to_numpy(),
            TEXT_SCORERS["rougeL_f"],
            no_answer,
            rouge_l_truncated(answers, truths),
        )
    )
    parts.append(
        scorer_rows(rows, "bleu", bleu_scores(answers, truths), TEXT_SCORERS["bleu"], no_answer)
    )
    parts.append(
        scorer_rows(
            rows,
            "exact_match",
            exact_match(answers, truths),
            TEXT_SCORERS["exact_match"],
            no_answer,
        )
    )
    similarity = rowwise_cosine(embedder.encode(answers), embedder.encode(truths))
    parts.append(
        scorer_rows(rows, "semantic_similarity", similarity, embedder.model_name, no_answer)
    )
    return _concat(parts)


def context_relevance_rows(frame: pd.DataFrame, embedder: Embedder) -> pd.DataFrame:
    """`context_relevance` judgment rows: per question, the mean clipped cosine between the
    question and each retrieved context (`metrics.embedding.context_relevance`).

    Needs `system, query_id, question, contexts`; a question without retrieved contexts is an
    error row (`no contexts`), as for the judge's context metrics.
    """
    if frame.empty or "contexts" not in frame.columns:
        return pd.DataFrame(columns=JUDGMENT_COLUMNS)
    rows = frame.reset_index(drop=True)
    contexts = [
        [str(text) for text in items] if isinstance(items, list | np.ndarray) else []
        for items in rows["contexts"]
    ]
    owners = np.repeat(np.arange(len(rows)), [len(items) for items in contexts])
    chunks = [text for items in contexts for text in items]
    questions = embedder.encode(rows["question"].astype(str).tolist())
    scores = context_relevance(questions, embedder.encode(chunks), owners)
    judged = scorer_rows(rows, "context_relevance", scores, embedder.model_name, np.isnan(scores))
    return judged.assign(error=np.where(np.isnan(scores), "no contexts", None))


def answer_checks(
    frame: pd.DataFrame, dataset: GoldenDataset, sources: str = "retrieved_doc_ids"
) -> pd.DataFrame:
    """Deterministic checks of answers, as long judgment rows:

    - `regex_match` (0/1, `metrics.text.regex_match`, whole-output semantics) for questions
      with an `expected_pattern` in the queries table;
    - `citation_precision`, `citation_recall`, `citation_f1` of the answer's `[n]` markers
      (`[n]` = the n-th document of the `sources` column: the retrieved documents in Tier 3,
      `context_doc_ids`, the ideal context, in Tier 2) against the version's relevant qrels,
      for answers that cite at least one source (precision and F1) or whose sources hold a
      relevant document (recall); undefined values get no row, not an error. No citation rows
      when `frame` has no `sources` column.

    Regex rows whose answer is missing are error rows (`no answer to score`).
    """
    parts = []
    queries = dataset.queries.set_index("query_id")
    if "expected_pattern" in queries.columns:
        patterns = frame["query_id"].map(queries["expected_pattern"])
        rows = frame[patterns.notna().to_numpy()]
        no_answer = rows["answer"].isna().to_numpy()
        scores = regex_match(
            rows["answer"].fillna("").astype(str).tolist(),
            patterns[patterns.notna()].astype(str).tolist(),
        )
        parts.append(
            scorer_rows(rows, "regex_match", scores, TEXT_SCORERS["regex_match"], no_answer)
        )
    answered = frame[frame["answer"].notna()]
    if not answered.empty and sources in answered.columns:
        relevant = dataset.relevant_qrels.groupby("query_id")["doc_id"].agg(set)
        citations = citation_scores(
            answered["answer"].astype(str).tolist(),
            [list(ids) for ids in answered[sources]],
            [relevant.get(query_id, set()) for query_id in answered["query_id"]],
        )
        for metric in CITATION_METRICS:
            defined = citations[metric].notna().to_numpy()
            parts.append(
                scorer_rows(
                    answered[defined],
                    metric,
                    citations.loc[defined, metric].to_numpy(),
                    TEXT_SCORERS["citation"],
                    np.zeros(int(defined.sum()), dtype=bool),
                )
            )
    return _concat(parts)
