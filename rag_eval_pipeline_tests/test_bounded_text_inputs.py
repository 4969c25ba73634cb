"""Hostile sizes stay bounded: linear regexes and tokenization, capped prompts and sentences,
digit runs that are no citation."""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rag_eval_pipeline.datasets.errors import DatasetError
from rag_eval_pipeline.datasets.golden import load_dataset
from rag_eval_pipeline.embedding import sentences
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.traffic import judged_sample
from rag_eval_pipeline.judges.metrics import METRICS
from rag_eval_pipeline.judges.metrics.context_precision import NO_TRUTH_CLAIMS
from rag_eval_pipeline.judges.metrics.e2e_score import token_f1
from rag_eval_pipeline.judges.offline import OfflineJudge
from rag_eval_pipeline.judges.show_judge import LLMShowJudge
from rag_eval_pipeline.llm.prompts import MAX_PROMPT_CHARS
from rag_eval_pipeline.metrics.text import citation_scores, nested_quantifier, regex_match
from rag_eval_pipeline_tests.openai_server import run_openai_server
from rag_eval_pipeline_tests.test_hostile_inputs import judge_through

pytestmark = [pytest.mark.integration]


def test_citation_with_thousands_of_digits_is_not_a_citation() -> None:
    huge = "[" + "9" * 5000 + "]"
    result = citation_scores([f"Paris {huge} is big [1]."], [["d1", "d2"]], [{"d1"}])
    assert result["n_citations"].tolist() == [1]
    assert result["citation_precision"].tolist() == [1.0]
    only_huge = citation_scores([huge, "[123456789]"], [["d1"], ["d1"]], [{"d1"}, {"d1"}])
    assert math.isnan(only_huge["citation_precision"][0])
    assert only_huge["n_invalid_citations"].tolist() == [0, 1]


_OLD_SENTENCE_BREAK = re.compile(
    r"(?:(?<=[.!?…])|(?<=[.!?…][\"'”’»)\]]))\s+|(?<=[。！？])\s*|\s*\n\s*"
)
_OLD_CITATION = re.compile(r"\s*\[\d+(?:\s*[,;]\s*\d+)*\]")
_PIECES = st.sampled_from(
    [
        " ",
        "  ",
        "\n",
        "\t",
        "\u00a0",
        "[",
        "]",
        "1",
        "23",
        ",",
        ";",
        ".",
        "!",
        "。",
        "”",
        "a",
        "word",
        "x. ",
        "[1]",
        " [2, 3]",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=30).map("".join))
def test_linear_regexes_match_exactly_as_the_old_ones(text: str) -> None:
    assert sentences._CITATION.sub("", text) == _OLD_CITATION.sub("", text)
    assert sentences._SENTENCE_BREAK.split(text) == _OLD_SENTENCE_BREAK.split(text)
    assert [m.span() for m in sentences._CITATION.finditer(text)] == [
        m.span() for m in _OLD_CITATION.finditer(text)
    ]


def test_long_whitespace_runs_are_tokenized_in_linear_time() -> None:
    text = "a" + " " * 200_000 + "b [1]" + "\t" * 200_000
    start = time.perf_counter()
    assert sentences.word_tokens(text) == ["a", "b"]
    assert sentences.split_sentences(text) == ["a"]
    assert sentences._all_sentences(text) == ["a" + " " * 200_000 + "b"]
    assert time.perf_counter() - start < 1.0


def test_token_f1_reads_only_the_judged_prefix() -> None:
    head = "alpha beta " * 100
    tail = "gamma " * 1_000_000
    assert len(head + tail) > sentences.MAX_JUDGED_CHARS
    prefix = (head + tail)[: sentences.MAX_JUDGED_CHARS]
    assert token_f1(head + tail, head) == token_f1(prefix, head)
    assert token_f1(head + tail, head) < 1.0
    assert token_f1(head, head) == 1.0


def test_context_precision_of_a_ground_truth_without_words_is_an_error_row(
    embedder: Embedder,
) -> None:
    judge = OfflineJudge(embedder)
    tower = ["Paris is in France.", "The Eiffel Tower is in Paris."]
    contexts = [tower, ["It is big."], tower, tower]
    truths = ["?!", "—", "[1]", "The Eiffel Tower is in Paris."]
    frame = judge.score(
        METRICS["context_precision"],
        {"question": ["Where?"] * 4, "contexts": contexts, "ground_truth": truths},
    )
    assert frame["error"].tolist()[:3] == [NO_TRUTH_CLAIMS] * 3
    assert frame["score"][:3].isna().all()
    assert frame["error"][3] is None or pd.isna(frame["error"][3])
    assert frame["score"][3] == 0.5  # AP of [not relevant, relevant]


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(?:\w+\s?)*x", r"((ab)*c)+", r"(a{2,}){3,}"])
def test_a_nested_quantifier_pattern_is_refused_naming_the_value(
    tmp_path: Path, pattern: str
) -> None:
    (tmp_path / "queries.jsonl").write_text(
        '{"query_id": "q1", "question": "a?", "expected_pattern": "^ok$"}\n'
        + json.dumps({"query_id": "q2", "question": "b?", "expected_pattern": pattern})
        + "\n"
    )
    (tmp_path / "qrels.csv").write_text("query_id,doc_id,relevance\nq1,d1,1\n")
    with pytest.raises(DatasetError) as caught:
        load_dataset(tmp_path, "t")
    message = str(caught.value)
    assert "queries.jsonl, row 2 (line 2), column 'expected_pattern'" in message
    assert repr(pattern) in message and "nested quantifiers" in message


