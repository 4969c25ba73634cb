"""What a partition is compared on (`PartitionScores`) and the rule it is compared by."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

DESCRIPTIVE = re.compile(r"^(n_|num_)|(_count|_sample_size|_volume)$|^total_pairs$")


@dataclass(frozen=True)
class PartitionScores:
    """What one partition is compared on: its scorecard, per-item scores paired by `item_id`
    with the baseline's, model identities, and per-item scores of independent samples (compared
    unpaired; None: no such sample). Both tables have the `evaluation.item_scores` layout."""

    version: str
    date: str
    scorecard: pd.DataFrame
    items: pd.DataFrame
    identities: dict[str, str | None] = field(default_factory=dict)
    samples: pd.DataFrame | None = None
    # A baseline rebuilt with today's models (`evaluation.model_bridge`): per changed model
    # (role), the keys compared although it changed; per (role, tier), why the others of that
    # tier could not be bridged.
    bridged: Mapping[str, frozenset[tuple[str, str, str]]] = field(default_factory=dict)
    bridge_notes: Mapping[tuple[str, str], str] = field(default_factory=dict)
    # `dataset.yaml`'s `traffic_every_day`: a day without traffic is an outage (else a note).
    traffic_every_day: bool = True


@dataclass(frozen=True)
class RegressionRule:
    """FDR level α; the primary metrics' share of the weighted-BH budget; the relative bad
    change beyond which an untestable primary metric is alerted on its effect; the share of
    the baseline's scored items a metric may lose before its coverage dropped; the
    randomization tests' resamples and seed (a re-run gives the same)."""

    alpha: float = 0.05
    n_resamples: int = 10000
    seed: int = 0
    primary_share: float = 0.8
    untested_tolerance: float = 0.2
    coverage_tolerance: float = 0.1


def is_quality_metric(tier: str, metric: str) -> bool:
    """False for dataset statistics and descriptive counts, which are never compared."""
    return tier != "dataset" and not DESCRIPTIVE.search(metric)
