"""Regression tests for the review of the merged work: hostile sizes, linear regexes, retries."""

from __future__ import annotations

import math

from rag_eval_pipeline.metrics.text import citation_scores


def test_citation_with_thousands_of_digits_is_not_a_citation() -> None:
    huge = "[" + "9" * 5000 + "]"
    result = citation_scores([f"Paris {huge} is big [1]."], [["d1", "d2"]], [{"d1"}])
    assert result["n_citations"].tolist() == [1]
    assert result["citation_precision"].tolist() == [1.0]
    only_huge = citation_scores([huge, "[123456789]"], [["d1"], ["d1"]], [{"d1"}, {"d1"}])
    assert math.isnan(only_huge["citation_precision"][0])
    assert only_huge["n_invalid_citations"].tolist() == [0, 1]
