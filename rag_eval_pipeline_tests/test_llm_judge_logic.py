"""LLM judge prompt → reply → score logic, with a scripted fake client (no network, no model).

The fake client returns canned reply texts in prompt order; the fake embedder maps texts to
fixed vectors. Real-server integration is tested elsewhere.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from rag_eval_pipeline.judges.judge import (
    COMMON_COLUMNS,
    LLMJudge,
    judgment_frame,
)
from rag_eval_pipeline.judges.metrics import (
    METRICS,
    PROMPTS,
    answer_correctness,
    answer_relevance_ragas,
)
from rag_eval_pipeline.judges.metrics.context_precision import context_precision_prompt
from rag_eval_pipeline.judges.metrics.faithfulness import faithfulness_prompt
from rag_eval_pipeline.judges.prompts import PROMPT_VERSION
from rag_eval_pipeline.llm.client import LLMReply
from rag_eval_pipeline.systems.generators import GENERATION_COLUMNS, NO_CONTEXT_ANSWER, LLMGenerator

pytestmark = [pytest.mark.integration]

MODEL = "openai/fake-judge"


def reply(text: str | None, error: str | None = None) -> LLMReply:
    return LLMReply(
        text=text,
        error=error,
        latency_ms=12.5,
        prompt_tokens=100,
        completion_tokens=20,
        cost_usd=0.001,
        cached=False,
        attempts=1,
        model=MODEL,
    )


class FakeClient:
    """Answers each prompt with the next scripted reply; records prompts and `use_cache`."""

    def __init__(self, *replies: str | LLMReply) -> None:
        self.config = SimpleNamespace(model=MODEL)
        self.replies = [r if isinstance(r, LLMReply) else reply(r) for r in replies]
        self.prompts: list[Sequence[dict[str, str]]] = []
        self.use_cache: list[bool] = []
        self.forgotten: list[Sequence[dict[str, str]]] = []

    def complete_many(
        self,
        prompts: Sequence[Sequence[dict[str, str]]],
        *,
        use_cache: bool = True,
        response_format: dict | None = None,
    ) -> list[LLMReply]:
        start = len(self.prompts)
        self.prompts.extend(prompts)
        self.use_cache.append(use_cache)
        return self.replies[start : start + len(prompts)]

    def forget(
        self, prompts: Sequence[Sequence[dict[str, str]]], response_format: dict | None = None
    ) -> None:
        self.forgotten.extend(prompts)


class FakeEmbedder:
    """Fixed 2-d vectors per text; unknown texts raise so tests say what gets embedded."""

    def __init__(self, vectors: dict[str, tuple[float, float]]) -> None:
        self.vectors = vectors

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.array([self.vectors[t] for t in texts], dtype=np.float32).reshape(-1, 2)


def make_judge(
    *replies: str | LLMReply, vectors: dict | None = None
) -> tuple[LLMJudge, FakeClient]:
    client = FakeClient(*replies)
    return LLMJudge(client, FakeEmbedder(vectors or {})), client  # type: ignore[arg-type]


def assert_contract(frame: pd.DataFrame, metric: str, n_rows: int) -> None:
    assert list(frame.columns) == [*COMMON_COLUMNS, *METRICS[metric].detail_columns]
    assert len(frame) == n_rows
    assert (frame["score"].isna() == frame["error"].notna()).all(), "NaN only with an error"
    assert (frame["judge_version"] == PROMPT_VERSION).all()


CLAIMS_2_OF_3 = (
    '{"claims": [{"claim": "A", "supported": true}, {"claim": "B", "supported": false},'
    ' {"claim": "C", "supported": true}]}'
)


def test_faithfulness_scores_supported_claims_and_keeps_reply_metadata() -> None:
    fenced = 'Here is my verdict:\n```json\n{"claims": [{"claim": "A", "supported": "yes"}]}\n```'
    judge, client = make_judge(CLAIMS_2_OF_3, fenced)
    frame = judge.score(
        METRICS["faithfulness"],
        {
            "question": ["q1", "q2"],
            "contexts": [["ctx 1", "ctx 2"], ["ctx"]],
            "answer": ["a1", "a2"],
        },
    )
    assert_contract(frame, "faithfulness", 2)
    assert frame["score"].tolist() == pytest.approx([2 / 3, 1.0])
    assert frame[["n_claims", "n_supported"]].values.tolist() == [[3, 2], [1, 1]]
    assert frame["raw_reply"].tolist() == [CLAIMS_2_OF_3, fenced]
    assert frame["judge_model"][0] == MODEL and frame["cost_usd"][0] == 0.001
    assert frame["prompt_tokens"][0] == 100 and frame["latency_ms"][0] == 12.5
    assert client.use_cache == [True]
    assert "[1] ctx 1\n\n[2] ctx 2" in client.prompts[0][1]["content"]


@pytest.mark.parametrize(
    ("text", "error_start"),
    [
        ("The answer is faithful.", "unparseable reply"),
        ('{"claims": "all supported"}', "invalid reply: 'claims' must be a list"),
        ('{"claims": [{"claim": "A", "supported": "maybe"}]}', "invalid reply: supported"),
        ('{"claims": [{"claim": "A"}]}', "invalid reply: missing key 'supported'"),
        ('{"verdict": "faithful"}', "invalid reply: missing key 'claims'"),
        ('{"claims": []}', "no claims"),
        ("   ", "empty reply"),
    ],
)
def test_bad_faithfulness_replies_become_error_rows_with_the_raw_reply(
    text: str, error_start: str
) -> None:
    judge, client = make_judge(text)
    frame = judge.score(
        METRICS["faithfulness"], {"question": ["q"], "contexts": [["ctx"]], "answer": ["a"]}
    )
    assert_contract(frame, "faithfulness", 1)
    assert math.isnan(frame["score"][0])
    assert frame["error"][0].startswith(error_start)
    assert frame["raw_reply"][0] == text
    assert frame["cost_usd"][0] == 0.001  # a failed judgment still cost money
    # An unusable reply is dropped from the reply cache so a re-run asks again; a usable reply
    # that simply has no claims is an answer and stays.
    assert client.forgotten == ([] if error_start == "no claims" else client.prompts)


def test_failed_calls_and_missing_inputs_are_error_rows() -> None:
    judge, client = make_judge(reply(None, error="Timeout: no answer after 60 s"))
    frame = judge.score(
        METRICS["faithfulness"],
        {
            "question": ["q", "q", None, "q"],
            "contexts": [["c"]] * 4,
            "answer": ["a", None, "a", ""],
        },
    )
    assert_contract(frame, "faithfulness", 4)
    assert frame["error"].tolist() == [
        "llm call failed: Timeout: no answer after 60 s",
        "missing answer",
        "missing question",
        "no claims",
    ]
    assert len(client.prompts) == 1  # rows decided without the LLM are never sent
    assert frame["cost_usd"].tolist() == [0.001, 0.0, 0.0, 0.0]


def test_rubric_scores_accept_json_bare_and_labelled_numbers() -> None:
    judge, client = make_judge(
        '{"score": 0.8, "reason": "direct"}', "0.5", "Score: 3/4", '{"score": 1.5}', "great!"
    )
    frame = judge.score(
        METRICS["answer_relevance"], {"question": ["q"] * 5, "answer": ["a"] * 5}, use_cache=False
    )
    assert_contract(frame, "answer_relevance", 5)
    assert frame["score"].tolist()[:3] == [0.8, 0.5, 0.75]
    assert frame["reason"][0] == "direct"
    assert frame["error"][3].startswith("unparseable reply") and "outside" in frame["error"][3]
    assert frame["error"][4].startswith("unparseable reply")
    assert client.use_cache == [False]


def test_e2e_score_needs_a_ground_truth() -> None:
    judge, client = make_judge('{"score": 0.25, "reason": "misses the year"}')
    frame = judge.score(
        METRICS["e2e_score"],
        {"question": ["q", "q"], "answer": ["a", "a"], "ground_truth": ["truth", float("nan")]},
    )
    assert_contract(frame, "e2e_score", 2)
    assert frame["score"][0] == 0.25
    assert frame["error"][1] == "missing ground_truth"
    assert "<ground_truth>\ntruth\n</ground_truth>" in client.prompts[0][1]["content"]


def test_context_precision_averages_precision_over_verdicts() -> None:
    judge, _ = make_judge('{"verdicts": [0, 1, 1]}', '{"verdicts": [1]}', '{"verdicts": "1"}')
    contexts = [["c1", "c2", "c3"], ["c1", "c2"], ["c1"], []]
    frame = judge.score(
        METRICS["context_precision"],
        {"question": ["q"] * 4, "contexts": contexts, "ground_truth": ["t"] * 4},
    )
    assert_contract(frame, "context_precision", 4)
    assert frame["score"][0] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert frame[["n_contexts", "n_relevant"]].values.tolist()[0] == [3, 2]
    assert frame["error"].tolist()[1:] == [
        "invalid reply: expected 2 verdicts, got 1",
        "invalid reply: 'verdicts' must be a list, got str",
        "no contexts",
    ]


def test_context_recall_counts_attributed_ground_truth_claims() -> None:
    judge, _ = make_judge(
        '{"claims": [{"claim": "x", "attributed": true}, {"claim": "y", "attributed": 0}]}'
    )
    frame = judge.score(
        METRICS["context_recall"], {"contexts": [["c"]], "ground_truth": ["x and y"]}
    )
    assert_contract(frame, "context_recall", 1)
    assert frame["score"][0] == 0.5
    assert frame[["n_claims", "n_attributed"]].values.tolist() == [[2, 1]]


def test_answer_correctness_combines_factual_f1_and_similarity() -> None:
    vectors = {"a1": (1.0, 0.0), "t1": (0.6, 0.8), "a2": (1.0, 0.0), "t2": (-1.0, 0.0)}
    judge, _ = make_judge(
        '{"TP": ["born 1879"], "FP": ["born in Spain"], "FN": ["born in Germany"]}',
        '{"TP": [], "FP": [], "FN": []}',
        vectors=vectors,
    )
    frame = judge.score(
        METRICS["answer_correctness"],
        {"answer": ["a1", "a2", "a3"], "ground_truth": ["t1", "t2", None]},
    )
    assert_contract(frame, "answer_correctness", 3)
    assert frame["score"][0] == pytest.approx(0.75 * 0.5 + 0.25 * 0.6)
    assert frame[["n_tp", "n_fp", "n_fn"]].values.tolist()[0] == [1, 1, 1]
    assert frame["semantic_similarity"].tolist()[:2] == pytest.approx([0.6, 0.0])  # clipped at 0
    assert frame["error"].tolist()[1:] == ["no statements", "missing ground_truth"]
    with pytest.raises(ValueError, match="weights"):
        judge.score(
            answer_correctness.metric(weights=(0.0, 0.0)),
            {"answer": ["a1"], "ground_truth": ["t1"]},
        )


def test_ragas_answer_relevance_embeds_generated_questions() -> None:
    vectors = {"q1": (1.0, 0.0), "g1": (1.0, 0.0), "g2": (0.0, 1.0), "q2": (0.0, 1.0)}
    judge, client = make_judge(
        '{"questions": ["g1", "g2"], "noncommittal": false}',
        '{"questions": ["g1"], "noncommittal": true}',
        '{"questions": []}',
        '{"questions": [1, 2]}',
        vectors=vectors,
    )
    frame = judge.score(
        answer_relevance_ragas.metric(n=2),
        {"question": ["q1", "q2", "q1", "q1"], "answer": ["a"] * 4},
    )
    assert_contract(frame, "answer_relevance_ragas", 4)
    assert frame["score"].tolist()[:2] == [0.5, 0.0]
    assert frame["n_questions"].tolist()[:3] == [2, 1, 0]
    assert frame["noncommittal"].tolist()[:2] == [False, True]
    assert frame["error"].tolist()[2:] == [
        "no generated questions",
        "invalid reply: questions must be non-empty strings",
    ]
    assert "write 2 different questions" in client.prompts[0][0]["content"]


def test_judgment_frame_never_leaves_a_silent_nan() -> None:
    common = {
        "raw_reply": None,
        "latency_ms": 0.0,
        "judge_model": MODEL,
        "judge_version": PROMPT_VERSION,
        "cached": False,
        "prompt_tokens": 0,
        "completion_tokens": 0,
        "cost_usd": 0.0,
    }
    rows = [common | {"score": math.nan, "error": None}, common | {"score": 0.3, "error": "x"}]
    frame = judgment_frame(METRICS["answer_relevance"].detail_columns, rows)
    assert frame["error"].tolist() == ["undefined score", "x"]
    assert frame["score"].isna().all()


def test_mismatched_lengths_raise_before_any_call() -> None:
    judge, client = make_judge()
    with pytest.raises(ValueError, match="differ in length"):
        judge.score(
            METRICS["faithfulness"],
            {"question": ["q"], "contexts": [["c"], ["c"]], "answer": ["a"]},
        )
    assert client.prompts == []


def test_llm_generator_answers_from_context_and_reports_failures() -> None:
    client = FakeClient("Paris [1].", reply(None, error="RateLimitError: slow down"), "  ")
    frame = LLMGenerator(client).generate(  # type: ignore[arg-type]
        ["Where?", "When?", "Who?", "Why?", None],
        [["Paris is the capital."], ["c"], ["c"], [" "], ["c"]],
    )
    assert list(frame.columns) == list(GENERATION_COLUMNS)
    assert frame["answer"][0] == "Paris [1]." and frame["answer"][3] == NO_CONTEXT_ANSWER
    assert frame["answer"][[1, 2, 4]].isna().all()
    assert frame["error"].tolist()[1:3] == [
        "llm call failed: RateLimitError: slow down",
        "empty reply",
    ]
    assert frame["error"][4] == "missing question" and frame["error"][[0, 3]].isna().all()
    assert len(client.prompts) == 3
    assert frame["generator_model"][0] == MODEL and frame["cost_usd"][3] == 0.0
    assert "[1] Paris is the capital." in client.prompts[0][1]["content"]


def test_prompts_are_versioned_json_only_and_fill_every_placeholder() -> None:
    assert PROMPT_VERSION
    for name, template in PROMPTS.items():
        assert "single JSON object" in template.system, name
    messages = faithfulness_prompt("What costs $5?", ["Price: $price"], "It costs $5 [1].")
    assert messages[1]["content"].count("$") == 3  # user text is never substituted
    precision = context_precision_prompt("q", ["a", "b"], "t")
    assert "Return exactly 2 verdicts" in precision[0]["content"]
    assert [m["role"] for m in precision] == ["system", "user"]
