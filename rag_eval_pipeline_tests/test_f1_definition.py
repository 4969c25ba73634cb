"""One F1 definition (`metrics.f1`): equal to SQuAD v1.1's and rouge-score's to the last bit,
its edge rules, and no second copy of the harmonic mean in the package."""

from __future__ import annotations

import math
import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rouge_score.scoring import fmeasure

import rag_eval_pipeline
from rag_eval_pipeline.embedding.sentences import word_tokens
from rag_eval_pipeline.judges.metrics.e2e_score import token_f1
from rag_eval_pipeline.metrics.f1 import f1, overlap_f1
from rag_eval_pipeline.metrics.text import citation_scores

pytestmark = [pytest.mark.unit]

TOKENS = st.lists(st.sampled_from(["paris", "is", "the", "capital", "of", "france", "x"]))
TEXT = st.lists(st.sampled_from(["Paris", "is", "the", "capital", "of", "France", "!", ""])).map(
    " ".join
)


def _squad_v11_f1(prediction_tokens: list[str], ground_truth_tokens: list[str]) -> float:
    """The official SQuAD v1.1 evaluate script's ``f1_score``, after its tokenization."""
    common = Counter(prediction_tokens) & Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


@settings(max_examples=300, deadline=None)
@given(TOKENS, TOKENS)
def test_overlap_f1_equals_squad_and_rouge_score(prediction: list[str], reference: list[str]):
    overlap = sum((Counter(prediction) & Counter(reference)).values())
    ours = overlap_f1(overlap, len(prediction), len(reference))
    assert ours == _squad_v11_f1(prediction, reference)
    rouge = fmeasure(overlap / max(len(prediction), 1), overlap / max(len(reference), 1))
    assert ours == rouge


@settings(max_examples=200, deadline=None)
@given(TEXT, TEXT)
def test_token_f1_is_squad_v11_f1_of_its_tokens(prediction: str, reference: str) -> None:
    assert token_f1(prediction, reference) == _squad_v11_f1(
        word_tokens(prediction), word_tokens(reference)
    )


def test_edge_rules() -> None:
    nan = math.nan
    assert f1(0.0, 0.0) == 0.0
    assert f1(0.0, nan) == 0.0 and f1(nan, 0.0) == 0.0  # nothing right is 0 whatever the other
    assert math.isnan(f1(nan, nan)) and math.isnan(f1(0.5, nan))
    assert f1(nan, nan, if_undefined=0.0) == 0.0
    assert f1(1.0, 1.0) == 1.0 and f1(0.5, 1.0) == 2 * 0.5 * 1.0 / 1.5
    # empty prediction, empty reference, both: 0, as in SQuAD v1.1's script and rouge-score
    assert overlap_f1(0, 0, 3) == overlap_f1(0, 3, 0) == overlap_f1(0, 0, 0) == 0.0
    assert token_f1("", "") == _squad_v11_f1([], []) == 0.0


def test_citation_f1_keeps_nan_when_nothing_was_citable_and_nothing_cited() -> None:
    scores = citation_scores(
        ["no citation", "wrong [2]", "right [1]"], [["a", "b"]] * 3, [[]] * 2 + [["a"]]
    )
    assert math.isnan(scores["citation_f1"][0])  # P and R undefined: not a failure, no score
    assert scores["citation_f1"][1] == 0.0  # P = 0, R undefined: 0
    assert scores["citation_f1"][2] == 1.0


def test_no_second_copy_of_the_harmonic_mean() -> None:
    package = Path(rag_eval_pipeline.__file__).parent
    definition = package / "metrics" / "f1.py"
    pattern = re.compile(r"precision\s*\+\s*recall|2\s*\*\s*precision\s*\*\s*recall")
    copies = [
        f"{path.relative_to(package)}:{number}"
        for path in sorted(package.rglob("*.py"))
        if path != definition
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert copies == []
