"""The `metric_regressions` asset: every scorecard metric tested against the baseline.

Paired on the items both dates scored (unpaired on the traffic tier's daily samples and the
system under test's latencies), Benjamini–Hochberg over the partition's metrics, plus the
metric's minimum effect (see `rag_eval_pipeline.evaluation.regression`). The asset check, the
HTML report, the alert sensor and `rag-eval run`'s summary all read this table.
"""

from datetime import date

import pandas as pd
from dagster import AssetExecutionContext, Config, MetadataValue, asset

from rag_eval_pipeline.datasets.golden import GoldenDataset
from rag_eval_pipeline.datasets.manifest import DatasetManifest
from rag_eval_pipeline.defs.dataset.schedules import SCHEDULE_TIMEZONE
from rag_eval_pipeline.defs.llm_metadata import llm_usage_metadata
from rag_eval_pipeline.defs.metadata import (
    headline_metadata,
    markdown_table,
    plotted_key,
    text_metadata,
)
from rag_eval_pipeline.defs.partitions import evaluation_partitions, partition_parts
from rag_eval_pipeline.defs.pools import LLM_JUDGE_POOL
from rag_eval_pipeline.defs.resources import (
    BaselineResource,
    EmbedderResource,
    LLMResource,
    WarehouseResource,
)
from rag_eval_pipeline.evaluation.composite import load_weights
from rag_eval_pipeline.evaluation.item_scores import (
    ITEM_SOURCES,
    SAMPLE_SOURCES,
    item_scores,
    item_sources,
)
from rag_eval_pipeline.evaluation.model_bridge import (
    ANSWER_TIERS,
    BRIDGE_COLUMNS,
    REGENERATING_ROLES,
    TodayModels,
    bridge_baseline,
    bridge_reasons,
    model_changes,
)
from rag_eval_pipeline.evaluation.regression import (
    CHANGE_COLUMNS,
    IDENTITY_ROLES,
    NOISE_DAYS,
    VERDICTS,
    PartitionScores,
    RegressionRule,
    compare_partitions,
)
from rag_eval_pipeline.evaluation.scorecard import Thresholds
from rag_eval_pipeline.reporting.alerting import items_needed_lines
from rag_eval_pipeline.reporting.changes import where_to_look
from rag_eval_pipeline.settings import THRESHOLDS_FILE
from rag_eval_pipeline.storage.parquet import StoredTables
from rag_eval_pipeline.storage.warehouse import REGRESSIONS_ASSET, WarehouseStore
from rag_eval_pipeline.text.escaping import markdown_cell

SHOWN = [
    *CHANGE_COLUMNS,
    "role",
    "n_items",
    "test",
    "q_value",
    "detectable_change",
    "items_needed",
    "verdict",
    "reason",
]


class RegressionConfig(Config):
    """FDR level α; the thresholds file (metric roles, alert budget, untested tolerance); the
    randomization test's resamples and seed (fixed: a re-run agrees)."""

    alpha: float = 0.05
    thresholds_file: str = str(THRESHOLDS_FILE)
    n_resamples: int = 10000
    seed: int = 0


def traffic_every_day(store: WarehouseStore, version: str, date: str) -> bool:
    """`dataset.yaml`'s `traffic_every_day` in the partition's stored dataset snapshot (True
    when it has none)."""
    folder = store.partition_path("golden_dataset", version, date).with_suffix("")
    if not folder.exists():
        return True
    return DatasetManifest.from_frame(StoredTables.open(folder).read("manifest")).traffic_every_day


def asset_groups() -> dict[str, str]:
    """Asset name → its group in the Dagster UI, from the code location's assets (imported
    here: `definitions` imports this module)."""
    from rag_eval_pipeline.definitions import ALL_ASSETS

    return {
        key.to_user_string(): group
        for assets in ALL_ASSETS
        for key, group in assets.group_names_by_key.items()
    }


def baseline_identities(store: WarehouseStore, version: str, date: str) -> dict[str, str | None]:
    """The judge/generator/embedder identities the baseline partition recorded (if any)."""
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


