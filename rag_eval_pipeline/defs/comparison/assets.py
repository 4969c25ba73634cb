"""The `system_comparison` asset: A/B comparison of reference-RAG configurations per partition."""

from pathlib import Path

import pandas as pd
from dagster import AssetExecutionContext, Config, MetadataValue

from rag_eval_pipeline.defs.comparison import asset
from rag_eval_pipeline.defs.dataset.assets import DatasetTables, as_dataset
from rag_eval_pipeline.defs.runs.pools import LLM_JUDGE_POOL
from rag_eval_pipeline.defs.shared.llm_metadata import llm_usage_metadata
from rag_eval_pipeline.defs.shared.metadata import (
    headline_metadata,
    markdown_table,
    path_metadata,
    text_metadata,
)
from rag_eval_pipeline.defs.shared.resources import (
    EmbedderResource,
    LLMResource,
    ResultCacheResource,
)
from rag_eval_pipeline.defs.shared.skipping import skipped
from rag_eval_pipeline.evaluation.comparison import (
    COMPARISON_COLUMNS,
    VERDICTS,
    composite_winner,
    load_plan,
    run_comparison,
)
from rag_eval_pipeline.evaluation.composite import COMPOSITE, load_weights
from rag_eval_pipeline.settings import PROJECT_ROOT
from rag_eval_pipeline.storage.result_cache import result_key

HEADLINE_METRICS = (
    "hit_rate@1",
    "mrr",
    "recall@5",
    "ndcg@5",
    "context_recall",
    "faithfulness",
    "e2e_score",
    "semantic_similarity",
)


class ComparisonConfig(Config):
    """The variants file: baseline, variants and metrics (relative paths: to the project)."""

    variants_file: str = "config/variants.yaml"


def variants_path(variants_file: str) -> Path:
    """`variants_file` as given when absolute, else relative to the project root."""
    path = Path(variants_file)
    return path if path.is_absolute() else PROJECT_ROOT / path


def winner_metadata(comparison: pd.DataFrame, baseline: str) -> dict[str, MetadataValue]:
    """The composite winner and its paired delta/CI vs the baseline, when composite is compared."""
    if COMPOSITE not in set(comparison["metric"]):
        return {}
    winner = composite_winner(comparison, baseline)
    return {
        "composite_winner": text_metadata(winner["winner"]),
        "composite_delta": MetadataValue.float(winner["delta"]),
        "composite_ci_low": MetadataValue.float(winner["ci_low"]),
        "composite_ci_high": MetadataValue.float(winner["ci_high"]),
        "composite_p_value": MetadataValue.float(winner["p_value"]),
        "composite_compared_with": text_metadata(winner["compared_with"]),
    }


def headline_deltas(comparison: pd.DataFrame) -> dict[str, float]:
    """`<variant>/<metric>/delta` → mean delta against the baseline, for the headline metrics."""
    rows = comparison[comparison["metric"].isin(HEADLINE_METRICS)]
    return {f"{r.variant}/{r.metric}/delta": float(r.delta) for r in rows.itertuples()}


@asset(
    pool=LLM_JUDGE_POOL,
    description=(
        "A/B comparison of configurations of the reference RAG (retriever, top k, embedder; "
        "`config/variants.yaml`) on the same questions: per metric, the mean delta against the "
        "baseline with a paired bootstrap CI, a paired randomization p-value and a verdict "
        "(better / worse / no significant difference). Kept in the result cache by content "
        "(dataset, variants file, models, code) unless a latency metric is compared, so a new "
        "date on unchanged data reads it instead of re-running every variant."
    ),
)
def system_comparison(
    context: AssetExecutionContext,
    config: ComparisonConfig,
    golden_dataset: DatasetTables,
    embedder: EmbedderResource,
    generator_llm: LLMResource,
    judge_llm: LLMResource,
    result_cache: ResultCacheResource,
) -> pd.DataFrame:
    dataset = as_dataset(context, golden_dataset)
    path = variants_path(config.variants_file)
    plan = load_plan(path)
    if not dataset.has_corpus:
        return skipped(
            context,
            "the reference RAG variants need corpus texts; this version has none",
            pd.DataFrame(columns=COMPARISON_COLUMNS),
        )
    model = embedder.get()
    generator, generator_client = generator_llm.generator(model)
    judge, judge_client = judge_llm.judge(model)
    cache = result_cache.get() if not plan.measures_latency else None
    key = comparison = None
    if cache is not None:
        parameters = {
            "variants": path.read_bytes(),
            "embedder": embedder.identity,
            "generator": generator_llm.identity,
            "judge": judge_llm.identity,
            "composite": load_weights(),
        }
        key = result_key("system_comparison", golden_dataset, parameters)
        comparison = cache.get(key)
    cache_status = "off" if cache is None else "miss" if comparison is None else "hit"
    if comparison is None:
        comparison = run_comparison(plan, dataset, model, generator, judge)
        errors = sum(c.usage.errors for c in (generator_client, judge_client) if c is not None)
        if cache is not None and key is not None and errors == 0:
            cache.put(key, comparison)
    counts = comparison["verdict"].value_counts()
    context.add_output_metadata(
        {
            **headline_metadata(headline_deltas(comparison)),
            **{
                f"n_{verdict.replace(' ', '_')}": MetadataValue.int(int(counts.get(verdict, 0)))
                for verdict in VERDICTS
            },
            "baseline": text_metadata(plan.baseline),
            **winner_metadata(comparison, plan.baseline),
            "variants": text_metadata(", ".join(v.name for v in plan.variants)),
            "variants_file": path_metadata(path),
            "result_cache": text_metadata(cache_status),
            "n_questions": MetadataValue.int(len(dataset.queries)),
            "comparison": MetadataValue.md(markdown_table(comparison, max_rows=400)),
            **llm_usage_metadata("generator", generator.generator_model, generator_client),
            **llm_usage_metadata("judge", judge.judge_model, judge_client),
        }
    )
    return comparison
