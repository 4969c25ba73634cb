"""What changed in a partition, grouped for the report's first section.

`metric_regressions` gives every metric a verdict. The report leads with the rows a reader must
see: each verdict kind maps to a section (`CHANGE_SECTIONS`), so a new kind slots in by adding
one entry; alerted rows of any other kind (a metric missing today, a judge outage) are outages.
A row's role comes from its `role` column when the table has one, else Tier 0–3 headline
metrics are primary and the rest secondary.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from rag_eval_pipeline.reporting.alerting import number, sample_size

# Verdict kind → section of "What changed", in display order.
CHANGE_SECTIONS = {
    "regressed": "Regressions",
    "untestable": "Untestable changes",
    "improved": "Improvements",
}
OUTAGES = "Outages and missing metrics"
SECTION_ORDER = ("Regressions", OUTAGES, "Untestable changes", "Improvements")
PRIMARY, SECONDARY = "primary", "secondary"
PRIMARY_TIERS = ("tier0_embedding", "tier1_retrieval", "tier2_generation", "tier3_e2e")
# Where the per-item rows behind a tier's metrics are (the asset to open in the UI).
DRILL_DOWN = {
    "tier0_embedding": "embedding_quality",
    "tier1_retrieval": "retrieval_metrics (per query)",
    "tier2_generation": "generation_judgments (per question)",
    "tier3_e2e": "e2e_judgments (per question)",
    "traffic": "traffic_metrics, traffic_judgments (per interaction)",
    "ux": "ux_metrics",
    "judge_reliability": "judge_reliability",
    "show_judge": "show_judge_quality",
}


def roles(frame: pd.DataFrame, headline_metrics: Sequence[str]) -> pd.Series:
    """Each row's role: its `role` column when present, else primary for Tier 0–3 headline
    metrics and secondary otherwise."""
    if "role" in frame.columns:
        return frame["role"].fillna(SECONDARY).astype(str)
    primary = frame["tier"].isin(PRIMARY_TIERS) & frame["metric"].isin(headline_metrics)
    return primary.map({True: PRIMARY, False: SECONDARY})


def section_of(verdict: str, alert: bool, beyond_tolerance: bool = True) -> str | None:
    """The "What changed" section of a verdict, None when the row is not a change (an
    untestable row that moved less than its tolerance is not one)."""
    if verdict == "untestable" and not (alert or beyond_tolerance):
        return None
    if verdict in CHANGE_SECTIONS:
        return CHANGE_SECTIONS[verdict]
    return OUTAGES if alert else None


def changes_by_section(
    comparisons: pd.DataFrame, headline_metrics: Sequence[str]
) -> dict[str, pd.DataFrame]:
    """The partition's changed rows by section (`SECTION_ORDER` first, new kinds after), each
    with `role` and `where`, primary rows first, then by size of the change."""
    if comparisons.empty:
        return {}
    rows = comparisons.assign(
        role=roles(comparisons, headline_metrics),
        section=[
            section_of(str(v), bool(a), bool(b))
            for v, a, b in zip(
                comparisons["verdict"],
                comparisons["alert"],
                comparisons["relative_change"].abs().fillna(0)
                > comparisons.get("threshold", pd.Series(0.0, index=comparisons.index)),
                strict=True,
            )
        ],
        where=comparisons["tier"].map(lambda t: DRILL_DOWN.get(str(t), str(t))),
    )
    rows = rows[rows["section"].notna()]
    rows = rows.assign(
        _secondary=rows["role"] != PRIMARY, _size=-rows["relative_change"].abs().fillna(0)
    ).sort_values(["_secondary", "_size", "tier", "system", "metric"])
    found = list(dict.fromkeys(rows["section"]))
    order = [s for s in SECTION_ORDER if s in found] + [s for s in found if s not in SECTION_ORDER]
    return {
        section: rows[rows["section"] == section].drop(columns=["_secondary", "_size"])
        for section in order
    }


def week_summary(
    by_date: dict[str, pd.DataFrame], headline_metrics: Sequence[str] = ()
) -> pd.DataFrame:
    """One row per date: counts of regressions, outages, improvements, and the first
    regression (primary first, then the largest) with its q, n and where to look (`date,
    regressions, outages, improvements, largest, first`)."""
    records = []
    for day, frame in sorted(by_date.items()):
        sections = changes_by_section(frame, headline_metrics)
        regressed = sections.get("Regressions", pd.DataFrame())
        top = regressed.iloc[0] if len(regressed) else None
        records.append(
            {
                "date": day,
                "regressions": len(regressed),
                "outages": len(sections.get(OUTAGES, ())),
                "improvements": len(sections.get("Improvements", ())),
                "largest": "" if top is None else _described(top),
                "first": bool(frame.empty or frame["baseline_date"].isna().all()),
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
    change = number(row["relative_change"], "{:+.1%}").replace("-", "−")
    return f"{row['system']} {row['metric']} {change} ({details}) → {row['where']}"


def skipped_tiers(scorecard: pd.DataFrame, tiers: Sequence[str]) -> list[str]:
    """The `tiers` with no row in the scorecard (skipped for this version)."""
    present = set(scorecard["tier"].astype(str))
    return [tier for tier in tiers if tier not in present]
