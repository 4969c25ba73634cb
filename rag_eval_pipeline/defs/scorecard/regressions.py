"""The `metric_regressions` asset: every scorecard metric tested against the baseline.

Paired on the items both dates scored (unpaired on the traffic tier's daily samples and the
system under test's latencies), Benjamini–Hochberg over the partition's metrics, plus the
metric's minimum effect (see `rag_eval_pipeline.evaluation.verdicts`). The asset check, the
HTML report, the alert sensor and `rag-eval run`'s summary all read this table. The asset is
a thin wrapper: the inputs come from `evaluation.verdict_inputs`, the verdicts from
`evaluation.verdicts.compare.compare_partitions`.
"""

from typing import Any

import pandas as pd
from dagster import AssetExecutionContext, Config, MetadataValue

from rag_eval_pipeline.defs.dataset.schedules import SCHEDULE_TIMEZONE
from rag_eval_pipeline.defs.runs.pools import LLM_JUDGE_POOL
from rag_eval_pipeline.defs.scorecard import asset
from rag_eval_pipeline.defs.shared.llm_metadata import llm_usage_metadata
from rag_eval_pipeline.defs.shared.metadata import (
    headline_metadata,
    markdown_table,
    plotted_key,
    text_metadata,
)
from rag_eval_pipeline.defs.shared.partitions import partition_parts
from rag_eval_pipeline.defs.shared.resources import (
    BaselineResource,
    EmbedderResource,
    LLMResource,
    WarehouseResource,
)
from rag_eval_pipeline.evaluation.composite import load_weights
from rag_eval_pipeline.evaluation.item_scores import item_sources
from rag_eval_pipeline.evaluation.model_bridge import (
    BRIDGE_COLUMNS,
    REGENERATING_ROLES,
    ModelChanges,
    TodayModels,
    bridge_reasons,
    model_changes,
)
from rag_eval_pipeline.evaluation.verdict_inputs import (
    Tables,
    baseline_scores,
    noise_history,
    rebuilt_baseline,
    regression_rule,
    today_scores,
)
from rag_eval_pipeline.evaluation.verdicts.columns import CHANGE_COLUMNS
from rag_eval_pipeline.evaluation.verdicts.compare import compare_partitions
from rag_eval_pipeline.evaluation.verdicts.partition import PartitionScores
from rag_eval_pipeline.evaluation.verdicts.wording import VERDICTS
from rag_eval_pipeline.reporting.alerting import items_needed_lines
from rag_eval_pipeline.reporting.changes import where_to_look
from rag_eval_pipeline.settings import THRESHOLDS_FILE
from rag_eval_pipeline.storage.warehouse import Baseline, WarehouseStore
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


def asset_groups() -> dict[str, str]:
    """Asset name → its group in the Dagster UI, from the code location's assets (imported
    here: `definitions` imports this module)."""
    from rag_eval_pipeline.definitions import ALL_ASSETS

    return {
        key.to_user_string(): group
        for assets in ALL_ASSETS
        for key, group in assets.group_names_by_key.items()
    }


def bridged(
    store: WarehouseStore,
    previous: PartitionScores,
    tables: Tables,
    changes: ModelChanges,
    models: tuple[LLMResource, LLMResource, EmbedderResource],
) -> tuple[PartitionScores, pd.DataFrame, dict[str, Any]]:
    """The baseline rebuilt with today's models (`judge_llm`, `generator_llm`, `embedder`),
    the bridge's table and its metadata (the bridge, the changes, the LLM usage)."""
    judge_llm, generator_llm, embedder = models
    model = embedder.get()
    judge, judge_client = judge_llm.judge(model)
    generator, generator_client = generator_llm.generator(model)
    today = TodayModels(judge, generator, model, load_weights())
    previous, bridge = rebuilt_baseline(store, previous, tables, today, changes, SCHEDULE_TIMEZONE)
    metadata = {
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
        metadata |= llm_usage_metadata(
            "bridge_generator", generator.generator_model, generator_client
        )
    return previous, bridge, metadata


def verdict_metadata(
    verdicts: pd.DataFrame, version: str, chosen: Baseline | None, alpha: float
) -> dict[str, Any]:
    """The asset's metadata: the verdict counts (plotted per version), the alerts, the
    baseline, α, the planner's lines and the table."""
    counts = verdicts["verdict"].value_counts()
    return {
        **headline_metadata(
            {
                plotted_key(version, f"n_{v.replace(' ', '_')}"): float(counts.get(v, 0))
                for v in VERDICTS
            }
        ),
        "n_alerts": MetadataValue.int(int(verdicts["alert"].sum()) if len(verdicts) else 0),
        "baseline": text_metadata(
            f"{chosen.version} {chosen.date}" if chosen else "none yet (first evaluation)"
        ),
        "alpha": MetadataValue.float(alpha),
        "items_needed": MetadataValue.md(
            "\n".join(f"- {markdown_cell(line)}" for line in items_needed_lines(verdicts))
            or "no primary metric with paired items"
        ),
        "regressions": MetadataValue.md(markdown_table(verdicts[SHOWN], max_rows=400)),
    }


@asset(
    pool=LLM_JUDGE_POOL,
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
    today_tables: Tables = {
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
    current = today_scores(store, version, day, evaluation_scorecard, today_tables, identities)
    chosen = baseline.select(store, version, day)
    previous, tables = baseline_scores(store, chosen) if chosen is not None else (None, {})
    changes = {}
    if previous is not None:
        changes = model_changes(previous, tables, today_tables, identities)
    bridge, bridge_metadata = pd.DataFrame(columns=BRIDGE_COLUMNS), {}
    if previous is not None and changes:
        models = (judge_llm, generator_llm, embedder)
        previous, bridge, bridge_metadata = bridged(store, previous, tables, changes, models)
    rule = regression_rule(config.alpha, config.n_resamples, config.seed, config.thresholds_file)
    verdicts = compare_partitions(current, previous, rule, noise_history(store, version, day))
    verdicts["where"] = where_to_look(verdicts, item_sources(today_tables), asset_groups())
    if changes:
        verdicts["reason"] = bridge_reasons(verdicts, bridge, changes)
    context.add_output_metadata(
        {**verdict_metadata(verdicts, version, chosen, config.alpha), **bridge_metadata}
    )
    return verdicts
