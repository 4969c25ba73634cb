"""The offline judge and extractive generator: sane orderings, exact tiny cases, fixed columns."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.embedding.sentences import split_sentences
from rag_eval_pipeline.judges.heuristics import is_noncommittal
from rag_eval_pipeline.judges.judge import COMMON_COLUMNS
from rag_eval_pipeline.judges.metrics import METRICS, answer_correctness, answer_relevance_ragas
from rag_eval_pipeline.judges.metrics.e2e_score import token_f1
from rag_eval_pipeline.judges.offline import OFFLINE_JUDGE_MODEL, OfflineJudge
from rag_eval_pipeline.storage.result_cache import ResultCache
from rag_eval_pipeline.systems.generators import (
    GENERATION_COLUMNS,
    NO_CONTEXT_ANSWER,
    OFFLINE_GENERATOR_MODEL,
    OfflineGenerator,
)

pytestmark = [pytest.mark.integration]

QUESTION = "Where is the Eiffel Tower and when was it completed?"
CONTEXT = [
    "The Eiffel Tower is located in Paris. It was completed in 1889 for the World's Fair.",
    "Bananas are rich in potassium.",
]
GROUND_TRUTH = "The Eiffel Tower is in Paris. It was completed in 1889."
FAITHFUL = "The Eiffel Tower is in Paris [1]. It was completed in 1889 [1]."
HALLUCINATED = (
    "The Eiffel Tower is in Paris. Its elevators run on solar power. It is painted bright green."
)


@pytest.fixture(scope="module")
def judge(embedder: Embedder) -> OfflineJudge:
    return OfflineJudge(embedder)


def assert_contract(frame: pd.DataFrame, metric: str, n_rows: int) -> None:
    assert list(frame.columns) == [*COMMON_COLUMNS, *METRICS[metric].detail_columns]
    assert len(frame) == n_rows
    assert (frame["judge_model"] == OFFLINE_JUDGE_MODEL).all()
    assert (frame["score"].isna() == frame["error"].notna()).all()
    scored = frame["score"].dropna()
    assert ((scored >= 0) & (scored <= 1)).all()
    assert (frame["latency_ms"] >= 0).all() and (frame["cost_usd"] == 0).all()


def test_sentence_splitting_is_unicode_aware() -> None:
    text = (
        "Он сказал: «Привет!» Потом ушёл. Число 3.5 не конец предложения. "
        "日本語の文です。次の文！ A Torre fica em Paris [2].\nNova linha"
    )
    assert split_sentences(text) == [
        "Он сказал: «Привет!»",
        "Потом ушёл.",
        "Число 3.5 не конец предложения.",
        "日本語の文です。",
        "次の文！",
        "A Torre fica em Paris.",
        "Nova linha",
    ]
    assert split_sentences("  [1] ... ") == []


def test_token_f1_and_noncommittal_detection() -> None:
    assert token_f1("Башня в Париже", "башня в париже") == 1.0
    assert token_f1("the cat sat", "the cat ran away") == pytest.approx(
        2 * (2 / 3 * 2 / 4) / (2 / 3 + 2 / 4)
    )
    assert token_f1("", "anything") == 0.0
    assert is_noncommittal(NO_CONTEXT_ANSWER)
    assert is_noncommittal("  ")
    assert is_noncommittal("Я не знаю.")
    assert not is_noncommittal("Paris. I don't know the year.")


def test_faithful_answer_beats_hallucinated_one(judge: OfflineJudge) -> None:
    frame = judge.score(
        METRICS["faithfulness"],
        {"question": [QUESTION] * 2, "contexts": [CONTEXT] * 2, "answer": [FAITHFUL, HALLUCINATED]},
    )
    assert_contract(frame, "faithfulness", 2)
    assert frame["score"].tolist() == pytest.approx([1.0, 1 / 3])
    assert frame[["n_claims", "n_supported"]].values.tolist() == [[2, 2], [3, 1]]
    claims = json.loads(frame["raw_reply"][1])["claims"]
    assert [c["supported"] for c in claims] == [True, False, False]


def test_faithfulness_errors_are_explicit(judge: OfflineJudge) -> None:
    frame = judge.score(
        METRICS["faithfulness"],
        {
            "question": [QUESTION, QUESTION, None, QUESTION],
            "contexts": [CONTEXT, CONTEXT, CONTEXT, []],
            "answer": [NO_CONTEXT_ANSWER, None, FAITHFUL, FAITHFUL],
        },
    )
    assert_contract(frame, "faithfulness", 4)
    assert frame["error"].tolist()[:3] == ["no claims", "missing answer", "missing question"]
    assert frame["score"][3] == 0.0  # nothing in an empty context supports any claim


def test_answer_relevance_prefers_on_topic_answers(judge: OfflineJudge) -> None:
    answers = [FAITHFUL, "Bananas are rich in potassium.", NO_CONTEXT_ANSWER]
    frame = judge.score(
        METRICS["answer_relevance"], {"question": [QUESTION] * 3, "answer": answers}
    )
    assert_contract(frame, "answer_relevance", 3)
    assert frame["score"][0] > frame["score"][1] + 0.3
    assert frame["score"][2] == 0.0
    ragas = judge.score(
        answer_relevance_ragas.metric(n=1), {"question": [QUESTION] * 3, "answer": answers}
    )
    assert_contract(ragas, "answer_relevance_ragas", 3)
    assert ragas["score"][0] > ragas["score"][1]
    assert ragas["n_questions"].tolist() == [1, 1, 1]
    assert ragas["noncommittal"].tolist() == [False, False, True]
    assert ragas["score"][2] == 0.0


def test_e2e_score_exact_on_identical_and_empty_answers(judge: OfflineJudge) -> None:
    frame = judge.score(
        METRICS["e2e_score"],
        {
            "question": [QUESTION] * 3,
            "answer": [GROUND_TRUTH, "", FAITHFUL],
            "ground_truth": [GROUND_TRUTH] * 3,
        },
    )
    assert_contract(frame, "e2e_score", 3)
    assert frame["score"][0] == pytest.approx(1.0, abs=1e-5)
    assert frame["score"][1] == 0.0
    assert frame["score"][2] == pytest.approx(1.0, abs=1e-5)  # citation markers are ignored
    missing = judge.score(
        METRICS["e2e_score"], {"question": [QUESTION], "answer": [FAITHFUL], "ground_truth": [" "]}
    )
    assert missing["error"].tolist() == ["missing ground_truth"]


def test_context_precision_ranks_relevant_chunks_first(judge: OfflineJudge) -> None:
    frame = judge.score(
        METRICS["context_precision"],
        {
            "question": [QUESTION] * 3,
            "contexts": [CONTEXT, CONTEXT[::-1], []],
            "ground_truth": [GROUND_TRUTH] * 3,
        },
    )
    assert_contract(frame, "context_precision", 3)
    assert frame["score"].tolist()[:2] == [1.0, 0.5]
    assert frame["error"][2] == "no contexts"
    assert json.loads(frame["raw_reply"][1])["verdicts"] == [0, 1]


def test_context_recall_counts_covered_ground_truth_sentences(judge: OfflineJudge) -> None:
    truth = "The Eiffel Tower is in Paris. It has exactly 1665 steps to the top."
    frame = judge.score(
        METRICS["context_recall"],
        {"contexts": [CONTEXT, CONTEXT[1:]], "ground_truth": [truth, truth]},
    )
    assert_contract(frame, "context_recall", 2)
    assert frame["score"].tolist() == [0.5, 0.0]
    assert frame[["n_claims", "n_attributed"]].values.tolist() == [[2, 1], [2, 0]]


def test_answer_correctness_exact_on_identical_answer(judge: OfflineJudge) -> None:
    frame = judge.score(
        answer_correctness.metric(weights=(0.75, 0.25)),
        {"answer": [GROUND_TRUTH, HALLUCINATED, None], "ground_truth": [GROUND_TRUTH] * 3},
    )
    assert_contract(frame, "answer_correctness", 3)
    assert frame["score"][0] == pytest.approx(1.0, abs=1e-5)
    assert frame[["n_tp", "n_fp", "n_fn"]].values.tolist()[:2] == [[2, 0, 0], [1, 2, 1]]
    expected_f1 = 1 / (1 + 0.5 * 3)
    assert frame["factual_f1"][1] == pytest.approx(expected_f1)
    assert frame["score"][1] == pytest.approx(
        0.75 * expected_f1 + 0.25 * frame["semantic_similarity"][1]
    )
    assert frame["error"][2] == "missing answer"


def test_offline_judge_is_deterministic(judge: OfflineJudge) -> None:
    args = {
        "question": [QUESTION] * 2,
        "contexts": [CONTEXT] * 2,
        "answer": [FAITHFUL, HALLUCINATED],
    }
    first = judge.score(METRICS["faithfulness"], args)
    second = judge.score(METRICS["faithfulness"], args, use_cache=False)
    pd.testing.assert_frame_equal(
        first.drop(columns="latency_ms"), second.drop(columns="latency_ms")
    )


def test_results_are_kept_by_content_and_recomputed_when_anything_changes(
    embedder: Embedder, tmp_path: Path
) -> None:
    cache = ResultCache(tmp_path / "offline-judge")
    args = {
        "question": [QUESTION] * 2,
        "contexts": [CONTEXT] * 2,
        "answer": [FAITHFUL, HALLUCINATED],
    }
    computed = OfflineJudge(embedder, cache=cache).score(METRICS["faithfulness"], args)
    assert not computed["cached"].any()
    entries = sorted(cache.directory.glob("*.parquet"))
    assert len(entries) == 1

    read_back = OfflineJudge(embedder, cache=cache).score(METRICS["faithfulness"], args)
    assert read_back["cached"].all()
    pd.testing.assert_frame_equal(read_back.drop(columns="cached"), computed.drop(columns="cached"))
    assert sorted(cache.directory.glob("*.parquet")) == entries

    repeated = OfflineJudge(embedder, cache=cache).score(
        METRICS["faithfulness"], args, use_cache=False
    )
    assert not repeated["cached"].any()
    changed_answer = OfflineJudge(embedder, cache=cache).score(
        METRICS["faithfulness"],
        {"question": [QUESTION], "contexts": [CONTEXT], "answer": [HALLUCINATED]},
    )
    stricter = OfflineJudge(embedder, threshold=0.9, cache=cache).score(
        METRICS["faithfulness"], args
    )
    relevance = OfflineJudge(embedder, cache=cache).score(
        METRICS["answer_relevance"], {"question": args["question"], "answer": args["answer"]}
    )
    assert not changed_answer["cached"].any() and not stricter["cached"].any()
    assert not relevance["cached"].any()
    assert len(list(cache.directory.glob("*.parquet"))) == 4
    assert stricter["score"].tolist() != computed["score"].tolist()


def test_russian_and_portuguese_faithfulness(judge: OfflineJudge) -> None:
    contexts = [
        ["Эйфелева башня находится в Париже. Она была построена в 1889 году."],
        ["A Torre Eiffel fica em Paris. Foi construída em 1889."],
    ]
    questions = ["Где находится Эйфелева башня?", "Onde fica a Torre Eiffel?"]
    faithful = ["Эйфелева башня находится в Париже.", "A Torre Eiffel fica em Paris."]
    invented = [
        "Бананы богаты калием. Луна сделана из сыра.",
        "As bananas são ricas em potássio. A lua é feita de queijo.",
    ]
    frame = judge.score(
        METRICS["faithfulness"],
        {"question": questions * 2, "contexts": contexts * 2, "answer": faithful + invented},
    )
    assert frame["score"].tolist() == [1.0, 1.0, 0.0, 0.0]
    generated = OfflineGenerator(judge.embedder, max_sentences=1).generate(questions, contexts)
    assert generated["answer"].tolist() == faithful


def test_generator_extracts_the_most_similar_sentences(embedder: Embedder) -> None:
    context = [
        "The Louvre is the most visited museum. The Eiffel Tower was completed in 1889.",
        "Bananas are rich in potassium.",
    ]
    generator = OfflineGenerator(embedder, max_sentences=1)
    frame = generator.generate(
        ["When was the Eiffel Tower completed?", "What are bananas rich in?", QUESTION, None],
        [context, context, [], context],
    )
    assert list(frame.columns) == list(GENERATION_COLUMNS)
    assert frame["answer"].tolist()[:3] == [
        "The Eiffel Tower was completed in 1889.",
        "Bananas are rich in potassium.",
        NO_CONTEXT_ANSWER,
    ]
    assert math.isnan(frame["answer"][3]) and frame["error"][3] == "missing question"
    assert (frame["generator_model"] == OFFLINE_GENERATOR_MODEL).all()
    two = OfflineGenerator(embedder, max_sentences=2).generate([QUESTION], [CONTEXT + CONTEXT])
    assert two["answer"][0] == (
        "The Eiffel Tower is located in Paris. It was completed in 1889 for the World's Fair."
    )


def test_mismatched_input_lengths_raise(judge: OfflineJudge) -> None:
    with pytest.raises(ValueError, match="differ in length"):
        judge.score(
            METRICS["answer_relevance"], {"question": [QUESTION], "answer": [FAITHFUL, FAITHFUL]}
        )
