"""Judge upgrades that keep the trend: the baseline's answers re-judged by today's judge.

When the judge (model, endpoint or sampling: `LLMResource.identity`) differs between the
baseline and today, every judged metric would otherwise be `not comparable: judge changed`.
The baseline's answers are still in the warehouse (`e2e_generations` for Tier 3,
`ideal_context_generations` for Tier 2: question, contexts, answer, ground truth), so
`bridge_baseline` re-judges them with today's judge, through its reply cache (a re-run pays
nothing), and rebuilds the baseline's judgments as today's judge would have scored them: its
judge metrics and declared criteria re-scored, the refusal rate and the composite recomputed from
them, the judge-free scores (ROUGE, BLEU, context relevance, ...) kept. The comparison then stays
paired, item by item, under one judge.

The **bridge** is what the upgrade itself did, on the same baseline items: per (tier, system,
metric) the old and the new judge's means, their shift (new − old), Spearman's ρ and the
quadratic-weighted kappa of the two judges' scores binned to 1–5 (`metrics.agreement`). It is
reported beside the verdicts so a trend break can be told from the judge's own move.

Metrics the bridge cannot re-score stay `not comparable: judge changed`: the judge's own
reliability and show/hide tiers (they measure the judge itself), the traffic tier's judged sample
(its texts are not stored), and everything when the baseline's answers are gone (the reason then
says so).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pandas as pd

from rag_eval_pipeline.evaluation.composite import COMPOSITE, composite_rows
from rag_eval_pipeline.evaluation.generation import (
    JUDGE_CALLS,
    REFUSAL_METRIC,
    judge_answers,
    judge_criteria,
    refusal_scores,
)
from rag_eval_pipeline.evaluation.item_scores import ITEM_SOURCES, item_scores
from rag_eval_pipeline.evaluation.regression import KEY, REJUDGED, PartitionScores
from rag_eval_pipeline.evaluation.summaries import scorecard_metric, summarize_judgments
from rag_eval_pipeline.judges.criteria import configured_criteria
from rag_eval_pipeline.judges.judge import Judge
from rag_eval_pipeline.metrics.agreement import bin_scores, cohen_kappa, spearman

# The judged tables the bridge re-scores: judgments asset → (answers asset, tier).
BRIDGED_TABLES = {
    "e2e_judgments": ("e2e_generations", "tier3_e2e"),
    "generation_judgments": ("ideal_context_generations", "tier2_generation"),
}
ANSWERS_GONE = "the baseline's answers are gone from the warehouse, so they were not re-judged"
BRIDGE_COLUMNS = [
    *KEY,
    "n_items",
    "old_judge_mean",
    "new_judge_mean",
    "shift",
    "spearman",
    "weighted_kappa",
]


def judge_versions(tables: Mapping[str, pd.DataFrame | None]) -> str | None:
    """The prompt versions (`judge_version`) behind the judge metrics of the judged `tables`,
    sorted and joined; None when they hold no judge metric. A prompt change with the same model
    is a judge change too."""
    versions: set[str] = set()
    for name in BRIDGED_TABLES:
        table = tables.get(name)
        if table is not None and not table.empty:
            judged = table[table["metric"].isin(list(JUDGE_CALLS))]
            versions |= set(judged["judge_version"].dropna().astype(str))
    return ", ".join(sorted(versions)) or None


def judge_change(
    baseline: PartitionScores,
    tables: Mapping[str, pd.DataFrame | None],
    today_tables: Mapping[str, pd.DataFrame | None],
    identity: str,
) -> tuple[str, str] | None:
    """(old, new) when the judge changed since the baseline: its identity (model, endpoint,
    sampling), else the prompt versions its stored judgments record; None when it did not."""
    old = baseline.identities.get("judge")
    if old is not None and old != identity:
        return old, identity
    old_prompts, new_prompts = judge_versions(tables), judge_versions(today_tables)
    if None not in (old_prompts, new_prompts) and old_prompts != new_prompts:
        return str(old_prompts), str(new_prompts)
    return None


def rejudge(
    judgments: pd.DataFrame,
    answers: pd.DataFrame,
    judge: Judge,
    weights: Mapping[str, float],
) -> pd.DataFrame:
    """`judgments` of `answers` as `judge` scores them: the judge metrics and declared criteria
    they hold re-scored, refusal rate and composite recomputed, every other row kept."""
    stored = set(judgments["metric"])
    metrics = [m for m in JUDGE_CALLS if m in stored]
    criteria = [c for c in configured_criteria() if c.name in stored]
    judged = judge_answers(answers, judge, metrics)
    custom, _ = judge_criteria(answers, judge, criteria)
    replaced = {*metrics, *(c.name for c in criteria), REFUSAL_METRIC, COMPOSITE}
    parts = [judgments[~judgments["metric"].isin(replaced)], judged, custom]
    if REFUSAL_METRIC in stored:
        parts.append(refusal_scores(answers, judged))
    rows = pd.concat([p for p in parts if not p.empty], ignore_index=True)
    if COMPOSITE in stored:
        rows = pd.concat([rows, composite_rows(rows, dict(weights))], ignore_index=True)
    return rows


def bridge_statistics(old: pd.DataFrame, new: pd.DataFrame, tier: str) -> pd.DataFrame:
    """Per (tier, system, metric) the two judges on the items both scored: means, shift,
    Spearman's ρ and quadratic-weighted kappa (scores binned to 1–5); only metrics whose scores
    differ somewhere, i.e. the ones the judge feeds."""
    keys = ["system", "query_id", "metric"]
    both = old[[*keys, "score"]].merge(new[[*keys, "score"]], on=keys, suffixes=("_old", "_new"))
    both = both[both["score_old"].notna() & both["score_new"].notna()]
    names = dict(zip(both["metric"], scorecard_metric(both["metric"], "avg_"), strict=True))
    rows = []
    for (system, metric), pairs in both.groupby(["system", "metric"], sort=True):
        a, b = pairs["score_old"].to_numpy(float), pairs["score_new"].to_numpy(float)
        if np.array_equal(a, b):
            continue
        rows.append(
            {
                "tier": tier,
                "system": system,
                "metric": names[metric],
                "n_items": len(a),
                "old_judge_mean": float(a.mean()),
                "new_judge_mean": float(b.mean()),
                "shift": float(b.mean() - a.mean()),
                "spearman": spearman(a, b) if len(a) > 1 else np.nan,
                "weighted_kappa": cohen_kappa(
                    bin_scores(a), bin_scores(b), weights="quadratic", labels=range(1, 6)
                ),
            }
        )
    return pd.DataFrame(rows, columns=BRIDGE_COLUMNS)


def _summarized(scorecard: pd.DataFrame, summaries: pd.DataFrame) -> pd.DataFrame:
    """`scorecard` with the value, spread, CI and errors of the rows `summaries` also holds."""
    update = summaries.rename(columns={"mean": "value"}).set_index(KEY)
    card = scorecard.set_index(KEY)
    common = card.index.intersection(update.index)
    columns = ["value", "std", "count", "ci_low", "ci_high", "n_errors", "error_rate"]
    card.loc[common, columns] = update.loc[common, columns].to_numpy()
    return card.reset_index()[scorecard.columns]


def bridge_baseline(
    baseline: PartitionScores,
    tables: Mapping[str, pd.DataFrame | None],
    judge: Judge,
    weights: Mapping[str, float],
) -> tuple[PartitionScores, pd.DataFrame]:
    """The baseline as today's `judge` scores it, and the bridge (`bridge_statistics`).

    `tables` are the baseline's stored per-item tables (`ITEM_SOURCES`) and its answers
    (`BRIDGED_TABLES`). Returns the baseline with its judged tiers' scorecard rows and items
    re-scored and those keys in `bridged` (compared as usual); when a judged table's answers are
    gone, the baseline unchanged with `bridge_note` saying so (its judged metrics stay not
    comparable)."""
    judged = {
        name: table
        for name in BRIDGED_TABLES
        if (table := tables.get(name)) is not None and not table.empty
    }
    gone = [n for n in judged if (a := tables.get(BRIDGED_TABLES[n][0])) is None or a.empty]
    if not judged or gone:
        note = ANSWERS_GONE if gone else None
        return replace(baseline, bridge_note=note), pd.DataFrame(columns=BRIDGE_COLUMNS)
    rescored = {
        name: rejudge(table, tables[BRIDGED_TABLES[name][0]], judge, weights)
        for name, table in judged.items()
    }
    bridge = pd.concat(
        [bridge_statistics(judged[n], rescored[n], BRIDGED_TABLES[n][1]) for n in rescored],
        ignore_index=True,
    )
    summaries = pd.concat(
        [summarize_judgments(rescored[n], BRIDGED_TABLES[n][1]) for n in rescored],
        ignore_index=True,
    )
    sources = {name: tables.get(name) for name in ITEM_SOURCES} | rescored
    bridged = replace(
        baseline,
        scorecard=_summarized(baseline.scorecard, summaries),
        items=item_scores({k: v for k, v in sources.items() if v is not None}),
        bridged=frozenset(map(tuple, summaries[KEY].itertuples(index=False))),
    )
    return bridged, bridge


def bridge_reasons(verdicts: pd.DataFrame, bridge: pd.DataFrame, old: str, new: str) -> pd.Series:
    """The verdicts' `reason` with, for every bridged metric, how the judge change alone moved
    it on the baseline's items (the alert context of a bridged comparison)."""
    if bridge.empty:
        return verdicts["reason"]
    notes = {
        (r.tier, r.system, r.metric): (
            f"{REJUDGED} ({old} → {new}): the judge alone moved it "
            f"{r.shift:+.4f} on {r.n_items} items (ρ {r.spearman:.2f}, "
            f"weighted κ {r.weighted_kappa:.2f})"
        )
        for r in bridge.itertuples()
    }
    keys = list(zip(*(verdicts[k] for k in KEY), strict=True))
    return pd.Series(
        [
            "; ".join(p for p in (str(reason or ""), notes.get(key, "")) if p)
            for reason, key in zip(verdicts["reason"], keys, strict=True)
        ],
        index=verdicts.index,
    )
