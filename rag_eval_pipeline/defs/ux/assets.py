"""UX tier: semantic cache hit rate, multi-turn context preservation and answer consistency."""

import pandas as pd
from dagster import AssetExecutionContext, Config

from rag_eval_pipeline.defs.dataset.assets import DatasetTables, as_dataset
from rag_eval_pipeline.defs.shared.metadata import summary_metadata
from rag_eval_pipeline.defs.shared.partitions import partition_parts
from rag_eval_pipeline.defs.shared.resources import EmbedderResource
from rag_eval_pipeline.defs.ux import asset
from rag_eval_pipeline.evaluation.summaries import single_values
from rag_eval_pipeline.evaluation.ux import arrival_ordered_questions, ux_values

TIER = "ux"


class UxConfig(Config):
    """τ: a question is a semantic-cache hit when its cosine with an earlier one exceeds it."""

    cache_threshold: float = 0.85


@asset(
    description=(
        "cache_hit_rate (share of questions, in arrival order, with cosine > τ to an earlier "
        "one), context_preservation (mean cosine of consecutive turns of a session) and "
        "multi_turn_consistency (cosine of answers of consecutive turns sharing a document)."
    ),
)
def ux_metrics(
    context: AssetExecutionContext,
    config: UxConfig,
    golden_dataset: DatasetTables,
    e2e_generations: pd.DataFrame,
    embedder: EmbedderResource,
) -> pd.DataFrame:
    dataset = as_dataset(context, golden_dataset)
    values = ux_values(
        dataset.queries, dataset.logs, e2e_generations, embedder.get(), config.cache_threshold
    )
    # each stream counts its own questions (the real-users stream: its logs)
    counts = {
        stream: len(questions)
        for stream, questions in arrival_ordered_questions(dataset.queries, dataset.logs).items()
    }
    quality = pd.concat(
        [
            single_values(v, TIER, system, count=counts.get(system, len(dataset.queries)))
            for system, v in values.items()
        ],
        ignore_index=True,
    )
    context.add_output_metadata(summary_metadata(quality, partition_parts(context)[0]))
    return quality
