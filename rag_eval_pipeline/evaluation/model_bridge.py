"""Model changes that keep the trend: the baseline rebuilt with today's models from its inputs.

When a model differs between the baseline and today (`regression.IDENTITY_ROLES`: the judge,
whose prompt versions count too, the generator, the embedder), every metric it feeds would be
`not comparable`. `bridge_baseline` rebuilds what the baseline's stored inputs allow with today's
models, through their caches (a re-run pays nothing), so the comparison stays paired, item by
item, under one set of models:

- **judge** (Tiers 2 and 3): the baseline's stored answers (`ideal_context_generations`,
  `e2e_generations`) scored again by today's judge: its metrics and the declared criteria, the
  refusal rate and the composite recomputed; the other scores are recomputed as well and come
  out equal (ROUGE, BLEU, checks depend on the answer alone).
- **generator**: Tier 2 (every answer: its ideal context comes from the qrels) and Tier 3's
  reference RAG (the only system the pipeline's generator answers for) answered again by
  today's generator from the stored question and contexts, then scored by today's judge. Tier 2
  names its system after the generator, so the baseline's rows take today's name. Other Tier 3
  systems (a callable, logged answers) are not fed by the generator at all.
- **embedder**: Tier 0 re-embedded: the baseline's corpus (its `golden_dataset` snapshot in the
  warehouse) embedded by today's embedder, clusters and cluster metrics recomputed as the
  assets do (`evaluation.corpus_embedding`); Tiers 2 and 3 re-scored (semantic similarity,
  context relevance and the offline judge read embeddings), and Tier 2's answers re-generated
  when today's generator is the offline extractive one (it picks sentences by embedding).
- **judge** and **embedder** on the traffic tier: the baseline's judged sample (its stored
  `traffic_judgments` name the logged interactions) rebuilt from the logs of its dataset
  snapshot (`evaluation.traffic_sample.logged_sample`) and judged again; it stays an unpaired
  sample, compared as before.

Not bridged, so `not comparable: <model> changed` with the reason (`NOT_BRIDGED`):

- under an embedder change, the reference RAG's own retrieval (its Tier 1 rows, and its Tier 3
  rows, whose contexts came from that retrieval; the dataset's runs and other systems are not
  fed by the embedder): re-running it needs the baseline's `top_k` and `skip_top`, which its
  answers do not record, and today's settings would hide a settings change;
- under a generator change with the embedder changed too, the reference RAG's Tier 3 answers
  (their contexts came from the old embedder's retrieval);
- the judge's own tiers (`judge_reliability`, `show_judge`: they measure the judge itself);
- the UX tier, and Tier 3's latency percentiles and prediction-powered estimates (not scores of
  the stored answers);
- everything a model feeds when the baseline's answers or dataset snapshot are gone from the
  warehouse (the reason says so).

The **bridge** is what the change itself did, on the same baseline items: per (change, step,
tier, system, metric) the baseline's mean before and after the step, their shift (after −
before), Spearman's ρ and the quadratic-weighted kappa of the two scorings binned to 1–5
(`metrics.agreement`; scores in [0, 1] only). With the judge and the generator both changed,
the stored answers are re-scored first (the judge's shift), then re-generated (the generator's
shift under today's judge). It is reported beside the verdicts so a trend break can be told
from the model's own move.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from rag_eval_pipeline.datasets.golden import GoldenDataset
from rag_eval_pipeline.embedding.embedder import Embedder
from rag_eval_pipeline.evaluation.answer_scores import score_answers
from rag_eval_pipeline.evaluation.corpus_embedding import (
    TIER as EMBEDDING_TIER,
)
from rag_eval_pipeline.evaluation.corpus_embedding import (
    embed_corpus,
    embedding_quality_rows,
)
from rag_eval_pipeline.evaluation.generation import judge_criteria
from rag_eval_pipeline.evaluation.item_scores import ITEM_SOURCES, SAMPLE_SOURCES, item_scores
from rag_eval_pipeline.evaluation.summaries import scorecard_metric, summarize_judgments
from rag_eval_pipeline.evaluation.traffic import TRAFFIC_TIER
from rag_eval_pipeline.evaluation.traffic_sample import judge_sample, logged_sample
from rag_eval_pipeline.evaluation.verdicts.columns import KEY
from rag_eval_pipeline.evaluation.verdicts.partition import PartitionScores, is_quality_metric
from rag_eval_pipeline.evaluation.verdicts.wording import bridged
from rag_eval_pipeline.judges.criteria import configured_criteria
from rag_eval_pipeline.judges.judge import Judge
from rag_eval_pipeline.judges.metrics import METRICS
from rag_eval_pipeline.metrics.agreement import bin_scores, cohen_kappa, spearman
from rag_eval_pipeline.systems import REFERENCE_RAG
from rag_eval_pipeline.systems.generators import Generator, OfflineGenerator

# role → (the baseline's identity, today's)
ModelChanges = Mapping[str, tuple[str, str]]


@dataclass(frozen=True)
class AnswerTier:
    """A tier whose answers are stored: its judgments and answers assets, the column of document
    ids its `[n]` citations point into, and whether it scores context relevance."""

    tier: str
    judgments: str
    answers: str
    sources: str
    context_relevance: bool


TIER2 = AnswerTier(
    "tier2_generation",
    "generation_judgments",
    "ideal_context_generations",
    "context_doc_ids",
    False,
)
TIER3 = AnswerTier("tier3_e2e", "e2e_judgments", "e2e_generations", "retrieved_doc_ids", True)
ANSWER_TIERS = (TIER2, TIER3)
TRAFFIC_JUDGMENTS = "traffic_judgments"
# The changes after which the bridge may call today's generator (`regenerated_rows`).
REGENERATING_ROLES = frozenset({"generator", "embedder"})
RESCORED, REGENERATED, REEMBEDDED = (
    "stored answers re-scored",
    "answers re-generated",
    "corpus re-embedded",
)
ANSWERS_GONE = (
    "the baseline's answers or its dataset snapshot are gone from the warehouse, so they were "
    "not rebuilt"
)
CORPUS_GONE = "the baseline's corpus is gone from the warehouse, so it was not re-embedded"
RETRIEVAL_NOT_RERUN = (
    "the reference RAG's retrieval ran on the old embeddings and is not re-run (not bridged)"
)
TRAFFIC_GONE = (
    "the baseline's logs are gone from the warehouse, so its traffic sample was not re-judged"
)
NOT_A_SCORE = "not a score of the stored answers (latency, estimates), so not rebuilt"
NOT_BRIDGED: dict[tuple[str, str], str] = {
    ("judge", "judge_reliability"): "it measures the judge itself",
    ("judge", "show_judge"): "it measures the judge itself",
    ("generator", "ux"): "the UX tier is not re-run with the new generator (not bridged)",
    ("embedder", "ux"): "the UX tier is not re-run with the new embedder (not bridged)",
    ("judge", "tier3_e2e"): NOT_A_SCORE,
    ("generator", "tier3_e2e"): NOT_A_SCORE,
    ("embedder", "tier1_retrieval"): RETRIEVAL_NOT_RERUN,
    ("embedder", "tier3_e2e"): RETRIEVAL_NOT_RERUN,
}
BRIDGE_COLUMNS = [
    "change",
    "step",
    *KEY,
    "n_items",
    "old_mean",
    "new_mean",
    "shift",
    "spearman",
    "weighted_kappa",
]


@dataclass(frozen=True)
class TodayModels:
    """Today's models and composite weights, which the baseline is rebuilt with."""

    judge: Judge
    generator: Generator
    embedder: Embedder
    weights: Mapping[str, float]