@pytest.mark.parametrize("pattern", [r"^\d{3}-\d{4}$", r"(a|b)*", r"(a+)?", r"(ab){2}", r"[(a+)]+"])
def test_patterns_without_nested_repetition_are_accepted(pattern: str) -> None:
    assert not nested_quantifier(pattern)


def test_regex_match_searches_only_the_judged_prefix() -> None:
    answer = "a" * 200_000 + "!"
    start = time.perf_counter()
    assert regex_match([answer, answer], [r"a{30}", r"!"]).tolist() == [1.0, 0.0]
    assert regex_match(["x" * 100 + "!"], [r"!$"]).tolist() == [1.0]
    assert time.perf_counter() - start < 1.0


def test_llm_show_judge_never_sends_an_oversized_prompt(embedder: Embedder) -> None:
    huge = "Paris is in France. " * (MAX_PROMPT_CHARS // 20 + 1)
    with run_openai_server(responder=lambda request: "Yes") as server:
        judge = LLMShowJudge(judge_through(server, embedder).client)
        decided = judge.decide(["Where?"] * 3, ["Paris.", huge, "Paris."], ["Paris.", "P.", huge])
        assert len(server.requests) == 1
        assert all(
            len(r.body["messages"][-1]["content"]) < MAX_PROMPT_CHARS for r in server.requests
        )
    assert decided["decision"].tolist() == [True, None, None]
    assert pd.isna(decided.loc[0, "error"])
    for error in decided["error"][1:]:
        assert error.startswith("prompt too long: ")
        assert error.endswith(f"more than {MAX_PROMPT_CHARS:,}")


def test_context_precision_reads_at_most_max_sentences_across_a_rows_chunks(
    embedder: Embedder,
) -> None:
    filler = " ".join(f"Zebras graze in field {i}." for i in range(200))
    chunks = [filler, filler, "The Eiffel Tower is in Paris."]
    groups = sentences.chunk_sentences(chunks)
    assert [len(g) for g in groups] == [200, 56, 0]
    assert sentences.context_sentences(chunks) == groups[0] + groups[1]
    frame = OfflineJudge(embedder).score(
        METRICS["context_precision"],
        {
            "question": ["Where?"] * 2,
            "contexts": [chunks, chunks[2:]],
            "ground_truth": ["The Eiffel Tower is in Paris."] * 2,
        },
    )
    # the third chunk lies past the row's 256 sentences: never read, so never relevant
    assert json.loads(frame["raw_reply"][0])["verdicts"] == [0, 0, 0]
    assert frame["score"].tolist() == [0.0, 1.0]
    assert frame["truncated"].tolist() == [True, False]


def test_answer_relevance_flags_an_over_long_question_as_truncated(embedder: Embedder) -> None:
    judge = OfflineJudge(embedder)
    long_question = "Where is the Eiffel Tower? " * 1_000
    questions = [long_question, "Where is the Eiffel Tower?"]
    answers = ["The Eiffel Tower is in Paris."] * 2
    for frame in (
        judge.score(METRICS["answer_relevance"], {"question": questions, "answer": answers}),
        judge.score(METRICS["answer_relevance_ragas"], {"question": questions, "answer": answers}),
    ):
        assert frame["truncated"].tolist() == [True, False]


def test_traffic_contexts_from_the_corpus_keep_their_titles() -> None:
    interactions = pd.DataFrame(
        {
            "log_id": ["l0", "l1"],
            "question": "Price?",
            "answer": "20 USD.",
            "retrieved_doc_ids": [["d2", "d1"], ["d1"]],
        }
    )
    corpus = pd.DataFrame(
        {"doc_id": ["d1", "d2"], "title": ["Keys", None], "text": ["Rotate.", "20 USD."]}
    )
    sample = judged_sample(interactions, corpus, 5, seed=0)
    assert sample["contexts"].tolist() == [["20 USD.", "Keys. Rotate."], ["Keys. Rotate."]]
