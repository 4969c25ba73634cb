"""Coherence: the LLM judge's 1–5 logical-flow rating scaled to 0–1, over real HTTP; the
offline heuristic (consecutive-sentence cosine) against numpy."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.embedding.sentences import split_sentences
from rag_eval_pipeline.judges.judge import LLMJudge
from rag_eval_pipeline.judges.metrics import METRICS
from rag_eval_pipeline.judges.offline import OfflineJudge
from rag_eval_pipeline.llm.client import LLMClient, LLMConfig
from rag_eval_pipeline_tests.openai_server import run_openai_server

pytestmark = [pytest.mark.integration]

REPLIES = {
    "A": '{"score": 5, "reason": "flows"}',
    "B": '{"score": 2, "reason": "jumps"}',
    "C": "Score: 4",
    "D": '{"score": 9}',
}


def scripted(body: dict[str, Any]) -> str:
    """The reply for the answer named in the prompt's user message (`<answer>\\nA\\n...`)."""
    user = body["messages"][-1]["content"]
    return REPLIES[user.split("<answer>\n", 1)[1].split("\n", 1)[0]]


def test_llm_coherence_scales_one_to_five_over_http(embedder: Embedder) -> None:
    with run_openai_server(responder=scripted) as server:
        client = LLMClient(
            LLMConfig(model="openai/test-judge", api_base=server.base_url, api_key="sk-test")
        )
        frame = LLMJudge(client, embedder).score(
            METRICS["coherence"], {"question": ["q"] * 5, "answer": ["A", "B", "C", "D", None]}
        )
        prompts = [json.dumps(request.body) for request in server.requests]
    assert frame["score"].tolist()[:3] == [1.0, 0.25, 0.75]
    assert frame["reason"].tolist()[:2] == ["flows", "jumps"]
    assert (
        frame["error"][3].startswith("unparseable reply") and "outside [1, 5]" in frame["error"][3]
    )
    assert frame["error"][4] == "missing answer" and len(prompts) == 4
    assert all("logical flow" in prompt for prompt in prompts)


def test_offline_coherence_is_the_mean_consecutive_sentence_cosine(embedder: Embedder) -> None:
    answers = [
        "Invoices are generated on the 1st. They are emailed to the billing contact. "
        "Bananas are yellow.",
        "One sentence only.",
    ]
    frame = OfflineJudge(embedder).score(
        METRICS["coherence"], {"question": ["q", "q"], "answer": answers}
    )
    sentences = split_sentences(answers[0])
    vectors = embedder.encode(sentences).astype(float)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    cosines = np.clip((vectors[:-1] * vectors[1:]).sum(axis=1), 0, 1)
    assert frame["score"][0] == pytest.approx(cosines.mean(), abs=1e-6)
    assert frame["score"][1] == 1.0
    assert set(frame["judge_model"]) == {"offline-heuristic-judge"}