@asset(
    pool=LLM_JUDGE_POOL,
    partitions_def=evaluation_partitions,
    group_name="7_scorecard",
    kinds={"pandas", "parquet"},
    description=(
        "One row per (tier, system, metric) against the baseline (previous date, or the pinned "
        "one): baseline and current value, relative change, paired items, the test (exact sign "
        "test for 0/1 metrics, paired randomization otherwise; unpaired for the traffic "
        "tier's daily samples and latency percentiles: Fisher's exact test, a two-sample "
        "permutation test or a quantile exceedance test), p and "
        "weighted Benjamini–Hochberg q (metric roles: primary / secondary / monitor), and the "
        "verdict: regressed / improved / no significant change / untestable / not comparable "
        "(reason). When the judge, generator or embedder changed since the baseline, the "
        "baseline is first rebuilt with today's models from its stored inputs where they allow "
        "it (the model bridge: metadata model_bridge, usage bridge_judge_*, bridge_generator_*)."
    ),
)
def metric_regressions(
    context: AssetExecutionContext,
    config: RegressionConfig,
    evaluation_scorecard: pd.DataFrame,
    retrieval_metrics: pd.DataFrame,
    system_retrieval_metrics: pd.DataFrame,
    generation_judgments: pd.DataFrame,
    e2e_judgments: pd.DataFrame,
    e2e_generations: pd.DataFrame,
    traffic_metrics: pd.DataFrame,
    traffic_judgments: pd.DataFrame,
    warehouse: WarehouseResource,
    baseline: BaselineResource,
    judge_llm: LLMResource,
    generator_llm: LLMResource,
    embedder: EmbedderResource,
) -> pd.DataFrame:
    version, day = partition_parts(context)
    store = warehouse.store()
    today_tables = {
        "retrieval_metrics": retrieval_metrics,
        "system_retrieval_metrics": system_retrieval_metrics,
        "generation_judgments": generation_judgments,
        "e2e_judgments": e2e_judgments,
        "e2e_generations": e2e_generations,
        "traffic_metrics": traffic_metrics,
        "traffic_judgments": traffic_judgments,
    }
    identities = {
        "judge": judge_llm.identity,
        "generator": generator_llm.identity,
        "embedder": embedder.identity,
    }
    current = PartitionScores(
        version,
        day,
        evaluation_scorecard,
        item_scores(today_tables),
        identities,
        item_scores(today_tables, SAMPLE_SOURCES),
        traffic_every_day=traffic_every_day(store, version, day),
    )
    chosen = baseline.select(store, version, day)
    previous = None
    if chosen is not None:
        tables = {
            name: store.read_partition(name, chosen.version, chosen.date)
            for name in (*ITEM_SOURCES, *SAMPLE_SOURCES)
        }
        previous = PartitionScores(
            chosen.version,
            chosen.date,
            chosen.scorecard,
            item_scores(tables),
            baseline_identities(store, chosen.version, chosen.date),
            item_scores(tables, SAMPLE_SOURCES),
        )
    bridge, bridge_metadata, changes = pd.DataFrame(columns=BRIDGE_COLUMNS), {}, {}
    if previous is not None:
        changes = model_changes(previous, tables, today_tables, identities)
    if previous is not None and changes:
        model = embedder.get()
        judge, judge_client = judge_llm.judge(model)
        generator, generator_client = generator_llm.generator(model)
        answers = {
            spec.answers: store.read_partition(spec.answers, previous.version, previous.date)
            for spec in ANSWER_TIERS
        }
        snapshot = store.read_table_folder("golden_dataset", previous.version, previous.date)
        dataset = (
            GoldenDataset.from_tables(
                previous.version, snapshot, date.fromisoformat(previous.date), SCHEDULE_TIMEZONE
            )
            if snapshot
            else None
        )
        previous, bridge = bridge_baseline(
            previous,
            {**tables, **answers},
            dataset,
            TodayModels(judge, generator, model, load_weights()),
            changes,
        )
        bridge_metadata = {
            "model_bridge": MetadataValue.md(markdown_table(bridge, max_rows=400)),
            "model_changes": MetadataValue.md(
                "\n".join(
                    f"- {role}: {markdown_cell(old)} → {markdown_cell(new)}"
                    for role, (old, new) in changes.items()
                )
            ),
            **llm_usage_metadata("bridge_judge", judge.judge_model, judge_client),
        }
        if REGENERATING_ROLES & changes.keys():
            bridge_metadata |= llm_usage_metadata(
                "bridge_generator", generator.generator_model, generator_client
            )
    thresholds = Thresholds.load(config.thresholds_file)
    rule = RegressionRule(
        config.alpha,
        config.n_resamples,
        config.seed,
        thresholds.primary_share,
        thresholds.untested_tolerance,
        thresholds.coverage_tolerance,
    )
    verdicts = compare_partitions(current, previous, rule, noise_history(store, version, day))
    verdicts["where"] = where_to_look(verdicts, item_sources(today_tables), asset_groups())
    if changes:
        verdicts["reason"] = bridge_reasons(verdicts, bridge, changes)
    counts = verdicts["verdict"].value_counts()
    n_alerts = int(verdicts["alert"].sum()) if len(verdicts) else 0
    context.add_output_metadata(
        {
            **headline_metadata(
                {
                    plotted_key(version, f"n_{v.replace(' ', '_')}"): float(counts.get(v, 0))
                    for v in VERDICTS
                }
            ),
            "n_alerts": MetadataValue.int(n_alerts),
            "baseline": text_metadata(
                f"{chosen.version} {chosen.date}" if chosen else "none yet (first evaluation)"
            ),
            "alpha": MetadataValue.float(config.alpha),
            "items_needed": MetadataValue.md(
                "\n".join(f"- {markdown_cell(line)}" for line in items_needed_lines(verdicts))
                or "no primary metric with paired items"
            ),
            "regressions": MetadataValue.md(markdown_table(verdicts[SHOWN], max_rows=400)),
            **bridge_metadata,
        }
    )
    return verdicts
