"""What changed in a partition, grouped for the report's first section.

`metric_regressions` gives every metric a verdict. The report leads with the rows a reader must
see: each row kind of `evaluation.headline` (regression, outage, untestable, improvement,
monitored) maps to a section (`KIND_SECTIONS`), so the report counts what the terminal and the
alerts count.
A row's role comes from its `role` column when the table has one, else Tier 0–3 headline
metrics are primary and the rest secondary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from rag_eval_pipeline.evaluation.headline import (
    FIRST,
    IMPROVEMENT,
    MONITORED,
    OUTAGE,
    REGRESSION,
    UNTESTED,
    change_kinds,
    headline,
)
from rag_eval_pipeline.reporting.alerting import change_text, sample_size

# Row kind (`evaluation.headline.change_kinds`) → section of "What changed", in display order.
KIND_SECTIONS = {
    REGRESSION: "Regressions",
    OUTAGE: "Outages and missing metrics",
    UNTESTED: "Untestable changes",
    IMPROVEMENT: "Improvements",
    MONITORED: "Monitored changes (never alerted)",
}
OUTAGES = KIND_SECTIONS[OUTAGE]
SECTION_ORDER = tuple(KIND_SECTIONS.values())
PRIMARY, SECONDARY = "primary", "secondary"
PRIMARY_TIERS = ("tier0_embedding", "tier1_retrieval", "tier2_generation", "tier3_e2e")
# The asset holding a tier's metrics when no per-item asset holds a metric (its quality
# asset), e.g. traffic volume or the embedding's cluster figures.
TIER_ASSETS = {
    "tier0_embedding": "embedding_quality",
    "tier1_retrieval": "retrieval_metrics",
    "tier2_generation": "generation_judgments",
    "tier3_e2e": "e2e_judgments",
    "traffic": "traffic_metrics",
    "ux": "ux_metrics",
    "judge_reliability": "judge_reliability",
    "show_judge": "show_judge_quality",
    "cost": "evaluation_scorecard",
}


def where_to_look(
    rows: pd.DataFrame, sources: pd.DataFrame, groups: Mapping[str, str | None]
) -> pd.Series:
    """Per verdict row, the asset holding its rows and its group in the Dagster UI:
    `system_retrieval_metrics in group 4_end_to_end`. `sources` (`item_scores.item_sources`)
    names the per-item asset of each (tier, system, metric); others fall back on the tier's
    asset (`TIER_ASSETS`)."""
    found = rows[["tier", "system", "metric"]].merge(
        sources, on=["tier", "system", "metric"], how="left"
    )["asset"]
    fallback = rows["tier"].map(lambda t: TIER_ASSETS.get(str(t), "evaluation_scorecard"))
    assets = found.where(found.notna().to_numpy(), fallback.to_numpy())
    words = [
        f"{asset} in group {groups[asset]}" if groups.get(asset) else str(asset) for asset in assets
    ]
    return pd.Series(words, index=rows.index, dtype=object)


def roles(frame: pd.DataFrame, headline_metrics: Sequence[str]) -> pd.Series:
    """Each row's role: its `role` column when present, else primary for Tier 0–3 headline
    metrics and secondary otherwise."""
    if "role" in frame.columns:
        return frame["role"].fillna(SECONDARY).astype(str)
    primary = frame["tier"].isin(PRIMARY_TIERS) & frame["metric"].isin(headline_metrics)
    return primary.map({True: PRIMARY, False: SECONDARY})


def changes_by_section(
    comparisons: pd.DataFrame, headline_metrics: Sequence[str]
) -> dict[str, pd.DataFrame]:
    """The partition's changed rows by section (`KIND_SECTIONS`, one per row kind of
    `evaluation.headline`), each with `role` and `where`, primary rows first, then by size."""
    if comparisons.empty:
        return {}
    with_roles = comparisons.assign(role=roles(comparisons, headline_metrics))
    rows = with_roles.assign(
        section=change_kinds(with_roles).map(KIND_SECTIONS),
        where=(
            comparisons["where"]
            if "where" in comparisons.columns
            else comparisons["tier"].map(lambda t: TIER_ASSETS.get(str(t), str(t)))
        ),
    )
    rows = rows[rows["section"].notna()]
    rows = rows.assign(
        _secondary=rows["role"] != PRIMARY, _size=-rows["relative_change"].abs().fillna(0)
    ).sort_values(["_secondary", "_size", "tier", "system", "metric"])
    found = set(rows["section"])
    return {
        section: rows[rows["section"] == section].drop(columns=["_secondary", "_size"])
        for section in SECTION_ORDER
        if section in found
    }


def week_summary(
    by_date: dict[str, pd.DataFrame], headline_metrics: Sequence[str] = ()
) -> pd.DataFrame:
    """One row per date: its headline (`evaluation.headline`: counts of regressions, outages,
    improvements, its words) and the first regression (primary first, then the largest) with
    its q, n and where to look (`date, regressions, outages, improvements, headline, largest,
    first`)."""
    records = []
    for day, frame in sorted(by_date.items()):
        told = headline(frame.assign(role=roles(frame, headline_metrics)))
        regressed = changes_by_section(frame, headline_metrics).get(KIND_SECTIONS[REGRESSION])
        top = regressed.iloc[0] if regressed is not None and len(regressed) else None
        records.append(
            {
                "date": day,
                "regressions": told.counts[REGRESSION],
                "outages": told.counts[OUTAGE],
                "improvements": told.counts[IMPROVEMENT],
                "headline": told.text,
                "largest": "" if top is None else _described(top),
                "first": told.state == FIRST,
            }
        )
    return pd.DataFrame(records)


def _described(row: pd.Series) -> str:
    """`<system> <metric> −26.9% (q = 0.00064, n = 76) → <where to look>` (an effect-only
    row says so instead of a q)."""
    size = sample_size(row)
    q = "" if pd.isna(row["q_value"]) else f"q = {row['q_value']:.2g}"
    n = size if size in ("", "effect only") else f"n = {size}"
    details = ", ".join(part for part in (q, n) if part)
    change = change_text(row["relative_change"], row.get("baseline_value"), row.get("value"))
    change = change.replace("-", "−")
    return f"{row['system']} {row['metric']} {change} ({details}) → {row['where']}"


def skipped_tiers(scorecard: pd.DataFrame, tiers: Sequence[str]) -> list[str]:
    """The `tiers` with no row in the scorecard (skipped for this version)."""
    present = set(scorecard["tier"].astype(str))
    return [tier for tier in tiers if tier not in present]