def judge_versions(tables: Mapping[str, pd.DataFrame | None]) -> str | None:
    """The prompt versions (`judge_version`) behind the judge metrics of the judged `tables`,
    sorted and joined; None when they hold no judge metric. A prompt change with the same model
    is a judge change too."""
    versions: set[str] = set()
    for spec in ANSWER_TIERS:
        table = tables.get(spec.judgments)
        if table is not None and not table.empty:
            judged = table[table["metric"].isin(list(METRICS))]
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


def model_changes(
    baseline: PartitionScores,
    tables: Mapping[str, pd.DataFrame | None],
    today_tables: Mapping[str, pd.DataFrame | None],
    identities: Mapping[str, str],
) -> dict[str, tuple[str, str]]:
    """Role → (old, new) for every model that changed since the baseline: the judge as
    `judge_change` tells, the generator and embedder by identity (unknown ones are skipped)."""
    changes = {}
    if (judge := judge_change(baseline, tables, today_tables, identities["judge"])) is not None:
        changes["judge"] = judge
    for role in ("generator", "embedder"):
        old, new = baseline.identities.get(role), identities.get(role)
        if old and new and old != new:
            changes[role] = (old, new)
    return changes


def rescore(
    judgments: pd.DataFrame,
    answers: pd.DataFrame,
    spec: AnswerTier,
    models: TodayModels,
    dataset: GoldenDataset,
) -> pd.DataFrame:
    """`answers` scored as `spec`'s judgments asset scores them, with today's `models`: the
    judge metrics and declared criteria `judgments` holds, and every other score; only the
    metrics `judgments` holds are kept."""
    stored = set(judgments["metric"])
    metrics = [m for m in METRICS if m in stored]
    criteria = [c for c in configured_criteria() if c.name in stored]
    scored = score_answers(
        answers,
        dataset,
        models.judge,
        models.embedder,
        metrics,
        models.weights,
        sources=spec.sources,
        with_context_relevance=spec.context_relevance,
    )
    custom, _ = judge_criteria(answers, models.judge, criteria)
    rows = pd.concat([p for p in (scored, custom) if not p.empty], ignore_index=True)
    return rows[rows["metric"].isin(stored)].reset_index(drop=True)


