"""What the HTML report of one partition shows, read from the warehouse (`collect_report_data`).

Everything the page needs is gathered here into one `ReportData`; `html_report` turns it into
the page's rows and charts and the templates draw them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import pandas as pd

from rag_eval_pipeline.metrics.correlation import correlations_by_system
from rag_eval_pipeline.reporting.changes import PRIMARY
from rag_eval_pipeline.storage.warehouse import (
    REGRESSIONS_ASSET,
    SCORECARD_ASSET,
    Baseline,
    WarehouseStore,
)

E2E_JUDGMENTS_ASSET = "e2e_judgments"
E2E_GENERATIONS_ASSET = "e2e_generations"
# The tiers whose system is a model name (see the tier assets), shown in the header.
MODEL_TIERS = {
    "Embedder": "tier0_embedding",
    "Judge": "judge_reliability",
    "Generator": "tier2_generation",
}
# The columns of the per-question rows that name the model which made them.
MODEL_COLUMNS = {"Judge": "judge_model", "Generator": "generator_model"}
# Dates of the version summarised under "What changed" (this one included).
WEEK_DAYS = 7


@dataclass(frozen=True)
class ReportData:
    """Everything the report shows for one partition.

    `history` holds the headline-metric rows of every stored scorecard of `version` up to
    `date` (this partition's included); `alerts` the version's recorded regression alerts;
    `cross_version` the headline rows of the latest scorecard on or before `date` of every
    version (with their `dataset_version` and `date`); `regressions` the partition's alerted
    rows of `metric_regressions` and `comparisons` all its rows; `correlations` the Pearson
    matrix of the RAGAS-style metrics over the partition's questions, per system; `week` the
    `metric_regressions` table of each of the version's last `WEEK_DAYS` stored dates;
    `in_progress` the other versions with a run in progress when the report was written.
    """

    version: str
    date: str
    scorecard: pd.DataFrame
    baseline: Baseline | None
    regressions: pd.DataFrame
    history: pd.DataFrame
    alerts: pd.DataFrame
    cross_version: pd.DataFrame
    headline_metrics: Sequence[str]
    generated_at: datetime
    comparisons: pd.DataFrame = field(default_factory=pd.DataFrame)
    correlations: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    week: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    in_progress: frozenset[str] = frozenset()
    models: Mapping[str, Sequence[str]] = field(default_factory=dict)


def stored_versions(store: WarehouseStore) -> list[str]:
    """Dataset versions with at least one stored scorecard folder, sorted."""
    root = store.base / SCORECARD_ASSET
    if not root.exists():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))


def headline_rows(
    frame: pd.DataFrame, headline: Collection[str], version: str, date: str
) -> pd.DataFrame:
    """The headline metrics' rows of a scorecard and every primary metric's (each gets a trend
    chart and a sparkline), with their `dataset_version` and `date`."""
    primary = frame.get("role", pd.Series("", index=frame.index)).eq(PRIMARY)
    rows = frame[frame["metric"].isin(headline) | primary]
    return rows.assign(dataset_version=version, date=date)


def latest_of_other_versions(
    store: WarehouseStore, version: str, date: str, headline: Collection[str]
) -> list[pd.DataFrame]:
    """The headline rows of the latest scorecard on or before `date` of every other version."""
    latest = []
    for other in stored_versions(store):
        if other == version:
            continue
        dates = [day for day in store.scorecard_dates(other) if day <= date]
        card = store.read_scorecard(other, dates[-1]) if dates else None
        if card is not None:
            latest.append(headline_rows(card, headline, other, dates[-1]))
    return latest


def collect_report_data(
    store: WarehouseStore,
    version: str,
    date: str,
    scorecard: pd.DataFrame,
    baseline: Baseline | None,
    headline_metrics: Sequence[str],
    generated_at: datetime,
    regressions: pd.DataFrame,
    in_progress: Collection[str] = (),
) -> ReportData:
    """Read what the report of (`version`, `date`) needs; `scorecard` and `regressions` (the
    `metric_regressions` table) are that partition's; `in_progress` the other versions with a
    run in progress (their stored scorecard may be about to change)."""
    current = scorecard.assign(dataset_version=version, date=date)
    headline = list(headline_metrics)
    earlier = [
        (day, store.read_scorecard(version, day))
        for day in store.scorecard_dates(version)
        if day < date
    ]
    history = [
        headline_rows(card, headline, version, day) for day, card in earlier if card is not None
    ]
    this = headline_rows(current, headline, version, date)
    judgments = store.read_partition(E2E_JUDGMENTS_ASSET, version, date)
    generations = store.read_partition(E2E_GENERATIONS_ASSET, version, date)
    days = [day for day, _ in earlier][-(WEEK_DAYS - 1) :]
    week = {day: store.read_partition(REGRESSIONS_ASSET, version, day) for day in days}
    return ReportData(
        version=version,
        date=date,
        scorecard=current,
        baseline=baseline,
        regressions=regressions[regressions["alert"].astype(bool)]
        if len(regressions)
        else regressions,
        history=pd.concat([*history, this], ignore_index=True),
        alerts=store.read_alerts(version),
        cross_version=pd.concat(
            [*latest_of_other_versions(store, version, date, headline), this], ignore_index=True
        ),
        headline_metrics=headline,
        generated_at=generated_at,
        comparisons=regressions,
        in_progress=frozenset(in_progress) - {version},
        correlations={} if judgments is None else correlations_by_system(judgments),
        models=models_used(current, judgments, generations),
        week={
            **{day: frame for day, frame in week.items() if frame is not None},
            date: regressions,
        },
    )


def models_used(
    scorecard: pd.DataFrame,
    judgments: pd.DataFrame | None = None,
    generations: pd.DataFrame | None = None,
) -> dict[str, list[str]]:
    """Role (`Embedder`, `Judge`, `Generator`) → the model names the partition was made with:
    the tier named after the model (`MODEL_TIERS`), and the models the end-to-end judgments
    and generations name in their rows (a version without judge labels has no judge tier)."""
    found = {
        role: set(scorecard.loc[scorecard["tier"] == tier, "system"].astype(str))
        for role, tier in MODEL_TIERS.items()
    }
    for role, frame in (("Judge", judgments), ("Generator", generations)):
        column = MODEL_COLUMNS[role]
        if frame is not None and column in frame.columns:
            found[role] |= set(frame[column].dropna().astype(str))
    return {role: sorted(names) for role, names in found.items()}
