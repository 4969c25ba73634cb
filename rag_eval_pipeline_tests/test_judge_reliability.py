"""Judge consistency against a real (loopback) judge that answers differently on repeats."""

import itertools
import json
import threading
from pathlib import Path
from typing import ClassVar

import pandas as pd
import pytest

from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.judging import reliability_values, repeated_judgments
from rag_eval_pipeline.judges.judge import LLMJudge
from rag_eval_pipeline.llm.client import LLMClient, LLMConfig
from rag_eval_pipeline_tests.openai_server import run_openai_server

pytestmark = [pytest.mark.integration]

ROWS = pd.DataFrame(
    {
        "system": "s",
        "query_id": ["q1", "q2", "q3", "q4"],
        "question": ["How often are keys rotated?"] * 4,
        "answer": ["Every 90 days.", "Every 30 days.", "Yearly.", "Never."],
        "contexts": [["API keys are rotated every 90 days."]] * 4,
    }
)


class FlakyJudge:
    """Relevance scores per answer: q1 and q2 stay within 0.5 across repeats, q3 and q4 flip."""

    scores: ClassVar[dict[str, tuple[float, float]]] = {
        "Every 90 days.": (0.9, 0.8),
        "Every 30 days.": (0.4, 0.5),
        "Yearly.": (0.9, 0.1),
        "Never.": (0.0, 1.0),
    }

    def __init__(self) -> None:
        self.calls: dict[str, itertools.count] = {}
        self.lock = threading.Lock()

    def __call__(self, request: dict) -> str:
        answer = request["messages"][-1]["content"].split("<answer>\n")[1].split("\n</answer>")[0]
        with self.lock:
            turn = next(self.calls.setdefault(answer, itertools.count()))
        return json.dumps({"score": self.scores[answer][turn % 2], "reason": "scripted"})


def test_consistency_counts_items_whose_repeats_differ_by_more_than_delta(
    embedder: Embedder, tmp_path: Path
) -> None:
    responder = FlakyJudge()
    with run_openai_server(responder=responder) as server:
        client = LLMClient(
            LLMConfig(
                model="openai/test-judge",
                api_base=server.base_url,
                api_key="test-key",
                cache_dir=tmp_path,
            )
        )
        repeats = repeated_judgments(ROWS, LLMJudge(client, embedder), ["answer_relevance"], 2)
        assert server.request_count == 8, "repeats bypass the reply cache"
    values = reliability_values(repeats, delta=0.5)
    assert values["consistency_answer_relevance"] == pytest.approx(0.5)
    assert values["consistency_score"] == pytest.approx(0.5)
    assert values["mean_abs_diff"] == pytest.approx((0.1 + 0.1 + 0.8 + 1.0) / 4)
    assert values["error_rate"] == 0.0
    assert values["avg_latency_ms"] > 0