def regenerate(
    answers: pd.DataFrame, rows: np.ndarray, generator: Generator, rename: bool
) -> pd.DataFrame:
    """`answers` with the `rows` (a mask) answered again by `generator` from their stored
    question and contexts (`answer`, `generator_model`, `error` replaced); `rename`: those rows'
    system becomes the generator's model, as Tier 2 names its system."""
    out = answers.reset_index(drop=True).copy()
    index = np.flatnonzero(rows)
    fresh = generator.generate(
        out.loc[index, "question"].tolist(), out.loc[index, "contexts"].tolist()
    )
    for column in ("answer", "generator_model", "error"):
        out[column] = out[column].astype(object)
        out.loc[index, column] = fresh[column].to_numpy(dtype=object)
    if rename:
        out.loc[index, "system"] = generator.generator_model
    return out


def regenerated_rows(
    spec: AnswerTier, answers: pd.DataFrame, changes: ModelChanges, generator: Generator
) -> np.ndarray:
    """Which stored answers today's generator re-generates (a mask): after a generator change,
    or an embedder change under the offline extractive generator (it reads embeddings), every
    Tier 2 answer and the reference RAG's Tier 3 answers unless the embedder changed (their
    contexts came from its retrieval)."""
    reads_embeddings = isinstance(generator, OfflineGenerator)
    if "generator" not in changes and not ("embedder" in changes and reads_embeddings):
        return np.zeros(len(answers), dtype=bool)
    if spec is TIER2:
        return np.ones(len(answers), dtype=bool)
    reference = answers["system"].to_numpy() == REFERENCE_RAG
    return reference & ("embedder" not in changes)


def _kappa(a: np.ndarray, b: np.ndarray) -> float:
    """Quadratic-weighted kappa of scores binned to 1–5; NaN for scores outside [0, 1]."""
    if min(a.min(), b.min()) < 0.0 or max(a.max(), b.max()) > 1.0:
        return np.nan
    return cohen_kappa(bin_scores(a), bin_scores(b), weights="quadratic", labels=range(1, 6))


