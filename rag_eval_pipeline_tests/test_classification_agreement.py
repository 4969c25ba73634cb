"""Tests for show/hide judge metrics and inter-rater agreement, checked against sklearn/scipy."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    confusion_matrix,
    f1_score,
    precision_score,
    recall_score,
)

from rag_eval_pipeline.metrics.agreement import (
    agreement_table,
    bin_scores,
    cohen_kappa,
    spearman,
)
from rag_eval_pipeline.metrics.classification import binary_classification_metrics, parse_yes_no

pytestmark = [pytest.mark.unit]

# ---------------------------------------------------------------- binary classification


@settings(max_examples=30, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), st.sampled_from([True, False, None])), min_size=1, max_size=40
    )
)
def test_binary_metrics_match_sklearn(pairs: list[tuple[bool, bool | None]]) -> None:
    y_true = [truth for truth, _ in pairs]
    y_pred = [pred for _, pred in pairs]
    result = binary_classification_metrics(y_true, y_pred)

    scored = [(truth, pred) for truth, pred in pairs if pred is not None]
    assert result["n"] == len(pairs)
    assert result["n_errors"] == len(pairs) - len(scored)
    assert result["n_scored"] == len(scored)
    assert result["error_rate"] == pytest.approx(result["n_errors"] / len(pairs))
    if not scored:
        assert result["accuracy"] == 0.0 and result["f1_score"] == 0.0
        return
    truth = np.array([t for t, _ in scored])
    pred = np.array([p for _, p in scored])
    tn, fp, fn, tp = confusion_matrix(truth, pred, labels=[False, True]).ravel()
    assert (result["tn"], result["fp"], result["fn"], result["tp"]) == (tn, fp, fn, tp)
    assert result["accuracy"] == pytest.approx(accuracy_score(truth, pred))
    assert result["precision"] == pytest.approx(precision_score(truth, pred, zero_division=0))
    assert result["recall"] == pytest.approx(recall_score(truth, pred, zero_division=0))
    assert result["f1_score"] == pytest.approx(f1_score(truth, pred, zero_division=0))


def test_binary_metrics_hand_computed() -> None:
    y_true = [True, True, True, False, False, True]
    y_pred = [True, False, True, True, False, None]
    result = binary_classification_metrics(y_true, y_pred)
    assert result == {
        "accuracy": pytest.approx(3 / 5),
        "precision": pytest.approx(2 / 3),
        "recall": pytest.approx(2 / 3),
        "f1_score": pytest.approx(2 / 3),
        "tp": 2,
        "fp": 1,
        "tn": 1,
        "fn": 1,
        "n": 6,
        "n_scored": 5,
        "n_errors": 1,
        "error_rate": pytest.approx(1 / 6),
    }


def test_error_replies_are_not_counted_as_no() -> None:
    y_true = [True, False, False, True]
    with_errors = binary_classification_metrics(y_true, [True, None, np.nan, pd.NA])
    assert (with_errors["tp"], with_errors["tn"], with_errors["fn"]) == (1, 0, 0)
    assert with_errors["n_errors"] == 3
    assert with_errors["accuracy"] == 1.0 and with_errors["recall"] == 1.0
    as_no = binary_classification_metrics(y_true, [True, False, False, False])
    assert (as_no["tn"], as_no["fn"], as_no["recall"]) == (2, 1, 0.5)


def test_binary_metrics_zero_division_is_zero() -> None:
    never_yes = binary_classification_metrics([True, False], [False, False])
    assert never_yes["precision"] == 0.0 and never_yes["f1_score"] == 0.0
    assert never_yes["recall"] == 0.0 and never_yes["accuracy"] == 0.5
    no_positives = binary_classification_metrics([False, False], [False, False])
    assert no_positives["recall"] == 0.0 and no_positives["accuracy"] == 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        assert no_positives["f1_score"] == f1_score([0, 0], [0, 0], zero_division=0)
    all_errors = binary_classification_metrics([True], [None])
    assert all_errors["accuracy"] == 0.0 and all_errors["n_scored"] == 0
    assert binary_classification_metrics([], [])["error_rate"] == 0.0


def test_binary_metrics_validation() -> None:
    with pytest.raises(ValueError, match="same length"):
        binary_classification_metrics([True], [True, False])
    with pytest.raises(ValueError, match="booleans"):
        binary_classification_metrics([True], ["yes"])
    with pytest.raises(ValueError, match="booleans"):
        binary_classification_metrics([None], [True])


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Yes", True),
        ("yes.", True),
        ("YES!", True),
        ("  **Yes** — the answer is grounded.", True),
        ("Answer: yes", True),
        ("No", False),
        ("no, because the context does not mention it", False),
        ("NO.", False),
        ("Да", True),
        ("да, показывать", True),
        ("Нет", False),
        ("Sim", True),
        ("Não", False),
        ("Na\u0303o", False),  # decomposed tilde
        ('{"show": "yes"}', True),
        ('{"show": "No."}', False),
        ('{"decision": true}', True),
        ('{"decision": false}', False),
        ('{"answer":"no"}', False),
        ('{"Show": true, "reason": "grounded"}', True),
        ('```json\n{"show": "yes"}\n```', True),
        ('Here you go:\n```json\n{"answer": "no"}\n```\nThanks', False),
        ('Result: {"decision": true}', True),
        ("true", True),
        ("", None),
        ("   ", None),
        ("Maybe", None),
        ("Not sure", None),
        ("Nobody knows", None),
        ("N/A", None),
        ("I think yes", None),
        ("Yesterday", None),
        ('{"reason": "no idea"}', None),
        ('{"show": 1}', None),
        ("{not json", None),
    ],
)
def test_parse_yes_no(reply: str, expected: bool | None) -> None:
    assert parse_yes_no(reply) is expected


def test_parsed_replies_feed_metrics() -> None:
    replies = ["Yes", "no", "gibberish", '{"show": "yes"}']
    result = binary_classification_metrics(
        [True, True, False, False], [parse_yes_no(r) for r in replies]
    )
    assert (result["tp"], result["fn"], result["fp"], result["n_errors"]) == (1, 1, 1, 1)


# ---------------------------------------------------------------- agreement


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
@pytest.mark.parametrize("seed", range(8))
def test_cohen_kappa_matches_sklearn(weights: str | None, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 80))
    a = rng.integers(1, 6, size=n)
    b = np.clip(a + rng.integers(-2, 3, size=n), 1, 5)
    assert cohen_kappa(a, b, weights=weights) == pytest.approx(
        cohen_kappa_score(a, b, weights=weights), abs=1e-12
    )
    labels = [1, 2, 3, 4, 5, 6]
    assert cohen_kappa(a, b, weights=weights, labels=labels) == pytest.approx(
        cohen_kappa_score(a, b, weights=weights, labels=labels), abs=1e-12
    )


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa_label_subset_and_strings_match_sklearn(weights: str | None) -> None:
    a = np.array(["low", "mid", "high", "mid", "low", "high", "mid"])
    b = np.array(["low", "high", "high", "mid", "mid", "high", "low"])
    assert cohen_kappa(a, b, weights=weights) == pytest.approx(
        cohen_kappa_score(a, b, weights=weights)
    )
    ordered = ["low", "mid", "high"]
    assert cohen_kappa(a, b, weights=weights, labels=ordered) == pytest.approx(
        cohen_kappa_score(a, b, weights=weights, labels=ordered)
    )
    subset = ["low", "high"]  # items rated "mid" by either rater are ignored
    assert cohen_kappa(a, b, weights=weights, labels=subset) == pytest.approx(
        cohen_kappa_score(a, b, weights=weights, labels=subset)
    )


def test_cohen_kappa_hand_computed_and_undefined() -> None:
    # O = [[2, 1], [0, 1]]: p_o = 3/4, p_e = (3*2 + 1*2) / 16 = 1/2 -> kappa = 1/2
    assert cohen_kappa([0, 0, 0, 1], [0, 0, 1, 1]) == pytest.approx(0.5)
    assert cohen_kappa([1, 2, 3], [1, 2, 3], weights="quadratic") == 1.0
    assert np.isnan(cohen_kappa([3, 3, 3], [3, 3, 3]))
    assert np.isnan(cohen_kappa([], []))
    with pytest.raises(ValueError, match="weights"):
        cohen_kappa([1], [1], weights="cubic")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="missing"):
        cohen_kappa([1.0, np.nan], [1.0, 2.0])


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(1, 5), st.floats(0, 1, allow_nan=False)), min_size=3, max_size=40
    )
)
def test_spearman_matches_scipy(pairs: list[tuple[int, float]]) -> None:
    a = np.array([x for x, _ in pairs])
    b = np.array([y for _, y in pairs])
    if np.ptp(a) == 0 or np.ptp(b) == 0:
        assert np.isnan(spearman(a, b))
    else:
        assert spearman(a, b) == pytest.approx(spearmanr(a, b).statistic, abs=1e-12)


def test_spearman_ties_and_edge_cases() -> None:
    # ranks of a: [1.5, 1.5, 3, 4]; of b: [1, 2, 3, 4] -> r = 4.5 / sqrt(4.5 * 5)
    assert spearman([1, 1, 2, 3], [10, 20, 30, 40]) == pytest.approx(4.5 / np.sqrt(22.5))
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert np.isnan(spearman([1, 2, 3], [5, 5, 5]))
    assert np.isnan(spearman([1], [2]))


def test_bin_scores_round_half_up() -> None:
    scores = np.array([0.0, 0.1, 0.125, 0.2, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 0.9, 1.0])
    assert bin_scores(scores).tolist() == [1, 1, 2, 2, 2, 3, 3, 4, 4, 5, 5, 5]
    assert bin_scores(scores).dtype == np.int64
    assert bin_scores([0.0, 0.5, 1.0], n_bins=3).tolist() == [1, 2, 3]
    assert bin_scores([0.25, 0.75], n_bins=3).tolist() == [2, 3]  # 1.5 -> 2, not 2 (even)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        bin_scores([0.5, np.nan])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        bin_scores([1.2])


def test_agreement_table() -> None:
    frame = pd.DataFrame(
        {
            "human_1": [1, 2, 3, 4, 5, np.nan],
            "human_2": [1, 2, 4, 4, 5, 3],
            "judge": bin_scores([0.0, 0.3, 0.5, 0.75, 1.0, 0.5]),
        }
    )
    table = agreement_table(frame, ["human_1", "human_2", "judge"], labels=range(1, 6))
    assert list(table.columns) == [
        "rater_a",
        "rater_b",
        "n",
        "kappa",
        "weighted_kappa",
        "spearman",
    ]
    assert table[["rater_a", "rater_b"]].to_numpy().tolist() == [
        ["human_1", "human_2"],
        ["human_1", "judge"],
        ["human_2", "judge"],
    ]
    assert table["n"].tolist() == [5, 5, 6]
    for row in table.itertuples():
        pair = frame[[row.rater_a, row.rater_b]].dropna().astype(int)
        a, b = pair[row.rater_a], pair[row.rater_b]
        assert row.kappa == pytest.approx(cohen_kappa_score(a, b, labels=[1, 2, 3, 4, 5]))
        assert row.weighted_kappa == pytest.approx(
            cohen_kappa_score(a, b, labels=[1, 2, 3, 4, 5], weights="quadratic")
        )
        assert row.spearman == pytest.approx(spearmanr(a, b).statistic)
    assert table.loc[1, "kappa"] == 1.0  # judge bins equal human_1 where both rated
    with pytest.raises(ValueError, match="two rater columns"):
        agreement_table(frame, ["judge"])
