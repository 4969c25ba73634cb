"""What `metric_regressions` compares, read from the warehouse: today's and the baseline's
`PartitionScores`, the baseline rebuilt with today's models across a model change
(`evaluation.model_bridge`), the rule from the thresholds file and the planner's noise history.
"""

from __future__ import annotations

import datetime

import pandas as pd

from rag_eval_pipeline.datasets.golden import GoldenDataset
from rag_eval_pipeline.datasets.manifest import DatasetManifest
from rag_eval_pipeline.evaluation.item_scores import ITEM_SOURCES, SAMPLE_SOURCES, item_scores
from rag_eval_pipeline.evaluation.model_bridge import (
    ANSWER_TIERS,
    ModelChanges,
    TodayModels,
    bridge_baseline,
)
from rag_eval_pipeline.evaluation.scorecard import Thresholds
from rag_eval_pipeline.evaluation.verdicts.model_roles import IDENTITY_ROLES
from rag_eval_pipeline.evaluation.verdicts.partition import PartitionScores, RegressionRule
from rag_eval_pipeline.evaluation.verdicts.planner import NOISE_DAYS
from rag_eval_pipeline.storage.parquet import StoredTables
from rag_eval_pipeline.storage.warehouse import REGRESSIONS_ASSET, Baseline, WarehouseStore

Tables = dict[str, pd.DataFrame | None]


def today_scores(
    store: WarehouseStore,
    version: str,
    date: str,
    scorecard: pd.DataFrame,
    tables: Tables,
    identities: dict[str, str | None],
) -> PartitionScores:
    """Today's partition: its scorecard, the per-item scores and samples of its `tables`, its
    models and whether its dataset expects traffic every day."""
    return PartitionScores(
        version,
        date,
        scorecard,
        item_scores(tables),
        identities,
        item_scores(tables, SAMPLE_SOURCES),
        traffic_every_day=traffic_every_day(store, version, date),
    )


def baseline_scores(store: WarehouseStore, chosen: Baseline) -> tuple[PartitionScores, Tables]:
    """The baseline partition as stored, and the stored tables its items come from."""
    tables = {
        name: store.read_partition(name, chosen.version, chosen.date)
        for name in (*ITEM_SOURCES, *SAMPLE_SOURCES)
    }
    scores = PartitionScores(
        chosen.version,
        chosen.date,
        chosen.scorecard,
        item_scores(tables),
        stored_identities(store, chosen.version, chosen.date),
        item_scores(tables, SAMPLE_SOURCES),
    )
    return scores, tables


def rebuilt_baseline(
    store: WarehouseStore,
    previous: PartitionScores,
    tables: Tables,
    models: TodayModels,
    changes: ModelChanges,
    timezone: str,
) -> tuple[PartitionScores, pd.DataFrame]:
    """The baseline rebuilt with today's `models` from its stored inputs where they allow it,
    and the bridge's table (`evaluation.model_bridge.bridge_baseline`); staged logs are read
    for the baseline's date in `timezone` (the schedule's)."""
    answers = {
        spec.answers: store.read_partition(spec.answers, previous.version, previous.date)
        for spec in ANSWER_TIERS
    }
    snapshot = store.read_table_folder("golden_dataset", previous.version, previous.date)
    day = datetime.date.fromisoformat(previous.date)
    dataset = (
        GoldenDataset.from_tables(previous.version, snapshot, day, timezone) if snapshot else None
    )
    return bridge_baseline(previous, {**tables, **answers}, dataset, models, changes)


def regression_rule(
    alpha: float, n_resamples: int, seed: int, thresholds_file: str
) -> RegressionRule:
    """The rule at level `alpha`, with the roles' budget and tolerances of the thresholds file."""
    thresholds = Thresholds.load(thresholds_file)
    return RegressionRule(
        alpha,
        n_resamples,
        seed,
        thresholds.primary_share,
        thresholds.untested_tolerance,
        thresholds.coverage_tolerance,
    )


def traffic_every_day(store: WarehouseStore, version: str, date: str) -> bool:
    """`dataset.yaml`'s `traffic_every_day` in the partition's stored dataset snapshot (True
    when it has none)."""
    folder = store.partition_path("golden_dataset", version, date).with_suffix("")
    if not folder.exists():
        return True
    return DatasetManifest.from_frame(StoredTables.open(folder).read("manifest")).traffic_every_day


def stored_identities(store: WarehouseStore, version: str, date: str) -> dict[str, str | None]:
    """The judge/generator/embedder identities a stored verdict partition recorded (if any)."""
    stored = store.read_partition(REGRESSIONS_ASSET, version, date)
    if stored is None or stored.empty:
        return {}
    return {role: stored[role].iloc[0] for role in IDENTITY_ROLES if role in stored.columns}


def noise_history(store: WarehouseStore, version: str, date: str) -> pd.DataFrame:
    """The stored verdict rows of `version`'s last `NOISE_DAYS` dates before `date` (their
    `noise` and `n_paired`), which the planner pools with today's noise."""
    dates = [d for d in store.partition_dates(REGRESSIONS_ASSET, version) if d < date]
    frames = [store.read_partition(REGRESSIONS_ASSET, version, d) for d in dates[-NOISE_DAYS:]]
    kept = [f for f in frames if f is not None and "noise" in f.columns]
    return pd.concat(kept, ignore_index=True) if kept else pd.DataFrame()
