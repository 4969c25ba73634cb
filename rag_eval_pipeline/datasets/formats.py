"""The layouts users already have, mapped onto the golden dataset's tables.

- **BEIR** (`corpus.jsonl` with `_id`, `title`, `text`, optional `metadata`; `queries.jsonl`
  with `_id`, `text`; `qrels/<split>.tsv`): ids renamed, `metadata` kept as JSON text, and, as
  BEIR's own loader does, only the questions judged in the split are kept.
- **ragas** evaluation tables (`user_input`, `retrieved_contexts`, `response`, `reference`,
  optional `reference_contexts`) and **deepeval** test cases (`input`, `actual_output`,
  `expected_output`, `retrieval_context`, `context`): one row per question with the answer the
  system gave. They become queries, logged answers, a corpus of every context text (a context's
  id is `ctx-` + the first 16 hex digits of its SHA-256, so equal texts are one document) and
  qrels grading each reference context 1.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import pandas as pd

from rag_eval_pipeline.datasets.validation import Column, TableSchema

EVALUATION_FORMATS = ("ragas", "deepeval")


@dataclass(frozen=True)
class EvaluationColumns:
    """Where an evaluation table keeps each field."""

    question: str
    answer: str
    ground_truth_answer: str
    retrieved_contexts: str
    reference_contexts: str


FORMAT_COLUMNS = {
    "ragas": EvaluationColumns(
        "user_input", "response", "reference", "retrieved_contexts", "reference_contexts"
    ),
    "deepeval": EvaluationColumns(
        "input", "actual_output", "expected_output", "retrieval_context", "context"
    ),
}
ID_COLUMNS = ("query_id", "id")


def _evaluation_schema(name: str, columns: EvaluationColumns) -> TableSchema:
    optional = {"required": False, "nullable": True}
    return TableSchema(
        name,
        (
            Column(columns.question, "text"),
            Column(columns.answer, "text"),
            Column(columns.retrieved_contexts, "texts", **optional),
            Column(columns.ground_truth_answer, "text", **optional),
            Column(columns.reference_contexts, "texts", **optional),
        ),
    )


EVALUATION_SCHEMAS = {name: _evaluation_schema(name, c) for name, c in FORMAT_COLUMNS.items()}


def beir_corpus(frame: pd.DataFrame) -> pd.DataFrame:
    """A BEIR corpus (`_id`, `title`, `text`, `metadata`) with our column names."""
    if "_id" not in frame.columns or "doc_id" in frame.columns:
        return frame
    renamed = frame.rename(columns={"_id": "doc_id"})
    return _metadata_as_json(renamed)


def beir_queries(frame: pd.DataFrame) -> pd.DataFrame:
    """BEIR queries (`_id`, `text`, `metadata`) with our column names."""
    if "_id" not in frame.columns or "query_id" in frame.columns:
        return frame
    renamed = frame.rename(columns={"_id": "query_id"})
    if "question" not in renamed.columns:
        renamed = renamed.rename(columns={"text": "question"})
    return _metadata_as_json(renamed)


def _metadata_as_json(frame: pd.DataFrame) -> pd.DataFrame:
    if "metadata" in frame.columns:
        frame = frame.assign(
            metadata=frame["metadata"].map(
                lambda v: json.dumps(v, sort_keys=True, default=str) if v is not None else None
            )
        )
    return frame


def text_id(text: str) -> str:
    """The stable document id of a context text."""
    return "ctx-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def derived_query_ids(questions: pd.Series) -> list[str]:
    """`q-` + 12 hex digits of the question's SHA-256; the n-th repeat of a question gets `-n`.

    Stable: the same question keeps its id when rows are added, removed or reordered (repeats
    are numbered in table order).
    """
    ids = ["q-" + hashlib.sha256(q.encode("utf-8")).hexdigest()[:12] for q in questions]
    repeat = pd.Series(ids).groupby(ids).cumcount().to_numpy() + 1
    return [i if n == 1 else f"{i}-{n}" for i, n in zip(ids, repeat, strict=True)]


def _text_lists(frame: pd.DataFrame, column: str) -> list[list[str]]:
    if column not in frame.columns:
        return [[] for _ in range(len(frame))]
    return [list(v) if isinstance(v, list) else [] for v in frame[column]]


def evaluation_tables(frame: pd.DataFrame, table_format: str) -> dict[str, pd.DataFrame]:
    """Queries, answers, corpus and qrels from a validated ragas or deepeval table."""
    columns = FORMAT_COLUMNS[table_format]
    frame = frame.reset_index(drop=True)
    given = next((c for c in ID_COLUMNS if c in frame.columns), None)
    questions = frame[columns.question]
    query_ids = (
        frame[given].astype(str).tolist() if given is not None else derived_query_ids(questions)
    )
    retrieved = _text_lists(frame, columns.retrieved_contexts)
    reference = _text_lists(frame, columns.reference_contexts)
    texts = list(dict.fromkeys(t for lists in (retrieved, reference) for ts in lists for t in ts))
    truths = (
        frame[columns.ground_truth_answer]
        if columns.ground_truth_answer in frame.columns
        else pd.Series(None, index=frame.index, dtype=object)
    )
    qrels = pd.DataFrame(
        [(q, text_id(t), 1) for q, ts in zip(query_ids, reference, strict=True) for t in ts],
        columns=["query_id", "doc_id", "relevance"],
    ).drop_duplicates(["query_id", "doc_id"])
    return {
        "queries": pd.DataFrame(
            {
                "query_id": query_ids,
                "question": questions.to_numpy(),
                "ground_truth_answer": truths.to_numpy(),
            }
        ),
        "answers": pd.DataFrame(
            {
                "query_id": query_ids,
                "answer": frame[columns.answer].to_numpy(),
                "retrieved_doc_ids": [list(dict.fromkeys(map(text_id, ts))) for ts in retrieved],
            }
        ),
        "corpus": pd.DataFrame({"doc_id": [text_id(t) for t in texts], "text": texts}),
        "qrels": qrels.astype({"relevance": "int64"}).reset_index(drop=True),
    }