def bridge_statistics(
    old: pd.DataFrame, new: pd.DataFrame, tier: str, change: str, step: str
) -> pd.DataFrame:
    """Per (system, metric) of `tier` the two scorings of the same items (`system, query_id,
    metric, score`): means, shift, Spearman's ρ and weighted kappa; only metrics whose scores
    differ somewhere, i.e. the ones the change feeds."""
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
                "change": change,
                "step": step,
                "tier": tier,
                "system": system,
                "metric": names[metric],
                "n_items": len(a),
                "old_mean": float(a.mean()),
                "new_mean": float(b.mean()),
                "shift": float(b.mean() - a.mean()),
                "spearman": spearman(a, b) if len(a) > 1 else np.nan,
                "weighted_kappa": _kappa(a, b),
            }
        )
    return pd.DataFrame(rows, columns=BRIDGE_COLUMNS)


@dataclass
class _Rebuilt:
    """What the bridge rebuilt so far: per-item tables (paired, `ITEM_SOURCES`; sampled,
    `SAMPLE_SOURCES`), summaries, bridge rows, bridged keys per role, the notes of what it
    could not rebuild, systems renamed per tier."""

    tables: dict[str, pd.DataFrame]
    samples: dict[str, pd.DataFrame]
    summaries: list[pd.DataFrame]
    bridge: list[pd.DataFrame]
    bridged: dict[str, set[tuple[str, str, str]]]
    notes: dict[tuple[str, str], str]
    renamed: dict[tuple[str, str], str]


def _changed(changes: ModelChanges, roles: tuple[str, ...]) -> str:
    return " + ".join(role for role in roles if role in changes)


def _rebuild_answers(
    spec: AnswerTier,
    judged: pd.DataFrame,
    answers: pd.DataFrame,
    models: TodayModels,
    dataset: GoldenDataset,
    changes: ModelChanges,
    out: _Rebuilt,
) -> None:
    """One answer tier rebuilt: re-scored (judge, embedder), then re-generated (generator, or
    the embedder under the offline generator) and scored again; the steps' bridge rows."""
    current, renames = judged, {}
    if scorers := _changed(changes, ("judge", "embedder")):
        current = rescore(judged, answers, spec, models, dataset)
        out.bridge.append(bridge_statistics(judged, current, spec.tier, scorers, RESCORED))
    rows = regenerated_rows(spec, answers, changes, models.generator)
    if rows.any():
        fresh = regenerate(answers, rows, models.generator, rename=spec is TIER2)
        renames = dict(zip(answers["system"], fresh["system"], strict=True))
        out.renamed |= {(spec.tier, old): new for old, new in renames.items() if old != new}
        before = current.assign(system=current["system"].map(renames).fillna(current["system"]))
        current = rescore(judged, fresh, spec, models, dataset)
        change = _changed(changes, ("generator",)) or "embedder"
        out.bridge.append(bridge_statistics(before, current, spec.tier, change, REGENERATED))
    if current is judged:  # nothing today's models feed: the generator feeds no system here
        return
    summary = summarize_judgments(current, spec.tier)
    keys = set(map(tuple, summary[KEY].itertuples(index=False)))
    regenerated = {renames.get(system, system) for system in answers.loc[rows, "system"]}
    for role in changes:
        if role == "judge" or (role == "embedder" and spec is TIER2):
            out.bridged[role] |= keys
        elif role == "embedder":
            out.bridged[role] |= {k for k in keys if k[1] != REFERENCE_RAG}
        elif role == "generator":
            out.bridged[role] |= {k for k in keys if k[1] in regenerated}
    if "generator" in changes and "embedder" in changes and spec is TIER3:
        out.notes[("generator", spec.tier)] = (
            "its contexts came from the old embedder's retrieval, so its answers were not "
            "re-generated"
        )
    out.tables[spec.judgments] = current
    out.summaries.append(summary)


