"""The traffic tier's judged sample in library form: its judgments, and the sample rebuilt.

`judge_sample` is what the `traffic_judgments` asset records for the day's sample
(`evaluation.traffic.judged_sample`): the reference-free judge metrics, context relevance and the
criteria declared for the traffic tier. `logged_sample` rebuilds a stored sample from the logs
it was drawn from (its `query_id` is the interaction's `log_id`), so the model bridge
(`evaluation.model_bridge`) can judge the baseline's sample again with today's judge.
"""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.generation import (
    context_relevance_rows,
    judge_answers,
    judge_criteria,
)
from rag_eval_pipeline.evaluation.traffic import sample_candidates
from rag_eval_pipeline.judges.criteria import configured_criteria
from rag_eval_pipeline.judges.judge import Judge
from rag_eval_pipeline.judges.metrics import metrics_for
from rag_eval_pipeline.systems.retrievers import document_texts


def judge_sample(
    sample: pd.DataFrame, judge: Judge, embedder: Embedder
) -> tuple[pd.DataFrame, dict[str, str]]:
    """Long judgments of the sampled interactions (`system, query_id, question, answer,
    contexts`): the judged metrics of the `traffic` tier (`judges.metrics.metrics_for`),
    context relevance and the traffic tier's declared criteria; and the criteria not
    computed, with why (`evaluation.generation.judge_criteria`)."""
    custom, not_computed = judge_criteria(sample, judge, configured_criteria("traffic"))
    parts = [
        judge_answers(sample, judge, metrics_for("traffic")),
        context_relevance_rows(sample, embedder),
        custom,
    ]
    return pd.concat(parts, ignore_index=True), not_computed


def logged_sample(
    logs: pd.DataFrame, corpus: pd.DataFrame | None, log_ids: Iterable[str]
) -> pd.DataFrame:
    """The sampled interactions `log_ids` rebuilt from `logs` (a `log_id` column, else the row
    number, as `evaluation.traffic.day_interactions` numbers them), their contexts read as the
    sample reads them (logged `contexts`, else the corpus texts of `retrieved_doc_ids`)."""
    if "log_id" not in logs.columns:
        logs = logs.assign(log_id=logs.index.astype(str))
    wanted = logs[logs["log_id"].astype(str).isin({str(i) for i in log_ids})]
    texts = (
        {} if corpus is None else dict(zip(corpus["doc_id"], document_texts(corpus), strict=True))
    )
    return sample_candidates(wanted, texts)
