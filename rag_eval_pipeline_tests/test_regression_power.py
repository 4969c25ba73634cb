"""benchmarks/regression_power.py: its rank moves do what its docstring says, and one simulated
day of a 6-question collapse gets the verdicts the issue describes from each rule."""

import numpy as np
import pytest

from benchmarks.regression_power import (
    COLLAPSE,
    HIT5,
    NOISES,
    Rankings,
    Simulator,
    demote,
    flip_hits,
    judge,
    ranks,
    shipped_rule,
)

pytestmark = [pytest.mark.unit]


def test_demote_moves_every_relevant_document_of_the_top_k_into_the_range() -> None:
    rng = np.random.default_rng(0)
    scores = np.sort(rng.uniform(size=(50, 30)), axis=1)[:, ::-1].copy()
    relevant = rng.uniform(size=scores.shape) < 0.15
    chosen = rng.uniform(size=50) < 0.5
    moved = demote(scores, relevant, rng, 5, (6, 20), chosen)
    before, after = ranks(scores), ranks(moved)
    top = relevant & (before <= 5)
    landed = after[top & chosen[:, None]]
    assert (landed >= 6).all() and (landed <= 20 + relevant.sum(axis=1).max()).all()
    assert (moved[~chosen] == scores[~chosen]).all()
    assert not (relevant & (after <= 5))[chosen].any()  # none rose into the top 5 either


def test_flip_hits_flips_hit_rate_at_5_of_the_flipped_rows_only() -> None:
    rng = np.random.default_rng(1)
    scores = np.sort(rng.uniform(size=(400, 30)), axis=1)[:, ::-1].copy()
    relevant = rng.uniform(size=scores.shape) < 0.1
    relevant[:, 0] |= rng.uniform(size=400) < 0.5  # half the rows a hit at rank 1
    hits = (relevant & (ranks(scores) <= 5)).any(axis=1)
    flipped = flip_hits(scores, relevant, np.random.default_rng(2), 0.3)
    after = (relevant & (ranks(flipped) <= 5)).any(axis=1)
    changed = (flipped != scores).any(axis=1)
    assert (after != hits)[changed & relevant.any(axis=1)].all()
    assert (after == hits)[~changed].all()
    assert 0.2 < changed.mean() < 0.4


def test_a_six_question_collapse_is_alerted_by_the_new_rule_not_the_flat_one() -> None:
    thresholds, rule = shipped_rule()
    simulator = Simulator(Rankings.load(), NOISES[0], 6, systems=6, seed=0)
    base, today = simulator.day(0, thresholds)
    collapsed = judge(base, today(COLLAPSE, 1.0), thresholds, rule, COLLAPSE.metric)
    assert collapsed["new"] == (True, True) and collapsed["oracle"] == (True, True)
    assert collapsed["flat"] == (False, False)  # p = 1/64 against 0.05 · 20 / 125 tests
    quiet = judge(base, today(None, 1.0), thresholds, rule, HIT5.metric)
    assert not any(any_alert for any_alert, _ in quiet.values())