def _rejudge_traffic(
    stored: pd.DataFrame | None,
    dataset: GoldenDataset | None,
    models: TodayModels,
    changes: ModelChanges,
    out: _Rebuilt,
) -> None:
    """The traffic tier's judged sample rebuilt from the baseline's logs and judged again by
    today's judge and embedder; the bridge rows."""
    scorers = _changed(changes, ("judge", "embedder"))
    if not scorers or stored is None or stored.empty:
        return
    if dataset is None or dataset.logs is None:
        out.notes |= {(role, TRAFFIC_TIER): TRAFFIC_GONE for role in ("judge", "embedder")}
        return
    sample = logged_sample(dataset.logs, dataset.corpus, stored["query_id"])
    judged, _ = judge_sample(sample, models.judge, models.embedder)
    judged = judged[judged["metric"].isin(set(stored["metric"]))].reset_index(drop=True)
    out.bridge.append(bridge_statistics(stored, judged, TRAFFIC_TIER, scorers, RESCORED))
    summary = summarize_judgments(judged, TRAFFIC_TIER)
    for role in ("judge", "embedder"):
        if role in changes:
            out.bridged[role] |= set(map(tuple, summary[KEY].itertuples(index=False)))
    out.samples[TRAFFIC_JUDGMENTS] = judged
    out.summaries.append(summary)


def _reembed(
    card: pd.DataFrame, dataset: GoldenDataset | None, embedder: Embedder, out: _Rebuilt
) -> None:
    """Tier 0 rebuilt: the baseline's corpus re-embedded by `embedder`, its cluster metrics
    recomputed under today's system name (the embedding model); the bridge rows."""
    old = card[card["tier"] == EMBEDDING_TIER]
    if old.empty:
        return
    if dataset is None or not dataset.has_corpus:
        out.notes[("embedder", EMBEDDING_TIER)] = CORPUS_GONE
        return
    quality = embedding_quality_rows(embed_corpus(dataset.corpus, embedder))
    new_system = embedder.model_name
    out.renamed |= {(EMBEDDING_TIER, system): new_system for system in set(old["system"])}
    values = old[["metric", "value"]].merge(
        quality[["metric", "mean", "count"]], on="metric", how="inner"
    )
    quality_metric = [is_quality_metric(EMBEDDING_TIER, m) for m in values["metric"]]
    values = values[
        np.asarray(quality_metric, dtype=bool)
        & values["value"].notna().to_numpy()
        & values["mean"].notna().to_numpy()
        & (values["value"] != values["mean"]).to_numpy()
    ]
    out.bridge.append(
        pd.DataFrame(
            {
                "change": "embedder",
                "step": REEMBEDDED,
                "tier": EMBEDDING_TIER,
                "system": new_system,
                "metric": values["metric"].to_numpy(),
                "n_items": values["count"].to_numpy(),
                "old_mean": values["value"].to_numpy(float),
                "new_mean": values["mean"].to_numpy(float),
                "shift": (values["mean"] - values["value"]).to_numpy(float),
                "spearman": np.nan,
                "weighted_kappa": np.nan,
            },
            columns=BRIDGE_COLUMNS,
        )
    )
    out.summaries.append(quality)
    out.bridged["embedder"] |= set(map(tuple, quality[KEY].itertuples(index=False)))


def _summarized(scorecard: pd.DataFrame, summaries: pd.DataFrame) -> pd.DataFrame:
    """`scorecard` with the value, spread, CI and errors of the rows `summaries` also holds."""
    update = summaries.rename(columns={"mean": "value"}).set_index(KEY)
    card = scorecard.set_index(KEY)
    common = card.index.intersection(update.index)
    columns = ["value", "std", "count", "ci_low", "ci_high", "n_errors", "error_rate"]
    card.loc[common, columns] = update.loc[common, columns].to_numpy()
    return card.reset_index()[scorecard.columns]


