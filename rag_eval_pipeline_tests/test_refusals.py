"""Refusals are counted as `refusal_rate`, left out of faithfulness, and are not judge errors.

A callable system under test declines every fifth demo-v1 question ("I don't know.") and
answers the others from its context; the end-to-end tier runs on a real temporary instance. An
LLM judge (the loopback OpenAI-compatible server) that finds no claim in an answer is a refusal
verdict too.
"""

from pathlib import Path

import pandas as pd
import pytest
from dagster import DagsterInstance

from rag_eval_pipeline.defs.shared.judge_checks import judge_error_rate_check
from rag_eval_pipeline.defs.shared.resources import RagSystemResource
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.generation import judge_answers, refusal_scores
from rag_eval_pipeline.judges.judge import LLMJudge
from rag_eval_pipeline_tests.conftest import materialize_demo_assets
from rag_eval_pipeline_tests.openai_server import run_openai_server
from rag_eval_pipeline_tests.test_llm_client import make_client

pytestmark = [pytest.mark.integration]

CONTEXT = "Invoices are generated on the first day of each month and emailed to the owner."
E2E = {"golden_dataset", "e2e_generations", "e2e_judgments", "e2e_quality"}


def answer(question: str) -> dict:
    """Declines every question whose length is a multiple of 5, answers the others."""
    if len(question) % 5 == 0:
        return {"answer": "I don't know.", "contexts": [CONTEXT]}
    return {"answer": CONTEXT, "contexts": [CONTEXT]}


def test_refusals_are_a_rate_not_judge_errors(
    tmp_path: Path, embedder: Embedder, dagster_instance: DagsterInstance
) -> None:
    system = RagSystemResource(kind="callable", target=f"{__name__}:answer")
    check = judge_error_rate_check("e2e_judgments")
    result = materialize_demo_assets(
        dagster_instance, tmp_path, embedder, E2E, [check], rag_system=system
    )
    assert result.success
    generations = result.output_for_node("e2e_generations")
    declined = int((generations["answer"] == "I don't know.").sum())
    assert 0 < declined < len(generations)
    judgments = result.output_for_node("e2e_judgments")
    faith = judgments[judgments["metric"] == "faithfulness"]
    refused = faith["details"] == '{"refusal": true}'
    assert int(refused.sum()) == declined
    assert faith.loc[refused, "score"].isna().all() and faith.loc[refused, "error"].isna().all()
    assert judgments["error"].isna().all()
    quality = result.output_for_node("e2e_quality").set_index(["system", "metric"])
    name = generations["system"].iloc[0]
    rate = quality.loc[(name, "refusal_rate")]
    assert rate["mean"] == declined / len(generations) and rate["error_rate"] == 0.0
    faithfulness = quality.loc[(name, "avg_faithfulness")]
    assert faithfulness["count"] == len(generations) - declined
    assert faithfulness["n_errors"] == 0 and faithfulness["error_rate"] == 0.0
    (check,) = result.get_asset_check_evaluations()
    assert check.passed and check.metadata["error_rate"].value == 0.0
    metadata = result.asset_materializations_for_node("e2e_judgments")[0].metadata
    assert metadata["n_refusals"].value == declined


def claims_unless_declining(request: dict) -> str:
    """An LLM faithfulness judge: no claims for a declining answer, one supported claim else."""
    if "outside what I can help with" in request["messages"][-1]["content"]:
        return '{"claims": []}'
    return '{"claims": [{"claim": "Invoices come on the 1st.", "supported": true}]}'


def test_the_llm_judges_no_claims_verdict_is_a_refusal(embedder: Embedder, tmp_path: Path) -> None:
    frame = pd.DataFrame(
        {
            "system": "rag",
            "query_id": ["q1", "q2", "q3"],
            "question": ["When are invoices generated?"] * 3,
            "contexts": [[CONTEXT]] * 3,
            "answer": [CONTEXT, "Sorry, that is outside what I can help with.", "I don't know."],
        }
    )
    with run_openai_server(responder=claims_unless_declining) as server:
        client = make_client(server, cache_dir=tmp_path)
        judged = judge_answers(frame, LLMJudge(client, embedder), ["faithfulness"])
    assert judged["error"].isna().all()
    assert judged["score"].tolist()[0] == 1.0 and judged["score"].iloc[1:].isna().all()
    rates = refusal_scores(frame, judged)
    assert rates["score"].tolist() == [0.0, 1.0, 1.0] and rates["error"].isna().all()