def _renamed(scorecard: pd.DataFrame, renamed: Mapping[tuple[str, str], str]) -> pd.DataFrame:
    """`scorecard` with the systems named after a model renamed to today's model."""
    if not renamed:
        return scorecard
    keys = zip(scorecard["tier"], scorecard["system"], strict=True)
    return scorecard.assign(system=[renamed.get(key, key[1]) for key in keys])


def bridge_baseline(
    baseline: PartitionScores,
    tables: Mapping[str, pd.DataFrame | None],
    dataset: GoldenDataset | None,
    models: TodayModels,
    changes: ModelChanges,
) -> tuple[PartitionScores, pd.DataFrame]:
    """The baseline as today's `models` would have measured it, and the bridge.

    `tables` are the baseline's stored per-item tables (`ITEM_SOURCES`) and answers
    (`ANSWER_TIERS`), `dataset` its `golden_dataset` snapshot (None: gone), `changes` the
    models that changed (`model_changes`). Returns the baseline with the rebuilt scorecard rows
    and items, `bridged` (per role, the keys compared although it changed) and `bridge_notes`
    (why the others were not), and the bridge rows (`BRIDGE_COLUMNS`)."""
    out = _Rebuilt(
        tables={},
        samples={},
        summaries=[],
        bridge=[],
        bridged={role: set() for role in changes},
        notes={key: note for key, note in NOT_BRIDGED.items() if key[0] in changes},
        renamed={},
    )
    for spec in ANSWER_TIERS if changes else ():
        judged, answers = tables.get(spec.judgments), tables.get(spec.answers)
        if judged is None or judged.empty:
            continue
        if answers is None or answers.empty or dataset is None:
            out.notes |= {(role, spec.tier): ANSWERS_GONE for role in changes}
            continue
        _rebuild_answers(spec, judged, answers, models, dataset, changes, out)
    _rejudge_traffic(tables.get(TRAFFIC_JUDGMENTS), dataset, models, changes, out)
    if "embedder" in changes:
        _reembed(baseline.scorecard, dataset, models.embedder, out)
    bridge = pd.concat(
        [b for b in out.bridge if not b.empty] or [pd.DataFrame(columns=BRIDGE_COLUMNS)],
        ignore_index=True,
    )
    card = _renamed(baseline.scorecard, out.renamed)
    if out.summaries:
        card = _summarized(card, pd.concat(out.summaries, ignore_index=True))
    sources = {name: tables.get(name) for name in ITEM_SOURCES} | out.tables
    sampled = {name: tables.get(name) for name in SAMPLE_SOURCES} | out.samples
    rebuilt = replace(
        baseline,
        scorecard=card,
        items=item_scores({k: v for k, v in sources.items() if v is not None}),
        samples=item_scores({k: v for k, v in sampled.items() if v is not None}, SAMPLE_SOURCES)
        if out.samples
        else baseline.samples,
        bridged={role: frozenset(keys) for role, keys in out.bridged.items()},
        bridge_notes=out.notes,
    )
    return rebuilt, bridge


def bridge_reasons(
    verdicts: pd.DataFrame, bridge: pd.DataFrame, changes: ModelChanges
) -> pd.Series:
    """The verdicts' `reason` with, for every bridged metric, how each model change alone moved
    it on the baseline's items (the alert context of a bridged comparison)."""
    if bridge.empty:
        return verdicts["reason"]
    notes: dict[tuple[str, str, str], list[str]] = {}
    for r in bridge.itertuples():
        moves = [changes[role] for role in r.change.split(" + ") if role in changes]
        agreement = {"ρ": r.spearman, "weighted κ": r.weighted_kappa}
        notes.setdefault((r.tier, r.system, r.metric), []).append(
            bridged(r.change, moves, r.step, r.shift, r.n_items, agreement)
        )
    keys = list(zip(*(verdicts[k] for k in KEY), strict=True))
    return pd.Series(
        [
            "; ".join(p for p in (str(reason or ""), *notes.get(key, [])) if p)
            for reason, key in zip(verdicts["reason"], keys, strict=True)
        ],
        index=verdicts.index,
    )
